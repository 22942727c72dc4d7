// EXPECT: 4:3: error: has 2 results, expected 3
fx.graph @g {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %a, %b = torch.unbind %x dim 0 : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>
  fx.output [%a, %b]
}
