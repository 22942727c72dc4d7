// EXPECT: 3:3: error: needs at least one operand
fx.graph @g {
  %c = torch.cat dim 0 : -> tensor<4x4xf32>
  fx.output %c
}
