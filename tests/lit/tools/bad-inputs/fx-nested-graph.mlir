// EXPECT: 4:3: error: 'fx.graph' must be at the top level of a module
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.graph @h {
    %y = fx.placeholder "y" : tensor<4xf32>
    fx.output %y
  }
  fx.output %x
}
