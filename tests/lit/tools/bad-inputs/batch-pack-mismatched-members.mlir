// EXPECT: 5:3: error: member 1 has type tensor<8x16xf64>, member 0 tensor<8x16xf32>
fx.graph @g {
  %a = fx.placeholder "a" : tensor<8x16xf32>
  %b = fx.placeholder "b" : tensor<8x16xf64>
  %s = batch.pack %a, %b : tensor<8x16xf32>, tensor<8x16xf64> -> tensor<2x8x16xf32>
  fx.output %s
}
