// EXPECT: 4:3: error: should be of base attribute tensor
fx.graph @g {
  %x = fx.placeholder "x" : !fx.value
  %y = torch.tanh %x : !fx.value -> tensor<4xf32>
  fx.output %y
}
