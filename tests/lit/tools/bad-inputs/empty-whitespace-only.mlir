// EXPECT: 2:1: error: empty input


   
