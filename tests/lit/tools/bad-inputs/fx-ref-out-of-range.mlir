// EXPECT: 4:3: error: refers to operand #3 but has only 1 operands
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.add", args = [#fx.ref<0>, #fx.ref<3>], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}
