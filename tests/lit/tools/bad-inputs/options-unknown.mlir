// ARGS: -p 'dce{bogus=1}'
// EXPECT: <pass-pipeline>:1:5: error: unknown option 'bogus' for pass 'dce' (it takes no options)
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
