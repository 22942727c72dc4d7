// ARGS: -p dce --print-ir-after=
// EXPECT: optimus-opt: error: --print-ir-after: no pass named
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
