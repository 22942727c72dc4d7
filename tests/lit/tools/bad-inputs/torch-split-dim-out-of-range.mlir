// EXPECT: 4:3: error: dim 5 is out of range for rank 2
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %a, %b = torch.split %x sections [6, 6] dim 5 : tensor<2x12xf32> -> tensor<2x6xf32>, tensor<2x6xf32>
  fx.output [%a, %b]
}
