// EXPECT: 3:36: error: unexpected character U+00B2
fx.graph @g {
  %x = fx.placeholder "x" : tensor<²xf32>
  fx.output %x
}
