// EXPECT: 2:1: error: unexpected character U+0001

