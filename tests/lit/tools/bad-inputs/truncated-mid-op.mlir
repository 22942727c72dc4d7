// EXPECT: 4:23: error: unexpected end of input
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = torch.split %x sect