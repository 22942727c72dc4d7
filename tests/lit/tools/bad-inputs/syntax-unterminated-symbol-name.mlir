// EXPECT: 2:11: error: unterminated string literal
fx.graph @"gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg
  fx.output
}
