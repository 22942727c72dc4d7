// ARGS: -p 'raise-fx,lower-batch{kernels=bogus}'
// EXPECT: <pass-pipeline>:1:22: error: option 'kernels' of pass 'lower-batch' expects one of auto, triton, torch, got 'bogus'
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
