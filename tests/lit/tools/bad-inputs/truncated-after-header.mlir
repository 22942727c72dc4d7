// EXPECT: 2:14: error: unexpected end of input
fx.graph @g {