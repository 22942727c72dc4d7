// --verify-diagnostics: every expected diagnostic must be produced on its
// line, and every produced diagnostic must be expected.

// RUN: optimus-opt %s --split-input-file --verify-diagnostics
// RUN: not optimus-opt %S/Inputs/wrong-expectations.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=WRONG

// WRONG: wrong-expectations.mlir:4:4: error: expected error "this error never happens" was not produced (on line 5)
// WRONG: wrong-expectations.mlir:13:3: error: unexpected error: 'fx.call_function' has operands #[0]
// WRONG: wrong-expectations.mlir:23:3: error: unexpected error: 'fx.call_function' has operands #[0]
// WRONG: wrong-expectations.mlir:21:4: error: expected error "has operands" was not produced (on line 22)
// WRONG: wrong-expectations.mlir:32:3: error: unexpected error: 'fx.call_function' has operands #[0]
// WRONG: wrong-expectations.mlir:31:4: error: expected warning "has operands" was not produced (on line 32)
// WRONG: wrong-expectations.mlir:41:3: error: unexpected error: 'fx.call_function' has operands #[0]
// WRONG: wrong-expectations.mlir:40:4: error: expected error "operand #9" was not produced (on line 41)
// WRONG: wrong-expectations.mlir:49:6: error: cannot parse this expectation

// The annotation on the op's own line.
fx.graph @same_line {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32> // expected-error {{arguments never refer to}}
  fx.output %y
}

// -----

fx.graph @relative {
  %x = fx.placeholder "x" : tensor<4xf32>
  // expected-error@+2 {{arguments never refer to}}

  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}

// -----

fx.graph @above_and_minus {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@above {{arguments never refer to}}
  %z = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>

  // expected-error@-2 {{arguments never refer to}}
  fx.output [%y, %z]
}

// -----

// @below waits for the next line of code (not blank, not an annotation);
// -re takes regexes in {{...}}.
// expected-error-re@below {{body must end with {{'fx\.[a-z]+'}}}}
// expected-error@+3 {{terminates block in single-block region}}

fx.graph @below {
  %x = fx.placeholder "x" : tensor<4xf32>
}

// -----

// A chunk without errors and without expectations passes.
fx.graph @fine {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}

// -----

// MLIR's spelling with a space before the `@` is read too (not skipped).
fx.graph @spaced {
  %x = fx.placeholder "x" : tensor<4xf32>
  // expected-error @+1 {{arguments never refer to}}
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}
