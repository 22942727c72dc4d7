// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none}' --split-input-file --remarks --verify-diagnostics
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none},lower-batch,canonicalize,dce' --split-input-file | filecheck %s --check-prefix=LOWER

// A symbolic batch dim: the pieces of one split of %x along the static
// feature dim share %x's batch symbol (s77, recorded at import), so the
// towers fuse into [3, ?, 16] stacks; the lowering reads the pieces as one
// view and needs no batch size.

// CHECK-LABEL: fx.graph @towers
// CHECK:         %[[X:.*]] = batch.pack %p0, %p1, %p2 : {{.*}} -> tensor<3x?x16xf32, "cpu">
// CHECK:         %[[L:.*]] = batch.linear %[[X]], {{.*}} -> tensor<3x?x32xf32, "cpu">
// CHECK-NEXT:    %[[T:.*]] = batch.pointwise %[[L]] fn "torch.tanh"
// CHECK-NEXT:    %a0, %a1, %a2 = batch.unpack %[[T]]
// CHECK-NOT:     torch.linear
// LOWER-LABEL: fx.graph @towers
// LOWER:         torch.unflatten %x dim 1 sizes [3, 16] : tensor<?x48xf32, "cpu"> -> tensor<?x3x16xf32, "cpu">
// LOWER:         torch.baddbmm {{.*}} -> tensor<3x?x32xf32, "cpu">
// LOWER-NOT:     torch.reshape
// LOWER-NOT:     torch.view
fx.graph @towers {
  %x = fx.placeholder "x" symbols ["s77", ""] hints [8, 48] : tensor<?x48xf32, "cpu">
  %w0 = fx.get_attr "w0" : tensor<32x16xf32, "cpu">
  %w1 = fx.get_attr "w1" : tensor<32x16xf32, "cpu">
  %w2 = fx.get_attr "w2" : tensor<32x16xf32, "cpu">
  %b0 = fx.get_attr "b0" : tensor<32xf32, "cpu">
  %b1 = fx.get_attr "b1" : tensor<32xf32, "cpu">
  %b2 = fx.get_attr "b2" : tensor<32xf32, "cpu">
  %p0, %p1, %p2 = torch.split %x sections [16, 16, 16] dim 1 : tensor<?x48xf32, "cpu"> -> tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: fused 3 torch.linear (%l0, %l1, %l2) into batch.linear; symbolic batch dim s77, priced at its example size 8}}
  %l0 = torch.linear %p0, %w0, %b0 : tensor<?x16xf32, "cpu">, tensor<32x16xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: fused 3 torch.tanh (%a0, %a1, %a2) into batch.pointwise; symbolic batch dim s77, priced at its example size 8}}
  %a0 = torch.tanh %l0 : tensor<?x32xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  %l1 = torch.linear %p1, %w1, %b1 : tensor<?x16xf32, "cpu">, tensor<32x16xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  %a1 = torch.tanh %l1 : tensor<?x32xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  %l2 = torch.linear %p2, %w2, %b2 : tensor<?x16xf32, "cpu">, tensor<32x16xf32, "cpu">, tensor<32xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  %a2 = torch.tanh %l2 : tensor<?x32xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  %c = torch.cat %a0, %a1, %a2 dim 1 : tensor<?x32xf32, "cpu">, tensor<?x32xf32, "cpu">, tensor<?x32xf32, "cpu"> -> tensor<?x96xf32, "cpu">
  fx.output %c
}

// -----

// Two inputs whose batch dims are different symbols (two independent
// mark_dynamic inputs): their `?` sizes are not known equal, so the linears
// are left alone, and the remark names the symbols.

// CHECK-LABEL: fx.graph @different_symbols
// CHECK-NOT:     batch.
// CHECK:         torch.linear %x
// CHECK:         torch.linear %y
fx.graph @different_symbols {
  %x = fx.placeholder "x" symbols ["s0", ""] hints [4, 16] : tensor<?x16xf32, "cpu">
  %y = fx.placeholder "y" symbols ["s1", ""] hints [6, 16] : tensor<?x16xf32, "cpu">
  %w0 = fx.get_attr "w0" : tensor<32x16xf32, "cpu">
  %w1 = fx.get_attr "w1" : tensor<32x16xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: torch.linear %l0 not fused: too small (fewer than min-size 2 independent members)}}
  %l0 = torch.linear %x, %w0 : tensor<?x16xf32, "cpu">, tensor<32x16xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  // expected-remark@+1 {{key differs in input shape ([s1, 16] vs [s0, 16])}}
  %l1 = torch.linear %y, %w1 : tensor<?x16xf32, "cpu">, tensor<32x16xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  fx.output (%l0, %l1)
}

// -----

// Without recorded symbols (hand-written IR), each placeholder's `?` dim is
// a symbol of its own: two inputs never fuse, pieces of one input do (and
// the cost model would price `?` at the documented default, 64).

// CHECK-LABEL: fx.graph @unnamed
// CHECK:         batch.pack %p0, %p1
// CHECK:         torch.tanh %y
// CHECK:         torch.tanh %z
fx.graph @unnamed {
  %x = fx.placeholder "x" : tensor<?x32xf32, "cpu">
  %y = fx.placeholder "y" : tensor<?x16xf32, "cpu">
  %z = fx.placeholder "z" : tensor<?x16xf32, "cpu">
  %p0, %p1 = torch.split %x sections [16, 16] dim 1 : tensor<?x32xf32, "cpu"> -> tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: fused 2 torch.relu (%r0, %r1) into batch.pointwise; symbolic batch dim ?1, priced at the default size 64 (no example size known)}}
  %r0 = torch.relu %p0 : tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  %r1 = torch.relu %p1 : tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: torch.tanh %t0 not fused: too small (fewer than min-size 2 independent members)}}
  %t0 = torch.tanh %y : tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  // expected-remark@+1 {{key differs in operand 0 shape ([?3, 16] vs [?2, 16])}}
  %t1 = torch.tanh %z : tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  fx.output (%r0, %r1, %t0, %t1)
}

// -----

// Symbolic sizes other than the leading dim are not fused (a feature dim
// that is `?` changes the math's shape); nor are layer norms whose eps is
// a runtime value (Dynamo's `.item()` under dynamic=True), which stay fx
// calls. The `.item()` reads are no barrier: the two relus still fuse
// across them.

// CHECK-LABEL: fx.graph @left_alone
// CHECK:         torch.tanh %q0
// CHECK:         torch.tanh %q1
// CHECK:         fx.call_function "torch.nn.functional.layer_norm"
// CHECK:         fx.call_function "torch.nn.functional.layer_norm"
// CHECK:         batch.pointwise {{.*}} fn "torch.relu"
fx.graph @left_alone {
  %x = fx.placeholder "x" symbols ["s0", "s1"] hints [4, 32] : tensor<?x?xf32, "cpu">
  %e0 = fx.placeholder "e0" : tensor<f64, "cpu">
  %e1 = fx.placeholder "e1" : tensor<f64, "cpu">
  %g = fx.placeholder "g" : tensor<8xf32, "cpu">
  %q0, %q1 = torch.split %x sections [2, 2] dim 0 : tensor<?x?xf32, "cpu"> -> tensor<2x?xf32, "cpu">, tensor<2x?xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: torch.tanh %t0 not fused: dynamic shape: a symbolic size other than the leading (batch) dim}}
  %t0 = torch.tanh %q0 : tensor<2x?xf32, "cpu"> -> tensor<2x?xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: torch.tanh %t1 not fused: dynamic shape: a symbolic size other than the leading (batch) dim}}
  %t1 = torch.tanh %q1 : tensor<2x?xf32, "cpu"> -> tensor<2x?xf32, "cpu">
  %h = fx.placeholder "h" symbols ["s0", ""] hints [4, 16] : tensor<?x16xf32, "cpu">
  %h0, %h1 = torch.split %h sections [8, 8] dim 1 : tensor<?x16xf32, "cpu"> -> tensor<?x8xf32, "cpu">, tensor<?x8xf32, "cpu">
  %i0 = fx.call_method "item"(%e0) : !fx.value
  // expected-remark@+1 {{batch-fusion: fx.call_function %n0 not fused: its eps is a runtime value (%i0}}
  %n0 = fx.call_function "torch.nn.functional.layer_norm"(%h0, (8,), %g, none, %i0) : tensor<?x8xf32, "cpu">
  // expected-remark@+1 {{batch-fusion: fused 2 torch.relu (%r0, %r1) into batch.pointwise; symbolic batch dim s0, priced at its example size 4}}
  %r0 = torch.relu %n0 : tensor<?x8xf32, "cpu"> -> tensor<?x8xf32, "cpu">
  %i1 = fx.call_method "item"(%e1) : !fx.value
  // expected-remark@+1 {{batch-fusion: fx.call_function %n1 not fused: its eps is a runtime value (%i1}}
  %n1 = fx.call_function "torch.nn.functional.layer_norm"(%h1, (8,), %g, none, %i1) : tensor<?x8xf32, "cpu">
  %r1 = torch.relu %n1 : tensor<?x8xf32, "cpu"> -> tensor<?x8xf32, "cpu">
  fx.output (%t0, %t1, %r0, %r1)
}
