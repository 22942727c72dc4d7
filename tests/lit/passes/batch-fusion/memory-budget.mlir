// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none kinds=pointwise}' --remarks 2>&1 | filecheck %s --check-prefix=DEFAULT
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none kinds=pointwise memory-budget=none}' | filecheck %s --check-prefix=DEFAULT
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none kinds=pointwise memory-budget=2x}' --remarks 2>&1 | filecheck %s --check-prefix=TIGHT
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none kinds=pointwise memory-budget="+100%"}' --remarks 2>&1 | filecheck %s --check-prefix=TIGHT
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none kinds=pointwise memory-budget=300KiB}' --remarks 2>&1 | filecheck %s --check-prefix=CHUNKS
// RUN: not optimus-opt %s -p 'batch-fusion{memory-budget=lots}' 2>&1 | filecheck %s --check-prefix=BAD

// The memory budget (issue 24). Captured, the towers run one after another:
// each 64 KiB tanh result dies at its linear, so the graph holds ~0.07 MiB at
// its peak. Fused, the four inputs are stacked (a 256 KiB copy: they are
// separate graph inputs) and the four results live at once: 0.50 MiB.
// The default budget (1.5x the captured peak plus 1 MiB) keeps the group;
// 2x (or +100%) declines it; 300 KiB cuts it in two.

// DEFAULT:     batch.pointwise %{{.*}} fn "torch.tanh"
// DEFAULT-NOT: memory decided
// DEFAULT-NOT: torch.tanh %x

// TIGHT:       remark: batch-fusion: 4 torch.tanh (%t0, %t1, %t2, ...) not fused: memory decided: fused, the call would hold 0.50 MiB live at once, budget 2.00x of the captured peak 0.07 MiB = 0.13 MiB; declined, the plan holds 0.07 MiB
// TIGHT-NOT:   batch.pointwise
// TIGHT-COUNT-4: torch.tanh %x

// CHUNKS:      remark: batch-fusion: 4 torch.tanh (%t0, %t1, %t2, ...) fused in 2 chunks: memory decided: as one group the call would hold 0.50 MiB live at once, budget 0.29 MiB (the captured peak is 0.07 MiB); in chunks the plan holds 0.25 MiB
// CHUNKS:      remark: batch-fusion: fused 2 torch.tanh (%t0, %t1) into batch.pointwise
// CHUNKS:      remark: batch-fusion: fused 2 torch.tanh (%t2, %t3) into batch.pointwise
// CHUNKS:      batch.pack %x0, %x1
// CHUNKS:      batch.pack %x2, %x3

// BAD: error: invalid options for pass 'batch-fusion': memory-budget: memory budget 'lots' is not a budget: give a ratio over the captured graph's peak ('1.5x', '+50%'), optionally plus an allowance ('1.5x+1MiB'), bytes ('64MiB', '1GiB', '500MB', '1048576') or 'none'

fx.graph @towers {
  %x0 = fx.placeholder "x0" : tensor<64x256xf32, "cpu">
  %x1 = fx.placeholder "x1" : tensor<64x256xf32, "cpu">
  %x2 = fx.placeholder "x2" : tensor<64x256xf32, "cpu">
  %x3 = fx.placeholder "x3" : tensor<64x256xf32, "cpu">
  %w0 = fx.get_attr "w0" : tensor<4x256xf32, "cpu">
  %w1 = fx.get_attr "w1" : tensor<4x256xf32, "cpu">
  %w2 = fx.get_attr "w2" : tensor<4x256xf32, "cpu">
  %w3 = fx.get_attr "w3" : tensor<4x256xf32, "cpu">
  %t0 = torch.tanh %x0 : tensor<64x256xf32, "cpu"> -> tensor<64x256xf32, "cpu">
  %l0 = torch.linear %t0, %w0 : tensor<64x256xf32, "cpu">, tensor<4x256xf32, "cpu"> -> tensor<64x4xf32, "cpu">
  %t1 = torch.tanh %x1 : tensor<64x256xf32, "cpu"> -> tensor<64x256xf32, "cpu">
  %l1 = torch.linear %t1, %w1 : tensor<64x256xf32, "cpu">, tensor<4x256xf32, "cpu"> -> tensor<64x4xf32, "cpu">
  %t2 = torch.tanh %x2 : tensor<64x256xf32, "cpu"> -> tensor<64x256xf32, "cpu">
  %l2 = torch.linear %t2, %w2 : tensor<64x256xf32, "cpu">, tensor<4x256xf32, "cpu"> -> tensor<64x4xf32, "cpu">
  %t3 = torch.tanh %x3 : tensor<64x256xf32, "cpu"> -> tensor<64x256xf32, "cpu">
  %l3 = torch.linear %t3, %w3 : tensor<64x256xf32, "cpu">, tensor<4x256xf32, "cpu"> -> tensor<64x4xf32, "cpu">
  %c = torch.cat %l0, %l1, %l2, %l3 dim 1 : tensor<64x4xf32, "cpu">, tensor<64x4xf32, "cpu">, tensor<64x4xf32, "cpu">, tensor<64x4xf32, "cpu"> -> tensor<64x16xf32, "cpu">
  fx.output (%c)
}
