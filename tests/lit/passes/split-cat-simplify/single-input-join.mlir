// RUN: optimus-opt %s -p split-cat-simplify --split-input-file | filecheck %s

// A join of one tensor is a copy of it: cat([x]) is x, stack([x], d) is
// unsqueeze(x, d). A read-only graph input may be forwarded too.

// CHECK-LABEL: fx.graph @rewrite
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %r = torch.relu %a
// CHECK-NEXT:    %s = torch.unsqueeze %a dim 1 : tensor<4x3xf32> -> tensor<4x1x3xf32>
// CHECK-NEXT:    %e = torch.exp %s
// CHECK-NEXT:    %g = torch.sigmoid %x
// CHECK-NEXT:    fx.output (%r, %e, %g)
fx.graph @rewrite {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a dim 1 : tensor<4x3xf32> -> tensor<4x3xf32>
  %r = torch.relu %k : tensor<4x3xf32> -> tensor<4x3xf32>
  %s = torch.stack %a dim 1 : tensor<4x3xf32> -> tensor<4x1x3xf32>
  %e = torch.exp %s : tensor<4x1x3xf32> -> tensor<4x1x3xf32>
  %c = torch.cat %x dim 0 : tensor<4x3xf32> -> tensor<4x3xf32>
  %g = torch.sigmoid %c : tensor<4x3xf32> -> tensor<4x3xf32>
  fx.output (%r, %e, %g)
}

// -----

// A returned join of a fresh tensor that nothing else returns: the tensor
// itself (cat) or a contiguous unsqueeze of it (stack).

// CHECK-LABEL: fx.graph @returned_fresh
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %b = torch.exp %x
// CHECK-NEXT:    %s = torch.unsqueeze %b dim 0
// CHECK-NEXT:    fx.output (%a, %s)
fx.graph @returned_fresh {
  %x = fx.placeholder "x" : tensor<4x3xf32>
  %a = torch.tanh %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %k = torch.cat %a dim 0 : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = torch.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %s = torch.stack %b dim 0 : tensor<4x3xf32> -> tensor<1x4x3xf32>
  fx.output (%k, %s)
}

// -----

// Left alone: a returned join of a graph input (the output would alias the
// input); a join whose input is written in place (before or after); a join
// whose result is written; a returned join of a tensor returned as well;
// a cat of a strided piece feeding a reduction (a contiguous copy sums in
// another order).

// CHECK-LABEL: fx.graph @leave_alone
// CHECK:         %k0 = torch.cat %x dim 0
// CHECK:         %s0 = torch.stack %x dim 0
// CHECK:         %k1 = torch.cat %a dim 0
// CHECK:         %s1 = torch.stack %a dim 2
// CHECK:         %k2 = torch.cat %b dim 1
// CHECK:         %k3 = torch.cat %c dim 1
// CHECK:         %k4 = torch.cat %q dim 1
// CHECK:         fx.output
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %k0 = torch.cat %x dim 0 : tensor<4x6xf32> -> tensor<4x6xf32>
  %s0 = torch.stack %x dim 0 : tensor<4x6xf32> -> tensor<1x4x6xf32>
  %a = torch.tanh %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %k1 = torch.cat %a dim 0 : tensor<4x6xf32> -> tensor<4x6xf32>
  %s1 = torch.stack %a dim 2 : tensor<4x6xf32> -> tensor<4x6x1xf32>
  %r1 = torch.relu %k1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %r2 = torch.relu %s1 : tensor<4x6x1xf32> -> tensor<4x6x1xf32>
  %m = fx.call_method "add_"(%a, 1) : tensor<4x6xf32>
  %b = torch.exp %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %k2 = torch.cat %b dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %m2 = fx.call_method "mul_"(%k2, 2) : tensor<4x6xf32>
  %c = torch.sigmoid %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %k3 = torch.cat %c dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %y = torch.exp %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %p, %q = torch.split %y sections [2, 4] dim 1 : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x4xf32>
  %k4 = torch.cat %q dim 1 : tensor<4x4xf32> -> tensor<4x4xf32>
  %sum = torch.sum %k4 : tensor<4x4xf32> -> tensor<f32>
  fx.output (%k0, %s0, %r1, %r2, %k2, %k3, %c, %p, %sum)
}
