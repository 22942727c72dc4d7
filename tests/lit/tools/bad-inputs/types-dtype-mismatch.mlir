// EXPECT: 5:3: error: has element type f16 but operand #0 (input) has f32
fx.graph @g {
  %x = fx.placeholder "x" : tensor<2x12xf32>
  %w = fx.placeholder "w" : tensor<8x12xf16>
  %r = torch.linear %x, %w : tensor<2x12xf32>, tensor<8x12xf16> -> tensor<2x8xf32>
  fx.output %r
}
