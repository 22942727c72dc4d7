// EXPECT: 4:3: error: cannot reshape a tensor of 24 elements into shape [5, -1]
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %v = torch.view %x shape [5, -1] : tensor<2x12xf32> -> tensor<5x5xf32>
  fx.output %v
}
