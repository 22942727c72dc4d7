// EXPECT: 3:3: error: 'gpu:x' is not a torch device
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "gpu:x">
  fx.output %x
}
