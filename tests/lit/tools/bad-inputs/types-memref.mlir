// EXPECT: 4:3: error: should be of base attribute tensor
fx.graph @g {
  %x = fx.placeholder "x" : memref<4xf32>
  %y = torch.tanh %x : memref<4xf32> -> memref<4xf32>
  fx.output %y
}
