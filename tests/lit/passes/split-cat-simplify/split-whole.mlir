// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// A split into one section, or one piece that is the whole tensor: the input.

// CHECK-LABEL: fx.graph @one_section
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %r = torch.relu %x
// CHECK-NEXT:    %s = torch.exp %x
// CHECK-NEXT:    fx.output (%r, %s)
fx.graph @one_section {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a = torch.split %x sections [6] dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %r = torch.relu %a : tensor<4x6xf32> -> tensor<4x6xf32>
  %b, %c, %d = torch.split %x sections [0, 4, 0] dim 0 : tensor<4x6xf32> -> tensor<0x6xf32>, tensor<4x6xf32>, tensor<0x6xf32>
  %s = torch.exp %c : tensor<4x6xf32> -> tensor<4x6xf32>
  fx.output (%r, %s)
}

// -----

// Left alone: the piece is more precisely typed than the (symbolic) input.

// CHECK-LABEL: fx.graph @symbolic
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.split %x sections [6] dim 1
// CHECK-NEXT:    %r = torch.relu %a
fx.graph @symbolic {
  %x = fx.placeholder "x" : tensor<4x?xf32>
  %a = torch.split %x sections [6] dim 1 : tensor<4x?xf32> -> tensor<4x6xf32>
  %r = torch.relu %a : tensor<4x6xf32> -> tensor<4x6xf32>
  fx.output %r
}

// -----

// Left alone: the whole piece is returned and the input is the caller's
// tensor (or returned too): the piece is a new tensor object in eager, and
// returning the input itself would let the caller change the input's
// metadata through it. A returned whole piece of an intermediate goes.

// CHECK-LABEL: fx.graph @returned
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.split %x sections [6] dim 1
// CHECK-NEXT:    %h = torch.relu %x
// CHECK-NEXT:    %b = torch.split %h sections [6] dim 1
// CHECK-NEXT:    %k = torch.exp %x
// CHECK-NEXT:    fx.output (%a, %h, %b, %k)
fx.graph @returned {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a = torch.split %x sections [6] dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %h = torch.relu %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %b = torch.split %h sections [6] dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %k = torch.exp %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %c = torch.split %k sections [6] dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  fx.output (%a, %h, %b, %c)
}

// -----

// Left alone too: the input is what an in-place op (or any fx op) returned,
// which may be the caller's tensor object itself (`x.add_(2)` returns `x`).

// CHECK-LABEL: fx.graph @returned_after_in_place
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %w = fx.call_method "add_"(%x, 2)
// CHECK-NEXT:    %a = torch.split %w sections [1] dim 0
// CHECK-NEXT:    fx.output (%a,)
fx.graph @returned_after_in_place {
  %x = fx.placeholder "x" : tensor<1xf32>
  %w = fx.call_method "add_"(%x, 2) : tensor<1xf32>
  %a = torch.split %w sections [1] dim 0 : tensor<1xf32> -> tensor<1xf32>
  fx.output (%a)
}
