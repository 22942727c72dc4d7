// Expectations that do not hold (used by ../verify-diagnostics.mlir).

fx.graph @never {
// expected-error@+1 {{this error never happens}}
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}

// -----

fx.graph @unexpected {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}

// -----

fx.graph @wrong_line {
  %x = fx.placeholder "x" : tensor<4xf32>
// expected-error@+1 {{has operands}}
  fx.call_function "torch.relu"(%x) : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}

// -----

fx.graph @wrong_severity {
  %x = fx.placeholder "x" : tensor<4xf32>
// expected-warning@+1 {{has operands}}
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}

// -----

fx.graph @wrong_text {
  %x = fx.placeholder "x" : tensor<4xf32>
// expected-error@+1 {{operand #9}}
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}

// -----

fx.graph @unreadable {
  %x = fx.placeholder "x" : tensor<4xf32>
  // expected-eror {{never read}}
  fx.output %x
}
