fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = torch.tanh %x : tensor<4xf32> -> tensor<4xf32>
