// EXPECT: 5:3: error: input stacks 3 members, expected 2
fx.graph @g {
  %x = fx.placeholder "x" : tensor<3x8x16xf32>
  %w = fx.placeholder "w" : tensor<2x32x16xf32>
  %y = batch.linear %x, %w : tensor<3x8x16xf32>, tensor<2x32x16xf32> -> tensor<3x8x32xf32>
  fx.output %y
}
