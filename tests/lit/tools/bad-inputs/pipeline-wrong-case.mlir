// ARGS: -p DCE
// EXPECT: <pass-pipeline>:1:1: error: unknown pass 'DCE'; did you mean 'dce'?
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
