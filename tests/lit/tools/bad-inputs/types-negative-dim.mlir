// EXPECT: 3:36: error: negative dimension size
fx.graph @g {
  %x = fx.placeholder "x" : tensor<-4xf32>
  fx.output %x
}
