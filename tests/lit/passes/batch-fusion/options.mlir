// RUN: not optimus-opt %s -p 'batch-fusion{kinds=lin min-size=0}' 2>&1 | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{kinds=pointwise cost-model=none}' | filecheck %s --check-prefix=KINDS

// Bad options are one error naming each problem, not a traceback.
// CHECK: <pass-pipeline>:1:1: error: invalid options for pass 'batch-fusion': need 1 <= min-size <= max-size, got 0 and 4096; unknown kinds ['lin'] (known: all, linear, layer_norm, pointwise, softmax)

// kinds=pointwise leaves the linears alone.
// KINDS:     torch.linear %x, %w0
// KINDS:     torch.linear %y, %w1
// KINDS:     batch.pointwise %{{.*}} fn "torch.relu"
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = fx.placeholder "y" : tensor<4x8xf32>
  %w0 = fx.get_attr "w0" : tensor<8x8xf32>
  %w1 = fx.get_attr "w1" : tensor<8x8xf32>
  %a = torch.linear %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = torch.linear %y, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %c = torch.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %d = torch.relu %b : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%c, %d)
}
