// EXPECT: 2:1: error: unexpected end of input
fx.gra