// EXPECT: 3:38: error: unexpected end of input
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x