// EXPECT: 4:8: error: unknown operation 'arith.addf'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = arith.addf %x, %x : tensor<4xf32>
  fx.output %y
}
