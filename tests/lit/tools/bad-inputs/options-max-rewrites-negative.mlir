// ARGS: -p dce --max-rewrites=-1
// EXPECT: optimus-opt: error: --max-rewrites/--bisect-rewrites must be 0 or more, not -1
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
