// EXPECT: 5:1: error: unexpected end of input
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
