// ARGS: -p dce,csf
// EXPECT: <pass-pipeline>:1:5: error: unknown pass 'csf'; did you mean 'cse'?
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
