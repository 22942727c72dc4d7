// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// A split into size-1 pieces, each only squeezed on the split dim: unbind.

// CHECK-LABEL: fx.graph @to_unbind
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[A:.*]], %q1, %{{.*}} = torch.unbind %x dim 1 : tensor<4x3x5xf32> -> tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>
// CHECK-NEXT:    %r = torch.add %[[A]], %q1
// CHECK-NEXT:    fx.output (%r, %[[A]])
fx.graph @to_unbind {
  %x = fx.placeholder "x" : tensor<4x3x5xf32>
  %a, %b, %c = torch.split %x sections [1, 1, 1] dim 1 : tensor<4x3x5xf32> -> tensor<4x1x5xf32>, tensor<4x1x5xf32>, tensor<4x1x5xf32>
  %q0 = torch.squeeze %a dims [1] : tensor<4x1x5xf32> -> tensor<4x5xf32>
  %q1 = torch.squeeze %b dims [1] : tensor<4x1x5xf32> -> tensor<4x5xf32>
  %q2 = torch.squeeze %a dims [1] : tensor<4x1x5xf32> -> tensor<4x5xf32>
  %r = torch.add %q0, %q1 : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  fx.output (%r, %q2)
}

// -----

// Left alone: a piece used unsqueezed, a squeeze of another dim.

// CHECK-LABEL: fx.graph @leave_alone
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a, %b = torch.split %x sections [1, 1] dim 0
// CHECK-NEXT:    %q0 = torch.squeeze %a dims [0]
// CHECK-NEXT:    %c, %d = torch.split %x sections [1, 1] dim 0
// CHECK-NEXT:    %q1 = torch.squeeze %c dims [0, 1]
// CHECK-NEXT:    fx.output (%q0, %b, %q1, %d)
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<2x1xf32>
  %a, %b = torch.split %x sections [1, 1] dim 0 : tensor<2x1xf32> -> tensor<1x1xf32>, tensor<1x1xf32>
  %q0 = torch.squeeze %a dims [0] : tensor<1x1xf32> -> tensor<1xf32>
  %c, %d = torch.split %x sections [1, 1] dim 0 : tensor<2x1xf32> -> tensor<1x1xf32>, tensor<1x1xf32>
  %q1 = torch.squeeze %c dims [0, 1] : tensor<1x1xf32> -> tensor<f32>
  fx.output (%q0, %b, %q1, %d)
}
