// EXPECT: 5:3: error: 'fx.call_function' op calling 'torch.cat': declared result type tensor<8x8xf32> contradicts the operator: result #0 has shape 8x8, expected 4x24
fx.graph @g {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<8x8xf32>
  fx.output %c
}
