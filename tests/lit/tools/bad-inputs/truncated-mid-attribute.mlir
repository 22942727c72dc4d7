// EXPECT: 4:51: error: unexpected end of input
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.call_function "torch.sum"(%x, dim = [1, 