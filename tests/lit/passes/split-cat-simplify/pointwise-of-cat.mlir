// RUN: optimus-opt %s -p split-cat-simplify,dce --split-input-file | filecheck %s
// RUN: optimus-opt %s -p split-cat-simplify --split-input-file --remarks --verify-diagnostics

// Issue 21 item 6: a pointwise op of a cat read back only at the cat's
// boundaries runs on the cat's inputs: the cat, the op on the whole and
// the slices (k + 2 ops) become k ops.

// CHECK-LABEL: fx.graph @slices
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %[[A:.*]] = torch.relu %x : tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %[[B:.*]] = torch.relu %y : tensor<3x6xf32> -> tensor<3x6xf32>
// CHECK-NEXT:    %p = torch.mul %[[A]] scalar 2
// CHECK-NEXT:    %q = torch.add %[[B]] scalar 1
// CHECK-NEXT:    fx.output (%p, %q)
fx.graph @slices {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = fx.placeholder "y" : tensor<3x6xf32>
  %c = torch.cat %x, %y dim 1 : tensor<3x4xf32>, tensor<3x6xf32> -> tensor<3x10xf32>
  %r = torch.relu %c : tensor<3x10xf32> -> tensor<3x10xf32>
  %s1 = torch.slice %r dim 1 start 0 end 4 : tensor<3x10xf32> -> tensor<3x4xf32>
  %s2 = torch.slice %r dim 1 start 4 end 10 : tensor<3x10xf32> -> tensor<3x6xf32>
  %p = torch.mul %s1 scalar 2 : tensor<3x4xf32> -> tensor<3x4xf32>
  %q = torch.add %s2 scalar 1 : tensor<3x6xf32> -> tensor<3x6xf32>
  fx.output (%p, %q)
}

// -----

// An empty input: the slice from its start is of the next input (the one
// it ends with), and no op is made for the empty one.

// CHECK-LABEL: fx.graph @empty_input
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %e = fx.placeholder "e"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %[[A:.*]] = torch.relu %x : tensor<3x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    %[[B:.*]] = torch.relu %y : tensor<3x3xf32> -> tensor<3x3xf32>
// CHECK-NEXT:    %p = torch.mul %[[A]] scalar 2
// CHECK-NEXT:    %q = torch.add %[[B]] scalar 1
// CHECK-NEXT:    fx.output (%p, %q)
fx.graph @empty_input {
  %x = fx.placeholder "x" : tensor<3x2xf32>
  %e = fx.placeholder "e" : tensor<3x0xf32>
  %y = fx.placeholder "y" : tensor<3x3xf32>
  %c = torch.cat %x, %e, %y dim 1 : tensor<3x2xf32>, tensor<3x0xf32>, tensor<3x3xf32> -> tensor<3x5xf32>
  %r = torch.relu %c : tensor<3x5xf32> -> tensor<3x5xf32>
  %s1 = torch.slice %r dim 1 start 0 end 2 : tensor<3x5xf32> -> tensor<3x2xf32>
  %s2 = torch.slice %r dim 1 start 2 end 5 : tensor<3x5xf32> -> tensor<3x3xf32>
  %p = torch.mul %s1 scalar 2 : tensor<3x2xf32> -> tensor<3x2xf32>
  %q = torch.add %s2 scalar 1 : tensor<3x3xf32> -> tensor<3x3xf32>
  fx.output (%p, %q)
}

// -----

// A split at the cat's sections, one piece unread; a binary op with a
// number counts as pointwise of one tensor.

// CHECK-LABEL: fx.graph @split
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %z = fx.placeholder "z"
// CHECK-NEXT:    %[[A:.*]] = torch.mul %x scalar 3 : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[C:.*]] = torch.mul %z scalar 3 : tensor<5x4xf32> -> tensor<5x4xf32>
// CHECK-NEXT:    fx.output (%[[A]], %[[C]])
fx.graph @split {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %y = fx.placeholder "y" : tensor<1x4xf32>
  %z = fx.placeholder "z" : tensor<5x4xf32>
  %c = torch.cat %x, %y, %z dim 0 : tensor<2x4xf32>, tensor<1x4xf32>, tensor<5x4xf32> -> tensor<8x4xf32>
  %m = torch.mul %c scalar 3 : tensor<8x4xf32> -> tensor<8x4xf32>
  %a, %b, %d = torch.split %m sections [2, 1, 5] dim 0 : tensor<8x4xf32> -> tensor<2x4xf32>, tensor<1x4xf32>, tensor<5x4xf32>
  fx.output (%a, %d)
}

// -----

// Left alone: a slice across a boundary, the whole result read, the cat read
// by another op, a dtype-converting cat, and (with a remark) an input
// written in place after the cat.

// CHECK-LABEL: fx.graph @left_alone
// CHECK-COUNT-5: torch.cat
fx.graph @left_alone {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = fx.placeholder "y" : tensor<3x6xf32>
  %h = fx.placeholder "h" : tensor<3x6xf16>
  %c1 = torch.cat %x, %y dim 1 : tensor<3x4xf32>, tensor<3x6xf32> -> tensor<3x10xf32>
  %r1 = torch.relu %c1 : tensor<3x10xf32> -> tensor<3x10xf32>
  %s1 = torch.slice %r1 dim 1 start 2 end 6 : tensor<3x10xf32> -> tensor<3x4xf32>
  %c2 = torch.cat %x, %y dim 1 : tensor<3x4xf32>, tensor<3x6xf32> -> tensor<3x10xf32>
  %r2 = torch.relu %c2 : tensor<3x10xf32> -> tensor<3x10xf32>
  %s2 = torch.slice %r2 dim 1 start 0 end 4 : tensor<3x10xf32> -> tensor<3x4xf32>
  %c3 = torch.cat %x, %y dim 1 : tensor<3x4xf32>, tensor<3x6xf32> -> tensor<3x10xf32>
  %r3 = torch.relu %c3 : tensor<3x10xf32> -> tensor<3x10xf32>
  %s3 = torch.slice %r3 dim 1 start 0 end 4 : tensor<3x10xf32> -> tensor<3x4xf32>
  %c4 = torch.cat %x, %h dim 1 : tensor<3x4xf32>, tensor<3x6xf16> -> tensor<3x10xf32>
  %r4 = torch.relu %c4 : tensor<3x10xf32> -> tensor<3x10xf32>
  %s4 = torch.slice %r4 dim 1 start 0 end 4 : tensor<3x10xf32> -> tensor<3x4xf32>
  %w = fx.placeholder "w" : tensor<3x4xf32>
  %c5 = torch.cat %w, %y dim 1 : tensor<3x4xf32>, tensor<3x6xf32> -> tensor<3x10xf32>
  // expected-remark@+1 {{pointwise-of-cat: torch.relu of torch.cat left alone: a tensor involved is written in place}}
  %r5 = torch.relu %c5 : tensor<3x10xf32> -> tensor<3x10xf32>
  %s5 = torch.slice %r5 dim 1 start 0 end 4 : tensor<3x10xf32> -> tensor<3x4xf32>
  %m = fx.call_method "add_"(%w, 1) : tensor<3x4xf32>
  fx.output (%s1, %s2, %r2, %s3, %c3, %s4, %s5)
}

// -----

// Returned pieces keep their strides: slices on dim 1 are strided views of
// the whole, relu of each input would not be (left alone, with a remark);
// on dim 0 they are laid out like the inputs (taken).

// CHECK-LABEL: fx.graph @returned
// CHECK:         %[[A:.*]] = torch.relu %x : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %[[B:.*]] = torch.relu %y : tensor<6x3xf32> -> tensor<6x3xf32>
// CHECK:         torch.cat %u, %v dim 1
// CHECK:         fx.output (%[[A]], %[[B]], %s1, %s2)
fx.graph @returned {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %y = fx.placeholder "y" : tensor<6x3xf32>
  %c = torch.cat %x, %y dim 0 : tensor<4x3xf32>, tensor<6x3xf32> -> tensor<10x3xf32>
  %r = torch.relu %c : tensor<10x3xf32> -> tensor<10x3xf32>
  %a = torch.slice %r dim 0 start 0 end 4 : tensor<10x3xf32> -> tensor<4x3xf32>
  %b = torch.slice %r dim 0 start 4 end 10 : tensor<10x3xf32> -> tensor<6x3xf32>
  %u = fx.placeholder "u" : tensor<3x4xf32>
  %v = fx.placeholder "v" : tensor<3x6xf32>
  %d = torch.cat %u, %v dim 1 : tensor<3x4xf32>, tensor<3x6xf32> -> tensor<3x10xf32>
  // expected-remark@+1 {{pointwise-of-cat: torch.relu of torch.cat left alone: a user of a piece depends on strides}}
  %q = torch.relu %d : tensor<3x10xf32> -> tensor<3x10xf32>
  %s1 = torch.slice %q dim 1 start 0 end 4 : tensor<3x10xf32> -> tensor<3x4xf32>
  %s2 = torch.slice %q dim 1 start 4 end 10 : tensor<3x10xf32> -> tensor<3x6xf32>
  fx.output (%a, %b, %s1, %s2)
}
