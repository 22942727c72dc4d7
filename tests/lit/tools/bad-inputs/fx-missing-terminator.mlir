// EXPECT: 2:1: error: must end with 'fx.output'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
}
