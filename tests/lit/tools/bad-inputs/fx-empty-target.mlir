// EXPECT: 4:3: error: empty target
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.call_function ""(%x) : tensor<4xf32>
  fx.output %y
}
