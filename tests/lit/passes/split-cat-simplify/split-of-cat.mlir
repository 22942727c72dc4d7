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
