// EXPECT: 4:3: error: 'torch.nope' is not a pointwise torch op
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %y = batch.pointwise %x fn "torch.nope" stacked [true] fn_properties {} : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output %y
}
