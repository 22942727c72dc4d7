// EXPECT: 4:42: error: unknown type or attribute '#mystery.attr'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.call_function "torch.tanh"(%x, #mystery.attr<1>) : tensor<4xf32>
  fx.output %y
}
