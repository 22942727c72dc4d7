// EXPECT: 5:3: error: needs 3 operands per member, got 2 for 1 members
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %w = fx.placeholder "w" : tensor<3x4xf32>
  %y = batch.grouped_linear %x, %w has_bias : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  fx.output %y
}
