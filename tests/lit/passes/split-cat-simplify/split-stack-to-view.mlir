// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s
// RUN: optimus-opt %s -p split-cat-simplify,dce --split-input-file | filecheck %s --check-prefix=DCE

// split on dim 1 -> stack on dim 0: unflatten + movedim of the input.

// CHECK-LABEL: fx.graph @split_stack
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[U:.*]] = torch.unflatten %x dim 1 sizes [4, 4] : tensor<3x16xf32> -> tensor<3x4x4xf32>
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %[[U]] {{.*}} -> tensor<4x3x4xf32>
// CHECK-NEXT:    %r = torch.relu %[[M]]
// CHECK-NEXT:    fx.output %r
fx.graph @split_stack {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %s = torch.stack %a, %b, %c, %d dim 0 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<4x3x4xf32>
  %r = torch.relu %s : tensor<4x3x4xf32> -> tensor<4x3x4xf32>
  fx.output %r
}

// -----

// stack on the split dim: a single unflatten. unbind -> stack on another dim: a movedim.

// CHECK-LABEL: fx.graph @same_dim_and_unbind
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[U:.*]] = torch.unflatten %x dim 1 sizes [4, 4] : tensor<3x16xf32> -> tensor<3x4x4xf32>
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %x {{.*}} : tensor<3x16xf32> -> tensor<16x3xf32>
// CHECK-NEXT:    %r = torch.relu %[[U]]
// CHECK-NEXT:    %q = torch.relu %[[M]]
fx.graph @same_dim_and_unbind {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %s = torch.stack %a, %b, %c, %d dim 1 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4x4xf32>
  %u:16 = torch.unbind %x dim 1 : tensor<3x16xf32> -> tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  %t = torch.stack %u#0, %u#1, %u#2, %u#3, %u#4, %u#5, %u#6, %u#7, %u#8, %u#9, %u#10, %u#11, %u#12, %u#13, %u#14, %u#15 dim 0 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<16x3xf32>
  %r = torch.relu %s : tensor<3x4x4xf32> -> tensor<3x4x4xf32>
  %q = torch.relu %t : tensor<16x3xf32> -> tensor<16x3xf32>
  fx.output (%r, %q)
}

// -----

// Other stack inputs stay, unsqueezed; the stack becomes a cat.

// CHECK-LABEL: fx.graph @foreign
// CHECK:         %[[F:.*]] = torch.unsqueeze %y dim 0
// CHECK:         torch.unflatten %x dim 1 sizes [5, 2]
// CHECK:         torch.cat %[[F]], %{{.*}} dim 0 : tensor<1x3x2xf32>, tensor<5x3x2xf32> -> tensor<6x3x2xf32>
// CHECK-NOT:     torch.stack
fx.graph @foreign {
  %x = fx.placeholder "x" : tensor<3x10xf32>
  %y = fx.placeholder "y" : tensor<3x2xf32>
  %a, %b, %c, %d, %e = torch.split %x sections [2, 2, 2, 2, 2] dim 1 : tensor<3x10xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %s = torch.stack %y, %a, %b, %c, %d, %e dim 0 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<6x3x2xf32>
  %r = torch.relu %s : tensor<6x3x2xf32> -> tensor<6x3x2xf32>
  fx.output %r
}

// -----

// The stack is a graph output: a view of the input would alias it, so the
// view chain and one copy (cat of one tensor) stand for it. Left alone: the
// source is written in place, a piece has another user.

// CHECK-LABEL: fx.graph @left_alone
// CHECK:         %[[U:.*]] = torch.unflatten %x dim 1 sizes [4, 2]
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %[[U]]
// CHECK-NEXT:    %[[C:.*]] = torch.cat %[[M]] dim 0 : tensor<4x3x2xf32> -> tensor<4x3x2xf32>
// CHECK:         torch.stack %e, %f, %g, %h
// CHECK:         torch.stack %i, %j
// CHECK:         fx.output (%[[C]], %tr, %ur, %jr, %k, %l)
fx.graph @left_alone {
  %x = fx.placeholder "x" : tensor<3x8xf32>
  %a, %b, %c, %d = torch.split %x sections [2, 2, 2, 2] dim 1 : tensor<3x8xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %s = torch.stack %a, %b, %c, %d dim 0 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<4x3x2xf32>
  %z = fx.placeholder "z" : tensor<3x8xf32>
  %e, %f, %g, %h = torch.split %z sections [2, 2, 2, 2] dim 1 : tensor<3x8xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %t = torch.stack %e, %f, %g, %h dim 0 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<4x3x2xf32>
  %m = fx.call_method "add_"(%z, 1) : tensor<3x8xf32>
  %tr = torch.relu %t : tensor<4x3x2xf32> -> tensor<4x3x2xf32>
  %w = fx.placeholder "w" : tensor<3x8xf32>
  %i, %j, %k, %l = torch.split %w sections [2, 2, 2, 2] dim 1 : tensor<3x8xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %u = torch.stack %i, %j dim 0 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<2x3x2xf32>
  %ur = torch.relu %u : tensor<2x3x2xf32> -> tensor<2x3x2xf32>
  %jr = torch.relu %j : tensor<3x2xf32> -> tensor<3x2xf32>
  fx.output (%s, %tr, %ur, %jr, %k, %l)
}

// -----

// Fuzzer regression: a rewrite built its views and then was not made (the
// stack's alias check refused it); the unused ops still counted as uses of
// %ln, so dce kept it and lower-to-fx failed to erase it.

// DCE-LABEL: fx.graph @abandoned_rewrite_leaves_no_uses
// DCE-NEXT:    %x = fx.placeholder "x"
// DCE-NEXT:    fx.output (%x,)
fx.graph @abandoned_rewrite_leaves_no_uses {
  %x = fx.placeholder "x" : tensor<2x2xf32>
  %ln = torch.layer_norm %x normalized_shape [2] : tensor<2x2xf32> -> tensor<2x2xf32>
  %a, %b = torch.split %ln sections [1, 1] dim 0 : tensor<2x2xf32> -> tensor<1x2xf32>, tensor<1x2xf32>
  %s = torch.stack %a, %b dim 2 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2x2xf32>
  %g = torch.gelu %s : tensor<1x2x2xf32> -> tensor<1x2x2xf32>
  fx.output (%x,)
}
