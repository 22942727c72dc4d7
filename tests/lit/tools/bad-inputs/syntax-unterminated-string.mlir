// EXPECT: 3:23: error: End of file reached before closing string literal
fx.graph @g {
  %x = fx.placeholder "x : tensor<4xf32>
  fx.output %x
}
