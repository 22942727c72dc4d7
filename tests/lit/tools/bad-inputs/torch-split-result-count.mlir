// EXPECT: 4:3: error: has 1 results, expected 2
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %a = torch.split %x sections [6, 6] dim 1 : tensor<2x12xf32> -> tensor<2x6xf32>
  fx.output %a
}
