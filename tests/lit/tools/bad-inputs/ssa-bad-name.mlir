// EXPECT: 3:5: error: Expected '=' after operation result list
fx.graph @g {
  %1x! = fx.placeholder "x" : tensor<4xf32>
  fx.output %1x
}
