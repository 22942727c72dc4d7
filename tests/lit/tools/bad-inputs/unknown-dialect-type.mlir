// EXPECT: 3:29: error: unknown type or attribute '!nope.type'
fx.graph @g {
  %x = fx.placeholder "x" : !nope.type
  fx.output %x
}
