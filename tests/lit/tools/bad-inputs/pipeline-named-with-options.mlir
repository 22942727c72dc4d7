// ARGS: -p 'default{x=1}'
// EXPECT: <pass-pipeline>:1:1: error: named pipeline 'default' takes no options
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
