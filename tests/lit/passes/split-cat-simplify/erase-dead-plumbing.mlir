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

// An unbind none of whose results is used goes; one with some results used
// (a consecutive range or not) stays as it is: it has no cheaper form.

// CHECK-LABEL: fx.graph @dead_unbind
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %u0, %u1, %u2, %u3 = torch.unbind %y dim 0
// CHECK-NEXT:    %r = torch.add %u1, %u2
// CHECK-NEXT:    %w0, %w1, %w2, %w3 = torch.unbind %y dim 1
// CHECK-NEXT:    %s = torch.add %w0, %w3
// CHECK-NEXT:    fx.output (%r, %s)
fx.graph @dead_unbind {
  %x = fx.placeholder "x" : tensor<4x4xf32>
  %y = torch.tanh %x : tensor<4x4xf32> -> tensor<4x4xf32>
  %v0, %v1, %v2, %v3 = torch.unbind %y dim 1 : tensor<4x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %u0, %u1, %u2, %u3 = torch.unbind %y dim 0 : tensor<4x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %r = torch.add %u1, %u2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %w0, %w1, %w2, %w3 = torch.unbind %y dim 1 : tensor<4x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %s = torch.add %w0, %w3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  fx.output (%r, %s)
}
