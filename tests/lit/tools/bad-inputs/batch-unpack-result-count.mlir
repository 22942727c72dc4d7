// EXPECT: 4:3: error: input stacks 3 members, expected 2
fx.graph @g {
  %s = fx.placeholder "s" : tensor<3x8x16xf32>
  %a, %b = batch.unpack %s : tensor<3x8x16xf32> -> tensor<8x16xf32>, tensor<8x16xf32>
  fx.output [%a, %b]
}
