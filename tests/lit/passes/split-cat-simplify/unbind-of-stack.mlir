// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// stack -> unbind on the same dim: the stacked tensors; a partial use of the
// unbind stays correct.

// CHECK-LABEL: fx.graph @identity
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %b = torch.exp %y
// CHECK-NEXT:    %r = torch.relu %b
// CHECK-NEXT:    fx.output %r
fx.graph @identity {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %y = fx.placeholder "y" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %y : tensor<4x3xf32> -> tensor<4x3xf32>
  %s = torch.stack %a, %b dim 2 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3x2xf32>
  %u, %v = torch.unbind %s dim 2 : tensor<4x3x2xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  %r = torch.relu %v : tensor<4x3xf32> -> tensor<4x3xf32>
  fx.output %r
}

// -----

// Left alone: another dim; the stack is written in place.

// CHECK-LABEL: fx.graph @leave_alone
// CHECK:         %u, %v = torch.unbind %s dim 1
// CHECK:         %p, %q = torch.unbind %t dim 0
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<2x2xf32>
  %a = torch.tanh %x : tensor<2x2xf32> -> tensor<2x2xf32>
  %s = torch.stack %a, %a dim 0 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2x2xf32>
  %u, %v = torch.unbind %s dim 1 : tensor<2x2x2xf32> -> tensor<2x2xf32>, tensor<2x2xf32>
  %t = torch.stack %a, %a dim 0 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2x2xf32>
  %m = fx.call_method "mul_"(%t, 2) : tensor<2x2x2xf32>
  %p, %q = torch.unbind %t dim 0 : tensor<2x2x2xf32> -> tensor<2x2xf32>, tensor<2x2xf32>
  fx.output (%u, %v, %p, %q)
}
