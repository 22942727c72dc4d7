// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file --remarks --verify-diagnostics

// What must not fuse, each with the remark that says why.

// Different dtypes (PyTorch's Optimus fuses these): the key differs in dtype.
// CHECK-LABEL: fx.graph @dtype
// CHECK:       torch.tanh %y : tensor<4x8xf64>
// CHECK:       batch.pack %x, %z
fx.graph @dtype {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = fx.placeholder "y" : tensor<4x8xf64>
  %z = fx.placeholder "z" : tensor<4x8xf32>
  // expected-remark@+1 {{fused 2 torch.tanh (%a, %c) into batch.pointwise}}
  %a = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // expected-remark@+1 {{torch.tanh %b not fused with the 2-member group at}}
  %b = torch.tanh %y : tensor<4x8xf64> -> tensor<4x8xf64>
  %c = torch.tanh %z : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%a, %b, %c)
}

// -----

// Different devices.
// CHECK-LABEL: fx.graph @device
// CHECK-NOT:   batch.
fx.graph @device {
  %x = fx.placeholder "x" : tensor<4x8xf32, "cpu">
  %y = fx.placeholder "y" : tensor<4x8xf32, "cuda:0">
  // expected-remark@+1 {{torch.relu %a not fused: too small}}
  %a = torch.relu %x : tensor<4x8xf32, "cpu"> -> tensor<4x8xf32, "cpu">
  // expected-remark-re@+1 {{torch.relu %b not fused with torch.relu %a at {{.*}}: key differs in operand 0 device (cuda:0 vs cpu)}}
  %b = torch.relu %y : tensor<4x8xf32, "cuda:0"> -> tensor<4x8xf32, "cuda:0">
  fx.output (%a, %b)
}

// -----

// A dependency between members: b reads a.
// CHECK-LABEL: fx.graph @dependent
// CHECK-NOT:   batch.
fx.graph @dependent {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  // expected-remark@+1 {{torch.sigmoid %a not fused: it depends on, or is needed by, a member of every group it could join}}
  %a = torch.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // expected-remark@+1 {{torch.sigmoid %b not fused: it depends on}}
  %b = torch.sigmoid %a : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output %b
}

// -----

// Mismatched arguments: clamp bounds differ.
// CHECK-LABEL: fx.graph @arguments
// CHECK-NOT:   batch.
fx.graph @arguments {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = fx.placeholder "y" : tensor<4x8xf32>
  // expected-remark@+1 {{torch.clamp %a not fused: too small}}
  %a = torch.clamp %x min 0.0 max 1.0 : tensor<4x8xf32> -> tensor<4x8xf32>
  // expected-remark-re@+1 {{torch.clamp %b not fused with torch.clamp %a at {{.*}}: key differs in max (2.0 vs 1.0)}}
  %b = torch.clamp %y min 0.0 max 2.0 : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%a, %b)
}

// -----

// Mutation: x is written in place after the first tanh reads it; neither
// tanh of x may move. The unrelated pair (p, q) still fuses across nothing.
// CHECK-LABEL: fx.graph @mutation
// CHECK:       torch.tanh %x
// CHECK:       fx.call_method "add_"
// CHECK:       torch.tanh %x
fx.graph @mutation {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  // expected-remark@+1 {{torch.tanh %a not fused: mutation: %x (or a tensor it may alias) is written in place}}
  %a = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %w = fx.call_method "add_"(%x, 1) : tensor<4x8xf32>
  // expected-remark@+1 {{torch.tanh %b not fused: mutation}}
  %b = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%a, %b)
}

// -----

// An op with side effects between two candidates is a barrier: the members
// would have to move across it.
// CHECK-LABEL: fx.graph @barrier
// CHECK-NOT:   batch.
fx.graph @barrier {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = fx.placeholder "y" : tensor<4x8xf32>
  %z = fx.placeholder "z" : tensor<4x8xf32>
  // expected-remark@+1 {{torch.exp %a not fused: too small}}
  %a = torch.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %p = fx.call_function "builtins.print"(%z) : !fx.value
  // expected-remark-re@+1 {{torch.exp %b not fused with torch.exp %a at {{.*}}: key differs in segment (an op with side effects lies between them)}}
  %b = torch.exp %y : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%a, %b)
}

// -----

// Scalars are keyed by Python type and bits: an int and a float scalar
// promote an integral tensor differently (`q * 2` stays i64, `q * 2.0` is
// f32), an int and a bool differ on a bool tensor, and the sign of a zero
// bound is observable (`1 / clamp(x, min=-0.0)`). Each kind groups with its
// own; a NaN bound groups with a NaN bound.
// CHECK-LABEL: fx.graph @scalar_types
// CHECK:         %[[IS:.*]] = batch.pack %p, %q
// CHECK-NEXT:    %[[I:.*]] = batch.pointwise %[[IS]] fn "torch.mul" stacked [true] fn_properties {"reverse": false, "scalar": 2} : tensor<2x4x2xi64> -> tensor<2x4x2xi64>
// CHECK:         %[[FS:.*]] = batch.pack %p, %q
// CHECK-NEXT:    %[[F:.*]] = batch.pointwise %[[FS]] fn "torch.mul" stacked [true] fn_properties {"reverse": false, "scalar": 2.0} : tensor<2x4x2xi64> -> tensor<2x4x2xf32>
// CHECK:         batch.pointwise %{{.*}} fn "torch.mul" stacked [true] fn_properties {"reverse": false, "scalar": 1} : tensor<2x4x2xi1> -> tensor<2x4x2xi64>
// CHECK:         batch.pointwise %{{.*}} fn "torch.mul" stacked [true] fn_properties {"reverse": false, "scalar": true} : tensor<2x4x2xi1> -> tensor<2x4x2xi1>
// CHECK:         batch.pointwise %{{.*}} fn "torch.clamp" stacked [true] fn_properties {"min": 0.0}
// CHECK:         batch.pointwise %{{.*}} fn "torch.clamp" stacked [true] fn_properties {"min": -0.0}
// CHECK:         batch.pointwise %{{.*}} fn "torch.clamp" stacked [true] fn_properties {"min": nan}
fx.graph @scalar_types {
  %p = fx.placeholder "p" : tensor<4x2xi64>
  %q = fx.placeholder "q" : tensor<4x2xi64>
  %b = fx.placeholder "b" : tensor<4x2xi1>
  %c = fx.placeholder "c" : tensor<4x2xi1>
  %x = fx.placeholder "x" : tensor<4x2xf32>
  %y = fx.placeholder "y" : tensor<4x2xf32>
  // expected-remark@+1 {{fused 2 torch.mul (%pi, %qi) into batch.pointwise}}
  %pi = torch.mul %p scalar 2 : tensor<4x2xi64> -> tensor<4x2xi64>
  // expected-remark@+1 {{fused 2 torch.mul (%pf, %qf) into batch.pointwise}}
  %pf = torch.mul %p scalar 2.0 : tensor<4x2xi64> -> tensor<4x2xf32>
  %qi = torch.mul %q scalar 2 : tensor<4x2xi64> -> tensor<4x2xi64>
  %qf = torch.mul %q scalar 2.0 : tensor<4x2xi64> -> tensor<4x2xf32>
  // expected-remark@+1 {{fused 2 torch.mul (%bi, %ci) into batch.pointwise}}
  %bi = torch.mul %b scalar 1 : tensor<4x2xi1> -> tensor<4x2xi64>
  // expected-remark@+1 {{fused 2 torch.mul (%bb, %cb) into batch.pointwise}}
  %bb = torch.mul %b scalar true : tensor<4x2xi1> -> tensor<4x2xi1>
  %ci = torch.mul %c scalar 1 : tensor<4x2xi1> -> tensor<4x2xi64>
  %cb = torch.mul %c scalar true : tensor<4x2xi1> -> tensor<4x2xi1>
  // expected-remark@+1 {{fused 2 torch.clamp (%xp, %yp) into batch.pointwise}}
  %xp = torch.clamp %x min 0.0 : tensor<4x2xf32> -> tensor<4x2xf32>
  // expected-remark@+1 {{fused 2 torch.clamp (%xn, %yn) into batch.pointwise}}
  %xn = torch.clamp %x min -0.0 : tensor<4x2xf32> -> tensor<4x2xf32>
  %yp = torch.clamp %y min 0.0 : tensor<4x2xf32> -> tensor<4x2xf32>
  %yn = torch.clamp %y min -0.0 : tensor<4x2xf32> -> tensor<4x2xf32>
  // expected-remark@+1 {{fused 2 torch.clamp (%xz, %yz) into batch.pointwise}}
  %xz = torch.clamp %x min nan : tensor<4x2xf32> -> tensor<4x2xf32>
  %yz = torch.clamp %y min nan : tensor<4x2xf32> -> tensor<4x2xf32>
  fx.output (%pi, %pf, %qi, %qf, %bi, %bb, %ci, %cb, %xp, %xn, %yp, %yn, %xz, %yz)
}

// -----

// The remark names the scalar's type and the promoted result type.
// CHECK-LABEL: fx.graph @scalar_remarks
// CHECK-NOT:   batch.
fx.graph @scalar_remarks {
  %p = fx.placeholder "p" : tensor<4x2xi64>
  %q = fx.placeholder "q" : tensor<4x2xi64>
  %x = fx.placeholder "x" : tensor<4x2xf32>
  %y = fx.placeholder "y" : tensor<4x2xf32>
  // expected-remark@+1 {{torch.mul %pi not fused: too small}}
  %pi = torch.mul %p scalar 2 : tensor<4x2xi64> -> tensor<4x2xi64>
  // expected-remark-re@+1 {{torch.mul %qf not fused with torch.mul %pi at {{.*}}: key differs in scalar (2.0 vs 2), result dtype (f32 vs i64)}}
  %qf = torch.mul %q scalar 2.0 : tensor<4x2xi64> -> tensor<4x2xf32>
  // expected-remark@+1 {{torch.clamp %xp not fused: too small}}
  %xp = torch.clamp %x min 0.0 : tensor<4x2xf32> -> tensor<4x2xf32>
  // expected-remark-re@+1 {{torch.clamp %yn not fused with torch.clamp %xp at {{.*}}: key differs in min (-0.0 vs 0.0)}}
  %yn = torch.clamp %y min -0.0 : tensor<4x2xf32> -> tensor<4x2xf32>
  fx.output (%pi, %qf, %xp, %yn)
}

// -----

// CHECK-LABEL: fx.graph @bool_scalar_remark
// CHECK-NOT:   batch.
fx.graph @bool_scalar_remark {
  %b = fx.placeholder "b" : tensor<4x2xi1>
  %c = fx.placeholder "c" : tensor<4x2xi1>
  // expected-remark@+1 {{torch.mul %bi not fused: too small}}
  %bi = torch.mul %b scalar 1 : tensor<4x2xi1> -> tensor<4x2xi64>
  // expected-remark-re@+1 {{torch.mul %cb not fused with torch.mul %bi at {{.*}}: key differs in scalar (True vs 1), result dtype (i1 vs i64)}}
  %cb = torch.mul %c scalar true : tensor<4x2xi1> -> tensor<4x2xi1>
  fx.output (%bi, %cb)
}

// -----

// A linear on its own input (a per-feature linear) beside linears sharing
// one input: the keys are of different kinds, said in words (issue 34: the
// remark read `input shape ([64, 4] vs none), input dtype (f32 vs none)`).
// CHECK-LABEL: fx.graph @own_input_vs_shared_input
// CHECK:       batch.linear_shared_input %x
// CHECK:       torch.linear %f, %v
fx.graph @own_input_vs_shared_input {
  %x = fx.placeholder "x" : tensor<64x16xf32>
  %f = fx.placeholder "f" : tensor<64x4xf32>
  %w0 = fx.placeholder "w0" : tensor<8x16xf32>
  %w1 = fx.placeholder "w1" : tensor<8x16xf32>
  %w2 = fx.placeholder "w2" : tensor<8x16xf32>
  %v = fx.placeholder "v" : tensor<8x4xf32>
  // expected-remark@+1 {{fused 3 torch.linear (%a, %b, %c) into batch.linear_shared_input}}
  %a = torch.linear %x, %w0 : tensor<64x16xf32>, tensor<8x16xf32> -> tensor<64x8xf32>
  %b = torch.linear %x, %w1 : tensor<64x16xf32>, tensor<8x16xf32> -> tensor<64x8xf32>
  %c = torch.linear %x, %w2 : tensor<64x16xf32>, tensor<8x16xf32> -> tensor<64x8xf32>
  // expected-remark-re@+1 {{torch.linear %d not fused with the 3-member group at {{.*}}: its input is its own tensor, the group's members share one input (%x); key also differs in weight shape ([8, 4] vs [8, 16])}}
  %d = torch.linear %f, %v : tensor<64x4xf32>, tensor<8x4xf32> -> tensor<64x8xf32>
  fx.output (%a, %b, %c, %d)
}

// -----

// The same weights as the group's: only the input differs.
// CHECK-LABEL: fx.graph @own_input_same_weights
// CHECK:       batch.linear_shared_input %x
// CHECK:       torch.linear %g, %w3
fx.graph @own_input_same_weights {
  %x = fx.placeholder "x" : tensor<64x16xf32>
  %g = fx.placeholder "g" : tensor<64x16xf32>
  %w0 = fx.placeholder "w0" : tensor<8x16xf32>
  %w1 = fx.placeholder "w1" : tensor<8x16xf32>
  %w3 = fx.placeholder "w3" : tensor<8x16xf32>
  // expected-remark@+1 {{fused 2 torch.linear (%a, %b) into batch.linear_shared_input}}
  %a = torch.linear %x, %w0 : tensor<64x16xf32>, tensor<8x16xf32> -> tensor<64x8xf32>
  %b = torch.linear %x, %w1 : tensor<64x16xf32>, tensor<8x16xf32> -> tensor<64x8xf32>
  // expected-remark-re@+1 {{torch.linear %e not fused with the 2-member group at {{.*}}: its input is its own tensor, the group's members share one input (%x)}}
  %e = torch.linear %g, %w3 : tensor<64x16xf32>, tensor<8x16xf32> -> tensor<64x8xf32>
  fx.output (%a, %b, %e)
}
