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
