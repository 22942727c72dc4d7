// RUN: optimus-opt %s -p lower-batch --split-input-file | filecheck %s

// A pack of the equal, consecutive pieces of one split is a view of the
// split's input; a cat of all members in order is the stack moved and
// flattened (one copy, made by flatten; no single-tensor stack).
// CHECK-LABEL: fx.graph @pieces
// CHECK:         %[[U:.*]] = torch.unflatten %x dim 1 sizes [3, 16]
// CHECK-NEXT:    %s = torch.movedim %[[U]] source [1] destination [0]
// CHECK-NEXT:    %t = torch.clamp %s min -1.0 max 2.0
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %t source [0] destination [1]
// CHECK-NEXT:    %r = torch.flatten %[[M]] start_dim 1 end_dim 2
// CHECK-NOT:     torch.stack
// CHECK-NOT:     torch.cat
fx.graph @pieces {
  %x = fx.placeholder "x" : tensor<4x48xf32>
  %p0, %p1, %p2 = torch.split %x sections [16, 16, 16] dim 1 : tensor<4x48xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %s = batch.pack %p0, %p1, %p2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<3x4x16xf32>
  %t = batch.pointwise %s fn "torch.clamp" stacked [true] fn_properties {"max": 2.0, "min": -1.0} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %r = torch.cat %a, %b, %c dim 1 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x48xf32>
  fx.output %r
}

// -----

// Regularly spaced pieces (every other one) are a view too; no bias: bmm.
// CHECK-LABEL: fx.graph @strided_pieces
// CHECK:         %[[U:.*]] = torch.unflatten %x dim 1 sizes [2, 48]
// CHECK-NEXT:    %[[P:.*]] = torch.slice %[[U]] dim 2 start 16 end 48
// CHECK-NEXT:    %s = torch.movedim %[[P]] source [1] destination [0]
// CHECK:         %[[T:.*]] = torch.transpose %w dim0 1 dim1 2
// CHECK-NEXT:    torch.bmm %s, %[[T]]
// CHECK-NOT:     torch.stack
fx.graph @strided_pieces {
  %x = fx.placeholder "x" : tensor<4x96xf32>
  %p0, %q0, %p1, %q1 = torch.split %x sections [16, 32, 16, 32] dim 1 : tensor<4x96xf32> -> tensor<4x16xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<4x32xf32>
  %s = batch.pack %q0, %q1 : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<2x4x32xf32>
  %w = fx.get_attr "w" : tensor<2x8x32xf32>
  %y = batch.linear %s, %w : tensor<2x4x32xf32>, tensor<2x8x32xf32> -> tensor<2x4x8xf32>
  fx.output %y
}

// -----

// layer_norm without affine (marked `optimus.stacked`: lower-to-fx emits the
// kernel's faster path under autograd too), then the per-member weight and
// bias; every other member of a stack is a strided slice; members that are
// runs of stacks are one cat; an interleaving cat is one stack + flatten.
// CHECK-LABEL: fx.graph @layer_norm_and_regrouping
// CHECK:         %n = torch.layer_norm %x normalized_shape [8] {optimus.stacked} :
// CHECK-NEXT:    %[[G:.*]] = torch.reshape %g shape [4, 1, 8]
// CHECK-NEXT:    %[[MUL:.*]] = torch.mul %n, %[[G]]
// CHECK-NEXT:    %[[B:.*]] = torch.reshape %b shape [4, 1, 8]
// CHECK-NEXT:    %[[N:.*]] = torch.add %[[MUL]], %[[B]]
// CHECK-NEXT:    %even = torch.slice %[[N]] dim 0 start 0 end 3 step 2
// CHECK-NEXT:    %t = torch.tanh %even
// CHECK-NEXT:    %odd = torch.slice %[[N]] dim 0 start 1 end 4 step 2
// CHECK-NEXT:    %u = torch.relu %odd
// CHECK:         %all = torch.cat %t, %u dim 0
// CHECK:         torch.stack %{{.*}}, %{{.*}} dim 2 : tensor<4x2x8xf32>, tensor<4x2x8xf32> -> tensor<4x2x2x8xf32>
// CHECK-NEXT:    %c = torch.flatten
fx.graph @layer_norm_and_regrouping {
  %x = fx.placeholder "x" : tensor<4x4x8xf32>
  %g = fx.get_attr "g" : tensor<4x8xf32>
  %b = fx.get_attr "b" : tensor<4x8xf32>
  %n = batch.layer_norm %x normalized_shape [8] weight %g bias %b : tensor<4x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4x8xf32>
  %m0, %m1, %m2, %m3 = batch.unpack %n : tensor<4x4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  %even = batch.pack %m0, %m2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
  %t = batch.pointwise %even fn "torch.tanh" stacked [true] fn_properties {} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %odd = batch.pack %m1, %m3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
  %u = batch.pointwise %odd fn "torch.relu" stacked [true] fn_properties {} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %t0, %t1 = batch.unpack %t : tensor<2x4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %u0, %u1 = batch.unpack %u : tensor<2x4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %all = batch.pack %t0, %t1, %u0, %u1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4x8xf32>
  %c = torch.cat %t0, %u0, %t1, %u1 dim 1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x32xf32>
  fx.output (%all, %c)
}

// -----

// A pack that is written in place stays a fresh copy (a view would write x).
// CHECK-LABEL: fx.graph @written_pack_stays_a_copy
// CHECK:         %s = torch.stack %p0, %p1 dim 0
// CHECK-NOT:     torch.unflatten
fx.graph @written_pack_stays_a_copy {
  %x = fx.placeholder "x" : tensor<4x32xf32>
  %p0, %p1 = torch.split %x sections [16, 16] dim 1 : tensor<4x32xf32> -> tensor<4x16xf32>, tensor<4x16xf32>
  %s = batch.pack %p0, %p1 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<2x4x16xf32>
  %w = fx.call_method "add_"(%s, 1) : tensor<2x4x16xf32>
  fx.output %s
}

// -----

// Regular pieces whose last period is cut short: unfold windows (a view).
// CHECK-LABEL: fx.graph @cut_short
// CHECK:         %[[S:.*]] = torch.slice %x dim 1 start 0 end 64
// CHECK-NEXT:    %[[U:.*]] = torch.unfold %[[S]] dim 1 size 16 step 48 : tensor<4x64xf32> -> tensor<4x2x16xf32>
// CHECK-NEXT:    %s = torch.movedim %[[U]] source [1, 2] destination [0, 2] : tensor<4x2x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %t = torch.neg %s
fx.graph @cut_short {
  %x = fx.placeholder "x" : tensor<4x80xf32>
  %a, %b, %c, %d = torch.split %x sections [16, 32, 16, 16] dim 1 : tensor<4x80xf32> -> tensor<4x16xf32>, tensor<4x32xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %s = batch.pack %a, %c : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<2x4x16xf32>
  %t = batch.pointwise %s fn "torch.neg" stacked [true] fn_properties {} : tensor<2x4x16xf32> -> tensor<2x4x16xf32>
  fx.output %t
}

// -----

// Ragged groups: linears of widths 8, 12, 8, 12 on one input form two
// stacks whose members differ in size; a cat interleaving them cannot be a
// stack (its operands differ in shape): it is one cat of the moved stacks
// along the member dim, flattened. The tail member (width 16) stays a plain
// operand of the outer cat.
// CHECK-LABEL: fx.graph @ragged_interleaved_cat
// CHECK:         %[[A:.*]] = torch.movedim %{{.*}} source [0] destination [1] : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
// CHECK-NEXT:    %[[B:.*]] = torch.movedim %{{.*}} source [0] destination [1] : tensor<2x4x12xf32> -> tensor<4x2x12xf32>
// CHECK-NEXT:    %[[J:.*]] = torch.cat %[[A]], %[[B]] dim 2 : tensor<4x2x8xf32>, tensor<4x2x12xf32> -> tensor<4x2x20xf32>
// CHECK-NEXT:    %[[F:.*]] = torch.flatten %[[J]] start_dim 1 end_dim 2 : tensor<4x2x20xf32> -> tensor<4x40xf32>
// CHECK:         %c = torch.cat %[[F]], %z dim 1 : tensor<4x40xf32>, tensor<4x16xf32> -> tensor<4x56xf32>
// CHECK-NOT:     torch.stack
fx.graph @ragged_interleaved_cat {
  %x = fx.placeholder "x" : tensor<4x16xf32>
  %wa = fx.get_attr "wa" : tensor<2x8x16xf32>
  %wb = fx.get_attr "wb" : tensor<2x12x16xf32>
  %wz = fx.get_attr "wz" : tensor<16x16xf32>
  %ya = batch.linear_shared_input %x, %wa : tensor<4x16xf32>, tensor<2x8x16xf32> -> tensor<2x4x8xf32>
  %yb = batch.linear_shared_input %x, %wb : tensor<4x16xf32>, tensor<2x12x16xf32> -> tensor<2x4x12xf32>
  %z = torch.linear %x, %wz : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
  %a0, %a1 = batch.unpack %ya : tensor<2x4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %b0, %b1 = batch.unpack %yb : tensor<2x4x12xf32> -> tensor<4x12xf32>, tensor<4x12xf32>
  %c = torch.cat %a0, %b0, %a1, %b1, %z dim 1 : tensor<4x8xf32>, tensor<4x12xf32>, tensor<4x8xf32>, tensor<4x12xf32>, tensor<4x16xf32> -> tensor<4x56xf32>
  fx.output %c
}

// -----

// Issue 21: plumbing between fused ops. A cat along dim 0 of all members of
// a fresh stack is a view of it (flatten), no copy, when nothing else of the
// stack is returned.
// CHECK-LABEL: fx.graph @cat_dim0_view
// CHECK:         %t = torch.sigmoid %s
// CHECK-NEXT:    %r = torch.flatten %t start_dim 0 end_dim 1
// CHECK-NEXT:    fx.output %r
fx.graph @cat_dim0_view {
  %s = fx.placeholder "s" : tensor<3x4x16xf32>
  %t = batch.pointwise %s fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %r = torch.cat %a, %b, %c dim 0 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<12x16xf32>
  fx.output %r
}

// -----

// The cat is returned and so is another member of the stack: a view would
// make the two outputs share storage, so the cat stays one copy (a stack).
// CHECK-LABEL: fx.graph @cat_and_member_returned
// CHECK:         %t = torch.sigmoid %s
// CHECK:         torch.stack
// CHECK:         %r = torch.flatten
// CHECK:         fx.output [%r, %a]
fx.graph @cat_and_member_returned {
  %s = fx.placeholder "s" : tensor<3x4x16xf32>
  %t = batch.pointwise %s fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %r = torch.cat %a, %b, %c dim 0 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<12x16xf32>
  fx.output [%r, %a]
}

// -----

// A run of one stack among other cat inputs: moved and flattened (the cat
// copies it), no single-tensor stack.
// CHECK-LABEL: fx.graph @run_among_others
// CHECK:         %[[M:.*]] = torch.movedim %t source [0] destination [1]
// CHECK-NEXT:    %[[F:.*]] = torch.flatten %[[M]] start_dim 1 end_dim 2
// CHECK-NEXT:    %r = torch.cat %[[F]], %y dim 1
// CHECK-NOT:     torch.stack
fx.graph @run_among_others {
  %s = fx.placeholder "s" : tensor<3x4x16xf32>
  %y = fx.placeholder "y" : tensor<4x2xf32>
  %t = batch.pointwise %s fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %r = torch.cat %a, %b, %c, %y dim 1 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x2xf32> -> tensor<4x50xf32>
  fx.output %r
}

// -----

// Returned members of one stack, each read only by its own copy: one
// unbind_copy gives every member storage of its own (no unbind and a copy
// per member). Only one member read: one select, not an unbind and a getitem.
// CHECK-LABEL: fx.graph @returned_member_copies
// CHECK:         %t = torch.sigmoid %s
// CHECK-NEXT:    %a, %b, %c = torch.unbind_copy %t dim 0
// CHECK-NOT:     torch.cat
// CHECK:         %u = torch.relu %s
// CHECK-NEXT:    %[[V:.*]] = torch.select %u dim 0 index 2
// CHECK-NEXT:    fx.output [%a, %b, %c, %[[V]]]
fx.graph @returned_member_copies {
  %s = fx.placeholder "s" : tensor<3x4x16xf32>
  %t = batch.pointwise %s fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %ra = torch.cat %a dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  %rb = torch.cat %b dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  %rc = torch.cat %c dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  %u = batch.pointwise %s fn "torch.relu" stacked [true] fn_properties {} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %u0, %u1, %u2 = batch.unpack %u : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %ru = torch.cat %u2 dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  fx.output [%ra, %rb, %rc, %ru]
}

// -----

// One returned member copied, another member read by an op: an unbind (the
// pieces stay views), and the returned member keeps the stack's storage
// (nothing else of it is returned): its copy goes. A member read by its
// copy and by another op keeps the copy (distinct outputs).
// CHECK-LABEL: fx.graph @one_returned_member_copy
// CHECK:         %a, %b, %c = torch.unbind %t dim 0
// CHECK-NEXT:    %n = torch.neg %b
// CHECK-NEXT:    %rc = torch.cat %c dim 0
// CHECK-NEXT:    %m = torch.neg %c
// CHECK-NEXT:    fx.output [%a, %n, %rc, %m]
fx.graph @one_returned_member_copy {
  %s = fx.placeholder "s" : tensor<3x4x16xf32>
  %t = batch.pointwise %s fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %ra = torch.cat %a dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  %n = torch.neg %b : tensor<4x16xf32> -> tensor<4x16xf32>
  %rc = torch.cat %c dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  %m = torch.neg %c : tensor<4x16xf32> -> tensor<4x16xf32>
  fx.output [%ra, %n, %rc, %m]
}

// -----

// A copy of a returned member stays where the stack is written in place,
// or where the stack is a graph input's view (not fresh storage).
// CHECK-LABEL: fx.graph @copies_that_stay
// CHECK:         %ra = torch.cat %a dim 0
// CHECK:         %rw = torch.cat
// CHECK:         fx.output [%ra, %rw]
fx.graph @copies_that_stay {
  %s = fx.placeholder "s" : tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %s : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %ra = torch.cat %a dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  %t = batch.pointwise %s fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %w0, %w1, %w2 = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %rw = torch.cat %w0 dim 0 : tensor<4x16xf32> -> tensor<4x16xf32>
  %z = fx.call_method "add_"(%w1, %w1) : tensor<4x16xf32>
  fx.output [%ra, %rw]
}
