// EXPECT: 4:3: error: Expected 2 or 3 operands, but got 1
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %r = "torch.linear"(%x) : (tensor<2x12xf32>) -> tensor<2x8xf32>
  fx.output %r
}
