// EXPECT: 4:3: error: 'fx.output' must be the last operation
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
  %y = fx.placeholder "y" : tensor<4xf32>
}
