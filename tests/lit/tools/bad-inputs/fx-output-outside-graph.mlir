// EXPECT: 3:3: error: expects parent op 'fx.graph'
builtin.module {
  %x = "fx.placeholder"() <{target = "x"}> : () -> tensor<4xf32>
}
