// EXPECT: 4:3: error: 'fx.call_method' op calling 'split': declared result type tuple<tensor<4x3xf32>, tensor<4x5xf32>> contradicts the operator: result #0 has shape 4x3, expected 4x4
fx.graph @g {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %s = fx.call_method "split"(%a, 4, dim = 1) : tuple<tensor<4x3xf32>, tensor<4x5xf32>>
  %s0 = fx.call_function "operator.getitem"(%s, 0) : tensor<4x3xf32>
  fx.output %s0
}
