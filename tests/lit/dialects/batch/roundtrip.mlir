// RUN: optimus-opt %s | filecheck %s
// RUN: optimus-opt %s | optimus-opt | filecheck %s

// Every batch op prints and parses back.

// CHECK:      %s = batch.pack %a, %b : tensor<8x16xf32, "cpu">, tensor<8x16xf32, "cpu"> -> tensor<2x8x16xf32, "cpu">
// CHECK-NEXT: %l = batch.linear %s, %w bias %bias : tensor<2x8x16xf32, "cpu">, tensor<2x32x16xf32, "cpu">, tensor<2x32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
// CHECK-NEXT: %ls = batch.linear_shared_input %a, %w : tensor<8x16xf32, "cpu">, tensor<2x32x16xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
// CHECK-NEXT: %n = batch.layer_norm %l normalized_shape [32] weight %g eps 0.001 : tensor<2x8x32xf32, "cpu">, tensor<2x32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
// CHECK-NEXT: %p = batch.pointwise %n, %t fn "torch.add" stacked [true, false] fn_properties {"alpha": 2, "reverse": false} : tensor<2x8x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
// CHECK-NEXT: %q = batch.pointwise %p fn "torch.gelu" stacked [true] fn_properties {"approximate": "tanh"} : tensor<2x8x32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
// CHECK-NEXT: %u0, %u1 = batch.unpack %q : tensor<2x8x32xf32, "cpu"> -> tensor<8x32xf32, "cpu">, tensor<8x32xf32, "cpu">
// CHECK-NEXT: %g0, %g1 = batch.grouped_linear %a, %c, %v0, %v1, %c0, %c1 has_bias : {{.*}} -> tensor<8x4xf32, "cpu">, tensor<8x6xf32, "cpu">
fx.graph @ops {
  %a = fx.placeholder "a" : tensor<8x16xf32, "cpu">
  %b = fx.placeholder "b" : tensor<8x16xf32, "cpu">
  %c = fx.placeholder "c" : tensor<8x24xf32, "cpu">
  %w = fx.placeholder "w" : tensor<2x32x16xf32, "cpu">
  %bias = fx.placeholder "bias" : tensor<2x32xf32, "cpu">
  %g = fx.placeholder "g" : tensor<2x32xf32, "cpu">
  %t = fx.placeholder "t" : tensor<32xf32, "cpu">
  %v0 = fx.placeholder "v0" : tensor<4x16xf32, "cpu">
  %v1 = fx.placeholder "v1" : tensor<6x24xf32, "cpu">
  %c0 = fx.placeholder "c0" : tensor<4xf32, "cpu">
  %c1 = fx.placeholder "c1" : tensor<6xf32, "cpu">
  %s = batch.pack %a, %b : tensor<8x16xf32, "cpu">, tensor<8x16xf32, "cpu"> -> tensor<2x8x16xf32, "cpu">
  %l = batch.linear %s, %w bias %bias : tensor<2x8x16xf32, "cpu">, tensor<2x32x16xf32, "cpu">, tensor<2x32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
  %ls = batch.linear_shared_input %a, %w : tensor<8x16xf32, "cpu">, tensor<2x32x16xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
  %n = batch.layer_norm %l normalized_shape [32] weight %g eps 1.0e-03 : tensor<2x8x32xf32, "cpu">, tensor<2x32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
  %p = batch.pointwise %n, %t fn "torch.add" stacked [true, false] fn_properties {"alpha": 2, "reverse": false} : tensor<2x8x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
  %q = batch.pointwise %p fn "torch.gelu" stacked [true] fn_properties {"approximate": "tanh"} : tensor<2x8x32xf32, "cpu"> -> tensor<2x8x32xf32, "cpu">
  %u0, %u1 = batch.unpack %q : tensor<2x8x32xf32, "cpu"> -> tensor<8x32xf32, "cpu">, tensor<8x32xf32, "cpu">
  %g0, %g1 = batch.grouped_linear %a, %c, %v0, %v1, %c0, %c1 has_bias : tensor<8x16xf32, "cpu">, tensor<8x24xf32, "cpu">, tensor<4x16xf32, "cpu">, tensor<6x24xf32, "cpu">, tensor<4xf32, "cpu">, tensor<6xf32, "cpu"> -> tensor<8x4xf32, "cpu">, tensor<8x6xf32, "cpu">
  fx.output (%ls, %u0, %u1, %g0, %g1)
}
