// EXPECT: 4:3: error: dim -1 is out of range for rank 2
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %c = torch.cat %x, %x dim -1 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x24xf32>
  fx.output %c
}
