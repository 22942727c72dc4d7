// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// cat -> split at the same boundaries: the cat's inputs.

// CHECK-LABEL: fx.graph @same_boundaries
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %b = torch.sigmoid %y
// CHECK-NEXT:    %r = torch.add %a, %b
// CHECK-NEXT:    fx.output %r
fx.graph @same_boundaries {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %y = fx.placeholder "y" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.sigmoid %y : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a, %b dim 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %p, %q = torch.split %k sections [4, 4] dim 0 : tensor<8x3xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  %r = torch.add %p, %q : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  fx.output %r
}

// -----

// Left alone: other boundaries, another dim, a cat written in place, a
// piece whose dtype the cat promoted (the f32 piece is forwarded; the
// promoted one stays, as a slice once its neighbour is gone).

// CHECK-LABEL: fx.graph @leave_alone
// CHECK:         %p, %q = torch.split %k sections [2, 6] dim 0
// CHECK:         %s, %t = torch.split %k sections [4, 4] dim 0
// CHECK-NEXT:    %w, %z = torch.split %k1 sections [2, 2] dim 0
// CHECK-NEXT:    %m = torch.cat %a, %h dim 0
// CHECK-NEXT:    %v = torch.slice %m dim 0 start 4 end 8
// CHECK:         fx.output (%p, %q, %s, %t, %w, %z, %a, %v)
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %h = fx.placeholder "h" : tensor<4x3xf16>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a, %a dim 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %p, %q = torch.split %k sections [2, 6] dim 0 : tensor<8x3xf32> -> tensor<2x3xf32>, tensor<6x3xf32>
  %k1 = torch.cat %a, %a dim 1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  %s, %t = torch.split %k sections [4, 4] dim 0 : tensor<8x3xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  %w, %z = torch.split %k1 sections [2, 2] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>, tensor<2x6xf32>
  %m = torch.cat %a, %h dim 0 : tensor<4x3xf32>, tensor<4x3xf16> -> tensor<8x3xf32>
  %u, %v = torch.split %m sections [4, 4] dim 0 : tensor<8x3xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  %i = torch.add %k, %k : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %i2 = fx.call_method "add_"(%i, 1) : tensor<8x3xf32>
  %e = fx.call_method "add_"(%k, 1) : tensor<8x3xf32>
  fx.output (%p, %q, %s, %t, %w, %z, %u, %v)
}

// -----

// Coarser: a piece covering several whole inputs is a smaller cat of them
// (made where the big cat was); a piece that is one input is that input.

// CHECK-LABEL: fx.graph @coarser
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %b = torch.exp %x
// CHECK-NEXT:    %c = torch.sigmoid %x
// CHECK-NEXT:    %p = torch.cat %a, %b dim 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
// CHECK-NEXT:    %r = torch.relu %p
// CHECK-NEXT:    %s = torch.relu %c
// CHECK-NEXT:    fx.output (%r, %s)
fx.graph @coarser {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = torch.sigmoid %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a, %b, %c dim 0 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<12x3xf32>
  %p, %q = torch.split %k sections [8, 4] dim 0 : tensor<12x3xf32> -> tensor<8x3xf32>, tensor<4x3xf32>
  %r = torch.relu %p : tensor<8x3xf32> -> tensor<8x3xf32>
  %s = torch.relu %q : tensor<4x3xf32> -> tensor<4x3xf32>
  fx.output (%r, %s)
}

// -----

// Finer: pieces inside one input are pieces of a split of that input (views
// of it, laid out alike on dim 0); a single live piece inside an input ends
// as a slice of it.

// CHECK-LABEL: fx.graph @finer
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %b = torch.exp %y
// CHECK-NEXT:    %p, %q = torch.split %a sections [1, 3] dim 0
// CHECK-NEXT:    %r = torch.add %p, %b
// CHECK-NEXT:    %s = torch.relu %q
// CHECK-NEXT:    fx.output (%r, %s)
fx.graph @finer {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %y = fx.placeholder "y" : tensor<1x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %y : tensor<1x3xf32> -> tensor<1x3xf32>
  %k = torch.cat %a, %b dim 0 : tensor<4x3xf32>, tensor<1x3xf32> -> tensor<5x3xf32>
  %p, %q, %t = torch.split %k sections [1, 3, 1] dim 0 : tensor<5x3xf32> -> tensor<1x3xf32>, tensor<3x3xf32>, tensor<1x3xf32>
  %r = torch.add %p, %t : tensor<1x3xf32>, tensor<1x3xf32> -> tensor<1x3xf32>
  %s = torch.relu %q : tensor<3x3xf32> -> tensor<3x3xf32>
  fx.output (%r, %s)
}

// -----

// Both at once, and dead pieces: [a | b c] -> a's two live pieces come from a
// split of a, the dead one does not matter, b ++ c is a smaller cat.

// CHECK-LABEL: fx.graph @mixed
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %b = torch.exp %x
// CHECK-NEXT:    %c = torch.sigmoid %x
// CHECK-NEXT:    %t = torch.cat %b, %c dim 0
// CHECK-NEXT:    %p, %{{.*}}, %r = torch.split %a sections [1, 1, 2] dim 0
// CHECK-NEXT:    %u = torch.add %p, %r
// CHECK-NEXT:    %v = torch.relu %t
// CHECK-NEXT:    fx.output (%u, %v)
fx.graph @mixed {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = torch.sigmoid %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a, %b, %c dim 0 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<12x3xf32>
  %p, %q, %r, %t = torch.split %k sections [1, 1, 2, 8] dim 0 : tensor<12x3xf32> -> tensor<1x3xf32>, tensor<1x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>
  %u = torch.add %p, %r : tensor<1x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %v = torch.relu %t : tensor<8x3xf32> -> tensor<8x3xf32>
  fx.output (%u, %v)
}

// -----

// A piece that straddles a cat boundary keeps the cat; pieces that are
// exactly one input are still forwarded.

// CHECK-LABEL: fx.graph @straddle
// CHECK:         %k = torch.cat %a, %b, %c dim 0
// CHECK-NEXT:    %p, %q, %r = torch.split %k sections [2, 6, 4] dim 0
// CHECK-NEXT:    fx.output (%p, %q, %c)
fx.graph @straddle {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = torch.sigmoid %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a, %b, %c dim 0 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<12x3xf32>
  %p, %q, %r = torch.split %k sections [2, 6, 4] dim 0 : tensor<12x3xf32> -> tensor<2x3xf32>, tensor<6x3xf32>, tensor<4x3xf32>
  fx.output (%p, %q, %r)
}

// -----

// Not a win, left alone: two inputs each split in two (a cat and a split
// would become two splits: the same node count); a coarser piece while the
// cat has another user (a second copy next to the first: only the exact
// piece is forwarded, the other ends as a slice of the cat).

// CHECK-LABEL: fx.graph @no_win
// CHECK:         %k = torch.cat %a, %b dim 0
// CHECK-NEXT:    %p, %q, %r, %s = torch.split %k sections [2, 2, 2, 2] dim 0
// CHECK:         %k2 = torch.cat %a, %b, %c dim 0
// CHECK-NEXT:    %u = torch.slice %k2 dim 0 start 0 end 8
// CHECK-NEXT:    %n = torch.neg %k2
// CHECK-NEXT:    fx.output (%p, %q, %r, %s, %u, %c, %n)
fx.graph @no_win {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = torch.sigmoid %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a, %b dim 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %p, %q, %r, %s = torch.split %k sections [2, 2, 2, 2] dim 0 : tensor<8x3xf32> -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  %k2 = torch.cat %a, %b, %c dim 0 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<12x3xf32>
  %u, %v = torch.split %k2 sections [8, 4] dim 0 : tensor<12x3xf32> -> tensor<8x3xf32>, tensor<4x3xf32>
  %n = torch.neg %k2 : tensor<12x3xf32> -> tensor<12x3xf32>
  fx.output (%p, %q, %r, %s, %u, %v, %n)
}

// -----

// Unsafe, left alone: a coarser piece whose inputs the cat promoted (the
// smaller cat would be f16; the exact f32 piece is forwarded); a coarser
// piece on dim 1 (a strided view where a contiguous cat would be) feeding a
// sum; finer pieces on dim 1 feeding a sum (a piece of the input has other
// strides than a piece of the cat), with an exact piece returned (strided
// before, contiguous after); a cat written in place.

// CHECK-LABEL: fx.graph @unsafe
// CHECK:         %k = torch.cat %h, %h, %a dim 0
// CHECK-NEXT:    %p = torch.slice %k dim 0 start 0 end 8
// CHECK:         %k1 = torch.cat %a, %a, %a dim 1
// CHECK-NEXT:    %s, %t = torch.split %k1 sections [6, 3] dim 1
// CHECK:         %k2 = torch.cat %a, %a dim 1
// CHECK-NEXT:    %w, %y, %z = torch.split %k2 sections [1, 2, 3] dim 1
// CHECK:         %k3 = torch.cat %a, %a, %a dim 0
// CHECK-NEXT:    %i, %j = torch.split %k3 sections [8, 4] dim 0
// CHECK:         fx.output (%pr, %a, %ss, %t, %ws, %ys, %z, %ir)
fx.graph @unsafe {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %h = fx.placeholder "h" : tensor<4x3xf16>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %h, %h, %a dim 0 : tensor<4x3xf16>, tensor<4x3xf16>, tensor<4x3xf32> -> tensor<12x3xf32>
  %p, %q = torch.split %k sections [8, 4] dim 0 : tensor<12x3xf32> -> tensor<8x3xf32>, tensor<4x3xf32>
  %pr = torch.relu %p : tensor<8x3xf32> -> tensor<8x3xf32>
  %k1 = torch.cat %a, %a, %a dim 1 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x9xf32>
  %s, %t = torch.split %k1 sections [6, 3] dim 1 : tensor<4x9xf32> -> tensor<4x6xf32>, tensor<4x3xf32>
  %ss = torch.sum %s : tensor<4x6xf32> -> tensor<f32>
  %k2 = torch.cat %a, %a dim 1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  %w, %y, %z = torch.split %k2 sections [1, 2, 3] dim 1 : tensor<4x6xf32> -> tensor<4x1xf32>, tensor<4x2xf32>, tensor<4x3xf32>
  %ws = torch.sum %w : tensor<4x1xf32> -> tensor<f32>
  %ys = torch.sum %y : tensor<4x2xf32> -> tensor<f32>
  %k3 = torch.cat %a, %a, %a dim 0 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<12x3xf32>
  %i, %j = torch.split %k3 sections [8, 4] dim 0 : tensor<12x3xf32> -> tensor<8x3xf32>, tensor<4x3xf32>
  %ir = torch.relu %i : tensor<8x3xf32> -> tensor<8x3xf32>
  %m = fx.call_method "add_"(%j, 1) : tensor<4x3xf32>
  fx.output (%pr, %q, %ss, %t, %ws, %ys, %z, %ir)
}

// -----

// The cat's own boundaries with dead pieces: the live piece is its input
// (tried before dead pieces are merged into a slice of the cat).

// CHECK-LABEL: fx.graph @dead_pieces
// CHECK-NOT:     torch.cat
// CHECK-NOT:     torch.slice
// CHECK:         %r = torch.relu %b
// CHECK-NEXT:    fx.output %r
fx.graph @dead_pieces {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = torch.sigmoid %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a, %b, %c dim 1 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x9xf32>
  %p, %q, %s = torch.split %k sections [3, 3, 3] dim 1 : tensor<4x9xf32> -> tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  %r = torch.relu %q : tensor<4x3xf32> -> tensor<4x3xf32>
  fx.output %r
}
