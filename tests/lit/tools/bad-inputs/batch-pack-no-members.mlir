// EXPECT: 3:3: error: needs at least one member
fx.graph @g {
  %s = batch.pack : -> tensor<0x8x16xf32>
  fx.output %s
}
