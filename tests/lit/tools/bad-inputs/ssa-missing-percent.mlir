// EXPECT: 3:3: error: unknown operation 'x'
fx.graph @g {
  x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
