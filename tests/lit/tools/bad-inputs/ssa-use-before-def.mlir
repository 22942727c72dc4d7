// EXPECT: 3:38: error: SSA value %x used before its definition
fx.graph @g {
  %y = fx.call_function "torch.tanh"(%x) : tensor<4xf32>
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %y
}
