// ARGS: -p 'batch-fusion{min-size=abc}'
// EXPECT: <pass-pipeline>:1:14: error: option 'min-size' of pass 'batch-fusion' expects int, got 'abc'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
