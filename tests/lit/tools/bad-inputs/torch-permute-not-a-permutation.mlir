// EXPECT: 4:3: error: is not a permutation of 0..2
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x3x4xf32>
  %p = torch.permute %x dims [0, 0, 1] : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
  fx.output %p
}
