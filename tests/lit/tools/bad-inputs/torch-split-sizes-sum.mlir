// EXPECT: 4:3: error: sections [4, 4] sum to 8 but dim 1 of the input has size 12
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %a, %b = torch.split %x sections [4, 4] dim 1 : tensor<2x12xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
  fx.output [%a, %b]
}
