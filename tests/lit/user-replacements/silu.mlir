// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/replacements_plugin.py -p user-replacements --split-input-file | filecheck %s
// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/replacements_plugin.py -p user-replacements --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/replacements_plugin.py -p user-replacements --split-input-file --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// What the registered replacements rewrite, and what they must leave alone.

// sigmoid(x) * x becomes silu(x), at a shape other than the example's
// (the registration check ran the functions at scaled shapes too).
// CHECK-LABEL: fx.graph @rewritten
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %{{.*}} = torch.silu %x : tensor<3x5xf32> -> tensor<3x5xf32>
// CHECK-NEXT:    fx.output
// REMARK: silu.mlir:[[# @LINE + 4]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' applied
fx.graph @rewritten {
  %x = fx.placeholder "x" : tensor<3x5xf32>
  %s = torch.sigmoid %x : tensor<3x5xf32> -> tensor<3x5xf32>
  %m = torch.mul %s, %x : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  fx.output %m
}

// -----

// The sigmoid is also returned: it escapes, nothing is rewritten.
// CHECK-LABEL: fx.graph @escape
// CHECK:         torch.sigmoid
// CHECK:         torch.mul
// CHECK-NOT:     torch.silu
// REMARK: silu.mlir:[[# @LINE + 4]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' not applied: the inner value %s escapes: it is used by 'fx.output' outside the match
fx.graph @escape {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %s = torch.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %m = torch.mul %s, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%m, %s)
}

// -----

// x is written in place between the sigmoid and the multiplication: the
// mul reads the new x, silu(x) would read it for both.
// CHECK-LABEL: fx.graph @inplace
// CHECK:         torch.sigmoid
// CHECK:         fx.call_method "add_"
// CHECK:         torch.mul
// CHECK-NOT:     torch.silu
// REMARK: silu.mlir:[[# @LINE + 5]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' not applied: 'add_' (fx.call_method) may write in place to input 'x' between the matched ops
fx.graph @inplace {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %s = torch.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %w = fx.call_method "add_"(%x, 1.0) : tensor<4x8xf32>
  %m = torch.mul %s, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output %m
}

// -----

// A write after the match does not matter.
// CHECK-LABEL: fx.graph @write_after
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    torch.silu %x
// CHECK-NEXT:    fx.call_method "add_"
fx.graph @write_after {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %s = torch.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %m = torch.mul %s, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %w = fx.call_method "add_"(%x, 1.0) : tensor<4x8xf32>
  fx.output %m
}

// -----

// Another dtype than the example's: left alone, with a remark.
// CHECK-LABEL: fx.graph @other_dtype
// CHECK-NOT:     torch.silu
// REMARK: silu.mlir:[[# @LINE + 4]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' not applied: input 'x': %x has dtype float16; the replacement was checked for float32
fx.graph @other_dtype {
  %x = fx.placeholder "x" : tensor<4x8xf16>
  %s = torch.sigmoid %x : tensor<4x8xf16> -> tensor<4x8xf16>
  %m = torch.mul %s, %x : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  fx.output %m
}

// -----

// Symbolic sizes: not matched.
// CHECK-LABEL: fx.graph @symbolic
// CHECK-NOT:     torch.silu
// REMARK: silu.mlir:[[# @LINE + 4]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' not applied: input 'x': %x has symbolic sizes (tensor<?x8xf32>)
fx.graph @symbolic {
  %x = fx.placeholder "x" : tensor<?x8xf32>
  %s = torch.sigmoid %x : tensor<?x8xf32> -> tensor<?x8xf32>
  %m = torch.mul %s, %x : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  fx.output %m
}

// -----

// Another rank than the example's: not matched (a remark); the operands
// the other way round (y * sigmoid(y)): matched by the commuted spelling.
// CHECK-LABEL: fx.graph @commuted
// CHECK:         %m = torch.mul %s, %x : tensor<8xf32>
// CHECK:         %y = fx.placeholder "y"
// CHECK-NEXT:    %{{.*}} = torch.silu %y : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    fx.output
// REMARK: silu.mlir:[[# @LINE + 7]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' not applied: input 'x': %x has rank 1, the pattern's input has rank 2
// REMARK-NEXT: %m = torch.mul
// REMARK-NEXT: ^
// REMARK-NEXT: silu.mlir:[[# @LINE + 7]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' applied
fx.graph @commuted {
  %x = fx.placeholder "x" : tensor<8xf32>
  %s = torch.sigmoid %x : tensor<8xf32> -> tensor<8xf32>
  %m = torch.mul %s, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %y = fx.placeholder "y" : tensor<4x8xf32>
  %t = torch.sigmoid %y : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = torch.mul %y, %t : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%m, %n)
}

// -----

// Literal arguments must match: tanh(x) * 0.5 + 0.5 is rewritten, with
// 0.25 it is not.
// CHECK-LABEL: fx.graph @literals
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[TWICE:.*]] = torch.mul %x scalar 2 reverse : tensor<32xf32> -> tensor<32xf32>
// CHECK-NEXT:    torch.sigmoid %[[TWICE]] : tensor<32xf32> -> tensor<32xf32>
// CHECK-NEXT:    torch.tanh %x
// CHECK-NEXT:    torch.mul %u scalar 0.25
// CHECK-NEXT:    torch.add
// CHECK-NEXT:    fx.output
fx.graph @literals {
  %x = fx.placeholder "x" : tensor<32xf32>
  %t = torch.tanh %x : tensor<32xf32> -> tensor<32xf32>
  %h = torch.mul %t scalar 0.5 : tensor<32xf32> -> tensor<32xf32>
  %a = torch.add %h scalar 0.5 : tensor<32xf32> -> tensor<32xf32>
  %u = torch.tanh %x : tensor<32xf32> -> tensor<32xf32>
  %q = torch.mul %u scalar 0.25 : tensor<32xf32> -> tensor<32xf32>
  %b = torch.add %q scalar 0.5 : tensor<32xf32> -> tensor<32xf32>
  fx.output (%a, %b)
}

// STATS: 'user-replacements'
// STATS:   pattern sigmoid-mul-to-silu: tried {{[0-9]+}}, rewrote 1,
// STATS:   pattern tanh-half-to-sigmoid: tried {{[0-9]+}}, rewrote 0,
