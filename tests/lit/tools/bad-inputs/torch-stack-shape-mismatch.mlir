// EXPECT: 5:3: error: stacked tensors must have equal shapes
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %y = fx.placeholder "y" : tensor<2x5xf32>
  %c = torch.stack %x, %y dim 0 : tensor<2x12xf32>, tensor<2x5xf32> -> tensor<2x2x12xf32>
  fx.output %c
}
