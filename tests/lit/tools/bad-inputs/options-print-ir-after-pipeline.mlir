// ARGS: -p default --print-ir-after=default
// EXPECT: optimus-opt: error: --print-ir-after: 'default' is a pipeline, not a pass
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
