// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// Inverse permutes, transposes and movedims cancel; reshape of reshape is
// one reshape; unflatten then flatten of the same dims is the input; a
// view of a view stays a view; no-op views go.

// CHECK-LABEL: fx.graph @cancel
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[R:.*]] = torch.reshape %x shape [4, 6] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[V:.*]] = torch.view %x shape [24] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT:    %{{.*}} = torch.tanh %x
// CHECK-NEXT:    %{{.*}} = torch.tanh %x
// CHECK-NEXT:    %{{.*}} = torch.tanh %x
// CHECK-NEXT:    %{{.*}} = torch.tanh %[[R]]
// CHECK-NEXT:    %{{.*}} = torch.tanh %[[V]]
// CHECK-NEXT:    %{{.*}} = torch.tanh %x
// CHECK-NEXT:    %{{.*}} = torch.tanh %x
// CHECK-NEXT:    fx.output
fx.graph @cancel {
  %x = fx.placeholder "x" : tensor<2x3x4xf32>
  %p0 = torch.permute %x dims [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %p1 = torch.permute %p0 dims [1, 2, 0] : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  %t0 = torch.transpose %x dim0 0 dim1 1 : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %t1 = torch.transpose %t0 dim0 1 dim1 0 : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %m0 = torch.movedim %x source [0] destination [2] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %m1 = torch.movedim %m0 source [2] destination [0] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  %r0 = torch.reshape %x shape [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %r1 = torch.reshape %r0 shape [4, 6] : tensor<6x4xf32> -> tensor<4x6xf32>
  %v0 = torch.view %x shape [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %v1 = torch.view %v0 shape [24] : tensor<6x4xf32> -> tensor<24xf32>
  %u = torch.unflatten %x dim 2 sizes [2, 2] : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %f = torch.flatten %u start_dim 2 end_dim 3 : tensor<2x3x2x2xf32> -> tensor<2x3x4xf32>
  %same = torch.view %x shape [2, 3, 4] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %o0 = torch.tanh %p1 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %o1 = torch.tanh %t1 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %o2 = torch.tanh %m1 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %o3 = torch.tanh %r1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %o4 = torch.tanh %v1 : tensor<24xf32> -> tensor<24xf32>
  %o5 = torch.tanh %f : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %o6 = torch.tanh %same : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  fx.output (%o0, %o1, %o2, %o3, %o4, %o5, %o6)
}

// -----

// Returned views are new tensor objects in eager: a view of an input, or
// of a value returned too, that does nothing (or a chain that folds to
// nothing: one view to the same shape then) is kept, so the graph never
// returns the caller's tensor object or one object twice. A returned no-op
// view of an intermediate that is not returned otherwise still goes.

// CHECK-LABEL: fx.graph @returned_views_stay_views
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %same = torch.view %x shape [2, 3, 4]
// CHECK-NEXT:    %t1 = torch.view %x shape [2, 3, 4]
// CHECK-NEXT:    %h = torch.relu %x
// CHECK-NEXT:    %again = torch.view %h shape [2, 3, 4]
// CHECK-NEXT:    %k = torch.relu %x
// CHECK-NEXT:    fx.output (%same, %t1, %h, %again, %k)
fx.graph @returned_views_stay_views {
  %x = fx.placeholder "x" : tensor<2x3x4xf32>
  %same = torch.view %x shape [2, 3, 4] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %t0 = torch.transpose %x dim0 0 dim1 1 : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %t1 = torch.transpose %t0 dim0 1 dim1 0 : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %h = torch.relu %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %again = torch.view %h shape [2, 3, 4] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %k = torch.relu %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %gone = torch.view %k shape [2, 3, 4] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  fx.output (%same, %t1, %h, %again, %gone)
}

// -----

// Left alone: a real transpose; a reshape chain that may copy while the
// source is written in place; a chain whose inner op has another user and
// that does not cancel.

// CHECK-LABEL: fx.graph @left_alone
// CHECK:         %t = torch.transpose %x
// CHECK:         %r0 = torch.reshape %t shape [12]
// CHECK:         %r1 = torch.reshape %r0 shape [4, 3]
// CHECK:         %v0 = torch.view %y shape [12]
// CHECK:         %v1 = torch.view %v0 shape [2, 6]
fx.graph @left_alone {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %t = torch.transpose %x dim0 0 dim1 1 : tensor<4x3xf32> -> tensor<3x4xf32>
  %r0 = torch.reshape %t shape [12] : tensor<3x4xf32> -> tensor<12xf32>
  %r1 = torch.reshape %r0 shape [4, 3] : tensor<12xf32> -> tensor<4x3xf32>
  %w = fx.call_method "add_"(%x, 1) : tensor<4x3xf32>
  %y = fx.placeholder "y" : tensor<3x4xf32>
  %v0 = torch.view %y shape [12] : tensor<3x4xf32> -> tensor<12xf32>
  %v1 = torch.view %v0 shape [2, 6] : tensor<12xf32> -> tensor<2x6xf32>
  fx.output (%t, %r1, %v0, %v1)
}

// -----

// Left alone: a returned reshape chain that may copy. `x.t()` is not
// viewable as [24], so the chain returns a fresh copy; folded to `%t` it
// would return a view of the input (a write into it would reach `x`).

// CHECK-LABEL: fx.graph @returned_copying_chain
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %t = torch.transpose %x dim0 0 dim1 1
// CHECK-NEXT:    %r0 = torch.reshape %t shape [24]
// CHECK-NEXT:    %r1 = torch.reshape %r0 shape [6, 4]
// CHECK-NEXT:    fx.output %r1
fx.graph @returned_copying_chain {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %t = torch.transpose %x dim0 0 dim1 1 : tensor<4x6xf32> -> tensor<6x4xf32>
  %r0 = torch.reshape %t shape [24] : tensor<6x4xf32> -> tensor<24xf32>
  %r1 = torch.reshape %r0 shape [6, 4] : tensor<24xf32> -> tensor<6x4xf32>
  fx.output %r1
}
