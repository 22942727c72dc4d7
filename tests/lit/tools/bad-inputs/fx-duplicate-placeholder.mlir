// EXPECT: 4:3: error: placeholder 'x' is already defined
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.placeholder "x" : tensor<4xf32>
  %z = fx.call_function "torch.add"(%x, %y) : tensor<4xf32>
  fx.output %z
}
