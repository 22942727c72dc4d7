// RUN: optimus-opt %s | optimus-opt | filecheck %s
// softmax, log_softmax, where and masked_fill print, parse and print again
// identically; an absent dtype is left out; where's other is a tensor
// operand or a scalar; a masked_fill value of -inf survives the round trip.

// CHECK-LABEL: fx.graph @ops
// CHECK:      %sm = torch.softmax %x dim 1 : tensor<4x8xf32, "cpu"> -> tensor<4x8xf32, "cpu">
// CHECK-NEXT: %lsm = torch.log_softmax %x dim 0 dtype f64 : tensor<4x8xf32, "cpu"> -> tensor<4x8xf64, "cpu">
// CHECK-NEXT: %smi = torch.softmax %i dim 1 dtype f32 : tensor<4x8xi64, "cpu"> -> tensor<4x8xf32, "cpu">
// CHECK-NEXT: %w = torch.where %m, %x scalar 0.0 : tensor<8xi1, "cpu">, tensor<4x8xf32, "cpu"> -> tensor<4x8xf32, "cpu">
// CHECK-NEXT: %wi = torch.where %m, %i scalar 0.5 : tensor<8xi1, "cpu">, tensor<4x8xi64, "cpu"> -> tensor<4x8xf32, "cpu">
// CHECK-NEXT: %wt = torch.where %m, %x, %sm : tensor<8xi1, "cpu">, tensor<4x8xf32, "cpu">, tensor<4x8xf32, "cpu"> -> tensor<4x8xf32, "cpu">
// CHECK-NEXT: %mf = torch.masked_fill %x, %m value -inf : tensor<4x8xf32, "cpu">, tensor<8xi1, "cpu"> -> tensor<4x8xf32, "cpu">
// CHECK-NEXT: %mfi = torch.masked_fill %i, %m value 3 : tensor<4x8xi64, "cpu">, tensor<8xi1, "cpu"> -> tensor<4x8xi64, "cpu">
builtin.module {
  fx.graph @ops {
    %x = fx.placeholder "x" : tensor<4x8xf32, "cpu">
    %i = fx.placeholder "i" : tensor<4x8xi64, "cpu">
    %m = fx.placeholder "m" : tensor<8xi1, "cpu">
    %sm = torch.softmax %x dim 1 : tensor<4x8xf32, "cpu"> -> tensor<4x8xf32, "cpu">
    %lsm = torch.log_softmax %x dim 0 dtype f64 : tensor<4x8xf32, "cpu"> -> tensor<4x8xf64, "cpu">
    %smi = torch.softmax %i dim 1 dtype f32 : tensor<4x8xi64, "cpu"> -> tensor<4x8xf32, "cpu">
    %w = torch.where %m, %x scalar 0.0 : tensor<8xi1, "cpu">, tensor<4x8xf32, "cpu"> -> tensor<4x8xf32, "cpu">
    %wi = torch.where %m, %i scalar 0.5 : tensor<8xi1, "cpu">, tensor<4x8xi64, "cpu"> -> tensor<4x8xf32, "cpu">
    %wt = torch.where %m, %x, %sm : tensor<8xi1, "cpu">, tensor<4x8xf32, "cpu">, tensor<4x8xf32, "cpu"> -> tensor<4x8xf32, "cpu">
    %mf = torch.masked_fill %x, %m value -inf : tensor<4x8xf32, "cpu">, tensor<8xi1, "cpu"> -> tensor<4x8xf32, "cpu">
    %mfi = torch.masked_fill %i, %m value 3 : tensor<4x8xi64, "cpu">, tensor<8xi1, "cpu"> -> tensor<4x8xi64, "cpu">
    fx.output (%sm, %lsm, %smi, %w, %wi, %wt, %mf, %mfi)
  }
}
