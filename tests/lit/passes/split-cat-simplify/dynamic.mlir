// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// A symbolic batch dim with the split and cat along the static feature dim:
// the split of the cat reads the cat's inputs as with static shapes (the
// returned piece stays a view of the cat: a returned value is not forwarded).

// CHECK-LABEL: fx.graph @roundtrip
// CHECK:         %c = torch.cat %t, %b dim 1
// CHECK-NEXT:    %p = torch.slice %c dim 1 start 0 end 16 : tensor<?x32xf32, "cpu"> -> tensor<?x16xf32, "cpu">
// CHECK-NEXT:    %r = torch.relu %b
// CHECK-NOT:     torch.split %c
fx.graph @roundtrip {
  %x = fx.placeholder "x" symbols ["s77", ""] hints [8, 32] : tensor<?x32xf32, "cpu">
  %a, %b = torch.split %x sections [16, 16] dim 1 : tensor<?x32xf32, "cpu"> -> tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu">
  %t = torch.tanh %a : tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  %c = torch.cat %t, %b dim 1 : tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu"> -> tensor<?x32xf32, "cpu">
  %p, %q = torch.split %c sections [16, 16] dim 1 : tensor<?x32xf32, "cpu"> -> tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu">
  %r = torch.relu %q : tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  fx.output (%p, %r)
}


// -----

// A split along the symbolic dim of a cat along it: which cat input each
// piece reads depends on the batch size, so nothing is rewritten.

// CHECK-LABEL: fx.graph @other_dim
// CHECK:         %c = torch.cat %t, %b dim 0
// CHECK-NEXT:    %p, %q = torch.split %c sections [4, 4] dim 0
// CHECK-NEXT:    %r = torch.relu %q

fx.graph @other_dim {
  %x = fx.placeholder "x" symbols ["s77", ""] hints [8, 32] : tensor<?x32xf32, "cpu">
  %a, %b = torch.split %x sections [16, 16] dim 1 : tensor<?x32xf32, "cpu"> -> tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu">
  %t = torch.tanh %a : tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  %c = torch.cat %t, %b dim 0 : tensor<?x16xf32, "cpu">, tensor<?x16xf32, "cpu"> -> tensor<?x16xf32, "cpu">
  %p, %q = torch.split %c sections [4, 4] dim 0 : tensor<?x16xf32, "cpu"> -> tensor<4x16xf32, "cpu">, tensor<4x16xf32, "cpu">
  %r = torch.relu %q : tensor<4x16xf32, "cpu"> -> tensor<4x16xf32, "cpu">
  fx.output (%p, %r)
}
