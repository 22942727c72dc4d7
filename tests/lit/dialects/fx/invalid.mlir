// RUN: optimus-opt %s --split-input-file --verify-diagnostics

// expected-error@+1 {{'fx.graph' body must end with 'fx.output'}}
fx.graph @no_output {
  %x = fx.placeholder "x" : tensor<4xf32>
  // expected-error@below {{terminates block in single-block region but is not a terminator}}
  %y = fx.call_function "torch.tanh"(%x) : tensor<4xf32>
}

// -----

fx.graph @unused_operand {
  %x = fx.placeholder "x" : tensor<4xf32>
  // expected-error@+1 {{has operands #[0] that its arguments never refer to}}
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}

// -----

fx.graph @dangling_ref {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.add", args = [#fx.ref<0>, #fx.ref<3>], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32> // expected-error {{refers to operand #3 but has only 1 operands}}
  fx.output %y
}

// -----

builtin.module {
  %x = "test.source"() : () -> tensor<4xf32> // expected-error {{unknown operation 'test.source'}}
}

// -----

// expected-error@+2 {{Expected ':'}}
fx.graph @bad_syntax {
  %x = fx.placeholder "x" tensor<4xf32>
  fx.output %x
}

// -----

fx.graph @kwarg_order {
  %x = fx.placeholder "x" : tensor<4xf32>
  // expected-error@+1 {{positional argument after keyword argument}}
  %y = fx.call_function "torch.add"(%x, alpha = 2, %x) : tensor<4xf32>
  fx.output %y
}

// -----

fx.graph @outside {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
// expected-error@+1 {{'fx.output' expects parent op 'fx.graph'}}
fx.output []
