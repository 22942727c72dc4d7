// ARGS: -p 'dce{a="x}'
// EXPECT: <pass-pipeline>:1:7: error: invalid pass pipeline
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
