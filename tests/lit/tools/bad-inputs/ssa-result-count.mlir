// EXPECT: 4:3: error: Operation has 1 results, but was given 2 to bind
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %a, %b = torch.tanh %x : tensor<4xf32> -> tensor<4xf32>
  fx.output %a
}
