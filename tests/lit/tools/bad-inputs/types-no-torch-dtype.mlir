// EXPECT: 4:3: error: element type i7, which has no torch dtype
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xi7>
  %y = torch.tanh %x : tensor<4xi7> -> tensor<4xi7>
  fx.output %y
}
