// EXPECT: 4:3: error: SSA value %x is already defined
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %x = fx.placeholder "y" : tensor<4xf32>
  fx.output %x
}
