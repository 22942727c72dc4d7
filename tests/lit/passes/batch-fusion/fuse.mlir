// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file --remarks --verify-diagnostics

// Three towers split -> linear -> tanh -> cat: one batch.linear and one
// batch.pointwise; the unpack/pack between them cancels (the tanh reads the
// linear's stack directly).

// CHECK-LABEL: fx.graph @towers
// CHECK:         %[[X:.*]] = batch.pack %p0, %p1, %p2 : {{.*}} -> tensor<3x8x16xf32, "cpu">
// CHECK-NEXT:    %[[W:.*]] = batch.pack %w0, %w1, %w2 : {{.*}} -> tensor<3x32x16xf32, "cpu">
// CHECK-NEXT:    %[[B:.*]] = batch.pack %b0, %b1, %b2 : {{.*}} -> tensor<3x32xf32, "cpu">
// CHECK-NEXT:    %[[L:.*]] = batch.linear %[[X]], %[[W]] bias %[[B]] : {{.*}} -> tensor<3x8x32xf32, "cpu">
// CHECK-NEXT:    %[[T:.*]] = batch.pointwise %[[L]] fn "torch.tanh" stacked [true] fn_properties {}
// CHECK-NEXT:    %a0, %a1, %a2 = batch.unpack %[[T]]
// CHECK-NEXT:    torch.cat %a0, %a1, %a2 dim 1
// CHECK-NOT:     torch.linear
fx.graph @towers {
  %x = fx.placeholder "x" : tensor<8x48xf32, "cpu">
  %w0 = fx.get_attr "w0" : tensor<32x16xf32, "cpu">
  %w1 = fx.get_attr "w1" : tensor<32x16xf32, "cpu">
  %w2 = fx.get_attr "w2" : tensor<32x16xf32, "cpu">
  %b0 = fx.get_attr "b0" : tensor<32xf32, "cpu">
  %b1 = fx.get_attr "b1" : tensor<32xf32, "cpu">
  %b2 = fx.get_attr "b2" : tensor<32xf32, "cpu">
  %p0, %p1, %p2 = torch.split %x sections [16, 16, 16] dim 1 : tensor<8x48xf32, "cpu"> -> tensor<8x16xf32, "cpu">, tensor<8x16xf32, "cpu">, tensor<8x16xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: fused 3 torch.linear (%l0, %l1, %l2) into batch.linear}}
  %l0 = torch.linear %p0, %w0, %b0 : tensor<8x16xf32, "cpu">, tensor<32x16xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<8x32xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: fused 3 torch.tanh (%a0, %a1, %a2) into batch.pointwise}}
  %a0 = torch.tanh %l0 : tensor<8x32xf32, "cpu"> -> tensor<8x32xf32, "cpu">
  %l1 = torch.linear %p1, %w1, %b1 : tensor<8x16xf32, "cpu">, tensor<32x16xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<8x32xf32, "cpu">
  %a1 = torch.tanh %l1 : tensor<8x32xf32, "cpu"> -> tensor<8x32xf32, "cpu">
  %l2 = torch.linear %p2, %w2, %b2 : tensor<8x16xf32, "cpu">, tensor<32x16xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<8x32xf32, "cpu">
  %a2 = torch.tanh %l2 : tensor<8x32xf32, "cpu"> -> tensor<8x32xf32, "cpu">
  %c = torch.cat %a0, %a1, %a2 dim 1 : tensor<8x32xf32, "cpu">, tensor<8x32xf32, "cpu">, tensor<8x32xf32, "cpu"> -> tensor<8x96xf32, "cpu">
  fx.output %c
}

// -----

// Linears of one shared input fuse on it (one linear over the concatenated
// weights); layer_norms keep their per-member affine and eps.

// CHECK-LABEL: fx.graph @shared_input_and_layer_norm
// CHECK:         %[[W:.*]] = batch.pack %w0, %w1
// CHECK-NEXT:    %[[S:.*]] = batch.linear_shared_input %x, %[[W]] : tensor<4x16xf32>, tensor<2x8x16xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[G:.*]] = batch.pack %g0, %g1
// CHECK-NEXT:    %[[B:.*]] = batch.pack %b0, %b1
// CHECK-NEXT:    %[[N:.*]] = batch.layer_norm %[[S]] normalized_shape [8] weight %[[G]] bias %[[B]] eps 0.001
// CHECK-NEXT:    %n0, %n1 = batch.unpack %[[N]]
fx.graph @shared_input_and_layer_norm {
  %x = fx.placeholder "x" : tensor<4x16xf32>
  %w0 = fx.get_attr "w0" : tensor<8x16xf32>
  %w1 = fx.get_attr "w1" : tensor<8x16xf32>
  %g0 = fx.get_attr "g0" : tensor<8xf32>
  %g1 = fx.get_attr "g1" : tensor<8xf32>
  %b0 = fx.get_attr "b0" : tensor<8xf32>
  %b1 = fx.get_attr "b1" : tensor<8xf32>
  // expected-remark@+1 {{fused 2 torch.linear (%l0, %l1) into batch.linear_shared_input}}
  %l0 = torch.linear %x, %w0 : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %l1 = torch.linear %x, %w1 : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  // expected-remark@+1 {{fused 2 torch.layer_norm (%n0, %n1) into batch.layer_norm}}
  %n0 = torch.layer_norm %l0 normalized_shape [8] weight %g0 bias %b0 eps 1.0e-03 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %n1 = torch.layer_norm %l1 normalized_shape [8] weight %g1 bias %b1 eps 1.0e-03 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  fx.output (%n0, %n1)
}

// -----

// Every argument of every member is kept: clamp's bounds, nan_to_num's
// replacements, add's alpha and a shared tensor operand.

// CHECK-LABEL: fx.graph @arguments_kept
// CHECK:       batch.pointwise %{{.*}} fn "torch.clamp" stacked [true] fn_properties {"max": 2.0, "min": -1.0}
// CHECK:       batch.pointwise %{{.*}} fn "torch.nan_to_num" stacked [true] fn_properties {"nan": 0.0, "neginf": -5.0, "posinf": 5.0}
// CHECK:       batch.pointwise %{{.*}}, %t fn "torch.add" stacked [true, false] fn_properties {"alpha": 3, "reverse": false}
fx.graph @arguments_kept {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = fx.placeholder "y" : tensor<4x8xf32>
  %t = fx.placeholder "t" : tensor<8xf32>
  // expected-remark@+1 {{fused 2 torch.clamp}}
  %c0 = torch.clamp %x min -1.0 max 2.0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %c1 = torch.clamp %y min -1.0 max 2.0 : tensor<4x8xf32> -> tensor<4x8xf32>
  // expected-remark@+1 {{fused 2 torch.nan_to_num}}
  %n0 = torch.nan_to_num %c0 nan 0.0 posinf 5.0 neginf -5.0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %n1 = torch.nan_to_num %c1 nan 0.0 posinf 5.0 neginf -5.0 : tensor<4x8xf32> -> tensor<4x8xf32>
  // expected-remark@+1 {{fused 2 torch.add}}
  %a0 = torch.add %n0, %t alpha 3 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %a1 = torch.add %n1, %t alpha 3 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  fx.output (%a0, %a1)
}

// -----

// Fuzzer regression: returned rank-0 members (pieces of an unbind of a 1-d
// tensor) get their fresh copies with a dim added and taken off again; the
// `cat([x])` copy of other ranks does not verify on rank 0.

// CHECK-LABEL: fx.graph @rank0_returned
// CHECK:         %r0, %r1, %r2 = batch.unpack
// CHECK-NEXT:    %[[U:.*]] = torch.unsqueeze %r0 dim 0 : tensor<f32, "cpu"> -> tensor<1xf32, "cpu">
// CHECK-NEXT:    %[[C:.*]] = torch.cat %[[U]] dim 0
// CHECK-NEXT:    %[[R:.*]] = torch.squeeze %[[C]] dims [0] : tensor<1xf32, "cpu"> -> tensor<f32, "cpu">
// CHECK:         fx.output (%[[R]], %{{.*}}, %{{.*}})
fx.graph @rank0_returned {
  %x = fx.placeholder "x" : tensor<3xf32, "cpu">
  %p0, %p1, %p2 = torch.unbind %x dim 0 : tensor<3xf32, "cpu"> -> tensor<f32, "cpu">, tensor<f32, "cpu">, tensor<f32, "cpu">
  // expected-remark@+1 {{batch-fusion: fused 3 torch.relu (%r0, %r1, %r2) into batch.pointwise}}
  %r0 = torch.relu %p0 : tensor<f32, "cpu"> -> tensor<f32, "cpu">
  %r1 = torch.relu %p1 : tensor<f32, "cpu"> -> tensor<f32, "cpu">
  %r2 = torch.relu %p2 : tensor<f32, "cpu"> -> tensor<f32, "cpu">
  fx.output (%r0, %r1, %r2)
}
