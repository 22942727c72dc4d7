// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// A split of a split piece on the same dim: one split, sections spliced in,
// through any number of levels.

// CHECK-LABEL: fx.graph @three_levels
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a, %c, %e, %f, %d = torch.split %x sections [2, 3, 1, 2, 4] dim 1 :
// CHECK-NEXT:    fx.output (%a, %c, %e, %f, %d)
fx.graph @three_levels {
  %x = fx.placeholder "x" : tensor<5x12xf32>
  %a, %b = torch.split %x sections [2, 10] dim 1 : tensor<5x12xf32> -> tensor<5x2xf32>, tensor<5x10xf32>
  %c, %g, %d = torch.split %b sections [3, 3, 4] dim 1 : tensor<5x10xf32> -> tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>
  %e, %f = torch.split %g sections [1, 2] dim 1 : tensor<5x3xf32> -> tensor<5x1xf32>, tensor<5x2xf32>
  fx.output (%a, %c, %e, %f, %d)
}

// -----

// Left alone: another dim; a piece with another user besides the inner split.

// CHECK-LABEL: fx.graph @leave_alone
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a, %b = torch.split %x sections [2, 2] dim 0
// CHECK-NEXT:    %c, %d = torch.split %a sections [3, 3] dim 1
// CHECK-NEXT:    %e, %f = torch.split %b sections [1, 1] dim 0
// CHECK-NEXT:    %r = torch.relu %b
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a, %b = torch.split %x sections [2, 2] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>, tensor<2x6xf32>
  %c, %d = torch.split %a sections [3, 3] dim 1 : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
  %e, %f = torch.split %b sections [1, 1] dim 0 : tensor<2x6xf32> -> tensor<1x6xf32>, tensor<1x6xf32>
  %r = torch.relu %b : tensor<2x6xf32> -> tensor<2x6xf32>
  fx.output (%c, %d, %e, %f, %r)
}
