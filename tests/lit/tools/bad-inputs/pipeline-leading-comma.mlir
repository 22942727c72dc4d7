// ARGS: -p ,dce
// EXPECT: <pass-pipeline>:1:1: error: invalid pass pipeline: Expected pass name here
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
