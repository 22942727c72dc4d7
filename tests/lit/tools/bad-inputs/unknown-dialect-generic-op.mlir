// EXPECT: 4:9: error: unknown operation 'mystery.op'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "mystery.op"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}
