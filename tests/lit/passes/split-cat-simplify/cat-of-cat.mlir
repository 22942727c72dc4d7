// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// An inner cat on the same dim used only by the outer cat is flattened into
// it, at any depth: the outer cat copies the same elements in the same order.

// CHECK-LABEL: fx.graph @flatten
// CHECK:         %k = torch.cat %a, %b, %c, %d, %e dim 1 : {{.*}} -> tensor<2x10xf32>
// CHECK-NOT:     torch.cat
// CHECK:         fx.output %k
fx.graph @flatten {
  %a = fx.placeholder "a" : tensor<2x2xf32>
  %b = fx.placeholder "b" : tensor<2x2xf32>
  %c = fx.placeholder "c" : tensor<2x2xf32>
  %d = fx.placeholder "d" : tensor<2x2xf32>
  %e = fx.placeholder "e" : tensor<2x2xf32>
  %cd = torch.cat %c, %d dim 1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x4xf32>
  %bcd = torch.cat %b, %cd dim 1 : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x6xf32>
  %k = torch.cat %a, %bcd, %e dim 1 : tensor<2x2xf32>, tensor<2x6xf32>, tensor<2x2xf32> -> tensor<2x10xf32>
  fx.output %k
}

// -----

// Left alone: an inner cat on another dim, one with another user (flattening
// would add a copy), one that converts dtypes (its f16 input is rounded to
// f32 first), one whose input is written in place between the two cats.

// CHECK-LABEL: fx.graph @left_alone
// CHECK:         %i0 = torch.cat %a, %b dim 0
// CHECK-NEXT:    %k0 = torch.cat %i0, %c dim 1
// CHECK-NEXT:    %i1 = torch.cat %a, %b dim 1
// CHECK-NEXT:    %k1 = torch.cat %i1, %a dim 1
// CHECK-NEXT:    %i2 = torch.cat %h, %a dim 1
// CHECK-NEXT:    %k2 = torch.cat %i2, %a dim 1
// CHECK-NEXT:    %i3 = torch.cat %p, %a dim 1
// CHECK-NEXT:    %m = fx.call_method "add_"(%p, 1)
// CHECK-NEXT:    %k3 = torch.cat %i3, %a dim 1
// CHECK-NEXT:    fx.output (%k0, %k1, %i1, %k2, %k3)
fx.graph @left_alone {
  %a = fx.placeholder "a" : tensor<2x2xf32>
  %b = fx.placeholder "b" : tensor<2x2xf32>
  %c = fx.placeholder "c" : tensor<4x2xf32>
  %h = fx.placeholder "h" : tensor<2x2xf16>
  %x = fx.placeholder "x" : tensor<2x2xf32>
  %p = torch.neg %x : tensor<2x2xf32> -> tensor<2x2xf32>
  %i0 = torch.cat %a, %b dim 0 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
  %k0 = torch.cat %i0, %c dim 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %i1 = torch.cat %a, %b dim 1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x4xf32>
  %k1 = torch.cat %i1, %a dim 1 : tensor<2x4xf32>, tensor<2x2xf32> -> tensor<2x6xf32>
  %i2 = torch.cat %h, %a dim 1 : tensor<2x2xf16>, tensor<2x2xf32> -> tensor<2x4xf32>
  %k2 = torch.cat %i2, %a dim 1 : tensor<2x4xf32>, tensor<2x2xf32> -> tensor<2x6xf32>
  %i3 = torch.cat %p, %a dim 1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x4xf32>
  %m = fx.call_method "add_"(%p, 1) : tensor<2x2xf32>
  %k3 = torch.cat %i3, %a dim 1 : tensor<2x4xf32>, tensor<2x2xf32> -> tensor<2x6xf32>
  fx.output (%k0, %k1, %i1, %k2, %k3)
}
