// EXPECT: 5:3: error: operand #1 dim 1 has size 5, expected 12
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %y = fx.placeholder "y" : tensor<2x5xf32>
  %c = torch.cat %x, %y dim 0 : tensor<2x12xf32>, tensor<2x5xf32> -> tensor<4x12xf32>
  fx.output %c
}
