// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file --remarks --verify-diagnostics

// softmax / log_softmax over the last dim: members of equal shapes stack
// along a new dim 0 and one op over the stack's last dim computes every
// member's rows (batch.pointwise keeps the member's dim; lower-batch moves it).

// CHECK-LABEL: fx.graph @softmax_last_dim
// CHECK:         %[[X:.*]] = batch.pack %p0, %p1, %p2, %p3 : {{.*}} -> tensor<4x8x4xf32>
// CHECK-NEXT:    %[[S:.*]] = batch.pointwise %[[X]] fn "torch.softmax" stacked [true] fn_properties {"dim": 1} : tensor<4x8x4xf32> -> tensor<4x8x4xf32>
// CHECK-NEXT:    %s0, %s1, %s2, %s3 = batch.unpack %[[S]]
// CHECK:         %[[L:.*]] = batch.pointwise %{{.*}} fn "torch.log_softmax" stacked [true] fn_properties {"dim": 1}
// CHECK-NOT:     torch.softmax
// CHECK-NOT:     torch.log_softmax
fx.graph @softmax_last_dim {
  %x = fx.placeholder "x" : tensor<8x16xf32>
  %p0, %p1, %p2, %p3 = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<8x16xf32> -> tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
  // expected-remark@+1 {{batch-fusion: fused 4 torch.softmax (%s0, %s1, %s2, ...) into batch.pointwise}}
  %s0 = torch.softmax %p0 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %s1 = torch.softmax %p1 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %s2 = torch.softmax %p2 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %s3 = torch.softmax %p3 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  // expected-remark@+1 {{batch-fusion: fused 2 torch.log_softmax (%l0, %l1) into batch.pointwise}}
  %l0 = torch.log_softmax %p0 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %l1 = torch.log_softmax %p1 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %c = torch.cat %s0, %s1, %s2, %s3, %l0, %l1 dim 1 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x24xf32>
  fx.output %c
}

// -----

// where / masked_fill with a scalar: the values are stacked, a mask shared
// by every member stays one operand (broadcast), distinct masks are stacked.

// CHECK-LABEL: fx.graph @where_masked_fill
// CHECK:         %[[X:.*]] = batch.pack %p0, %p1
// CHECK-NEXT:    %[[W:.*]] = batch.pointwise %m, %[[X]] fn "torch.where" stacked [false, true] fn_properties {"scalar": 0.0} : tensor<8x4xi1>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
// CHECK:         %[[M:.*]] = batch.pack %m0, %m1
// CHECK-NEXT:    %[[F:.*]] = batch.pointwise %{{.*}}, %[[M]] fn "torch.masked_fill" stacked [true, true] fn_properties {"value": -inf} : tensor<2x8x4xf32>, tensor<2x8x4xi1> -> tensor<2x8x4xf32>
fx.graph @where_masked_fill {
  %x = fx.placeholder "x" : tensor<8x8xf32>
  %m = fx.placeholder "m" : tensor<8x4xi1>
  %m0 = fx.placeholder "m0" : tensor<8x4xi1>
  %m1 = fx.placeholder "m1" : tensor<8x4xi1>
  %p0, %p1 = torch.split %x sections [4, 4] dim 1 : tensor<8x8xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  // expected-remark@+1 {{batch-fusion: fused 2 torch.where (%w0, %w1) into batch.pointwise}}
  %w0 = torch.where %m, %p0 scalar 0.0 : tensor<8x4xi1>, tensor<8x4xf32> -> tensor<8x4xf32>
  %w1 = torch.where %m, %p1 scalar 0.0 : tensor<8x4xi1>, tensor<8x4xf32> -> tensor<8x4xf32>
  // expected-remark@+1 {{batch-fusion: fused 2 torch.masked_fill (%f0, %f1) into batch.pointwise}}
  %f0 = torch.masked_fill %p0, %m0 value -inf : tensor<8x4xf32>, tensor<8x4xi1> -> tensor<8x4xf32>
  %f1 = torch.masked_fill %p1, %m1 value -inf : tensor<8x4xf32>, tensor<8x4xi1> -> tensor<8x4xf32>
  fx.output (%w0, %w1, %f0, %f1)
}

// -----

// Must not fuse: softmax over a dim other than the last, and softmaxes whose
// last dims differ in size (their rows differ).

// CHECK-LABEL: fx.graph @softmax_not_fused
// CHECK-NOT:     batch.
// CHECK:         torch.softmax %p0 dim 0
// CHECK:         torch.softmax %p1 dim 0
// CHECK:         torch.softmax %q0 dim 1
// CHECK:         torch.softmax %q1 dim 1
fx.graph @softmax_not_fused {
  %x = fx.placeholder "x" : tensor<8x8xf32>
  %y = fx.placeholder "y" : tensor<8x12xf32>
  %p0, %p1 = torch.split %x sections [4, 4] dim 1 : tensor<8x8xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  %q0, %q1 = torch.split %y sections [4, 8] dim 1 : tensor<8x12xf32> -> tensor<8x4xf32>, tensor<8x8xf32>
  // expected-remark@+1 {{batch-fusion: torch.softmax %a0 not fused: it normalizes dim 0, not the last dim}}
  %a0 = torch.softmax %p0 dim 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  // expected-remark@+1 {{batch-fusion: torch.softmax %a1 not fused: it normalizes dim 0, not the last dim}}
  %a1 = torch.softmax %p1 dim 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  // expected-remark@+1 {{batch-fusion: torch.softmax %b0 not fused: too small}}
  %b0 = torch.softmax %q0 dim 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  // expected-remark@+1 {{key differs in operand 0 shape ([8, 8] vs [8, 4])}}
  %b1 = torch.softmax %q1 dim 1 : tensor<8x8xf32> -> tensor<8x8xf32>
  fx.output (%a0, %a1, %b0, %b1)
}
