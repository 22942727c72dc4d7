// ARGS: -p 'dce cse'
// EXPECT: <pass-pipeline>:1:4: error: invalid pass pipeline
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
