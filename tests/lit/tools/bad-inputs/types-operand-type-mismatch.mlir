// EXPECT: 4:19: error: operand is used with type tensor<8xf32>, but has been previously used or defined with type tensor<4xf32>
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = torch.tanh %x : tensor<8xf32> -> tensor<8xf32>
  fx.output %y
}
