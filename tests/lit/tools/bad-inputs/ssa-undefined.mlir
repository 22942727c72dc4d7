// EXPECT: 3:13: error: %nope
fx.graph @g {
  fx.output %nope
}
