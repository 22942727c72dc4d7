// EXPECT: 4:3: error: Expected 0 operands, but got 1
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %z = "fx.placeholder"(%x) <{target = "z"}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %z
}
