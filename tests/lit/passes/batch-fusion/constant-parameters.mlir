// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default}' | filecheck %s --check-prefix=LIVE
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default constant-parameters=true}' | filecheck %s --check-prefix=CONST

// Stacking the weights of fused linears is a copy on every call unless the
// parameters are constants (`optimize(freeze=True)`): four linears sharing
// one input, each with a 256x256 weight, do not pay for stacking 1 MiB of
// weights per call, but fuse when the stacks are computed once.
// LIVE-COUNT-4: torch.linear %x
// LIVE-NOT:     batch.linear
// CONST:        batch.linear_shared_input
// CONST-NOT:    torch.linear
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x256xf32>
  %w0 = fx.get_attr "w0" : tensor<256x256xf32>
  %w1 = fx.get_attr "w1" : tensor<256x256xf32>
  %w2 = fx.get_attr "w2" : tensor<256x256xf32>
  %w3 = fx.get_attr "w3" : tensor<256x256xf32>
  %a = torch.linear %x, %w0 : tensor<2x256xf32>, tensor<256x256xf32> -> tensor<2x256xf32>
  %b = torch.linear %x, %w1 : tensor<2x256xf32>, tensor<256x256xf32> -> tensor<2x256xf32>
  %c = torch.linear %x, %w2 : tensor<2x256xf32>, tensor<256x256xf32> -> tensor<2x256xf32>
  %d = torch.linear %x, %w3 : tensor<2x256xf32>, tensor<256x256xf32> -> tensor<2x256xf32>
  fx.output (%a, %b, %c, %d)
}
