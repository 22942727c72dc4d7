// EXPECT: 5:3: error: weight stacks 3 members, expected 2
fx.graph @g {
  %l = fx.placeholder "l" : tensor<2x8x32xf32>
  %g = fx.placeholder "g" : tensor<3x32xf32>
  %n = batch.layer_norm %l normalized_shape [32] weight %g : tensor<2x8x32xf32>, tensor<3x32xf32> -> tensor<2x8x32xf32>
  fx.output %n
}
