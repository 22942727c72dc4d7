// EXPECT: 3:27: error: Expected ':'
fx.graph @g {
  %x = fx.placeholder "x" tensor<4xf32>
  fx.output %x
}
