// ARGS: -p 'batch-fusion{min-sise=2}'
// EXPECT: <pass-pipeline>:1:14: error: unknown option 'min-sise' for pass 'batch-fusion'; did you mean 'min-size'?
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
