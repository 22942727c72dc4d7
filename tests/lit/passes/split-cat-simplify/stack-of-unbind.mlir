// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// unbind -> stack of all results on the same dim: the input.

// CHECK-LABEL: fx.graph @identity
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %r = torch.relu %y
// CHECK-NEXT:    fx.output %r
fx.graph @identity {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = torch.tanh %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %a, %b, %c = torch.unbind %y dim 0 : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %s = torch.stack %a, %b, %c dim 0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %r = torch.relu %s : tensor<3x4xf32> -> tensor<3x4xf32>
  fx.output %r
}

// -----

// Upstream #121228: a stack of part of an unbind keeps its own shape: a slice.

// CHECK-LABEL: fx.graph @partial
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = torch.tanh %x
// CHECK-NEXT:    %s = torch.slice %y dim 1 start 1 end 3 : tensor<2x4xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    %r = torch.relu %s
fx.graph @partial {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %y = torch.tanh %x : tensor<2x4xf32> -> tensor<2x4xf32>
  %a, %b, %c, %d = torch.unbind %y dim 1 : tensor<2x4xf32> -> tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  %s = torch.stack %b, %c dim 1 : tensor<2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  %r = torch.relu %s : tensor<2x2xf32> -> tensor<2x2xf32>
  fx.output %r
}

// -----

// Left alone: another dim, out of order, the input is written in place.

// CHECK-LABEL: fx.graph @leave_alone
// CHECK:         %s0 = torch.stack %a, %b, %c dim 1
// CHECK-NEXT:    %s1 = torch.stack %b, %a, %c dim 0
// CHECK:         %s2 = torch.stack %d, %e dim 0
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = torch.tanh %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %a, %b, %c = torch.unbind %y dim 0 : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %s0 = torch.stack %a, %b, %c dim 1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x3xf32>
  %s1 = torch.stack %b, %a, %c dim 0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %z = torch.exp %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %d, %e, %f = torch.unbind %z dim 0 : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %s2 = torch.stack %d, %e dim 0 : tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %m = fx.call_method "copy_"(%z, %y) : tensor<3x4xf32>
  fx.output (%s0, %s1, %s2)
}

// -----

// Returned, all of a graph input: the stack may not become the input (the
// output would alias it), but one copy of it is the exact equivalent.

// CHECK-LABEL: fx.graph @returned_input_copied
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %s = torch.cat %x dim 0 : tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    fx.output %s
fx.graph @returned_input_copied {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %a, %b, %c = torch.unbind %x dim 0 : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %s = torch.stack %a, %b, %c dim 0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  fx.output %s
}

// -----

// Returned with another output aliasing the same storage: still one copy.
// Written in place: the plumbing stays.

// CHECK-LABEL: fx.graph @returned_twice_and_mutated
// CHECK:         %s = torch.cat %y dim 0 : tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK:         %t = torch.stack %d, %e, %f dim 0
fx.graph @returned_twice_and_mutated {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %y = torch.tanh %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %a, %b, %c = torch.unbind %y dim 0 : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %s = torch.stack %a, %b, %c dim 0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %z = torch.exp %x : tensor<3x4xf32> -> tensor<3x4xf32>
  %d, %e, %f = torch.unbind %z dim 0 : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %t = torch.stack %d, %e, %f dim 0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %m = fx.call_method "mul_"(%t, 2) : tensor<3x4xf32>
  fx.output (%s, %y, %t)
}
