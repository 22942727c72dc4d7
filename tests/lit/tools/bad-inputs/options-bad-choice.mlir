// ARGS: -p 'batch-fusion{cost-model=cheap}'
// EXPECT: <pass-pipeline>:1:1: error: cost-model must be calibrated, default or none
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
