// ARGS: -p nope
// EXPECT: <pass-pipeline>:1:1: error: unknown pass 'nope'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
