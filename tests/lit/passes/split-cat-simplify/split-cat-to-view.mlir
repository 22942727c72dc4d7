// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// split on dim 1 -> cat on dim 0: unflatten, movedim, flatten.

// CHECK-LABEL: fx.graph @split_cat_other_dim
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[U:.*]] = torch.unflatten %x dim 1 sizes [4, 4] : tensor<3x16xf32> -> tensor<3x4x4xf32>
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %[[U]] {{.*}} -> tensor<4x3x4xf32>
// CHECK-NEXT:    %[[F:.*]] = torch.flatten %[[M]] start_dim 0 end_dim 1 : tensor<4x3x4xf32> -> tensor<12x4xf32>
// CHECK-NEXT:    %r = torch.relu %[[F]]
fx.graph @split_cat_other_dim {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %s = torch.cat %a, %b, %c, %d dim 0 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<12x4xf32>
  %r = torch.relu %s : tensor<12x4xf32> -> tensor<12x4xf32>
  fx.output %r
}

// -----

// unbind -> cat: movedim then flatten (here on the unbind dim: a flatten).

// CHECK-LABEL: fx.graph @unbind_cat
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[F:.*]] = torch.flatten %x start_dim 1 end_dim 2 : tensor<2x3x4xf32> -> tensor<2x12xf32>
// CHECK-NEXT:    %r = torch.relu %[[F]]
fx.graph @unbind_cat {
  %x = fx.placeholder "x" : tensor<2x3x4xf32>
  %a, %b, %c = torch.unbind %x dim 1 : tensor<2x3x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  %s = torch.cat %a, %b, %c dim 1 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x12xf32>
  %r = torch.relu %s : tensor<2x12xf32> -> tensor<2x12xf32>
  fx.output %r
}

// -----

// Shuffled ranges: the two runs are joined on the split dim first, then
// one view chain; other inputs keep their place.

// CHECK-LABEL: fx.graph @shuffled_with_foreign
// CHECK:         %[[S:.*]], %[[T:.*]] = torch.split %x sections [8, 8] dim 1
// CHECK:         %[[C:.*]] = torch.cat %[[T]], %[[S]] dim 1
// CHECK:         torch.unflatten %[[C]] dim 1 sizes [8, 2]
// CHECK:         torch.cat %y, %{{.*}} dim 0 : tensor<1x2xf32>, tensor<24x2xf32> -> tensor<25x2xf32>
fx.graph @shuffled_with_foreign {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %y = fx.placeholder "y" : tensor<1x2xf32>
  %p:8 = torch.split %x sections [2, 2, 2, 2, 2, 2, 2, 2] dim 1 : tensor<3x16xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %s = torch.cat %y, %p#4, %p#5, %p#6, %p#7, %p#0, %p#1, %p#2, %p#3 dim 0 : tensor<1x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<25x2xf32>
  %r = torch.relu %s : tensor<25x2xf32> -> tensor<25x2xf32>
  fx.output %r
}

// -----

// Left alone: same-dim cat (a core pattern's job, here blocked by the output
// aliasing rule) and runs too short to pay off.

// CHECK-LABEL: fx.graph @left_alone
// CHECK:         torch.cat {{.*}} dim 1 : {{.*}} -> tensor<3x8xf32>
// CHECK:         torch.cat %y, %e, %f, %y, %g, %h dim 0
fx.graph @left_alone {
  %x = fx.placeholder "x" : tensor<3x8xf32>
  %a, %b = torch.split %x sections [4, 4] dim 1 : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
  %s = torch.cat %a, %b dim 1 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x8xf32>
  %y = fx.placeholder "y" : tensor<1x2xf32>
  %e, %f, %g, %h = torch.split %x sections [2, 2, 2, 2] dim 1 : tensor<3x8xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %u = torch.cat %y, %e, %f, %y, %g, %h dim 0 : tensor<1x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<14x2xf32>
  %ur = torch.relu %u : tensor<14x2xf32> -> tensor<14x2xf32>
  fx.output (%s, %ur)
}
