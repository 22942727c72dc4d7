// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// All pieces, in order, cat on the split dim: the input itself.

// CHECK-LABEL: fx.graph @all_pieces
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %r = torch.relu %y
// CHECK-NEXT:    fx.output %r
fx.graph @all_pieces {
  %x = fx.placeholder "x" : tensor<4x12xf32>
  %y = torch.tanh %x : tensor<4x12xf32> -> tensor<4x12xf32>
  %a, %b, %c = torch.split %y sections [4, 4, 4] dim 1 : tensor<4x12xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  %k = torch.cat %a, %b, %c dim 1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x12xf32>
  %r = torch.relu %k : tensor<4x12xf32> -> tensor<4x12xf32>
  fx.output %r
}

// -----

// Unequal sections, size-0 and size-1 pieces, dim 0.

// CHECK-LABEL: fx.graph @unequal_sections
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %r = torch.relu %y
// CHECK-NEXT:    fx.output %r
fx.graph @unequal_sections {
  %x = fx.placeholder "x" : tensor<7x3xf32>
  %y = torch.tanh %x : tensor<7x3xf32> -> tensor<7x3xf32>
  %a, %b, %c, %d = torch.split %y sections [1, 0, 4, 2] dim 0 : tensor<7x3xf32> -> tensor<1x3xf32>, tensor<0x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>
  %k = torch.cat %a, %b, %c, %d dim 0 : tensor<1x3xf32>, tensor<0x3xf32>, tensor<4x3xf32>, tensor<2x3xf32> -> tensor<7x3xf32>
  %r = torch.relu %k : tensor<7x3xf32> -> tensor<7x3xf32>
  fx.output %r
}

// -----

// A consecutive run of pieces (not all): a slice of the input; the other
// users of the pieces keep the split.

// CHECK-LABEL: fx.graph @run_to_slice
// CHECK:         %a, %b, %c = torch.split %y sections [2, 4, 6] dim 1
// CHECK-NEXT:    %{{.*}} = torch.slice %y dim 1 start 2 end 12 :
// CHECK-NOT:     torch.cat
// CHECK:         fx.output
fx.graph @run_to_slice {
  %x = fx.placeholder "x" : tensor<4x12xf32>
  %y = torch.tanh %x : tensor<4x12xf32> -> tensor<4x12xf32>
  %a, %b, %c = torch.split %y sections [2, 4, 6] dim 1 : tensor<4x12xf32> -> tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x6xf32>
  %k = torch.cat %b, %c dim 1 : tensor<4x4xf32>, tensor<4x6xf32> -> tensor<4x10xf32>
  %r = torch.relu %k : tensor<4x10xf32> -> tensor<4x10xf32>
  %s = torch.sigmoid %a : tensor<4x2xf32> -> tensor<4x2xf32>
  %u = torch.exp %b : tensor<4x4xf32> -> tensor<4x4xf32>
  fx.output (%r, %s, %u)
}

// -----

// Runs among other inputs: a coarser split, fewer cat inputs.

// CHECK-LABEL: fx.graph @coarser_split
// CHECK:         %[[P:.*]], %[[Q:.*]] = torch.split %y sections [4, 8] dim 1 :
// CHECK-NEXT:    %k = torch.cat %[[Q]], %z, %[[P]] dim 1 :
// CHECK-NOT:     torch.split
fx.graph @coarser_split {
  %x = fx.placeholder "x" : tensor<4x12xf32>
  %z = fx.placeholder "z" : tensor<4x3xf32>
  %y = torch.tanh %x : tensor<4x12xf32> -> tensor<4x12xf32>
  %a, %b, %c, %d = torch.split %y sections [1, 3, 4, 4] dim 1 : tensor<4x12xf32> -> tensor<4x1xf32>, tensor<4x3xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  %k = torch.cat %c, %d, %z, %a, %b dim 1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x3xf32>, tensor<4x1xf32>, tensor<4x3xf32> -> tensor<4x15xf32>
  fx.output %k
}

// -----

// Left alone: another dim, pieces out of order, a cat of one piece, pieces
// of two different splits.

// CHECK-LABEL: fx.graph @leave_alone
// CHECK:         %k0 = torch.cat %a, %b dim 0
// CHECK-NEXT:    %k1 = torch.cat %b, %a dim 1
// CHECK-NEXT:    %k2 = torch.cat %a dim 1
// CHECK:         %k3 = torch.cat %a, %e dim 1
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a, %b = torch.split %y sections [4, 4] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %k0 = torch.cat %a, %b dim 0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %k1 = torch.cat %b, %a dim 1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  %k2 = torch.cat %a dim 1 : tensor<4x4xf32> -> tensor<4x4xf32>
  %w = torch.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %d, %e = torch.split %w sections [4, 4] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %k3 = torch.cat %a, %e dim 1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  fx.output (%k0, %k1, %k2, %k3, %d)
}

// -----

// The cat result would alias a graph input that it then returns: it stays
// a copy (a cat of one input, the split gone).

// CHECK-LABEL: fx.graph @output_would_alias_input
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %k = torch.cat %x dim 1
// CHECK-NEXT:    fx.output %k
fx.graph @output_would_alias_input {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %a, %b = torch.split %x sections [4, 4] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %k = torch.cat %a, %b dim 1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  fx.output %k
}

// -----

// A graph input whose cat is only consumed by compute is fine, and so is a
// fresh intermediate returned whole.

// CHECK-LABEL: fx.graph @input_consumed
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %r = torch.relu %x
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    fx.output (%r, %y)
fx.graph @input_consumed {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %a, %b = torch.split %x sections [4, 4] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %k = torch.cat %a, %b dim 1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  %r = torch.relu %k : tensor<4x8xf32> -> tensor<4x8xf32>
  %y = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %c, %d = torch.split %y sections [4, 4] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %k2 = torch.cat %c, %d dim 1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  fx.output (%r, %k2)
}

// -----

// Symbolic sizes: the sections are static, the other dims may be dynamic.

// CHECK-LABEL: fx.graph @symbolic
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %r = torch.relu %y
fx.graph @symbolic {
  %x = fx.placeholder "x" : tensor<?x8xf32>
  %y = torch.tanh %x : tensor<?x8xf32> -> tensor<?x8xf32>
  %a, %b = torch.split %y sections [3, 5] dim 1 : tensor<?x8xf32> -> tensor<?x3xf32>, tensor<?x5xf32>
  %k = torch.cat %a, %b dim 1 : tensor<?x3xf32>, tensor<?x5xf32> -> tensor<?x8xf32>
  %r = torch.relu %k : tensor<?x8xf32> -> tensor<?x8xf32>
  fx.output %r
}
