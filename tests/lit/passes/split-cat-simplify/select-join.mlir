// RUN: optimus-opt %s -p split-cat-simplify,dce --split-input-file | filecheck %s
// RUN: optimus-opt %s -p split-cat-simplify --split-input-file --remarks --verify-diagnostics

// Issue 21 item 6: consecutive selects of one tensor joined on another dim
// than theirs (`torch.cat([x[:, 0], x[:, 1], x[:, 2]], 1)`): one view of
// the tensor, or one copy of it.

// cat of all the selects on dim 1, read by a pointwise op: x.flatten(1, 2).

// CHECK-LABEL: fx.graph @cat_all
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[F:.*]] = torch.flatten %x start_dim 1 end_dim 2 : tensor<2x3x5xf32> -> tensor<2x15xf32>
// CHECK-NEXT:    %r = torch.relu %[[F]]
// CHECK-NEXT:    fx.output %r
fx.graph @cat_all {
  %x = fx.placeholder "x" : tensor<2x3x5xf32>
  %a = torch.select %x dim 1 index 0 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %b = torch.select %x dim 1 index 1 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %c = torch.select %x dim 1 index 2 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %j = torch.cat %a, %b, %c dim 1 : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x15xf32>
  %r = torch.relu %j : tensor<2x15xf32> -> tensor<2x15xf32>
  fx.output %r
}

// -----

// Returned: a view would alias the input, so one copy of it (cat of one
// tensor). Some of the selects: a slice first (3 ops for 4). Two selects
// would give 3 ops for 3: left alone.

// CHECK-LABEL: fx.graph @cat_some_returned
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[S:.*]] = torch.slice %x dim 1 start 1 end 4 : tensor<2x5x5xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT:    %[[F:.*]] = torch.flatten %[[S]] start_dim 1 end_dim 2 : tensor<2x3x5xf32> -> tensor<2x15xf32>
// CHECK-NEXT:    %[[C:.*]] = torch.cat %[[F]] dim 0 : tensor<2x15xf32> -> tensor<2x15xf32>
// CHECK-NEXT:    %d = torch.select %x dim 1 index 1
// CHECK-NEXT:    %e = torch.select %x dim 1 index 2
// CHECK-NEXT:    %k = torch.cat %d, %e dim 1
// CHECK-NEXT:    fx.output (%[[C]], %k)
fx.graph @cat_some_returned {
  %x = fx.placeholder "x" : tensor<2x5x5xf32>
  %a = torch.select %x dim 1 index 1 : tensor<2x5x5xf32> -> tensor<2x5xf32>
  %b = torch.select %x dim 1 index 2 : tensor<2x5x5xf32> -> tensor<2x5xf32>
  %c = torch.select %x dim 1 index 3 : tensor<2x5x5xf32> -> tensor<2x5xf32>
  %j = torch.cat %a, %b, %c dim 1 : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x15xf32>
  %d = torch.select %x dim 1 index 1 : tensor<2x5x5xf32> -> tensor<2x5xf32>
  %e = torch.select %x dim 1 index 2 : tensor<2x5x5xf32> -> tensor<2x5xf32>
  %k = torch.cat %d, %e dim 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x10xf32>
  fx.output (%j, %k)
}

// -----

// stack on another dim: a movedim (a strided view, fine for relu).

// CHECK-LABEL: fx.graph @stack_moved
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %x source [0] destination [1] : tensor<3x4xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %r = torch.relu %[[M]]
fx.graph @stack_moved {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %a = torch.select %x dim 0 index 0 : tensor<3x4xf32> -> tensor<4xf32>
  %b = torch.select %x dim 0 index 1 : tensor<3x4xf32> -> tensor<4xf32>
  %c = torch.select %x dim 0 index 2 : tensor<3x4xf32> -> tensor<4xf32>
  %j = torch.stack %a, %b, %c dim 1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x3xf32>
  %r = torch.relu %j : tensor<4x3xf32> -> tensor<4x3xf32>
  fx.output %r
}

// -----

// Left alone: selects out of order, of two tensors, not touching, and (with
// a remark) selects of a tensor written in place.

// CHECK-LABEL: fx.graph @left_alone
// CHECK:         torch.cat %b, %a dim 1
// CHECK:         torch.cat %a, %y0 dim 1
// CHECK:         torch.cat %a, %c dim 1
// CHECK:         torch.cat %z0, %z1 dim 1
fx.graph @left_alone {
  %x = fx.placeholder "x" : tensor<2x3x5xf32>
  %y = fx.placeholder "y" : tensor<2x3x5xf32>
  %z = fx.placeholder "z" : tensor<2x3x5xf32>
  %a = torch.select %x dim 1 index 0 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %b = torch.select %x dim 1 index 1 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %c = torch.select %x dim 1 index 2 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %y0 = torch.select %y dim 1 index 1 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %j1 = torch.cat %b, %a dim 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x10xf32>
  %j2 = torch.cat %a, %y0 dim 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x10xf32>
  %j3 = torch.cat %a, %c dim 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x10xf32>
  %z0 = torch.select %z dim 1 index 0 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %z1 = torch.select %z dim 1 index 1 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  // expected-remark@+1 {{join-of-slices: torch.cat of selects left alone: a view would alias their source}}
  %j4 = torch.cat %z0, %z1 dim 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x10xf32>
  %m = fx.call_method "add_"(%z, 1) : tensor<2x3x5xf32>
  fx.output (%j1, %j2, %j3, %j4)
}

// -----

// `cat([x[:, i].unsqueeze(1) for i in range(3)], 1)`: each unsqueeze of a
// select on its dim is a size-1 slice, and a cat of all of them is x itself.
// Left alone: a select with another user, an unsqueeze on another dim.

// CHECK-LABEL: fx.graph @unsqueezed_selects
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %r = torch.relu %x : tensor<2x3x5xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT:    %d = torch.select %x dim 1 index 0
// CHECK-NEXT:    %ud = torch.unsqueeze %d dim 1
// CHECK-NEXT:    %e = torch.select %x dim 1 index 1
// CHECK-NEXT:    %ue = torch.unsqueeze %e dim 0
// CHECK-NEXT:    fx.output (%r, %ud, %d, %ue)
fx.graph @unsqueezed_selects {
  %x = fx.placeholder "x" : tensor<2x3x5xf32>
  %a = torch.select %x dim 1 index 0 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %b = torch.select %x dim 1 index 1 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %c = torch.select %x dim 1 index 2 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %ua = torch.unsqueeze %a dim 1 : tensor<2x5xf32> -> tensor<2x1x5xf32>
  %ub = torch.unsqueeze %b dim 1 : tensor<2x5xf32> -> tensor<2x1x5xf32>
  %uc = torch.unsqueeze %c dim 1 : tensor<2x5xf32> -> tensor<2x1x5xf32>
  %j = torch.cat %ua, %ub, %uc dim 1 : tensor<2x1x5xf32>, tensor<2x1x5xf32>, tensor<2x1x5xf32> -> tensor<2x3x5xf32>
  %r = torch.relu %j : tensor<2x3x5xf32> -> tensor<2x3x5xf32>
  %d = torch.select %x dim 1 index 0 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %ud = torch.unsqueeze %d dim 1 : tensor<2x5xf32> -> tensor<2x1x5xf32>
  %e = torch.select %x dim 1 index 1 : tensor<2x3x5xf32> -> tensor<2x5xf32>
  %ue = torch.unsqueeze %e dim 0 : tensor<2x5xf32> -> tensor<1x2x5xf32>
  fx.output (%r, %ud, %d, %ue)
}
