// RUN: optimus-opt %s -p split-cat-simplify | filecheck %s

// Dead plumbing goes: a split none of whose pieces is used, and the chain of
// views and joins feeding nothing.

// CHECK-LABEL: fx.graph @dead
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    fx.output %x
fx.graph @dead {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a, %b = torch.split %x sections [2, 4] dim 1 : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x4xf32>
  %u0, %u1, %u2, %u3 = torch.unbind %x dim 0 : tensor<4x6xf32> -> tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
  %s = torch.stack %u0, %u1 dim 1 : tensor<6xf32>, tensor<6xf32> -> tensor<6x2xf32>
  %k = torch.cat %s, %s dim 0 : tensor<6x2xf32>, tensor<6x2xf32> -> tensor<12x2xf32>
  %v = torch.view %k shape [24] : tensor<12x2xf32> -> tensor<24xf32>
  fx.output %x
}
