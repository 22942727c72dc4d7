// EXPECT: 4:3: error: has 1 operands but 2 stacked flags
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %y = batch.pointwise %x fn "torch.tanh" stacked [true, true] fn_properties {} : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output %y
}
