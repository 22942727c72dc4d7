// EXPECT: 4:3: error: result #0 has shape 5, expected 4
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = torch.tanh %x : tensor<4xf32> -> tensor<5xf32>
  fx.output %y
}
