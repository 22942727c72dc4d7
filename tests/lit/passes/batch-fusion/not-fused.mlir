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
