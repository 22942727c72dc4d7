// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// split -> view each piece -> stack: the permutes cancel, one view is left.

// CHECK-LABEL: fx.graph @split_view_stack
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[V:.*]] = torch.unflatten %x dim 1 sizes [4, 2, 2] : tensor<3x16xf32> -> tensor<3x4x2x2xf32>
// CHECK-NEXT:    %r = torch.relu %[[V]]
fx.graph @split_view_stack {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %va = torch.view %a shape [3, 2, 2] : tensor<3x4xf32> -> tensor<3x2x2xf32>
  %vb = torch.view %b shape [3, 2, 2] : tensor<3x4xf32> -> tensor<3x2x2xf32>
  %vc = torch.view %c shape [3, 2, 2] : tensor<3x4xf32> -> tensor<3x2x2xf32>
  %vd = torch.view %d shape [3, 2, 2] : tensor<3x4xf32> -> tensor<3x2x2xf32>
  %s = torch.stack %va, %vb, %vc, %vd dim 1 : tensor<3x2x2xf32>, tensor<3x2x2xf32>, tensor<3x2x2xf32>, tensor<3x2x2xf32> -> tensor<3x4x2x2xf32>
  %r = torch.relu %s : tensor<3x4x2x2xf32> -> tensor<3x4x2x2xf32>
  fx.output %r
}

// -----

// split -> reshape to another layout -> stack on dim 0: permute + reshape.

// CHECK-LABEL: fx.graph @split_reshape_stack
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[U:.*]] = torch.unflatten %x dim 1 sizes [4, 4]
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %[[U]]
// CHECK-NEXT:    %[[R:.*]] = torch.reshape %[[M]] shape [4, 4, 3] : tensor<4x3x4xf32> -> tensor<4x4x3xf32>
// CHECK-NEXT:    %r = torch.relu %[[R]]
fx.graph @split_reshape_stack {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %va = torch.reshape %a shape [4, 3] : tensor<3x4xf32> -> tensor<4x3xf32>
  %vb = torch.reshape %b shape [4, 3] : tensor<3x4xf32> -> tensor<4x3xf32>
  %vc = torch.reshape %c shape [4, 3] : tensor<3x4xf32> -> tensor<4x3xf32>
  %vd = torch.reshape %d shape [4, 3] : tensor<3x4xf32> -> tensor<4x3xf32>
  %s = torch.stack %va, %vb, %vc, %vd dim 0 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x4x3xf32>
  %r = torch.relu %s : tensor<4x4x3xf32> -> tensor<4x4x3xf32>
  fx.output %r
}

// -----

// split into size-1 pieces -> squeeze -> stack back on the split dim: the
// input itself.

// CHECK-LABEL: fx.graph @split_squeeze_stack
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %r = torch.relu %x
fx.graph @split_squeeze_stack {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %a, %b, %c, %d = torch.split %x sections [1, 1, 1, 1] dim 1 : tensor<3x4xf32> -> tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x1xf32>
  %va = torch.squeeze %a dims [1] : tensor<3x1xf32> -> tensor<3xf32>
  %vb = torch.squeeze %b dims [1] : tensor<3x1xf32> -> tensor<3xf32>
  %vc = torch.squeeze %c dims [1] : tensor<3x1xf32> -> tensor<3xf32>
  %vd = torch.squeeze %d dims [1] : tensor<3x1xf32> -> tensor<3xf32>
  %s = torch.stack %va, %vb, %vc, %vd dim 1 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<3x4xf32>
  %r = torch.relu %s : tensor<3x4xf32> -> tensor<3x4xf32>
  fx.output %r
}

// -----

// Left alone: a reshaped piece with another user. A stack that is a graph
// output must not alias the input: its view chain plus one copy (cat of one
// tensor) stands for it.

// CHECK-LABEL: fx.graph @left_alone
// CHECK:         %[[F:.*]] = torch.flatten
// CHECK-NEXT:    torch.cat %[[F]] dim 0 : tensor<2x12xf32> -> tensor<2x12xf32>
// CHECK-NOT:     torch.stack %va
// CHECK:         torch.stack %wa, %wb, %wc dim 0
fx.graph @left_alone {
  %x = fx.placeholder "x" : tensor<3x8xf32>
  %a, %b = torch.split %x sections [4, 4] dim 1 : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
  %va = torch.reshape %a shape [12] : tensor<3x4xf32> -> tensor<12xf32>
  %vb = torch.reshape %b shape [12] : tensor<3x4xf32> -> tensor<12xf32>
  %s = torch.stack %va, %vb dim 0 : tensor<12xf32>, tensor<12xf32> -> tensor<2x12xf32>
  %y = fx.placeholder "y" : tensor<3x6xf32>
  %c, %d, %e = torch.split %y sections [2, 2, 2] dim 1 : tensor<3x6xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %wa = torch.reshape %c shape [6] : tensor<3x2xf32> -> tensor<6xf32>
  %wb = torch.reshape %d shape [6] : tensor<3x2xf32> -> tensor<6xf32>
  %wc = torch.reshape %e shape [6] : tensor<3x2xf32> -> tensor<6xf32>
  %t = torch.stack %wa, %wb, %wc dim 0 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<3x6xf32>
  %tr = torch.relu %t : tensor<3x6xf32> -> tensor<3x6xf32>
  %wr = torch.relu %wb : tensor<6xf32> -> tensor<6xf32>
  fx.output (%s, %tr, %wr)
}
