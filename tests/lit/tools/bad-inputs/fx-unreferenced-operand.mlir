// EXPECT: 4:3: error: has operands #[0] that its arguments never refer to
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}
