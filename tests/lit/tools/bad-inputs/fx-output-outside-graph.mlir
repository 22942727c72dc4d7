// EXPECT: 3:8: error: expects parent op 'fx.graph'
builtin.module {
  %x = "fx.placeholder"() <{target = "x"}> : () -> tensor<4xf32>
}
