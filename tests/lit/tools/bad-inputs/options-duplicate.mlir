// ARGS: -p 'batch-fusion{min-size=2 min-size=3}'
// EXPECT: <pass-pipeline>:1:25: error: option 'min-size' of pass 'batch-fusion' is given twice
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
