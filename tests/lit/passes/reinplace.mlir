// RUN: optimus-opt %s -p reinplace --split-input-file | filecheck %s
// RUN: optimus-opt %s -p reinplace{target=inductor} --split-input-file | filecheck %s --check-prefix=INDUCTOR

// Out-of-place calls whose first operand is fresh storage of this graph and
// dies there become grad-guarded in-place calls; a chain of them keeps
// writing the one storage (each result is owned by the pass).

// CHECK-LABEL: fx.graph @rewrites
// CHECK:         %h = fx.call_function "torch._C._nn.linear"(%x, %w, %b)
// CHECK-NEXT:    %before = fx.call_function "torch.sigmoid"(%h)
// CHECK-NEXT:    %r = fx.call_function "optimus_ir.kernels.inplace.torch__nn__functional__relu"(%h) :
// CHECK-NEXT:    %s = fx.call_function "optimus_ir.kernels.inplace._operator__add"(%r, 1) :
// CHECK-NEXT:    %a = fx.call_function "optimus_ir.kernels.inplace.torch__add"(%s, %y) :
// CHECK-NEXT:    %m = fx.call_function "optimus_ir.kernels.inplace.method__mul"(%a, 3.0) :
// CHECK-NEXT:    %t = fx.call_function "optimus_ir.kernels.inplace.torch__tanh"(%m) :
// CHECK-NEXT:    %g = fx.call_function "optimus_ir.kernels.inplace.torch__ops__aten__sigmoid__default"(%t) :
// CHECK-NEXT:    fx.output (%before, %g)
// INDUCTOR-LABEL: fx.graph @rewrites
// INDUCTOR-NOT:   optimus_ir.kernels.inplace
fx.graph @rewrites {
  %x = fx.placeholder "x" : tensor<2x3xf32>
  %y = fx.placeholder "y" : tensor<2x3xf32>
  %w = fx.get_attr "w" : tensor<3x3xf32>
  %b = fx.get_attr "b" : tensor<3xf32>
  %h = fx.call_function "torch._C._nn.linear"(%x, %w, %b) : tensor<2x3xf32>
  %before = fx.call_function "torch.sigmoid"(%h) : tensor<2x3xf32>
  %r = fx.call_function "torch.nn.functional.relu"(%h) : tensor<2x3xf32>
  %s = fx.call_function "_operator.add"(%r, 1) : tensor<2x3xf32>
  %a = fx.call_function "torch.add"(%s, %y) : tensor<2x3xf32>
  %m = fx.call_method "mul"(%a, 3.0) : tensor<2x3xf32>
  %t = fx.call_function "torch.tanh"(%m) : tensor<2x3xf32>
  %g = fx.call_function "torch.ops.aten.sigmoid.default"(%t) : tensor<2x3xf32>
  fx.output (%before, %g)
}

// -----

// What must stay out of place: an operand read later, an input, a
// parameter, a view (of a dead temporary too: the result would not have
// the out-of-place call's layout), an output, a call reading it twice, type
// promotion, broadcasting into a bigger result, an earlier view that is
// read after, a dropout (random), an `out=` call, and a call with another
// tensor operand where a dynamic dim could broadcast against it.

// CHECK-LABEL: fx.graph @keeps
// CHECK-NOT:     optimus_ir.kernels.inplace
// CHECK:         fx.output
fx.graph @keeps {
  %x = fx.placeholder "x" : tensor<2x3xf32>
  %w = fx.get_attr "w" : tensor<3x3xf32>
  %i = fx.placeholder "i" : tensor<2x3xi64>
  %h = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %live = fx.call_function "torch.relu"(%h) : tensor<2x3xf32>
  %later = fx.call_function "torch.sigmoid"(%h) : tensor<2x3xf32>
  %in = fx.call_function "torch.relu"(%x) : tensor<2x3xf32>
  %param = fx.call_function "torch.relu"(%w) : tensor<3x3xf32>
  %h2 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %view = fx.call_method "view"(%h2, 6) : tensor<6xf32>
  %v = fx.call_function "torch.relu"(%view) : tensor<6xf32>
  %h3 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %twice = fx.call_function "torch.mul"(%h3, %h3) : tensor<2x3xf32>
  %n = fx.call_function "torch.neg"(%i) : tensor<2x3xi64>
  %promoted = fx.call_function "_operator.truediv"(%n, 2) : tensor<2x3xf32>
  %h4 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %small = fx.call_function "torch.sum"(%h4, 0, true) : tensor<1x3xf32>
  %broadcast = fx.call_function "torch.add"(%small, %x) : tensor<2x3xf32>
  %h5 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %early_view = fx.call_function "torch.transpose"(%h5, 0, 1) : tensor<3x2xf32>
  %after_view = fx.call_function "torch.relu"(%h5) : tensor<2x3xf32>
  %read_view = fx.call_function "torch.sigmoid"(%early_view) : tensor<3x2xf32>
  %h6 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %drop = fx.call_function "torch.nn.functional.dropout"(%h6, 0.5, true) : tensor<2x3xf32>
  %h7 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %out = fx.call_function "torch.relu"(%h7, out = %x) : tensor<2x3xf32>
  %h8 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %row = fx.call_function "torch.sum"(%h8, 0, true) : tensor<1x3xf32>
  %h9 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x3xf32>
  %col = fx.call_function "torch.sum"(%h9, 1, true) : tensor<2x1xf32>
  %d = fx.placeholder "d" : tensor<?x3xf32>
  %e = fx.placeholder "e" : tensor<?x3xf32>
  %dyn = fx.call_function "torch.exp"(%d) : tensor<?x3xf32>
  %dynamic = fx.call_function "torch.sub"(%dyn, %e) : tensor<?x3xf32>
  fx.output (%live, %later, %in, %param, %v, %twice, %promoted, %broadcast, %after_view, %read_view, %drop, %out, %col, %row, %dynamic, %h)
}

// -----

// Size-1 dims do not keep a call out of place (`logit += x` on a [B, 1]
// logit, deepctr's DeepFM): only their strides could differ, which the
// layout contract ignores. A dynamic dim of a one-tensor call is fine too.

// CHECK-LABEL: fx.graph @size_one_and_dynamic
// CHECK:         %l = fx.call_method "new_zeros"(%x, [4, 1])
// CHECK-NEXT:    %l1 = fx.call_function "optimus_ir.kernels.inplace._operator__add"(%l, %y) :
// CHECK-NEXT:    %l2 = fx.call_function "optimus_ir.kernels.inplace._operator__add"(%l1, %y) :
// CHECK-NEXT:    %e = fx.call_function "torch.exp"(%d)
// CHECK-NEXT:    %r = fx.call_function "optimus_ir.kernels.inplace.torch__relu"(%e) :
fx.graph @size_one_and_dynamic {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %y = fx.placeholder "y" : tensor<4x1xf32>
  %d = fx.placeholder "d" : tensor<?x3xf32>
  %l = fx.call_method "new_zeros"(%x, [4, 1]) : tensor<4x1xf32>
  %l1 = fx.call_function "_operator.add"(%l, %y) : tensor<4x1xf32>
  %l2 = fx.call_function "_operator.add"(%l1, %y) : tensor<4x1xf32>
  %e = fx.call_function "torch.exp"(%d) : tensor<?x3xf32>
  %r = fx.call_function "torch.relu"(%e) : tensor<?x3xf32>
  fx.output (%l2, %r)
}

// -----

// Rows of a stack nobody else sees (issue 37, a layer norm's stacked result
// cut into its activations' slices): every reader of the fresh stack views
// constant rows along dim 0 and no two meet, so each slice's activation is
// written in place into the stack's storage, and a chain goes on writing it.

// CHECK-LABEL: fx.graph @rows_of_a_stack
// CHECK:         %s = fx.call_function "torch.bmm"(%a, %b)
// CHECK-NEXT:    %s0 = fx.call_function "_operator.getitem"(%s, (slice(0, 2, 1),))
// CHECK-NEXT:    %y0 = fx.call_function "optimus_ir.kernels.inplace.torch__tanh"(%s0) :
// CHECK-NEXT:    %s1 = fx.call_function "_operator.getitem"(%s, (slice(2, 3, 1), slice(none, none, none)))
// CHECK-NEXT:    %y1 = fx.call_function "optimus_ir.kernels.inplace.torch__relu"(%s1) :
// CHECK-NEXT:    %z1 = fx.call_function "optimus_ir.kernels.inplace.torch__mul"(%y1, 2.0) :
// CHECK-NEXT:    %s2 = fx.call_function "_operator.getitem"(%s, -1)
// CHECK-NEXT:    %y2 = fx.call_function "optimus_ir.kernels.inplace.torch__sigmoid"(%s2) :
// CHECK-NEXT:    %j = fx.call_function "torch.cat"([%y0, %z1], 0)
fx.graph @rows_of_a_stack {
  %a = fx.placeholder "a" : tensor<4x5x6xf32>
  %b = fx.placeholder "b" : tensor<4x6x3xf32>
  %s = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %s0 = fx.call_function "_operator.getitem"(%s, (slice(0, 2, 1),)) : tensor<2x5x3xf32>
  %y0 = fx.call_function "torch.tanh"(%s0) : tensor<2x5x3xf32>
  %s1 = fx.call_function "_operator.getitem"(%s, (slice(2, 3, 1), slice(none, none, none))) : tensor<1x5x3xf32>
  %y1 = fx.call_function "torch.relu"(%s1) : tensor<1x5x3xf32>
  %z1 = fx.call_function "torch.mul"(%y1, 2.0) : tensor<1x5x3xf32>
  %s2 = fx.call_function "_operator.getitem"(%s, -1) : tensor<5x3xf32>
  %y2 = fx.call_function "torch.sigmoid"(%s2) : tensor<5x3xf32>
  %j = fx.call_function "torch.cat"([%y0, %z1], 0) : tensor<3x5x3xf32>
  %k = fx.call_function "torch.sum"(%y2) : tensor<f32>
  fx.output (%j, %k)
}

// -----

// Rows that stay out of place: rows another reader's rows meet, a stack
// also read whole, a stack whose rows are not contiguous (a transposed
// result: the in-place result would keep the slice's gaps), rows of a
// graph input, rows of step 2, and rows whose activation reaches the
// output, itself or through a view (the outputs would share the stack's
// storage).

// CHECK-LABEL: fx.graph @rows_that_stay
// CHECK-NOT:     optimus_ir.kernels.inplace
// CHECK:         fx.output
fx.graph @rows_that_stay {
  %a = fx.placeholder "a" : tensor<4x5x6xf32>
  %b = fx.placeholder "b" : tensor<4x6x3xf32>
  %s = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %s0 = fx.call_function "_operator.getitem"(%s, (slice(0, 2, 1),)) : tensor<2x5x3xf32>
  %y0 = fx.call_function "torch.tanh"(%s0) : tensor<2x5x3xf32>
  %s1 = fx.call_function "_operator.getitem"(%s, (slice(1, 3, 1),)) : tensor<2x5x3xf32>
  %y1 = fx.call_function "torch.relu"(%s1) : tensor<2x5x3xf32>
  %t = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %t0 = fx.call_function "_operator.getitem"(%t, (slice(0, 2, 1),)) : tensor<2x5x3xf32>
  %u0 = fx.call_function "torch.tanh"(%t0) : tensor<2x5x3xf32>
  %whole = fx.call_function "torch.sum"(%t) : tensor<f32>
  %p = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %pt = fx.call_function "torch.transpose"(%p, 0, 1) : tensor<5x4x3xf32>
  %q = fx.call_function "torch.mul"(%pt, 2.0) : tensor<5x4x3xf32>
  %q0 = fx.call_function "_operator.getitem"(%q, (slice(0, 2, 1),)) : tensor<2x4x3xf32>
  %v0 = fx.call_function "torch.tanh"(%q0) : tensor<2x4x3xf32>
  %a0 = fx.call_function "_operator.getitem"(%a, (slice(0, 2, 1),)) : tensor<2x5x6xf32>
  %w0 = fx.call_function "torch.tanh"(%a0) : tensor<2x5x6xf32>
  %r = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %r0 = fx.call_function "_operator.getitem"(%r, (slice(0, 4, 2),)) : tensor<2x5x3xf32>
  %x0 = fx.call_function "torch.tanh"(%r0) : tensor<2x5x3xf32>
  %o = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %o0 = fx.call_function "_operator.getitem"(%o, (slice(0, 2, 1),)) : tensor<2x5x3xf32>
  %out0 = fx.call_function "torch.tanh"(%o0) : tensor<2x5x3xf32>
  %o1 = fx.call_function "_operator.getitem"(%o, (slice(2, 4, 1),)) : tensor<2x5x3xf32>
  %out1 = fx.call_function "torch.relu"(%o1) : tensor<2x5x3xf32>
  %view1 = fx.call_function "torch.transpose"(%out1, 1, 2) : tensor<2x3x5xf32>
  %j = fx.call_function "torch.cat"([%y0, %y1, %u0, %x0], 0) : tensor<8x5x3xf32>
  %k = fx.call_function "torch.cat"([%v0, %v0], 0) : tensor<4x4x3xf32>
  %l = fx.call_function "torch.sum"(%w0) : tensor<f32>
  fx.output (%j, %k, %l, %whole, %out0, %view1)
}

// -----

// Pieces of a split along dim 0 are rows of the stack too (`slices-to-split`
// makes the slices of a fused result one split): each piece read by one
// getitem, no two pieces' rows meeting, so each activation is written in
// place into the stack's storage.

// CHECK-LABEL: fx.graph @pieces_of_a_stack
// CHECK:         %pieces = fx.call_function "torch.split_with_sizes"(%s, [2, 1, 1], 0)
// CHECK-NEXT:    %s0 = fx.call_function "_operator.getitem"(%pieces, 0)
// CHECK-NEXT:    %y0 = fx.call_function "optimus_ir.kernels.inplace.torch__tanh"(%s0) :
// CHECK-NEXT:    %s2 = fx.call_function "_operator.getitem"(%pieces, 2)
// CHECK-NEXT:    %y2 = fx.call_function "optimus_ir.kernels.inplace.torch__relu"(%s2) :
fx.graph @pieces_of_a_stack {
  %a = fx.placeholder "a" : tensor<4x5x6xf32>
  %b = fx.placeholder "b" : tensor<4x6x3xf32>
  %s = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %pieces = fx.call_function "torch.split_with_sizes"(%s, [2, 1, 1], 0) : tuple<tensor<2x5x3xf32>, tensor<1x5x3xf32>, tensor<1x5x3xf32>>
  %s0 = fx.call_function "_operator.getitem"(%pieces, 0) : tensor<2x5x3xf32>
  %y0 = fx.call_function "torch.tanh"(%s0) : tensor<2x5x3xf32>
  %s2 = fx.call_function "_operator.getitem"(%pieces, 2) : tensor<1x5x3xf32>
  %y2 = fx.call_function "torch.relu"(%s2) : tensor<1x5x3xf32>
  %j = fx.call_function "torch.cat"([%y0, %y2], 0) : tensor<3x5x3xf32>
  fx.output (%j)
}

// -----

// Pieces that stay out of place: a piece read by two getitems (both views
// of the same rows), pieces of a split along dim 1, pieces whose stack is
// also sliced over their rows, and pieces of a split whose tuple is read
// by something other than a getitem.

// CHECK-LABEL: fx.graph @pieces_that_stay
// CHECK-NOT:     optimus_ir.kernels.inplace
// CHECK:         fx.output
fx.graph @pieces_that_stay {
  %a = fx.placeholder "a" : tensor<4x5x6xf32>
  %b = fx.placeholder "b" : tensor<4x6x3xf32>
  %s = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %p = fx.call_function "torch.split_with_sizes"(%s, [2, 2], 0) : tuple<tensor<2x5x3xf32>, tensor<2x5x3xf32>>
  %p0 = fx.call_function "_operator.getitem"(%p, 0) : tensor<2x5x3xf32>
  %again = fx.call_function "_operator.getitem"(%p, 0) : tensor<2x5x3xf32>
  %y0 = fx.call_function "torch.tanh"(%p0) : tensor<2x5x3xf32>
  %t = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %q = fx.call_function "torch.split_with_sizes"(%t, [1, 4], 1) : tuple<tensor<4x1x3xf32>, tensor<4x4x3xf32>>
  %q0 = fx.call_function "_operator.getitem"(%q, 0) : tensor<4x1x3xf32>
  %y1 = fx.call_function "torch.tanh"(%q0) : tensor<4x1x3xf32>
  %u = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %r = fx.call_function "torch.split_with_sizes"(%u, [2, 2], 0) : tuple<tensor<2x5x3xf32>, tensor<2x5x3xf32>>
  %r0 = fx.call_function "_operator.getitem"(%r, 0) : tensor<2x5x3xf32>
  %y2 = fx.call_function "torch.tanh"(%r0) : tensor<2x5x3xf32>
  %u1 = fx.call_function "_operator.getitem"(%u, (slice(1, 3, 1),)) : tensor<2x5x3xf32>
  %w = fx.call_function "torch.bmm"(%a, %b) : tensor<4x5x3xf32>
  %v = fx.call_function "torch.split_with_sizes"(%w, [2, 2], 0) : tuple<tensor<2x5x3xf32>, tensor<2x5x3xf32>>
  %v0 = fx.call_function "_operator.getitem"(%v, 0) : tensor<2x5x3xf32>
  %y3 = fx.call_function "torch.tanh"(%v0) : tensor<2x5x3xf32>
  %j = fx.call_function "torch.cat"([%y0, %y2, %y3], 0) : tensor<6x5x3xf32>
  fx.output (%j, %again, %y1, %u1, %v)
}
