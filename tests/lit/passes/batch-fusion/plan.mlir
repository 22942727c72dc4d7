// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default constant-parameters=true}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default constant-parameters=true}' --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// The plan is chosen over the whole block by the cost model (`choose_plan`):
// linears that read one input can fuse on it (batch.linear_shared_input) or
// each with the same-shape linears of other inputs (batch.linear over a
// stack of the inputs), and the choice is priced with what it leaves the
// consumers.

// Highway, 4 branches g[i](x[i]) * sigmoid(t[i](x[i])): the 8 linears of all
// branches form one batch.linear (not 4 shared-input pairs, which do not pay
// on their own), and the sigmoid and the mul read its stack in place.

// CHECK-LABEL: fx.graph @highway
// CHECK:         %[[X:.*]] = batch.pack %x0, %x0, %x1, %x1, %x2, %x2, %x3, %x3 :
// CHECK:         %[[L:.*]] = batch.linear %[[X]], %{{.*}} bias %{{.*}} : {{.*}} -> tensor<8x10x10xf32, "cpu">
// CHECK-NEXT:    %[[T:.*]] = torch.slice %[[L]] dim 0 start 1 end 8 step 2
// CHECK-NEXT:    %[[S:.*]] = batch.pointwise %[[T]] fn "torch.sigmoid"
// CHECK-NEXT:    %[[G:.*]] = torch.slice %[[L]] dim 0 start 0 end 7 step 2
// CHECK-NEXT:    %[[M:.*]] = batch.pointwise %[[G]], %[[S]] fn "torch.mul"
// CHECK-NEXT:    batch.unpack %[[M]]
// CHECK-NOT:     batch.linear_shared_input
// CHECK-NOT:     torch.linear
// CHECK-NOT:     torch.sigmoid
// REMARK: remark: batch-fusion: plan: 8 torch.linear (%g0, %g1, %g2, ...) reading 4 shared inputs group as plain linears over stacked inputs, not on their shared inputs: the whole block's estimated gain ~{{[0-9.]+}} us against ~{{[0-9.]+}} us
// REMARK: remark: batch-fusion: fused 8 torch.linear (%g0, %t0, %g1, ...) into batch.linear
// REMARK: remark: batch-fusion: fused 4 torch.sigmoid (%s0, %s1, %s2, ...) into batch.pointwise
// REMARK: remark: batch-fusion: fused 4 torch.mul (%m0, %m1, %m2, ...) into batch.pointwise
fx.graph @highway {
  %x0 = fx.placeholder "x0" : tensor<10x10xf32, "cpu">
  %x1 = fx.placeholder "x1" : tensor<10x10xf32, "cpu">
  %x2 = fx.placeholder "x2" : tensor<10x10xf32, "cpu">
  %x3 = fx.placeholder "x3" : tensor<10x10xf32, "cpu">
  %wg0 = fx.get_attr "g0_w" : tensor<10x10xf32, "cpu">
  %bg0 = fx.get_attr "g0_b" : tensor<10xf32, "cpu">
  %wt0 = fx.get_attr "t0_w" : tensor<10x10xf32, "cpu">
  %bt0 = fx.get_attr "t0_b" : tensor<10xf32, "cpu">
  %wg1 = fx.get_attr "g1_w" : tensor<10x10xf32, "cpu">
  %bg1 = fx.get_attr "g1_b" : tensor<10xf32, "cpu">
  %wt1 = fx.get_attr "t1_w" : tensor<10x10xf32, "cpu">
  %bt1 = fx.get_attr "t1_b" : tensor<10xf32, "cpu">
  %wg2 = fx.get_attr "g2_w" : tensor<10x10xf32, "cpu">
  %bg2 = fx.get_attr "g2_b" : tensor<10xf32, "cpu">
  %wt2 = fx.get_attr "t2_w" : tensor<10x10xf32, "cpu">
  %bt2 = fx.get_attr "t2_b" : tensor<10xf32, "cpu">
  %wg3 = fx.get_attr "g3_w" : tensor<10x10xf32, "cpu">
  %bg3 = fx.get_attr "g3_b" : tensor<10xf32, "cpu">
  %wt3 = fx.get_attr "t3_w" : tensor<10x10xf32, "cpu">
  %bt3 = fx.get_attr "t3_b" : tensor<10xf32, "cpu">
  %g0 = torch.linear %x0, %wg0, %bg0 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %t0 = torch.linear %x0, %wt0, %bt0 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %s0 = torch.sigmoid %t0 : tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %m0 = torch.mul %g0, %s0 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %g1 = torch.linear %x1, %wg1, %bg1 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %t1 = torch.linear %x1, %wt1, %bt1 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %s1 = torch.sigmoid %t1 : tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %m1 = torch.mul %g1, %s1 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %g2 = torch.linear %x2, %wg2, %bg2 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %t2 = torch.linear %x2, %wt2, %bt2 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %s2 = torch.sigmoid %t2 : tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %m2 = torch.mul %g2, %s2 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %g3 = torch.linear %x3, %wg3, %bg3 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %t3 = torch.linear %x3, %wt3, %bt3 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu">, tensor<10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %s3 = torch.sigmoid %t3 : tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  %m3 = torch.mul %g3, %s3 : tensor<10x10xf32, "cpu">, tensor<10x10xf32, "cpu"> -> tensor<10x10xf32, "cpu">
  fx.output (%m0, %m1, %m2, %m3)
}

// -----

// Level by level: the highway's linears (depth 1) group across the 8
// branches, while the 4 linears of one input %y at depth 4 (the same
// shapes: one plain key) stay one batch.linear_shared_input, which stacks
// no copy of %y.

// CHECK-LABEL: fx.graph @levels
// CHECK:         batch.linear %{{.*}} -> tensor<16x32x32xf32, "cpu">
// CHECK:         %y = torch.add
// CHECK:         batch.linear_shared_input %y, %{{.*}} -> tensor<4x32x32xf32, "cpu">
// CHECK-NOT:     torch.linear
// REMARK-LABEL: remark: batch-fusion: plan: 16 torch.linear (%g0, %g1, %g2, ...) reading 8 shared inputs group as plain linears
// REMARK-NOT:   plan:
// REMARK:       fused 16 torch.linear (%g0, %t0, %g1, ...) into batch.linear (
// REMARK:       fused 4 torch.linear (%h0, %h1, %h2, ...) into batch.linear_shared_input
fx.graph @levels {
  %x0 = fx.placeholder "x0" : tensor<32x32xf32, "cpu">
  %x1 = fx.placeholder "x1" : tensor<32x32xf32, "cpu">
  %x2 = fx.placeholder "x2" : tensor<32x32xf32, "cpu">
  %x3 = fx.placeholder "x3" : tensor<32x32xf32, "cpu">
  %x4 = fx.placeholder "x4" : tensor<32x32xf32, "cpu">
  %x5 = fx.placeholder "x5" : tensor<32x32xf32, "cpu">
  %x6 = fx.placeholder "x6" : tensor<32x32xf32, "cpu">
  %x7 = fx.placeholder "x7" : tensor<32x32xf32, "cpu">
  %wg0 = fx.get_attr "g0_w" : tensor<32x32xf32, "cpu">
  %bg0 = fx.get_attr "g0_b" : tensor<32xf32, "cpu">
  %wt0 = fx.get_attr "t0_w" : tensor<32x32xf32, "cpu">
  %bt0 = fx.get_attr "t0_b" : tensor<32xf32, "cpu">
  %wg1 = fx.get_attr "g1_w" : tensor<32x32xf32, "cpu">
  %bg1 = fx.get_attr "g1_b" : tensor<32xf32, "cpu">
  %wt1 = fx.get_attr "t1_w" : tensor<32x32xf32, "cpu">
  %bt1 = fx.get_attr "t1_b" : tensor<32xf32, "cpu">
  %wg2 = fx.get_attr "g2_w" : tensor<32x32xf32, "cpu">
  %bg2 = fx.get_attr "g2_b" : tensor<32xf32, "cpu">
  %wt2 = fx.get_attr "t2_w" : tensor<32x32xf32, "cpu">
  %bt2 = fx.get_attr "t2_b" : tensor<32xf32, "cpu">
  %wg3 = fx.get_attr "g3_w" : tensor<32x32xf32, "cpu">
  %bg3 = fx.get_attr "g3_b" : tensor<32xf32, "cpu">
  %wt3 = fx.get_attr "t3_w" : tensor<32x32xf32, "cpu">
  %bt3 = fx.get_attr "t3_b" : tensor<32xf32, "cpu">
  %wg4 = fx.get_attr "g4_w" : tensor<32x32xf32, "cpu">
  %bg4 = fx.get_attr "g4_b" : tensor<32xf32, "cpu">
  %wt4 = fx.get_attr "t4_w" : tensor<32x32xf32, "cpu">
  %bt4 = fx.get_attr "t4_b" : tensor<32xf32, "cpu">
  %wg5 = fx.get_attr "g5_w" : tensor<32x32xf32, "cpu">
  %bg5 = fx.get_attr "g5_b" : tensor<32xf32, "cpu">
  %wt5 = fx.get_attr "t5_w" : tensor<32x32xf32, "cpu">
  %bt5 = fx.get_attr "t5_b" : tensor<32xf32, "cpu">
  %wg6 = fx.get_attr "g6_w" : tensor<32x32xf32, "cpu">
  %bg6 = fx.get_attr "g6_b" : tensor<32xf32, "cpu">
  %wt6 = fx.get_attr "t6_w" : tensor<32x32xf32, "cpu">
  %bt6 = fx.get_attr "t6_b" : tensor<32xf32, "cpu">
  %wg7 = fx.get_attr "g7_w" : tensor<32x32xf32, "cpu">
  %bg7 = fx.get_attr "g7_b" : tensor<32xf32, "cpu">
  %wt7 = fx.get_attr "t7_w" : tensor<32x32xf32, "cpu">
  %bt7 = fx.get_attr "t7_b" : tensor<32xf32, "cpu">
  %wh0 = fx.get_attr "h0_w" : tensor<32x32xf32, "cpu">
  %wh1 = fx.get_attr "h1_w" : tensor<32x32xf32, "cpu">
  %wh2 = fx.get_attr "h2_w" : tensor<32x32xf32, "cpu">
  %wh3 = fx.get_attr "h3_w" : tensor<32x32xf32, "cpu">
  %g0 = torch.linear %x0, %wg0, %bg0 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t0 = torch.linear %x0, %wt0, %bt0 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s0 = torch.sigmoid %t0 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m0 = torch.mul %g0, %s0 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %g1 = torch.linear %x1, %wg1, %bg1 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t1 = torch.linear %x1, %wt1, %bt1 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s1 = torch.sigmoid %t1 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m1 = torch.mul %g1, %s1 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %g2 = torch.linear %x2, %wg2, %bg2 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t2 = torch.linear %x2, %wt2, %bt2 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s2 = torch.sigmoid %t2 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m2 = torch.mul %g2, %s2 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %g3 = torch.linear %x3, %wg3, %bg3 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t3 = torch.linear %x3, %wt3, %bt3 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s3 = torch.sigmoid %t3 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m3 = torch.mul %g3, %s3 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %g4 = torch.linear %x4, %wg4, %bg4 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t4 = torch.linear %x4, %wt4, %bt4 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s4 = torch.sigmoid %t4 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m4 = torch.mul %g4, %s4 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %g5 = torch.linear %x5, %wg5, %bg5 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t5 = torch.linear %x5, %wt5, %bt5 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s5 = torch.sigmoid %t5 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m5 = torch.mul %g5, %s5 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %g6 = torch.linear %x6, %wg6, %bg6 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t6 = torch.linear %x6, %wt6, %bt6 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s6 = torch.sigmoid %t6 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m6 = torch.mul %g6, %s6 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %g7 = torch.linear %x7, %wg7, %bg7 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %t7 = torch.linear %x7, %wt7, %bt7 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %s7 = torch.sigmoid %t7 : tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %m7 = torch.mul %g7, %s7 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %y = torch.add %m0, %m1 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %h0 = torch.linear %y, %wh0 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %h1 = torch.linear %y, %wh1 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %h2 = torch.linear %y, %wh2 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  %h3 = torch.linear %y, %wh3 : tensor<32x32xf32, "cpu">, tensor<32x32xf32, "cpu"> -> tensor<32x32xf32, "cpu">
  fx.output (%m2, %m3, %m4, %m5, %m6, %m7, %h0, %h1, %h2, %h3)
}

// -----

// One input read by four linears: fusing on the shared input (no stack of
// %x) beats a batch.linear over four copies of %x; the plan keeps it, and
// says nothing about a plan change.

// CHECK-LABEL: fx.graph @one_input
// CHECK:         batch.linear_shared_input %x, %{{.*}} bias %{{.*}} : {{.*}} -> tensor<4x64x64xf32, "cpu">
// CHECK-NOT:     torch.linear
// CHECK-NOT:     batch.linear %
// REMARK-NOT:   plan:
// REMARK:       fused 4 torch.linear (%la, %lb, %lc, ...) into batch.linear_shared_input
// REMARK-NOT:   plan:
fx.graph @one_input {
  %x = fx.placeholder "x" : tensor<64x64xf32, "cpu">
  %wa = fx.get_attr "a_w" : tensor<64x64xf32, "cpu">
  %ba = fx.get_attr "a_b" : tensor<64xf32, "cpu">
  %wb = fx.get_attr "b_w" : tensor<64x64xf32, "cpu">
  %bb = fx.get_attr "b_b" : tensor<64xf32, "cpu">
  %wc = fx.get_attr "c_w" : tensor<64x64xf32, "cpu">
  %bc = fx.get_attr "c_b" : tensor<64xf32, "cpu">
  %wd = fx.get_attr "d_w" : tensor<64x64xf32, "cpu">
  %bd = fx.get_attr "d_b" : tensor<64xf32, "cpu">
  %la = torch.linear %x, %wa, %ba : tensor<64x64xf32, "cpu">, tensor<64x64xf32, "cpu">, tensor<64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  %lb = torch.linear %x, %wb, %bb : tensor<64x64xf32, "cpu">, tensor<64x64xf32, "cpu">, tensor<64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  %lc = torch.linear %x, %wc, %bc : tensor<64x64xf32, "cpu">, tensor<64x64xf32, "cpu">, tensor<64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  %ld = torch.linear %x, %wd, %bd : tensor<64x64xf32, "cpu">, tensor<64x64xf32, "cpu">, tensor<64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  %sb = torch.sigmoid %lb : tensor<64x64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  %sd = torch.sigmoid %ld : tensor<64x64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  %m0 = torch.mul %la, %sb : tensor<64x64xf32, "cpu">, tensor<64x64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  %m1 = torch.mul %lc, %sd : tensor<64x64xf32, "cpu">, tensor<64x64xf32, "cpu"> -> tensor<64x64xf32, "cpu">
  fx.output (%m0, %m1)
}
