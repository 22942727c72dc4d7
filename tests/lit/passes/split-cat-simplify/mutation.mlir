// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// In-place writes block every rewrite that would change aliasing: on a piece
// (upstream #122379), on the input, a copy_ into the input, a setitem.

// The cat stays a copy, at the same point (after the write); the pieces may
// still be regrouped, as that keeps them views of the same storage.

// CHECK-LABEL: fx.graph @inplace_on_piece
// CHECK:         %a = torch.slice %y dim 1 start 0 end 2
// CHECK-NEXT:    %m = fx.call_method "add_"(%a, 1)
// CHECK-NEXT:    %k = torch.cat %y dim 1
// CHECK-NEXT:    %r = torch.relu %k
fx.graph @inplace_on_piece {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = torch.tanh %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %a, %b = torch.split %y sections [2, 2] dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %m = fx.call_method "add_"(%a, 1) : tensor<3x2xf32>
  %k = torch.cat %a, %b dim 1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
  %r = torch.relu %k : tensor<3x4xf32> -> tensor<3x4xf32>
  fx.output %r
}

// -----

// CHECK-LABEL: fx.graph @inplace_on_input_after
// CHECK:         %k = torch.cat %y dim 1
// CHECK-NEXT:    %m = fx.call_function "torch.ops.aten.mul_.Tensor"(%y, %y)
fx.graph @inplace_on_input_after {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = torch.tanh %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %a, %b = torch.split %y sections [2, 2] dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %k = torch.cat %a, %b dim 1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
  %m = fx.call_function "torch.ops.aten.mul_.Tensor"(%y, %y) : tensor<3x4xf32>
  %r = torch.relu %k : tensor<3x4xf32> -> tensor<3x4xf32>
  fx.output (%r, %m)
}

// -----

// A write to a view of the input (a slice of it) counts too.

// CHECK-LABEL: fx.graph @copy_into_view_of_input
// CHECK:         %s = torch.stack %u, %v dim 0
// CHECK:         fx.call_method "copy_"(%w, %z)
fx.graph @copy_into_view_of_input {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %z = fx.placeholder "z" : tensor<4xf32>
  %y = torch.tanh %x : tensor<2x4xf32> -> tensor<2x4xf32>
  %u, %v = torch.unbind %y dim 0 : tensor<2x4xf32> -> tensor<4xf32>, tensor<4xf32>
  %s = torch.stack %u, %v dim 0 : tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %w = torch.select %y dim 0 index 1 : tensor<2x4xf32> -> tensor<4xf32>
  %c = fx.call_method "copy_"(%w, %z) : tensor<4xf32>
  %r = torch.relu %s : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output %r
}

// -----

// A write to the cat result (the fresh copy) blocks too: it must not reach
// the input.

// CHECK-LABEL: fx.graph @write_to_result
// CHECK:         %k = torch.cat %y dim 1
// CHECK-NEXT:    %q = fx.call_function "operator.setitem"(%k, 0, 1.0)
fx.graph @write_to_result {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = torch.tanh %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %a, %b = torch.split %y sections [2, 2] dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %k = torch.cat %a, %b dim 1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
  %q = fx.call_function "operator.setitem"(%k, 0, 1.0) : !fx.value
  %r = torch.relu %y : tensor<3x4xf32> -> tensor<3x4xf32>
  fx.output (%k, %r)
}

// -----

// Rewrites that keep every piece a view of the same storage are fine even
// with writes: split of a split stays one split.

// CHECK-LABEL: fx.graph @view_preserving_with_write
// CHECK:         %a, %c, %d = torch.split %y sections [1, 1, 2] dim 1
// CHECK-NEXT:    %m = fx.call_method "add_"(%c, 1)
fx.graph @view_preserving_with_write {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = torch.tanh %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %a, %b = torch.split %y sections [1, 3] dim 1 : tensor<3x4xf32> -> tensor<3x1xf32>, tensor<3x3xf32>
  %c, %d = torch.split %b sections [1, 2] dim 1 : tensor<3x3xf32> -> tensor<3x1xf32>, tensor<3x2xf32>
  %m = fx.call_method "add_"(%c, 1) : tensor<3x1xf32>
  fx.output (%a, %d, %y)
}
