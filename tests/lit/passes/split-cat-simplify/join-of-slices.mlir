// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// cat of ordered, touching slices on the cat dim: one slice, or the tensor.

// CHECK-LABEL: fx.graph @cat_slices
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %k = torch.slice %y dim 1 start 2 end 9 :
// CHECK-NEXT:    %r = torch.relu %k
// CHECK-NEXT:    %w = torch.exp %y
// CHECK-NEXT:    fx.output (%r, %w)
fx.graph @cat_slices {
  %x = fx.placeholder "x" : tensor<4x10xf32>
  %y = torch.tanh %x : tensor<4x10xf32> -> tensor<4x10xf32>
  %a = torch.slice %y dim 1 start 2 end 5 : tensor<4x10xf32> -> tensor<4x3xf32>
  %b = torch.slice %y dim 1 start 5 end 9 : tensor<4x10xf32> -> tensor<4x4xf32>
  %k = torch.cat %a, %b dim 1 : tensor<4x3xf32>, tensor<4x4xf32> -> tensor<4x7xf32>
  %r = torch.relu %k : tensor<4x7xf32> -> tensor<4x7xf32>
  %c = torch.slice %y dim 0 start 0 end 1 : tensor<4x10xf32> -> tensor<1x10xf32>
  %d = torch.slice %y dim 0 start 1 end 4 : tensor<4x10xf32> -> tensor<3x10xf32>
  %e = torch.cat %c, %d dim 0 : tensor<1x10xf32>, tensor<3x10xf32> -> tensor<4x10xf32>
  %w = torch.exp %e : tensor<4x10xf32> -> tensor<4x10xf32>
  fx.output (%r, %w)
}

// -----

// stack of consecutive selects on the stack dim: a slice; stack of equal,
// touching slices: unflatten (and movedim to the stack dim).

// CHECK-LABEL: fx.graph @stack_views
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %s = torch.slice %y dim 0 start 1 end 3 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    %[[U:.*]] = torch.unflatten %y dim 1 sizes [3, 2] : tensor<4x6xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT:    %[[T:.*]] = torch.movedim %[[U]] source [1] destination [0] : tensor<4x3x2xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT:    %[[L:.*]] = torch.slice %y dim 1 start 2 end 6
// CHECK-NEXT:    %[[T2:.*]] = torch.unflatten %[[L]] dim 1 sizes [2, 2] : tensor<4x4xf32> -> tensor<4x2x2xf32>
// CHECK-NEXT:    %r = torch.add %[[T]], %[[T]]
// CHECK-NEXT:    %r2 = torch.relu %s
// CHECK-NEXT:    %r3 = torch.relu %[[T2]]
// CHECK-NEXT:    fx.output (%r2, %r, %r3)
fx.graph @stack_views {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %y = torch.tanh %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %a = torch.select %y dim 0 index 1 : tensor<4x6xf32> -> tensor<6xf32>
  %b = torch.select %y dim 0 index 2 : tensor<4x6xf32> -> tensor<6xf32>
  %s = torch.stack %a, %b dim 0 : tensor<6xf32>, tensor<6xf32> -> tensor<2x6xf32>
  %p = torch.slice %y dim 1 start 0 end 2 : tensor<4x6xf32> -> tensor<4x2xf32>
  %q = torch.slice %y dim 1 start 2 end 4 : tensor<4x6xf32> -> tensor<4x2xf32>
  %u = torch.slice %y dim 1 start 4 end 6 : tensor<4x6xf32> -> tensor<4x2xf32>
  %t = torch.stack %p, %q, %u dim 0 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<3x4x2xf32>
  %t2 = torch.stack %q, %u dim 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2x2xf32>
  %r = torch.add %t, %t : tensor<3x4x2xf32>, tensor<3x4x2xf32> -> tensor<3x4x2xf32>
  %r2 = torch.relu %s : tensor<2x6xf32> -> tensor<2x6xf32>
  %r3 = torch.relu %t2 : tensor<4x2x2xf32> -> tensor<4x2x2xf32>
  fx.output (%r2, %r, %r3)
}

// -----

// Left alone: gaps, steps, another tensor, another dim, a stride-sensitive
// user (view) of the cat, a stack returned as a graph output (it would
// become a strided view).

// CHECK-LABEL: fx.graph @leave_alone
// CHECK:         %k0 = torch.cat %a, %c dim 1
// CHECK-NEXT:    %k1 = torch.cat %a, %d dim 1
// CHECK-NEXT:    %k2 = torch.cat %a, %b dim 0
// CHECK-NEXT:    %k3 = torch.cat %a, %e dim 1
// CHECK:         %s = torch.stack %a, %f dim 0
// CHECK-NEXT:    %k4 = torch.cat %a, %b dim 1
// CHECK-NEXT:    %v = torch.view %k4 shape [16]
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %z = torch.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = torch.slice %y dim 1 start 0 end 2 : tensor<4x8xf32> -> tensor<4x2xf32>
  %b = torch.slice %y dim 1 start 2 end 4 : tensor<4x8xf32> -> tensor<4x2xf32>
  %c = torch.slice %y dim 1 start 3 end 5 : tensor<4x8xf32> -> tensor<4x2xf32>
  %d = torch.slice %y dim 1 start 2 end 8 step 3 : tensor<4x8xf32> -> tensor<4x2xf32>
  %e = torch.slice %z dim 1 start 2 end 4 : tensor<4x8xf32> -> tensor<4x2xf32>
  %f = torch.slice %y dim 1 start 2 end 4 : tensor<4x8xf32> -> tensor<4x2xf32>
  %k0 = torch.cat %a, %c dim 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %k1 = torch.cat %a, %d dim 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %k2 = torch.cat %a, %b dim 0 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %k3 = torch.cat %a, %e dim 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %g = torch.slice %y dim 1 start 4 end 7 : tensor<4x8xf32> -> tensor<4x3xf32>
  %s = torch.stack %a, %f dim 0 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<2x4x2xf32>
  %k4 = torch.cat %a, %b dim 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %v = torch.view %k4 shape [16] : tensor<4x4xf32> -> tensor<16xf32>
  fx.output (%k0, %k1, %k2, %k3, %s, %v, %g)
}
