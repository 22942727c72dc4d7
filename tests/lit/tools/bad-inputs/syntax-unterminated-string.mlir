// EXPECT: 3:23: error: unterminated string literal (a string literal ends on the line it starts on)
fx.graph @g {
  %x = fx.placeholder "x : tensor<4xf32>
  fx.output %x
}
