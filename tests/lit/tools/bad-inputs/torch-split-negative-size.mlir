// EXPECT: 4:3: error: has a negative size
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %a, %b = torch.split %x sections [16, -4] dim 1 : tensor<2x12xf32> -> tensor<2x16xf32>, tensor<2x4xf32>
  fx.output [%a, %b]
}
