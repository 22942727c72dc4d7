// EXPECT: 5:3: error: is on device "cuda:0" but operand #0 (lhs) is on "cpu"
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %z = fx.placeholder "z" : tensor<4xf32, "cuda:0">
  %y = torch.add %x, %z : tensor<4xf32, "cpu">, tensor<4xf32, "cuda:0"> -> tensor<4xf32, "cpu">
  fx.output %y
}
