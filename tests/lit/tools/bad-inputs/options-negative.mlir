// ARGS: -p 'batch-fusion{min-size=-3}'
// EXPECT: <pass-pipeline>:1:1: error: invalid options for pass 'batch-fusion': need 1 <= min-size <= max-size
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
