// RUN: optimus-opt %s -p slices-to-split --split-input-file | filecheck %s

// Sibling step-1 slices of one tensor on one dim become the pieces of one
// split made right after the tensor. The rows no slice reads (4..7) are a
// piece of their own; a select stays (as a piece and a squeeze it would be
// one op more).

// CHECK-LABEL: fx.graph @siblings
// CHECK:         %x = torch.neg %p
// CHECK-NEXT:    %a, %b, %{{.*}} = torch.split %x sections [2, 2, 4] dim 0 : tensor<8x3xf32> -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x3xf32>
// CHECK-NOT:     torch.slice
// CHECK:         %c = torch.select %x dim 0 index 7
// CHECK-NEXT:    fx.output (%a, %b, %c)
fx.graph @siblings {
  %p = fx.placeholder "p" : tensor<8x3xf32>
  %x = torch.neg %p : tensor<8x3xf32> -> tensor<8x3xf32>
  %b = torch.slice %x dim 0 start 2 end 4 : tensor<8x3xf32> -> tensor<2x3xf32>
  %a = torch.slice %x dim 0 start 0 end 2 : tensor<8x3xf32> -> tensor<2x3xf32>
  %c = torch.select %x dim 0 index 7 : tensor<8x3xf32> -> tensor<3xf32>
  fx.output (%a, %b, %c)
}

// -----

// Slices on dim 1 of a placeholder, the same rows read twice: one piece
// serves both.

// CHECK-LABEL: fx.graph @same_rows_twice
// CHECK:         %{{.*}}, %[[A:[a-z]+]], %b = torch.split %x sections [1, 2, 3] dim 1
// CHECK-NOT:     torch.slice
// CHECK:         fx.output (%[[A]], %b, %[[A]])
fx.graph @same_rows_twice {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a = torch.slice %x dim 1 start 1 end 3 : tensor<4x6xf32> -> tensor<4x2xf32>
  %b = torch.slice %x dim 1 start 3 end 6 : tensor<4x6xf32> -> tensor<4x3xf32>
  %c = torch.slice %x dim 1 start 1 end 3 : tensor<4x6xf32> -> tensor<4x2xf32>
  fx.output (%a, %b, %c)
}

// -----

// Left alone: a lone slice, slices with a step, overlapping slices, slices
// on different dims, and sibling slices of a tensor written in place (a
// view made before the write and read after it would cross the write).

// CHECK-LABEL: fx.graph @left_alone
// CHECK-NOT:     torch.split
// CHECK:         %lone = torch.slice %x dim 0 start 0 end 2
// CHECK-NEXT:    %s0 = torch.slice %y dim 0 start 0 end 4 step 2
// CHECK-NEXT:    %s1 = torch.slice %y dim 0 start 1 end 4 step 2
// CHECK-NEXT:    %o0 = torch.slice %z dim 0 start 0 end 3
// CHECK-NEXT:    %o1 = torch.slice %z dim 0 start 2 end 4
// CHECK-NEXT:    %d0 = torch.slice %w dim 0 start 0 end 2
// CHECK-NEXT:    %d1 = torch.slice %w dim 1 start 0 end 2
// CHECK-NEXT:    %m0 = torch.slice %v dim 0 start 0 end 2
// CHECK-NEXT:    %write = fx.call_method "add_"(%v, 1)
// CHECK-NEXT:    %m1 = torch.slice %v dim 0 start 2 end 4
// CHECK-NOT:     torch.split
fx.graph @left_alone {
  %p = fx.placeholder "p" : tensor<4x4xf32>
  %x = torch.neg %p : tensor<4x4xf32> -> tensor<4x4xf32>
  %y = torch.abs %p : tensor<4x4xf32> -> tensor<4x4xf32>
  %z = torch.exp %p : tensor<4x4xf32> -> tensor<4x4xf32>
  %w = torch.tanh %p : tensor<4x4xf32> -> tensor<4x4xf32>
  %v = torch.relu %p : tensor<4x4xf32> -> tensor<4x4xf32>
  %lone = torch.slice %x dim 0 start 0 end 2 : tensor<4x4xf32> -> tensor<2x4xf32>
  %s0 = torch.slice %y dim 0 start 0 end 4 step 2 : tensor<4x4xf32> -> tensor<2x4xf32>
  %s1 = torch.slice %y dim 0 start 1 end 4 step 2 : tensor<4x4xf32> -> tensor<2x4xf32>
  %o0 = torch.slice %z dim 0 start 0 end 3 : tensor<4x4xf32> -> tensor<3x4xf32>
  %o1 = torch.slice %z dim 0 start 2 end 4 : tensor<4x4xf32> -> tensor<2x4xf32>
  %d0 = torch.slice %w dim 0 start 0 end 2 : tensor<4x4xf32> -> tensor<2x4xf32>
  %d1 = torch.slice %w dim 1 start 0 end 2 : tensor<4x4xf32> -> tensor<4x2xf32>
  %m0 = torch.slice %v dim 0 start 0 end 2 : tensor<4x4xf32> -> tensor<2x4xf32>
  %write = fx.call_method "add_"(%v, 1) : tensor<4x4xf32>
  %m1 = torch.slice %v dim 0 start 2 end 4 : tensor<4x4xf32> -> tensor<2x4xf32>
  fx.output (%lone, %s0, %s1, %o0, %o1, %d0, %d1, %m0, %m1)
}
