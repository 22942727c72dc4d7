// EXPECT: 4:8: error: unknown operation 'torch.frobnicate'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = torch.frobnicate %x : tensor<4xf32> -> tensor<4xf32>
  fx.output %y
}
