// EXPECT: 3:8: error: unknown operation 'fx.no_such_op'
fx.graph @g {
  %x = fx.no_such_op : tensor<4xf32>
  fx.output %x
}
