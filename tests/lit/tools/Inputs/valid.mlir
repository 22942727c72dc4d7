fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.call_function "torch.tanh"(%x) : tensor<4xf32>
  fx.output %y
}
