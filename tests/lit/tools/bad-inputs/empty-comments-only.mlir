// EXPECT: 1:1: error: empty input
// nothing but a comment
