// RUN: optimus-opt %s -p raise-fx,split-cat-simplify,dce --split-input-file | filecheck %s

// Known upstream failure modes of Inductor's split_cat passes, from the fx
// spellings (raise-fx normalizes dims, so the patterns see one form).

// pytorch/pytorch#102950: un-normalized cat(dim=-1) of split(dim=-1) pieces
// must not crash; #121227: negative dims must not give wrong values (dim -1
// of a 3-d tensor is dim 2, not dim 1): the cat on -1 is the input, the cat
// on -2 (another dim, dim 1) becomes the view chain over dim 2's pieces.

// CHECK-LABEL: fx.graph @negative_dims
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %k1 = torch.unflatten %y dim 2 sizes [2, 2]
// CHECK-NEXT:    %k1_1 = torch.movedim %k1 source [1] destination [2]
// CHECK-NEXT:    %k1v = torch.reshape %k1_1 shape [2, 4, 4]
// CHECK-NEXT:    %r = torch.add %y, %k1v
// CHECK-NEXT:    fx.output %r
fx.graph @negative_dims {
  %x = fx.placeholder "x" : tensor<2x4x4xf32>
  %y = fx.call_function "torch.tanh"(%x) : tensor<2x4x4xf32>
  %s = fx.call_function "torch.functional.split"(%y, 2, dim = -1) : tuple<tensor<2x4x2xf32>, tensor<2x4x2xf32>>
  %a = fx.call_function "operator.getitem"(%s, 0) : tensor<2x4x2xf32>
  %b = fx.call_function "operator.getitem"(%s, 1) : tensor<2x4x2xf32>
  %k = fx.call_function "torch.cat"([%a, %b], dim = -1) : tensor<2x4x4xf32>
  %a1 = fx.call_function "operator.getitem"(%s, 0) : tensor<2x4x2xf32>
  %b1 = fx.call_function "operator.getitem"(%s, 1) : tensor<2x4x2xf32>
  %k1 = fx.call_function "torch.cat"([%a1, %b1], dim = -2) : tensor<2x8x2xf32>
  %k1v = fx.call_method "view"(%k1, 2, 4, 4) : tensor<2x4x4xf32>
  %r = fx.call_function "torch.add"(%k, %k1v) : tensor<2x4x4xf32>
  fx.output %r
}

// -----

// pytorch/pytorch#121228: a stack of part of an unbind keeps its own shape.

// CHECK-LABEL: fx.graph @partial_unbind_stack
// CHECK:         %s = torch.slice %y dim 0 start 0 end 2 : tensor<3x4xf32, "cpu"> -> tensor<2x4xf32, "cpu">
// CHECK-NEXT:    %r = torch.relu %s : tensor<2x4xf32, "cpu">
fx.graph @partial_unbind_stack {
  %x = fx.placeholder "x" : tensor<3x4xf32, "cpu">
  %y = fx.call_function "torch.sigmoid"(%x) : tensor<3x4xf32, "cpu">
  %u = fx.call_function "torch.unbind"(%y, -2) : tuple<tensor<4xf32, "cpu">, tensor<4xf32, "cpu">, tensor<4xf32, "cpu">>
  %u0 = fx.call_function "operator.getitem"(%u, 0) : tensor<4xf32, "cpu">
  %u1 = fx.call_function "operator.getitem"(%u, 1) : tensor<4xf32, "cpu">
  %s = fx.call_function "torch.stack"([%u0, %u1]) : tensor<2x4xf32, "cpu">
  %r = fx.call_function "torch.relu"(%s) : tensor<2x4xf32, "cpu">
  fx.output %r
}

// -----

// pytorch/pytorch#122379: a normalized split + cat with an in-place write to
// a piece: the cat stays a copy after the write, with the right shape.

// CHECK-LABEL: fx.graph @mutated_piece
// CHECK:         %m = fx.call_method "add_"(%a, 1)
// CHECK-NEXT:    %k = torch.cat %y dim 0 : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    fx.output (%k, %y)
fx.graph @mutated_piece {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %y = fx.call_function "torch.exp"(%x) : tensor<4x3xf32>
  %s = fx.call_method "split"(%y, 2) : tuple<tensor<2x3xf32>, tensor<2x3xf32>>
  %a = fx.call_function "operator.getitem"(%s, 0) : tensor<2x3xf32>
  %b = fx.call_function "operator.getitem"(%s, 1) : tensor<2x3xf32>
  %m = fx.call_method "add_"(%a, 1) : tensor<2x3xf32>
  %k = fx.call_function "torch.cat"([%a, %b]) : tensor<4x3xf32>
  fx.output (%k, %y)
}
