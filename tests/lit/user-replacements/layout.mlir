// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/layout_plugin.py -p user-replacements --split-input-file | filecheck %s
// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/layout_plugin.py -p user-replacements --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/layout_plugin.py -p user-replacements --split-input-file --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// The layout a replacement needs. `half-tanh-flat`'s replacement views its
// input (`x.view(-1)`), which raised on a transposed input at registration:
// it is rewritten only where the matched input is provably contiguous
// (`known_contiguous`), and declined with a remark elsewhere.
// `sigmoid-mul-to-silu` ran on every layout variant: it matches any layout.

// A contiguous graph input: rewritten.
// CHECK-LABEL: fx.graph @contiguous
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[V:.*]] = torch.view %x shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-NEXT:    %[[M:.*]] = torch.mul %[[V]] scalar 2 reverse
// CHECK-NEXT:    %[[S:.*]] = torch.sigmoid %[[M]]
// CHECK-NEXT:    fx.output %[[S]]
// REMARK: layout.mlir:[[# @LINE + 6]]:{{[0-9]+}}: remark: user-replacements: 'half-tanh-flat' applied
fx.graph @contiguous {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %t = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %h = torch.mul %t scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = torch.add %h scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = torch.reshape %a shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
  fx.output %r
}

// -----

// The issue's case: tanh(y.t()). The transpose is not contiguous; the
// view would raise at run time. Left alone, with a remark.
// CHECK-LABEL: fx.graph @transposed
// CHECK:         torch.tanh %xt
// CHECK:         torch.reshape
// CHECK-NOT:     torch.view
// CHECK-NOT:     torch.sigmoid
// REMARK: layout.mlir:[[# @LINE + 7]]:{{[0-9]+}}: remark: user-replacements: 'half-tanh-flat' not applied: input 'x': %xt may not be contiguous (the replacement needs a contiguous input here: at registration it raised on 'x' transposed (input strides [1, 4]): RuntimeError: view size is not compatible
fx.graph @transposed {
  %y = fx.placeholder "y" : tensor<8x4xf32>
  %xt = torch.transpose %y dim0 0 dim1 1 : tensor<8x4xf32> -> tensor<4x8xf32>
  %t = torch.tanh %xt : tensor<4x8xf32> -> tensor<4x8xf32>
  %h = torch.mul %t scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = torch.add %h scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = torch.reshape %a shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
  fx.output %r
}

// -----

// A graph input recorded as strided (its strides at capture): declined.
// CHECK-LABEL: fx.graph @strided_input
// CHECK-NOT:     torch.view
// REMARK: layout.mlir:[[# @LINE + 6]]:{{[0-9]+}}: remark: user-replacements: 'half-tanh-flat' not applied: input 'x': %x may not be contiguous
fx.graph @strided_input {
  %x = fx.placeholder "x" strides [1, 4] : tensor<4x8xf32>
  %t = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %h = torch.mul %t scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = torch.add %h scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = torch.reshape %a shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
  fx.output %r
}

// -----

// Every other column: declined.
// CHECK-LABEL: fx.graph @column_slice
// CHECK-NOT:     torch.view
// REMARK: layout.mlir:[[# @LINE + 7]]:{{[0-9]+}}: remark: user-replacements: 'half-tanh-flat' not applied: input 'x': %xs may not be contiguous
fx.graph @column_slice {
  %y = fx.placeholder "y" : tensor<4x16xf32>
  %xs = torch.slice %y dim 1 start 0 end 16 step 2 : tensor<4x16xf32> -> tensor<4x8xf32>
  %t = torch.tanh %xs : tensor<4x8xf32> -> tensor<4x8xf32>
  %h = torch.mul %t scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = torch.add %h scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = torch.reshape %a shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
  fx.output %r
}

// -----

// Views that are provably contiguous are fine: leading rows of a
// contiguous tensor, and a transpose made contiguous again.
// CHECK-LABEL: fx.graph @provably_contiguous
// CHECK:         %[[ROWS:.*]] = torch.slice %y dim 0 start 0 end 4 :
// CHECK:         torch.view %[[ROWS]] shape [-1]
// CHECK:         %[[C:.*]] = fx.call_method "contiguous"
// CHECK:         torch.view %[[C]] shape [-1]
// CHECK-NOT:     torch.tanh
// REMARK: layout.mlir:[[# @LINE + 8]]:{{[0-9]+}}: remark: user-replacements: 'half-tanh-flat' applied
// REMARK: layout.mlir:[[# @LINE + 14]]:{{[0-9]+}}: remark: user-replacements: 'half-tanh-flat' applied
fx.graph @provably_contiguous {
  %y = fx.placeholder "y" : tensor<8x8xf32>
  %rows = torch.slice %y dim 0 start 0 end 4 step 1 : tensor<8x8xf32> -> tensor<4x8xf32>
  %t = torch.tanh %rows : tensor<4x8xf32> -> tensor<4x8xf32>
  %h = torch.mul %t scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = torch.add %h scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = torch.reshape %a shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
  %z = fx.placeholder "z" : tensor<8x4xf32>
  %zt = torch.transpose %z dim0 0 dim1 1 : tensor<8x4xf32> -> tensor<4x8xf32>
  %c = fx.call_method "contiguous"(%zt) : tensor<4x8xf32>
  %u = torch.tanh %c : tensor<4x8xf32> -> tensor<4x8xf32>
  %v = torch.mul %u scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %w = torch.add %v scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %q = torch.reshape %w shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
  fx.output (%r, %q)
}

// -----

// A replacement that ran on every layout variant matches a transpose.
// CHECK-LABEL: fx.graph @any_layout
// CHECK:         %xt = torch.transpose %y
// CHECK-NEXT:    torch.silu %xt : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    fx.output
// REMARK: layout.mlir:[[# @LINE + 5]]:{{[0-9]+}}: remark: user-replacements: 'sigmoid-mul-to-silu' applied
fx.graph @any_layout {
  %y = fx.placeholder "y" : tensor<8x4xf32>
  %xt = torch.transpose %y dim0 0 dim1 1 : tensor<8x4xf32> -> tensor<4x8xf32>
  %s = torch.sigmoid %xt : tensor<4x8xf32> -> tensor<4x8xf32>
  %m = torch.mul %s, %xt : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output %m
}

// STATS: 'user-replacements'
// STATS:   pattern half-tanh-flat: tried {{[0-9]+}}, rewrote 1,
// STATS: 'user-replacements'
// STATS:   pattern half-tanh-flat: tried {{[0-9]+}}, rewrote 0,
// STATS: 'user-replacements'
// STATS:   pattern half-tanh-flat: tried {{[0-9]+}}, rewrote 0,
// STATS: 'user-replacements'
// STATS:   pattern half-tanh-flat: tried {{[0-9]+}}, rewrote 0,
// STATS: 'user-replacements'
// STATS:   pattern half-tanh-flat: tried {{[0-9]+}}, rewrote 2,
// STATS: 'user-replacements'
// STATS:   pattern sigmoid-mul-to-silu: tried {{[0-9]+}}, rewrote 1,
