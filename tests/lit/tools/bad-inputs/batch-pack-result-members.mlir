// EXPECT: 5:3: error: result #0 has shape 3x8x16, expected 2x8x16
fx.graph @g {
  %a = fx.placeholder "a" : tensor<8x16xf32>
  %b = fx.placeholder "b" : tensor<8x16xf32>
  %s = batch.pack %a, %b : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<3x8x16xf32>
  fx.output %s
}
