// EXPECT: 3:25: error: invalid UTF-8
fx.graph @g {
  %x = fx.placeholder "x√(" : tensor<4xf32>
  fx.output %x
}
