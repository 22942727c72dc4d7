// EXPECT: 2:1: error: unknown operation 'this'
this is not IR at all
