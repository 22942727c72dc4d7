// EXPECT: 6:1: error: unexpected '}'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
}
