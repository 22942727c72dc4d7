// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default constant-parameters=true}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default constant-parameters=true}' --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default constant-parameters=true chains=false}' --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=ALONE

// Chains (`plan._fuse_through_chains`): each group is priced alone, with
// where its operands lie. A batched layer norm with per-member weights
// costs more than its members (its affine step is two more ops over the
// whole stack), and declined it leaves its results apart: the activations
// reading them would copy them into a stack, and are declined too. Fused
// at a loss, it lets the chain read its stack without a copy; the plan
// keeps it when the whole block's estimated gain grows, and says so.
// Eight towers, default cost model, parameter stacks computed once.
// `chains=false` prices each group alone: none of the chains below fuses.

// Layer norm, then three activations: the norm pays through its consumers.

// CHECK-LABEL: fx.graph @norm_then_three
// CHECK:         %[[N:.*]] = batch.layer_norm
// CHECK-NEXT:    %[[T:.*]] = batch.pointwise %[[N]] fn "torch.tanh"
// CHECK-NEXT:    %[[S:.*]] = batch.pointwise %[[T]] fn "torch.sigmoid"
// CHECK-NEXT:    %[[R:.*]] = batch.pointwise %[[S]] fn "torch.relu"
// CHECK-NEXT:    batch.unpack %[[R]]
// CHECK-NOT:     torch.layer_norm
// REMARK-LABEL: fused 8 torch.layer_norm (%ln0m0, %ln0m1, %ln0m2, ...) into batch.layer_norm ({{.*}}gain ~-{{[0-9.]+}} us); fused for its consumers, at a loss alone: they read its stack instead of copying its members' results; the block's estimated gain ~{{[0-9.]+}} us with the 1 group(s) so fused, ~0.0 us without
// REMARK:       remark: batch-fusion: fused 8 torch.tanh (%tanh0m0, %tanh0m1, %tanh0m2, ...) into batch.pointwise ({{.*}}copies nothing{{.*}}: gain ~{{[0-9.]+}} us){{$}}
// ALONE:        8 torch.layer_norm (%ln0m0, %ln0m1, %ln0m2, ...) not fused: unprofitable:
// ALONE:        8 torch.tanh (%tanh0m0, %tanh0m1, %tanh0m2, ...) not fused: unprofitable: {{.*}}copies 64 KiB
// ALONE:        8 torch.sigmoid (%sigmoid1m0, %sigmoid1m1, %sigmoid1m2, ...) not fused: unprofitable:
// ALONE:        8 torch.relu (%relu2m0, %relu2m1, %relu2m2, ...) not fused: unprofitable:
// ALONE-NOT:    batch-fusion: fused
fx.graph @norm_then_three {
  %x = fx.placeholder "x" : tensor<128x128xf32, "cpu">
  %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7 = torch.split %x sections [16, 16, 16, 16, 16, 16, 16, 16] dim 0 : tensor<128x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">
  %w0m0 = fx.get_attr "n0_0_w" : tensor<128xf32, "cpu">
  %b0m0 = fx.get_attr "n0_0_b" : tensor<128xf32, "cpu">
  %w0m1 = fx.get_attr "n0_1_w" : tensor<128xf32, "cpu">
  %b0m1 = fx.get_attr "n0_1_b" : tensor<128xf32, "cpu">
  %w0m2 = fx.get_attr "n0_2_w" : tensor<128xf32, "cpu">
  %b0m2 = fx.get_attr "n0_2_b" : tensor<128xf32, "cpu">
  %w0m3 = fx.get_attr "n0_3_w" : tensor<128xf32, "cpu">
  %b0m3 = fx.get_attr "n0_3_b" : tensor<128xf32, "cpu">
  %w0m4 = fx.get_attr "n0_4_w" : tensor<128xf32, "cpu">
  %b0m4 = fx.get_attr "n0_4_b" : tensor<128xf32, "cpu">
  %w0m5 = fx.get_attr "n0_5_w" : tensor<128xf32, "cpu">
  %b0m5 = fx.get_attr "n0_5_b" : tensor<128xf32, "cpu">
  %w0m6 = fx.get_attr "n0_6_w" : tensor<128xf32, "cpu">
  %b0m6 = fx.get_attr "n0_6_b" : tensor<128xf32, "cpu">
  %w0m7 = fx.get_attr "n0_7_w" : tensor<128xf32, "cpu">
  %b0m7 = fx.get_attr "n0_7_b" : tensor<128xf32, "cpu">
  %ln0m0 = torch.layer_norm %p0 normalized_shape [128] weight %w0m0 bias %b0m0 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m1 = torch.layer_norm %p1 normalized_shape [128] weight %w0m1 bias %b0m1 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m2 = torch.layer_norm %p2 normalized_shape [128] weight %w0m2 bias %b0m2 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m3 = torch.layer_norm %p3 normalized_shape [128] weight %w0m3 bias %b0m3 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m4 = torch.layer_norm %p4 normalized_shape [128] weight %w0m4 bias %b0m4 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m5 = torch.layer_norm %p5 normalized_shape [128] weight %w0m5 bias %b0m5 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m6 = torch.layer_norm %p6 normalized_shape [128] weight %w0m6 bias %b0m6 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m7 = torch.layer_norm %p7 normalized_shape [128] weight %w0m7 bias %b0m7 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m0 = torch.tanh %ln0m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m1 = torch.tanh %ln0m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m2 = torch.tanh %ln0m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m3 = torch.tanh %ln0m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m4 = torch.tanh %ln0m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m5 = torch.tanh %ln0m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m6 = torch.tanh %ln0m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m7 = torch.tanh %ln0m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m0 = torch.sigmoid %tanh0m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m1 = torch.sigmoid %tanh0m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m2 = torch.sigmoid %tanh0m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m3 = torch.sigmoid %tanh0m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m4 = torch.sigmoid %tanh0m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m5 = torch.sigmoid %tanh0m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m6 = torch.sigmoid %tanh0m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m7 = torch.sigmoid %tanh0m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m0 = torch.relu %sigmoid1m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m1 = torch.relu %sigmoid1m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m2 = torch.relu %sigmoid1m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m3 = torch.relu %sigmoid1m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m4 = torch.relu %sigmoid1m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m5 = torch.relu %sigmoid1m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m6 = torch.relu %sigmoid1m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m7 = torch.relu %sigmoid1m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  fx.output (%relu2m0, %relu2m1, %relu2m2, %relu2m3, %relu2m4, %relu2m5, %relu2m6, %relu2m7)
}

// -----

// Layer norm, then one activation: the norm's loss is more than the
// activation gains reading its stack; neither fuses.

// CHECK-LABEL: fx.graph @norm_then_one
// CHECK-NOT:     batch.
// REMARK-LABEL: 8 torch.layer_norm (%ln0m0, %ln0m1, %ln0m2, ...) not fused: unprofitable:
// REMARK-NOT:   fused for its consumers
// REMARK:       8 torch.tanh (%tanh0m0, %tanh0m1, %tanh0m2, ...) not fused: unprofitable: {{.*}}copies 64 KiB
fx.graph @norm_then_one {
  %x = fx.placeholder "x" : tensor<128x128xf32, "cpu">
  %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7 = torch.split %x sections [16, 16, 16, 16, 16, 16, 16, 16] dim 0 : tensor<128x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">
  %w0m0 = fx.get_attr "n0_0_w" : tensor<128xf32, "cpu">
  %b0m0 = fx.get_attr "n0_0_b" : tensor<128xf32, "cpu">
  %w0m1 = fx.get_attr "n0_1_w" : tensor<128xf32, "cpu">
  %b0m1 = fx.get_attr "n0_1_b" : tensor<128xf32, "cpu">
  %w0m2 = fx.get_attr "n0_2_w" : tensor<128xf32, "cpu">
  %b0m2 = fx.get_attr "n0_2_b" : tensor<128xf32, "cpu">
  %w0m3 = fx.get_attr "n0_3_w" : tensor<128xf32, "cpu">
  %b0m3 = fx.get_attr "n0_3_b" : tensor<128xf32, "cpu">
  %w0m4 = fx.get_attr "n0_4_w" : tensor<128xf32, "cpu">
  %b0m4 = fx.get_attr "n0_4_b" : tensor<128xf32, "cpu">
  %w0m5 = fx.get_attr "n0_5_w" : tensor<128xf32, "cpu">
  %b0m5 = fx.get_attr "n0_5_b" : tensor<128xf32, "cpu">
  %w0m6 = fx.get_attr "n0_6_w" : tensor<128xf32, "cpu">
  %b0m6 = fx.get_attr "n0_6_b" : tensor<128xf32, "cpu">
  %w0m7 = fx.get_attr "n0_7_w" : tensor<128xf32, "cpu">
  %b0m7 = fx.get_attr "n0_7_b" : tensor<128xf32, "cpu">
  %ln0m0 = torch.layer_norm %p0 normalized_shape [128] weight %w0m0 bias %b0m0 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m1 = torch.layer_norm %p1 normalized_shape [128] weight %w0m1 bias %b0m1 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m2 = torch.layer_norm %p2 normalized_shape [128] weight %w0m2 bias %b0m2 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m3 = torch.layer_norm %p3 normalized_shape [128] weight %w0m3 bias %b0m3 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m4 = torch.layer_norm %p4 normalized_shape [128] weight %w0m4 bias %b0m4 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m5 = torch.layer_norm %p5 normalized_shape [128] weight %w0m5 bias %b0m5 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m6 = torch.layer_norm %p6 normalized_shape [128] weight %w0m6 bias %b0m6 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m7 = torch.layer_norm %p7 normalized_shape [128] weight %w0m7 bias %b0m7 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m0 = torch.tanh %ln0m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m1 = torch.tanh %ln0m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m2 = torch.tanh %ln0m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m3 = torch.tanh %ln0m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m4 = torch.tanh %ln0m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m5 = torch.tanh %ln0m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m6 = torch.tanh %ln0m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m7 = torch.tanh %ln0m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  fx.output (%tanh0m0, %tanh0m1, %tanh0m2, %tanh0m3, %tanh0m4, %tanh0m5, %tanh0m6, %tanh0m7)
}

// -----

// Two layer norms, then three activations: neither norm pays alone
// (fused, the first still leaves the second declined), nor together; the
// first activation, fused at a loss (it copies the norms' results), lets
// the other two read its stack.

// CHECK-LABEL: fx.graph @chain_from_the_middle
// CHECK-COUNT-16: torch.layer_norm
// CHECK:         %[[T:.*]] = batch.pointwise %{{.*}} fn "torch.tanh"
// CHECK-NEXT:    %[[S:.*]] = batch.pointwise %[[T]] fn "torch.sigmoid"
// CHECK-NEXT:    %[[R:.*]] = batch.pointwise %[[S]] fn "torch.relu"
// CHECK-NOT:     batch.layer_norm
// REMARK-LABEL: 8 torch.layer_norm (%ln0m0, %ln0m1, %ln0m2, ...) not fused: unprofitable:
// REMARK:       8 torch.layer_norm (%ln1m0, %ln1m1, %ln1m2, ...) not fused: unprofitable:
// REMARK:       fused 8 torch.tanh (%tanh0m0, %tanh0m1, %tanh0m2, ...) into batch.pointwise ({{.*}}copies 64 KiB{{.*}}gain ~-{{[0-9.]+}} us); fused for its consumers, at a loss alone
fx.graph @chain_from_the_middle {
  %x = fx.placeholder "x" : tensor<128x128xf32, "cpu">
  %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7 = torch.split %x sections [16, 16, 16, 16, 16, 16, 16, 16] dim 0 : tensor<128x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">
  %w0m0 = fx.get_attr "n0_0_w" : tensor<128xf32, "cpu">
  %b0m0 = fx.get_attr "n0_0_b" : tensor<128xf32, "cpu">
  %w0m1 = fx.get_attr "n0_1_w" : tensor<128xf32, "cpu">
  %b0m1 = fx.get_attr "n0_1_b" : tensor<128xf32, "cpu">
  %w0m2 = fx.get_attr "n0_2_w" : tensor<128xf32, "cpu">
  %b0m2 = fx.get_attr "n0_2_b" : tensor<128xf32, "cpu">
  %w0m3 = fx.get_attr "n0_3_w" : tensor<128xf32, "cpu">
  %b0m3 = fx.get_attr "n0_3_b" : tensor<128xf32, "cpu">
  %w0m4 = fx.get_attr "n0_4_w" : tensor<128xf32, "cpu">
  %b0m4 = fx.get_attr "n0_4_b" : tensor<128xf32, "cpu">
  %w0m5 = fx.get_attr "n0_5_w" : tensor<128xf32, "cpu">
  %b0m5 = fx.get_attr "n0_5_b" : tensor<128xf32, "cpu">
  %w0m6 = fx.get_attr "n0_6_w" : tensor<128xf32, "cpu">
  %b0m6 = fx.get_attr "n0_6_b" : tensor<128xf32, "cpu">
  %w0m7 = fx.get_attr "n0_7_w" : tensor<128xf32, "cpu">
  %b0m7 = fx.get_attr "n0_7_b" : tensor<128xf32, "cpu">
  %ln0m0 = torch.layer_norm %p0 normalized_shape [128] weight %w0m0 bias %b0m0 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m1 = torch.layer_norm %p1 normalized_shape [128] weight %w0m1 bias %b0m1 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m2 = torch.layer_norm %p2 normalized_shape [128] weight %w0m2 bias %b0m2 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m3 = torch.layer_norm %p3 normalized_shape [128] weight %w0m3 bias %b0m3 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m4 = torch.layer_norm %p4 normalized_shape [128] weight %w0m4 bias %b0m4 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m5 = torch.layer_norm %p5 normalized_shape [128] weight %w0m5 bias %b0m5 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m6 = torch.layer_norm %p6 normalized_shape [128] weight %w0m6 bias %b0m6 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m7 = torch.layer_norm %p7 normalized_shape [128] weight %w0m7 bias %b0m7 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %w1m0 = fx.get_attr "n1_0_w" : tensor<128xf32, "cpu">
  %b1m0 = fx.get_attr "n1_0_b" : tensor<128xf32, "cpu">
  %w1m1 = fx.get_attr "n1_1_w" : tensor<128xf32, "cpu">
  %b1m1 = fx.get_attr "n1_1_b" : tensor<128xf32, "cpu">
  %w1m2 = fx.get_attr "n1_2_w" : tensor<128xf32, "cpu">
  %b1m2 = fx.get_attr "n1_2_b" : tensor<128xf32, "cpu">
  %w1m3 = fx.get_attr "n1_3_w" : tensor<128xf32, "cpu">
  %b1m3 = fx.get_attr "n1_3_b" : tensor<128xf32, "cpu">
  %w1m4 = fx.get_attr "n1_4_w" : tensor<128xf32, "cpu">
  %b1m4 = fx.get_attr "n1_4_b" : tensor<128xf32, "cpu">
  %w1m5 = fx.get_attr "n1_5_w" : tensor<128xf32, "cpu">
  %b1m5 = fx.get_attr "n1_5_b" : tensor<128xf32, "cpu">
  %w1m6 = fx.get_attr "n1_6_w" : tensor<128xf32, "cpu">
  %b1m6 = fx.get_attr "n1_6_b" : tensor<128xf32, "cpu">
  %w1m7 = fx.get_attr "n1_7_w" : tensor<128xf32, "cpu">
  %b1m7 = fx.get_attr "n1_7_b" : tensor<128xf32, "cpu">
  %ln1m0 = torch.layer_norm %ln0m0 normalized_shape [128] weight %w1m0 bias %b1m0 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m1 = torch.layer_norm %ln0m1 normalized_shape [128] weight %w1m1 bias %b1m1 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m2 = torch.layer_norm %ln0m2 normalized_shape [128] weight %w1m2 bias %b1m2 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m3 = torch.layer_norm %ln0m3 normalized_shape [128] weight %w1m3 bias %b1m3 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m4 = torch.layer_norm %ln0m4 normalized_shape [128] weight %w1m4 bias %b1m4 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m5 = torch.layer_norm %ln0m5 normalized_shape [128] weight %w1m5 bias %b1m5 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m6 = torch.layer_norm %ln0m6 normalized_shape [128] weight %w1m6 bias %b1m6 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m7 = torch.layer_norm %ln0m7 normalized_shape [128] weight %w1m7 bias %b1m7 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m0 = torch.tanh %ln1m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m1 = torch.tanh %ln1m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m2 = torch.tanh %ln1m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m3 = torch.tanh %ln1m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m4 = torch.tanh %ln1m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m5 = torch.tanh %ln1m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m6 = torch.tanh %ln1m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m7 = torch.tanh %ln1m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m0 = torch.sigmoid %tanh0m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m1 = torch.sigmoid %tanh0m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m2 = torch.sigmoid %tanh0m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m3 = torch.sigmoid %tanh0m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m4 = torch.sigmoid %tanh0m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m5 = torch.sigmoid %tanh0m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m6 = torch.sigmoid %tanh0m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m7 = torch.sigmoid %tanh0m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m0 = torch.relu %sigmoid1m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m1 = torch.relu %sigmoid1m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m2 = torch.relu %sigmoid1m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m3 = torch.relu %sigmoid1m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m4 = torch.relu %sigmoid1m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m5 = torch.relu %sigmoid1m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m6 = torch.relu %sigmoid1m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m7 = torch.relu %sigmoid1m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  fx.output (%relu2m0, %relu2m1, %relu2m2, %relu2m3, %relu2m4, %relu2m5, %relu2m6, %relu2m7)
}

// -----

// Two layer norms, then five activations: the first norm fused alone
// leaves the second declined and loses; the whole declined chain below it,
// tried at once, pays.

// CHECK-LABEL: fx.graph @whole_chain
// CHECK:         %[[N0:.*]] = batch.layer_norm
// CHECK:         %[[N1:.*]] = batch.layer_norm %[[N0]]
// CHECK-NEXT:    batch.pointwise %[[N1]] fn "torch.tanh"
// CHECK-NOT:     torch.layer_norm
// CHECK-NOT:     = torch.tanh
// REMARK-LABEL: fused 8 torch.layer_norm (%ln0m0, %ln0m1, %ln0m2, ...) into batch.layer_norm ({{.*}}); fused for its consumers, at a loss alone: {{.*}} with the 2 group(s) so fused, ~0.0 us without
// REMARK:       fused 8 torch.layer_norm (%ln1m0, %ln1m1, %ln1m2, ...) into batch.layer_norm ({{.*}}); fused for its consumers, at a loss alone: {{.*}} with the 2 group(s) so fused, ~0.0 us without
// REMARK:       fused 8 torch.tanh (%tanh0m0, %tanh0m1, %tanh0m2, ...) into batch.pointwise ({{.*}}: gain ~{{[0-9.]+}} us){{$}}
fx.graph @whole_chain {
  %x = fx.placeholder "x" : tensor<128x128xf32, "cpu">
  %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7 = torch.split %x sections [16, 16, 16, 16, 16, 16, 16, 16] dim 0 : tensor<128x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">, tensor<16x128xf32, "cpu">
  %w0m0 = fx.get_attr "n0_0_w" : tensor<128xf32, "cpu">
  %b0m0 = fx.get_attr "n0_0_b" : tensor<128xf32, "cpu">
  %w0m1 = fx.get_attr "n0_1_w" : tensor<128xf32, "cpu">
  %b0m1 = fx.get_attr "n0_1_b" : tensor<128xf32, "cpu">
  %w0m2 = fx.get_attr "n0_2_w" : tensor<128xf32, "cpu">
  %b0m2 = fx.get_attr "n0_2_b" : tensor<128xf32, "cpu">
  %w0m3 = fx.get_attr "n0_3_w" : tensor<128xf32, "cpu">
  %b0m3 = fx.get_attr "n0_3_b" : tensor<128xf32, "cpu">
  %w0m4 = fx.get_attr "n0_4_w" : tensor<128xf32, "cpu">
  %b0m4 = fx.get_attr "n0_4_b" : tensor<128xf32, "cpu">
  %w0m5 = fx.get_attr "n0_5_w" : tensor<128xf32, "cpu">
  %b0m5 = fx.get_attr "n0_5_b" : tensor<128xf32, "cpu">
  %w0m6 = fx.get_attr "n0_6_w" : tensor<128xf32, "cpu">
  %b0m6 = fx.get_attr "n0_6_b" : tensor<128xf32, "cpu">
  %w0m7 = fx.get_attr "n0_7_w" : tensor<128xf32, "cpu">
  %b0m7 = fx.get_attr "n0_7_b" : tensor<128xf32, "cpu">
  %ln0m0 = torch.layer_norm %p0 normalized_shape [128] weight %w0m0 bias %b0m0 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m1 = torch.layer_norm %p1 normalized_shape [128] weight %w0m1 bias %b0m1 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m2 = torch.layer_norm %p2 normalized_shape [128] weight %w0m2 bias %b0m2 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m3 = torch.layer_norm %p3 normalized_shape [128] weight %w0m3 bias %b0m3 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m4 = torch.layer_norm %p4 normalized_shape [128] weight %w0m4 bias %b0m4 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m5 = torch.layer_norm %p5 normalized_shape [128] weight %w0m5 bias %b0m5 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m6 = torch.layer_norm %p6 normalized_shape [128] weight %w0m6 bias %b0m6 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln0m7 = torch.layer_norm %p7 normalized_shape [128] weight %w0m7 bias %b0m7 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %w1m0 = fx.get_attr "n1_0_w" : tensor<128xf32, "cpu">
  %b1m0 = fx.get_attr "n1_0_b" : tensor<128xf32, "cpu">
  %w1m1 = fx.get_attr "n1_1_w" : tensor<128xf32, "cpu">
  %b1m1 = fx.get_attr "n1_1_b" : tensor<128xf32, "cpu">
  %w1m2 = fx.get_attr "n1_2_w" : tensor<128xf32, "cpu">
  %b1m2 = fx.get_attr "n1_2_b" : tensor<128xf32, "cpu">
  %w1m3 = fx.get_attr "n1_3_w" : tensor<128xf32, "cpu">
  %b1m3 = fx.get_attr "n1_3_b" : tensor<128xf32, "cpu">
  %w1m4 = fx.get_attr "n1_4_w" : tensor<128xf32, "cpu">
  %b1m4 = fx.get_attr "n1_4_b" : tensor<128xf32, "cpu">
  %w1m5 = fx.get_attr "n1_5_w" : tensor<128xf32, "cpu">
  %b1m5 = fx.get_attr "n1_5_b" : tensor<128xf32, "cpu">
  %w1m6 = fx.get_attr "n1_6_w" : tensor<128xf32, "cpu">
  %b1m6 = fx.get_attr "n1_6_b" : tensor<128xf32, "cpu">
  %w1m7 = fx.get_attr "n1_7_w" : tensor<128xf32, "cpu">
  %b1m7 = fx.get_attr "n1_7_b" : tensor<128xf32, "cpu">
  %ln1m0 = torch.layer_norm %ln0m0 normalized_shape [128] weight %w1m0 bias %b1m0 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m1 = torch.layer_norm %ln0m1 normalized_shape [128] weight %w1m1 bias %b1m1 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m2 = torch.layer_norm %ln0m2 normalized_shape [128] weight %w1m2 bias %b1m2 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m3 = torch.layer_norm %ln0m3 normalized_shape [128] weight %w1m3 bias %b1m3 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m4 = torch.layer_norm %ln0m4 normalized_shape [128] weight %w1m4 bias %b1m4 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m5 = torch.layer_norm %ln0m5 normalized_shape [128] weight %w1m5 bias %b1m5 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m6 = torch.layer_norm %ln0m6 normalized_shape [128] weight %w1m6 bias %b1m6 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %ln1m7 = torch.layer_norm %ln0m7 normalized_shape [128] weight %w1m7 bias %b1m7 eps 1.0e-05 : tensor<16x128xf32, "cpu">, tensor<128xf32, "cpu">, tensor<128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m0 = torch.tanh %ln1m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m1 = torch.tanh %ln1m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m2 = torch.tanh %ln1m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m3 = torch.tanh %ln1m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m4 = torch.tanh %ln1m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m5 = torch.tanh %ln1m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m6 = torch.tanh %ln1m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh0m7 = torch.tanh %ln1m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m0 = torch.sigmoid %tanh0m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m1 = torch.sigmoid %tanh0m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m2 = torch.sigmoid %tanh0m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m3 = torch.sigmoid %tanh0m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m4 = torch.sigmoid %tanh0m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m5 = torch.sigmoid %tanh0m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m6 = torch.sigmoid %tanh0m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid1m7 = torch.sigmoid %tanh0m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m0 = torch.relu %sigmoid1m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m1 = torch.relu %sigmoid1m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m2 = torch.relu %sigmoid1m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m3 = torch.relu %sigmoid1m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m4 = torch.relu %sigmoid1m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m5 = torch.relu %sigmoid1m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m6 = torch.relu %sigmoid1m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %relu2m7 = torch.relu %sigmoid1m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m0 = torch.tanh %relu2m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m1 = torch.tanh %relu2m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m2 = torch.tanh %relu2m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m3 = torch.tanh %relu2m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m4 = torch.tanh %relu2m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m5 = torch.tanh %relu2m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m6 = torch.tanh %relu2m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %tanh3m7 = torch.tanh %relu2m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m0 = torch.sigmoid %tanh3m0 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m1 = torch.sigmoid %tanh3m1 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m2 = torch.sigmoid %tanh3m2 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m3 = torch.sigmoid %tanh3m3 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m4 = torch.sigmoid %tanh3m4 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m5 = torch.sigmoid %tanh3m5 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m6 = torch.sigmoid %tanh3m6 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  %sigmoid4m7 = torch.sigmoid %tanh3m7 : tensor<16x128xf32, "cpu"> -> tensor<16x128xf32, "cpu">
  fx.output (%sigmoid4m0, %sigmoid4m1, %sigmoid4m2, %sigmoid4m3, %sigmoid4m4, %sigmoid4m5, %sigmoid4m6, %sigmoid4m7)
}
