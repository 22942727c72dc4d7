// EXPECT: 4:3: error: dims entry 3 is out of range for rank 2
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %s = torch.sum %x dims [3] : tensor<2x12xf32> -> tensor<2xf32>
  fx.output %s
}
