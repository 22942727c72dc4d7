// EXPECT: 3:3: error: device
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, 42>
  fx.output %x
}
