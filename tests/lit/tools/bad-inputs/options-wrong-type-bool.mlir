// ARGS: -p 'batch-fusion{grouped-linear=maybe}'
// EXPECT: <pass-pipeline>:1:14: error: option 'grouped-linear' of pass 'batch-fusion' expects bool, got 'maybe'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
