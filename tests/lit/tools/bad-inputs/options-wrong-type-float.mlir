// ARGS: -p 'batch-fusion{min-size=1.5}'
// EXPECT: <pass-pipeline>:1:14: error: option 'min-size' of pass 'batch-fusion' expects int, got 1.5
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
