// EXPECT: 3:3: error: too large
fx.graph @g {
  %x = fx.placeholder "x" : tensor<99999999999999999999999xf32>
  fx.output %x
}
