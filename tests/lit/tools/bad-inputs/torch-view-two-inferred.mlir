// EXPECT: 4:3: error: has more than one -1
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %v = torch.view %x shape [-1, -1] : tensor<2x12xf32> -> tensor<2x12xf32>
  fx.output %v
}
