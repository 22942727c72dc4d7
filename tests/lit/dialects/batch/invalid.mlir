// RUN: optimus-opt %s --split-input-file --verify-diagnostics

// The verifiers name the op and what is wrong.

fx.graph @pack_types {
  %a = fx.placeholder "a" : tensor<8x16xf32>
  %b = fx.placeholder "b" : tensor<8x16xf64>
  // expected-error@+1 {{'batch.pack': member 1 has type tensor<8x16xf64>, member 0 tensor<8x16xf32>}}
  %s = batch.pack %a, %b : tensor<8x16xf32>, tensor<8x16xf64> -> tensor<2x8x16xf32>
  fx.output %s
}

// -----

fx.graph @linear_members {
  %x = fx.placeholder "x" : tensor<3x8x16xf32>
  %w = fx.placeholder "w" : tensor<2x32x16xf32>
  // expected-error@+1 {{'batch.linear': input stacks 3 members, expected 2}}
  %y = batch.linear %x, %w : tensor<3x8x16xf32>, tensor<2x32x16xf32> -> tensor<3x8x32xf32>
  fx.output %y
}

// -----

fx.graph @pointwise_fn {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  // expected-error@+1 {{'batch.pointwise': 'torch.linear' is not a pointwise torch op}}
  %y = batch.pointwise %x fn "torch.linear" stacked [true] fn_properties {} : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output %y
}

// -----

fx.graph @pointwise_shared_only {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  // expected-error@+1 {{'batch.pointwise': needs at least one stacked operand}}
  %y = batch.pointwise %x fn "torch.tanh" stacked [false] fn_properties {} : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output %y
}

// -----

fx.graph @grouped_counts {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %w = fx.placeholder "w" : tensor<3x4xf32>
  // expected-error@+1 {{'batch.grouped_linear': needs 3 operands per member, got 2 for 1 members}}
  %y = batch.grouped_linear %x, %w has_bias : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  fx.output %y
}

// -----

fx.graph @pointwise_properties {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  // expected-error@+1 {{'batch.pointwise': 'torch.tanh' has no properties ['bogus'] (it has: none)}}
  %y = batch.pointwise %x fn "torch.tanh" stacked [true] fn_properties {"bogus": 1} : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output %y
}
