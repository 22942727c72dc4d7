// EXPECT: 3:27: error: invalid UTF-8
fx.graph @g {
  %x = fx.placeholder "café" : tensor<4xf32>
  fx.output %x
}
