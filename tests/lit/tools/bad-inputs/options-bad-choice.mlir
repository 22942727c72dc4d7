// ARGS: -p 'batch-fusion{cost-model=cheap}'
// EXPECT: <pass-pipeline>:1:14: error: option 'cost-model' of pass 'batch-fusion' expects one of calibrated, default, none, got 'cheap'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
