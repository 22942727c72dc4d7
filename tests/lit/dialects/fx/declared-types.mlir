// A call of a known operator must declare the result type the operator
// gives (issue 19: a torch.cat of 4x8 and 4x16 declared 8x8 passed every
// pass). The check runs on the input, before any pass, for every operator
// raise-fx knows.

// RUN: not optimus-opt %s --split-input-file -p dce 2>&1 | filecheck %s
// RUN: not optimus-opt %s --split-input-file -p default 2>&1 | filecheck %s
// RUN: not optimus-translate --export-python %S/../../tools/bad-inputs/fx-declared-type-cat.mlir 2>&1 | filecheck %s --check-prefix=TRANSLATE
// TRANSLATE: fx-declared-type-cat.mlir:5:3: error: 'fx.call_function' op calling 'torch.cat': declared result type tensor<8x8xf32>
// CHECK-NOT: Traceback

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: 'fx.call_function' op calling 'torch.cat': declared result type tensor<8x8xf32> contradicts the operator: result #0 has shape 8x8, expected 4x24
fx.graph @cat {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<8x8xf32>
  fx.output %c
}

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: '{{.*}}' op calling 'torch.tanh': declared result type tensor<4x9xf32> contradicts the operator: result #0 has shape 4x9, expected 4x8
fx.graph @tanh {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_function "torch.tanh"(%a) : tensor<4x9xf32>
  fx.output %c
}

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: 'fx.call_method' op calling 'relu': declared result type tensor<4x8xf64> contradicts the operator: result #0 has element type f64, expected f32
fx.graph @relu_method {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_method "relu"(%a) : tensor<4x8xf64>
  fx.output %c
}

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: '{{.*}}' op calling 'torch.nn.functional.linear': declared result type tensor<4x8xf32> contradicts the operator: result #0 has shape 4x8, expected 4x5
fx.graph @linear {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_function "torch.nn.functional.linear"(%a, %w) : tensor<4x8xf32>
  fx.output %c
}

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: '{{.*}}' op calling 'view': declared result type tensor<4x8xf32> contradicts the operator: result #0 has shape 4x8, expected 8x4
fx.graph @view {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_method "view"(%a, 8, 4) : tensor<4x8xf32>
  fx.output %c
}

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: '{{.*}}' op calling 'torch.sum': declared result type tensor<4x8xf32> contradicts the operator: result #0 has rank 2, expected 1
fx.graph @sum {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_function "torch.sum"(%a, 1) : tensor<4x8xf32>
  fx.output %c
}

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: '{{.*}}' op calling 'operator.add': declared result type tensor<4x4xf32> contradicts the operator: result #0 has shape 4x4, expected 4x8
fx.graph @add {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_function "operator.add"(%a, %a) : tensor<4x4xf32>
  fx.output %c
}

// -----

// CHECK: declared-types.mlir:[[# @LINE + 5]]:3: error: '{{.*}}' op calling 'torch.mm': the operator does not accept its operands: operand #0 (lhs) of shape 4x8 and operand #1 (rhs) of shape 4x16 have mismatched inner dims (8 vs 4)
fx.graph @mm {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  %c = fx.call_function "torch.mm"(%a, %b) : tensor<4x16xf32>
  fx.output %c
}

// -----

// A tuple result: one piece declared wrong.
// CHECK: declared-types.mlir:[[# @LINE + 3]]:3: error: 'fx.call_function' op calling 'torch.split': declared result type tuple<tensor<4x4xf32>, tensor<4x5xf32>> contradicts the operator: result #1 has shape 4x5, expected 4x4
fx.graph @split {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %s = fx.call_function "torch.split"(%a, 4, 1) : tuple<tensor<4x4xf32>, tensor<4x5xf32>>
  %s0 = fx.call_function "operator.getitem"(%s, 0) : tensor<4x4xf32>
  %s1 = fx.call_function "operator.getitem"(%s, 1) : tensor<4x5xf32>
  fx.output [%s0, %s1]
}

// -----

// Types that agree (a dynamic size agrees with any size), calls whose
// operator is unknown or whose arguments are symbolic: no error.
fx.graph @agree {
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<4x24xf32>
  %d = fx.call_function "torch.cat"([%a, %b], -1) : tensor<?x24xf32>
  %e = fx.call_function "my.op"(%a) : tensor<1xf32>
  %n = fx.call_method "size"(%a, 0) : !fx.value
  %f = fx.call_method "view"(%a, %n, -1) : tensor<4x8xf32>
  fx.output [%c, %d, %e, %f]
}
// CHECK-NOT: error
