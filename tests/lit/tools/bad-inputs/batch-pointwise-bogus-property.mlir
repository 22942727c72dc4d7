// EXPECT: 4:3: error: 'torch.tanh' has no properties ['bogus']
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %y = batch.pointwise %x fn "torch.tanh" stacked [true] fn_properties {"bogus": 1} : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output %y
}
