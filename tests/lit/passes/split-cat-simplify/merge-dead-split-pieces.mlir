// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// Neighbouring dead pieces merge into one section; the split keeps covering
// the whole dim.

// CHECK-LABEL: fx.graph @merge
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a, %{{.*}}, %d, %{{.*}} = torch.split %x sections [1, 5, 4, 3] dim 1 :
// CHECK-NEXT:    fx.output (%a, %d)
fx.graph @merge {
  %x = fx.placeholder "x" : tensor<2x13xf32>
  %a, %b, %c, %d, %e, %f = torch.split %x sections [1, 2, 3, 4, 1, 2] dim 1 : tensor<2x13xf32> -> tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x2xf32>
  fx.output (%a, %d)
}

// -----

// A single live piece: a slice of the input.

// CHECK-LABEL: fx.graph @single_live
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %c = torch.slice %x dim 0 start 3 end 6 :
// CHECK-NEXT:    fx.output %c
fx.graph @single_live {
  %x = fx.placeholder "x" : tensor<8x2xf32>
  %a, %b, %c, %d = torch.split %x sections [1, 2, 3, 2] dim 0 : tensor<8x2xf32> -> tensor<1x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>
  fx.output %c
}

// -----

// Left alone: no two neighbouring dead pieces.

// CHECK-LABEL: fx.graph @leave_alone
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a, %b, %c = torch.split %x sections [1, 2, 3] dim 1
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<2x6xf32>
  %a, %b, %c = torch.split %x sections [1, 2, 3] dim 1 : tensor<2x6xf32> -> tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>
  fx.output (%a, %c)
}
