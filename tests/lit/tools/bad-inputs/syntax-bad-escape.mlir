// EXPECT: 4:64: error: invalid escape sequence '\\q' in a string literal
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.call_function "torch.tanh"(%x, "a\n\n\n\n\n\n\n\n\n\n\q") : tensor<4xf32>
  fx.output %y
}
