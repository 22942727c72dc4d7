// EXPECT: 4:87: error: unexpected end of input
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [#fx.ref<0>], kwargs = {