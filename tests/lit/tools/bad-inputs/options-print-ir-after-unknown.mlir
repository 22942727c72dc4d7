// ARGS: -p dce --print-ir-after=nope
// EXPECT: optimus-opt: error: --print-ir-after: unknown pass 'nope' (available passes: batch-fusion, canonicalize, cse, dce,
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
