// EXPECT: 4:47: error: identifier expected
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.call_function "torch.sum"(%x, dim = @) : tensor<f32>
  fx.output %y
}
