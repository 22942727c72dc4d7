// EXPECT: 3:38: error: unknown element type 'q32'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xq32>
  fx.output %x
}
