// EXPECT: 4:3: error: 'fx.call_function' op calling 'torch.nn.functional.layer_norm': declared result type tensor<4x7xf32> contradicts the operator: result #0 has shape 4x7, expected 4x8
fx.graph @g {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %n = fx.call_function "torch.nn.functional.layer_norm"(%a, [8]) : tensor<4x7xf32>
  fx.output %n
}
