// RUN: optimus-opt %s -p write-into-join --split-input-file | filecheck %s
// RUN: optimus-opt %s -p write-into-join{target=inductor} --split-input-file | filecheck %s --check-prefix=INDUCTOR

// The pieces of a join made by a linear (then written in place by
// reinplace's forms) or an addmm are computed in their slots of a buffer
// allocated before the first of them; the join copies the rest (%r: relu
// has no writer here).

// CHECK-LABEL: fx.graph @rewrites
// CHECK:         %join_slots = fx.call_function "optimus_ir.kernels.joins.join_slots"(%x, [256, 192], #fx.dtype<f32>, [64, 64, 64], 1, true) : tuple<tensor<256x192xf32>, tuple<tensor<256x64xf32>, tensor<256x64xf32>, tensor<256x64xf32>>>
// CHECK-NEXT:    %join_buffer = fx.call_function "_operator.getitem"(%join_slots, 0)
// CHECK-NEXT:    %join_views = fx.call_function "_operator.getitem"(%join_slots, 1)
// CHECK-NEXT:    %join_slot = fx.call_function "_operator.getitem"(%join_views, 0)
// CHECK-NEXT:    %join_slot_1 = fx.call_function "_operator.getitem"(%join_views, 1)
// CHECK-NEXT:    %join_slot_2 = fx.call_function "_operator.getitem"(%join_views, 2)
// CHECK-NEXT:    %h0 = fx.call_function "optimus_ir.kernels.joins.linear_into"(%join_slot, %x, %w, %b) : tensor<256x64xf32>
// CHECK-NEXT:    %t0 = fx.call_function "optimus_ir.kernels.inplace.torch__tanh"(%h0)
// CHECK-NEXT:    %h1 = fx.call_function "optimus_ir.kernels.joins.addmm_into"(%join_slot_1, %b, %x, %w)
// CHECK-NEXT:    %r = fx.call_function "torch.relu"(%x)
// CHECK-NEXT:    %c = fx.call_function "optimus_ir.kernels.joins.written_join"(%join_buffer, [%join_slot, %join_slot_1, %join_slot_2], [%t0, %h1, %r], 1) : tensor<256x192xf32>
// CHECK-NEXT:    fx.output (%c,)
// INDUCTOR-LABEL: fx.graph @rewrites
// INDUCTOR-NOT:   optimus_ir.kernels.joins
fx.graph @rewrites {
  %x = fx.placeholder "x" : tensor<256x64xf32>
  %w = fx.get_attr "w" : tensor<64x64xf32>
  %b = fx.get_attr "b" : tensor<64xf32>
  %h0 = fx.call_function "torch._C._nn.linear"(%x, %w, %b) : tensor<256x64xf32>
  %t0 = fx.call_function "optimus_ir.kernels.inplace.torch__tanh"(%h0) : tensor<256x64xf32>
  %h1 = fx.call_function "torch.addmm"(%b, %x, %w) : tensor<256x64xf32>
  %r = fx.call_function "torch.relu"(%x) : tensor<256x64xf32>
  %c = fx.call_function "torch.cat"([%t0, %h1, %r], 1) : tensor<256x192xf32>
  fx.output (%c)
}

// -----

// Along dim 0 (contiguous slots; the example's shape), the dim as a
// keyword, a negative dim (along dim 1 the rows are the reference's at run
// time: `true`).

// CHECK-LABEL: fx.graph @rows
// CHECK:         fx.call_function "optimus_ir.kernels.joins.join_slots"(%x, [512, 64], #fx.dtype<f32>, [256, 256], 0)
// CHECK:         fx.call_function "optimus_ir.kernels.joins.mm_into"
// CHECK:         fx.call_function "optimus_ir.kernels.joins.addmm_into"
// CHECK:         fx.call_function "optimus_ir.kernels.joins.written_join"({{.*}}, 0)
// CHECK:         fx.call_function "optimus_ir.kernels.joins.join_slots"(%x, [256, 128], #fx.dtype<f32>, [64, 64], 1, true)
// CHECK:         fx.call_function "optimus_ir.kernels.joins.written_join"({{.*}}, 1)
fx.graph @rows {
  %x = fx.placeholder "x" : tensor<256x64xf32>
  %w = fx.get_attr "w" : tensor<64x64xf32>
  %b = fx.get_attr "b" : tensor<64xf32>
  %m = fx.call_function "torch.mm"(%x, %w) : tensor<256x64xf32>
  %a = fx.call_function "torch.addmm"(%b, %x, %w) : tensor<256x64xf32>
  %c = fx.call_function "torch.cat"([%m, %a], dim = 0) : tensor<512x64xf32>
  %m2 = fx.call_function "torch.mm"(%x, %w) : tensor<256x64xf32>
  %a2 = fx.call_function "torch.addmm"(%b, %x, %w) : tensor<256x64xf32>
  %d = fx.call_function "torch.cat"([%m2, %a2], -1) : tensor<256x128xf32>
  fx.output (%c, %d)
}

// -----

// What must stay: a piece read by anything else (returned, read by a
// later op, read by the chain twice), a piece from parameters alone
// (freeze computes it once), a piece of another dtype (the join promotes),
// small pieces (the copy costs less than the writer's call), a join of
// rank 3, a piece joined twice, a maker with an `out=` of its own, pieces
// of no maker with a writer (relu, layer norm).

// CHECK-LABEL: fx.graph @keeps
// CHECK-NOT:     optimus_ir.kernels.joins
// CHECK:         fx.output
fx.graph @keeps {
  %x = fx.placeholder "x" : tensor<256x64xf32>
  %xh = fx.placeholder "xh" : tensor<256x64xf16>
  %x3 = fx.placeholder "x3" : tensor<4x256x64xf32>
  %x3t = fx.placeholder "x3t" : tensor<4x64x64xf32>
  %s = fx.placeholder "s" : tensor<2x4xf32>
  %w = fx.get_attr "w" : tensor<64x64xf32>
  %wh = fx.get_attr "wh" : tensor<64x64xf16>
  %wb = fx.get_attr "wb" : tensor<256x64xf32>
  %ret = fx.call_function "torch.mm"(%x, %w) : tensor<256x64xf32>
  %c1 = fx.call_function "torch.cat"([%ret, %ret], 1) : tensor<256x128xf32>
  %h = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<256x64xf32>
  %later = fx.call_function "torch.relu"(%h) : tensor<256x64xf32>
  %c2 = fx.call_function "torch.cat"([%h, %later], 1) : tensor<256x128xf32>
  %p = fx.call_function "torch.mm"(%wb, %w) : tensor<256x64xf32>
  %c3 = fx.call_function "torch.cat"([%p, %x], 1) : tensor<256x128xf32>
  %half = fx.call_function "torch.mm"(%xh, %wh) : tensor<256x64xf16>
  %c4 = fx.call_function "torch.cat"([%half, %x], 1) : tensor<256x128xf32>
  %s4 = fx.placeholder "s4" : tensor<4x4xf32>
  %t1 = fx.call_function "torch.mm"(%s, %s4) : tensor<2x4xf32>
  %t2 = fx.call_function "torch.mm"(%s, %s4) : tensor<2x4xf32>
  %c5 = fx.call_function "torch.cat"([%t1, %t2], 1) : tensor<2x8xf32>
  %r1 = fx.call_function "torch.bmm"(%x3, %x3t) : tensor<4x256x64xf32>
  %r2 = fx.call_function "torch.bmm"(%x3, %x3t) : tensor<4x256x64xf32>
  %c6 = fx.call_function "torch.cat"([%r1, %r2], 2) : tensor<4x256x128xf32>
  %o = fx.call_function "torch.mm"(%x, %w, out = %x) : tensor<256x64xf32>
  %c7 = fx.call_function "torch.cat"([%o, %x], 1) : tensor<256x128xf32>
  %n = fx.call_function "torch.nn.functional.layer_norm"(%x, [64]) : tensor<256x64xf32>
  %q = fx.call_function "torch.relu"(%x) : tensor<256x64xf32>
  %c8 = fx.call_function "torch.cat"([%n, %q], 1) : tensor<256x128xf32>
  %e = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<256x64xf32>
  %twice = fx.call_function "torch.mul"(%e, %e) : tensor<256x64xf32>
  %e2 = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<256x64xf32>
  %c9 = fx.call_function "torch.cat"([%twice, %e2, %twice], 1) : tensor<256x192xf32>
  fx.output (%ret, %c1, %c2, %c3, %c4, %c5, %c6, %c7, %c8, %c9)
}

// -----

// The buffer lives from the first piece on: here the first piece is made
// before a 4 MiB temporary and the second after it, so writing them in
// place would hold the 128 KiB buffer across the temporary, where only the
// first 64 KiB piece was held before: the peak would grow. The join stays.

// CHECK-LABEL: fx.graph @peak
// CHECK-NOT:     optimus_ir.kernels.joins
// CHECK:         fx.output
fx.graph @peak {
  %x = fx.placeholder "x" : tensor<256x64xf32>
  %w = fx.get_attr "w" : tensor<64x64xf32>
  %y = fx.placeholder "y" : tensor<1024x1024xf32>
  %a = fx.call_function "torch.mm"(%x, %w) : tensor<256x64xf32>
  %big = fx.call_function "torch.exp"(%y) : tensor<1024x1024xf32>
  %total = fx.call_function "torch.sum"(%big) : tensor<f32>
  %b = fx.call_function "torch.mm"(%x, %w) : tensor<256x64xf32>
  %c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<256x128xf32>
  fx.output (%c, %total)
}

// -----

// A stack read by the join through a reshape (lower-batch's interleave of
// fused groups' members: a stack of moved dims, then a flatten) stacks into
// its slot seen in the stack's shape (rows -1: the input's at run time);
// the flatten of it is then the slot itself. Along dim 0 the slot is
// contiguous: the static shape.

// CHECK-LABEL: fx.graph @stacked
// CHECK:         %join_slots = fx.call_function "optimus_ir.kernels.joins.join_slots"(%ma, [64, 1376], #fx.dtype<f32>, [1344, 32], 1, true)
// CHECK:         %s = fx.call_function "optimus_ir.kernels.joins.stack_into"(%join_slot, [%ma, %mb], 2, shape = [-1, 21, 2, 32]) : tensor<64x21x2x32xf32>
// CHECK-NEXT:    %f = fx.call_function "torch.flatten"(%s, 1, 3) : tensor<64x1344xf32>
// CHECK-NEXT:    %c = fx.call_function "optimus_ir.kernels.joins.written_join"(%join_buffer, [%join_slot, %join_slot_1], [%f, %z], 1)
// CHECK:         fx.call_function "optimus_ir.kernels.joins.join_slots"(%ma, [2752, 32], #fx.dtype<f32>, [2688, 64], 0)
// CHECK:         fx.call_function "optimus_ir.kernels.joins.stack_into"(%{{.*}}, [%ma, %mb], -2, shape = [64, 21, 2, 32])
// CHECK:         fx.call_function "torch.reshape"(%{{.*}}, [2688, 32])
fx.graph @stacked {
  %x = fx.placeholder "x" : tensor<21x64x32xf32>
  %y = fx.placeholder "y" : tensor<21x64x32xf32>
  %z = fx.placeholder "z" : tensor<64x32xf32>
  %u = fx.placeholder "u" : tensor<64x32xf32>
  %a = fx.call_function "torch.tanh"(%x) : tensor<21x64x32xf32>
  %b = fx.call_function "torch.tanh"(%y) : tensor<21x64x32xf32>
  %ma = fx.call_function "torch.movedim"(%a, [0], [1]) : tensor<64x21x32xf32>
  %mb = fx.call_function "torch.movedim"(%b, [0], [1]) : tensor<64x21x32xf32>
  %s = fx.call_function "torch.stack"([%ma, %mb], 2) : tensor<64x21x2x32xf32>
  %f = fx.call_function "torch.flatten"(%s, 1, 3) : tensor<64x1344xf32>
  %c = fx.call_function "torch.cat"([%f, %z], 1) : tensor<64x1376xf32>
  %s0 = fx.call_function "torch.stack"([%ma, %mb], -2) : tensor<64x21x2x32xf32>
  %r0 = fx.call_function "torch.reshape"(%s0, [2688, 32]) : tensor<2688x32xf32>
  %c0 = fx.call_function "torch.cat"([%r0, %u], 0) : tensor<2752x32xf32>
  fx.output (%c, %c0)
}

// -----

// What must stay: a stack along dim 0 (its rows are not its inputs'), a
// reshape that moves rows into columns (the slot's rows are strided: no
// view of it has that shape), a stack or its reshape read by another op, a
// reshape read twice by the join.

// CHECK-LABEL: fx.graph @stacked_keeps
// CHECK-NOT:     optimus_ir.kernels.joins
// CHECK:         fx.output
fx.graph @stacked_keeps {
  %x = fx.placeholder "x" : tensor<512x32xf32>
  %y = fx.placeholder "y" : tensor<512x32xf32>
  %z = fx.placeholder "z" : tensor<512x32xf32>
  %v = fx.placeholder "v" : tensor<256x32xf32>
  %a = fx.call_function "torch.tanh"(%x) : tensor<512x32xf32>
  %b = fx.call_function "torch.tanh"(%y) : tensor<512x32xf32>
  %s0 = fx.call_function "torch.stack"([%a, %b], 0) : tensor<2x512x32xf32>
  %f0 = fx.call_function "torch.reshape"(%s0, [512, 64]) : tensor<512x64xf32>
  %c0 = fx.call_function "torch.cat"([%f0, %z], 1) : tensor<512x96xf32>
  %s1 = fx.call_function "torch.stack"([%a, %b], 1) : tensor<512x2x32xf32>
  %f1 = fx.call_function "torch.reshape"(%s1, [256, 128]) : tensor<256x128xf32>
  %c1 = fx.call_function "torch.cat"([%f1, %v], 1) : tensor<256x160xf32>
  %s2 = fx.call_function "torch.stack"([%a, %b], 1) : tensor<512x2x32xf32>
  %f2 = fx.call_function "torch.flatten"(%s2, 1, 2) : tensor<512x64xf32>
  %other = fx.call_function "torch.sum"(%s2) : tensor<f32>
  %c2 = fx.call_function "torch.cat"([%f2, %z], 1) : tensor<512x96xf32>
  %s3 = fx.call_function "torch.stack"([%a, %b], 1) : tensor<512x2x32xf32>
  %f3 = fx.call_function "torch.flatten"(%s3, 1, 2) : tensor<512x64xf32>
  %c3 = fx.call_function "torch.cat"([%f3, %f3], 1) : tensor<512x128xf32>
  fx.output (%c0, %c1, %c2, %c3, %other)
}

// -----

// Rank 3 along dim 0 (a batched layer norm's input: fused groups' batched
// matmuls joined by member): the slots are contiguous, each baddbmm or bmm
// writes its own, and the buffer's rows (dim 1) are the first writer's
// batch operand's at run time (`[1]`).

// CHECK-LABEL: fx.graph @batched
// CHECK:         %join_slots = fx.call_function "optimus_ir.kernels.joins.join_slots"(%x, [43, 64, 32], #fx.dtype<f32>, [22, 21], 0, [1])
// CHECK:         %a0 = fx.call_function "optimus_ir.kernels.joins.baddbmm_into"(%join_slot, %b, %x, %w) : tensor<22x64x32xf32>
// CHECK-NEXT:    %a1 = fx.call_function "optimus_ir.kernels.joins.bmm_into"(%join_slot_1, %y, %v) : tensor<21x64x32xf32>
// CHECK-NEXT:    %c = fx.call_function "optimus_ir.kernels.joins.written_join"(%join_buffer, [%join_slot, %join_slot_1], [%a0, %a1], 0)
fx.graph @batched {
  %x = fx.placeholder "x" : tensor<22x64x16xf32>
  %y = fx.placeholder "y" : tensor<21x64x32xf32>
  %w = fx.get_attr "w" : tensor<22x16x32xf32>
  %v = fx.get_attr "v" : tensor<21x32x32xf32>
  %b = fx.get_attr "b" : tensor<22x1x32xf32>
  %a0 = fx.call_function "torch.baddbmm"(%b, %x, %w) : tensor<22x64x32xf32>
  %a1 = fx.call_function "torch.bmm"(%y, %v) : tensor<21x64x32xf32>
  %c = fx.call_function "torch.cat"([%a0, %a1], 0) : tensor<43x64x32xf32>
  fx.output (%c)
}

// -----

// What must stay: a rank-3 join along dim 1 or 2 (strided slots), a
// rank-3 piece made by a linear (only batched matmuls write rank-3 slots),
// a batched matmul in a rank-2 join.

// CHECK-LABEL: fx.graph @batched_keeps
// CHECK-NOT:     optimus_ir.kernels.joins
// CHECK:         fx.output
fx.graph @batched_keeps {
  %x = fx.placeholder "x" : tensor<22x64x16xf32>
  %w = fx.get_attr "w" : tensor<22x16x32xf32>
  %lw = fx.get_attr "lw" : tensor<32x16xf32>
  %a0 = fx.call_function "torch.bmm"(%x, %w) : tensor<22x64x32xf32>
  %a1 = fx.call_function "torch.bmm"(%x, %w) : tensor<22x64x32xf32>
  %c1 = fx.call_function "torch.cat"([%a0, %a1], 1) : tensor<22x128x32xf32>
  %a2 = fx.call_function "torch.bmm"(%x, %w) : tensor<22x64x32xf32>
  %a3 = fx.call_function "torch.bmm"(%x, %w) : tensor<22x64x32xf32>
  %c2 = fx.call_function "torch.cat"([%a2, %a3], -1) : tensor<22x64x64xf32>
  %l0 = fx.call_function "torch._C._nn.linear"(%x, %lw) : tensor<22x64x32xf32>
  %l1 = fx.call_function "torch._C._nn.linear"(%x, %lw) : tensor<22x64x32xf32>
  %c3 = fx.call_function "torch.cat"([%l0, %l1], 0) : tensor<44x64x32xf32>
  %m = fx.placeholder "m" : tensor<1x512x32xf32>
  %mw = fx.get_attr "mw" : tensor<1x32x32xf32>
  %b0 = fx.call_function "torch.bmm"(%m, %mw) : tensor<1x512x32xf32>
  %f0 = fx.call_function "torch.flatten"(%b0, 0, 1) : tensor<512x32xf32>
  %b1 = fx.call_function "torch.bmm"(%m, %mw) : tensor<1x512x32xf32>
  %f1 = fx.call_function "torch.flatten"(%b1, 0, 1) : tensor<512x32xf32>
  %c4 = fx.call_function "torch.cat"([%f0, %f1], 1) : tensor<512x64xf32>
  fx.output (%c1, %c2, %c3, %c4)
}
