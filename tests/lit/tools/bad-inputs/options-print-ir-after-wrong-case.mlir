// ARGS: -p cse,dce --print-ir-after=cse,DCE
// EXPECT: optimus-opt: error: --print-ir-after: unknown pass 'DCE'; did you mean 'dce'?
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
