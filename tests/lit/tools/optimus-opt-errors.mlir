// Bad input gets `file:line:col: error: ...`, exit status 1, no traceback.

// RUN: not optimus-opt %s --split-input-file > %t.input 2>&1
// RUN: filecheck %s < %t.input
// RUN: not optimus-opt %s -p no-such-pass > %t.unknown 2>&1
// RUN: filecheck %s --check-prefix=UNKNOWN < %t.unknown
// RUN: not optimus-opt %s -p dce,csf 2>&1 | filecheck %s --check-prefix=SUGGEST
// RUN: not optimus-opt %s -p 'dce{bogus=1}' > %t.option 2>&1
// RUN: filecheck %s --check-prefix=OPTION < %t.option
// RUN: not optimus-opt %s -p 'dce,cse{' > %t.syntax 2>&1
// RUN: filecheck %s --check-prefix=SYNTAX < %t.syntax
// RUN: not optimus-opt %S/Inputs/truncated.mlir 2>&1 | filecheck %s --check-prefix=TRUNCATED
// TRUNCATED: truncated.mlir:4:1: error: unexpected end of input
// TRUNCATED-NOT: Traceback
// RUN: not optimus-opt %s.does-not-exist > %t.missing 2>&1
// RUN: filecheck %s --check-prefix=MISSING < %t.missing
// RUN: not grep -l Traceback %t.input %t.unknown %t.option %t.syntax %t.missing
// Options that name passes: an unknown name is an error (issue 19), a pass
// the pipeline does not run is a warning.
// RUN: not optimus-opt %s --split-input-file -p dce --print-ir-after=nope 2>&1 | filecheck %s --check-prefix=AFTER-UNKNOWN
// RUN: not optimus-opt %s --split-input-file -p cse,dce --print-ir-after=cse,DCE 2>&1 | filecheck %s --check-prefix=AFTER-CASE
// RUN: optimus-opt %S/Inputs/valid.mlir -p dce --print-ir-after=cse 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER-ABSENT
// RUN: not optimus-opt %s --split-input-file -p dce --max-rewrites=-2 2>&1 | filecheck %s --check-prefix=NEGATIVE

// AFTER-UNKNOWN: optimus-opt: error: --print-ir-after: unknown pass 'nope' (available passes: {{.*}}cse, dce,
// AFTER-UNKNOWN-NOT: error
// AFTER-CASE: optimus-opt: error: --print-ir-after: unknown pass 'DCE'; did you mean 'dce'?
// AFTER-ABSENT: optimus-opt: warning: --print-ir-after: pass 'cse' is not in the pipeline (dce); nothing is printed for it
// NEGATIVE: optimus-opt: error: --max-rewrites/--bisect-rewrites must be 0 or more, not -2

// UNKNOWN: <pass-pipeline>:1:1: error: unknown pass 'no-such-pass'
// UNKNOWN-NEXT: no-such-pass
// UNKNOWN-NEXT: ^
// SUGGEST: <pass-pipeline>:1:5: error: unknown pass 'csf'; did you mean 'cse'?
// OPTION: <pass-pipeline>:1:5: error: unknown option 'bogus' for pass 'dce' (it takes no options)
// SYNTAX: <pass-pipeline>:1:9: error: invalid pass pipeline:
// MISSING: optimus-opt: error: cannot read '{{.*}}does-not-exist'

// A syntax error.
// CHECK: optimus-opt-errors.mlir:[[# @LINE + 3]]:27: error: Expected ':'
// CHECK-NEXT: {{^}}  %x = fx.placeholder "x" tensor<4xf32>
fx.graph @syntax {
  %x = fx.placeholder "x" tensor<4xf32>
  fx.output %x
}

// -----

// An unknown op.
// CHECK: optimus-opt-errors.mlir:[[# @LINE + 2]]:8: error: unknown operation 'fx.no_such_op'
fx.graph @unknown_op {
  %x = fx.no_such_op : tensor<4xf32>
  fx.output %x
}

// -----

// An unknown type.
// CHECK: optimus-opt-errors.mlir:[[# @LINE + 2]]:29: error: unknown type or attribute '!nope.type'
fx.graph @unknown_type {
  %x = fx.placeholder "x" : !nope.type
  fx.output %x
}

// -----

// A verifier error points at the op that fails.
// CHECK: optimus-opt-errors.mlir:[[# @LINE + 3]]:3: error: 'fx.call_function' has operands #[0] that its arguments never refer to
fx.graph @verifier {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %y
}

// -----

// An undefined value.
// CHECK: optimus-opt-errors.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: {{.*}}%undefined
fx.graph @undefined {
  fx.output %undefined
}

// -----

// A valid chunk still prints.
// CHECK: fx.graph @valid
fx.graph @valid {
  %x = fx.placeholder "x" : tensor<4xf32>
  fx.output %x
}
