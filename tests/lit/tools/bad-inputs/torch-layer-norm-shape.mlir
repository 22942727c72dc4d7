// EXPECT: 4:3: error: does not end with normalized_shape [10]
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %r = torch.layer_norm %x normalized_shape [10] : tensor<2x12xf32> -> tensor<2x12xf32>
  fx.output %r
}
