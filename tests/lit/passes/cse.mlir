// RUN: optimus-opt %s -p cse --split-input-file | filecheck %s

// Identical pure ops are merged into the first one; their users follow.

// CHECK-LABEL: fx.graph @merge
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = fx.call_function "torch.tanh"(%x)
// CHECK-NEXT:    %m = fx.call_method "sum"(%x, dim = 0)
// CHECK-NEXT:    %g = fx.call_function "operator.getitem"(%a, 0)
// CHECK-NEXT:    %w = fx.get_attr "weight"
// CHECK-NEXT:    %s = fx.call_function "torch.add"(%a, %a)
// CHECK-NEXT:    %t = fx.call_function "torch.mul"(%s, %w)
// CHECK-NEXT:    %q = fx.call_function "torch.sub"(%m, %g)
// CHECK-NEXT:    fx.output (%t, %m, %g, %q)
fx.graph @merge {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %m = fx.call_method "sum"(%x, dim = 0) : tensor<f32, "cpu">
  %n = fx.call_method "sum"(%x, dim = 0) : tensor<f32, "cpu">
  %g = fx.call_function "operator.getitem"(%a, 0) : tensor<f32, "cpu">
  %h = fx.call_function "operator.getitem"(%b, 0) : tensor<f32, "cpu">
  %w = fx.get_attr "weight" : tensor<4xf32, "cpu">
  %v = fx.get_attr "weight" : tensor<4xf32, "cpu">
  %s = fx.call_function "torch.add"(%a, %b) : tensor<4xf32, "cpu">
  %t = fx.call_function "torch.mul"(%s, %v) : tensor<4xf32, "cpu">
  %q = fx.call_function "torch.sub"(%n, %h) : tensor<f32, "cpu">
  fx.output (%t, %m, %g, %q)
}

// -----

// Ops that differ in target, arguments, kwargs, operands or result type stay apart.

// CHECK-LABEL: fx.graph @different
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %a = fx.call_function "torch.tanh"(%x)
// CHECK-NEXT:    %b = fx.call_function "torch.sigmoid"(%x)
// CHECK-NEXT:    %c = fx.call_function "torch.tanh"(%y)
// CHECK-NEXT:    %d = fx.call_method "sum"(%x, dim = 0)
// CHECK-NEXT:    %e = fx.call_method "sum"(%x, dim = 0, keepdim = true)
// CHECK-NEXT:    %f = fx.call_function "operator.getitem"(%x, 0)
// CHECK-NEXT:    %g = fx.call_function "operator.getitem"(%x, 1)
// CHECK-NEXT:    %h = fx.call_function "my.tanh"(%x) : tensor<4xf16, "cpu">
// CHECK-NEXT:    %h2 = fx.call_function "my.tanh"(%x) : tensor<4xf32, "cpu">
// CHECK-NEXT:    %i = fx.call_function "torch.add"(%x, %y)
// CHECK-NEXT:    %j = fx.call_function "torch.add"(%y, %x)
// CHECK-NEXT:    %k = fx.call_function "torch.tanh"(%x) {tag = "other"}
// CHECK-NEXT:    fx.output
fx.graph @different {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %y = fx.placeholder "y" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.sigmoid"(%x) : tensor<4xf32, "cpu">
  %c = fx.call_function "torch.tanh"(%y) : tensor<4xf32, "cpu">
  %d = fx.call_method "sum"(%x, dim = 0) : tensor<f32, "cpu">
  %e = fx.call_method "sum"(%x, dim = 0, keepdim = true) : tensor<1xf32, "cpu">
  %f = fx.call_function "operator.getitem"(%x, 0) : tensor<f32, "cpu">
  %g = fx.call_function "operator.getitem"(%x, 1) : tensor<f32, "cpu">
  // an operator without type inference: a torch.tanh of f32 declared f16 is an error
  %h = fx.call_function "my.tanh"(%x) : tensor<4xf16, "cpu">
  %h2 = fx.call_function "my.tanh"(%x) : tensor<4xf32, "cpu">
  %i = fx.call_function "torch.add"(%x, %y) : tensor<4xf32, "cpu">
  %j = fx.call_function "torch.add"(%y, %x) : tensor<4xf32, "cpu">
  %k = fx.call_function "torch.tanh"(%x) {tag = "other"} : tensor<4xf32, "cpu">
  fx.output [%a, %b, %c, %d, %e, %f, %g, %h, %h2, %i, %j, %k]
}

// -----

// Impure, random, allocating and unknown ops are never merged.

// CHECK-LABEL: fx.graph @impure
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %x2 = fx.placeholder "x"
// CHECK-NEXT:    %c1 = fx.call_function "mylib.f"(%x)
// CHECK-NEXT:    %c2 = fx.call_function "mylib.f"(%x)
// CHECK-NEXT:    %m1 = fx.call_module "linear"(%x)
// CHECK-NEXT:    %m2 = fx.call_module "linear"(%x)
// CHECK-NEXT:    %r1 = fx.call_function "torch.randn"([4])
// CHECK-NEXT:    %r2 = fx.call_function "torch.randn"([4])
// CHECK-NEXT:    %z1 = fx.call_function "torch.zeros"([4])
// CHECK-NEXT:    %z2 = fx.call_function "torch.zeros"([4])
// CHECK-NEXT:    %i1 = fx.call_method "add_"(%x, 1)
// CHECK-NEXT:    %i2 = fx.call_method "add_"(%x, 1)
// CHECK-NEXT:    %d1 = fx.call_function "torch.nn.functional.dropout"(%x, 0.5)
// CHECK-NEXT:    %d2 = fx.call_function "torch.nn.functional.dropout"(%x, 0.5)
// CHECK-NEXT:    fx.output
fx.graph @impure {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %x2 = fx.placeholder "x" : tensor<4xf32, "cpu">
  %c1 = fx.call_function "mylib.f"(%x) : tensor<4xf32, "cpu">
  %c2 = fx.call_function "mylib.f"(%x) : tensor<4xf32, "cpu">
  %m1 = fx.call_module "linear"(%x) : tensor<4xf32, "cpu">
  %m2 = fx.call_module "linear"(%x) : tensor<4xf32, "cpu">
  %r1 = fx.call_function "torch.randn"([4]) : tensor<4xf32, "cpu">
  %r2 = fx.call_function "torch.randn"([4]) : tensor<4xf32, "cpu">
  %z1 = fx.call_function "torch.zeros"([4]) : tensor<4xf32, "cpu">
  %z2 = fx.call_function "torch.zeros"([4]) : tensor<4xf32, "cpu">
  %i1 = fx.call_method "add_"(%x, 1) : tensor<4xf32, "cpu">
  %i2 = fx.call_method "add_"(%x, 1) : tensor<4xf32, "cpu">
  %d1 = fx.call_function "torch.nn.functional.dropout"(%x, 0.5) : tensor<4xf32, "cpu">
  %d2 = fx.call_function "torch.nn.functional.dropout"(%x, 0.5) : tensor<4xf32, "cpu">
  fx.output [%x2, %c1, %c2, %m1, %m2, %r1, %r2, %z1, %z2, %i1, %i2, %d1, %d2]
}

// -----

// Ops in different graphs are not merged (fx.graph is isolated from above).

// CHECK-LABEL: fx.graph @first
// CHECK:         fx.call_function "torch.tanh"
// CHECK-LABEL: fx.graph @second
// CHECK:         fx.call_function "torch.tanh"
fx.graph @first {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  fx.output %a
}
fx.graph @second {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  fx.output %a
}

// -----

// Non-fx ops follow their traits: a cast with no memory effects is merged.

// CHECK-LABEL: fx.graph @traits
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %c = builtin.unrealized_conversion_cast %x : tensor<4xf32, "cpu"> to tensor<4xf32>
// CHECK-NEXT:    %e = fx.call_function "torch.add"(%c, %c)
// CHECK-NEXT:    fx.output (%c, %e)
fx.graph @traits {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %c = builtin.unrealized_conversion_cast %x : tensor<4xf32, "cpu"> to tensor<4xf32>
  %d = builtin.unrealized_conversion_cast %x : tensor<4xf32, "cpu"> to tensor<4xf32>
  %e = fx.call_function "torch.add"(%c, %d) : tensor<4xf32>
  fx.output (%c, %e)
}

// -----

// An in-place write is a barrier for its alias class: `x + 1` before and
// after `x.add_(1)` stay two ops; `y + 1` (y is not written) still merges.

// CHECK-LABEL: fx.graph @barrier
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %a = fx.call_function "torch.add"(%x, 1)
// CHECK-NEXT:    %c = fx.call_function "torch.add"(%y, 1)
// CHECK-NEXT:    %w = fx.call_method "add_"(%x, 1)
// CHECK-NEXT:    %b = fx.call_function "torch.add"(%x, 1)
// CHECK-NEXT:    %e = fx.call_function "torch.mul"(%c, %c)
// CHECK-NEXT:    fx.output (%a, %b, %e)
fx.graph @barrier {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %y = fx.placeholder "y" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.add"(%x, 1) : tensor<4xf32, "cpu">
  %c = fx.call_function "torch.add"(%y, 1) : tensor<4xf32, "cpu">
  %w = fx.call_method "add_"(%x, 1) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.add"(%x, 1) : tensor<4xf32, "cpu">
  %d = fx.call_function "torch.add"(%y, 1) : tensor<4xf32, "cpu">
  %e = fx.call_function "torch.mul"(%c, %d) : tensor<4xf32, "cpu">
  fx.output (%a, %b, %e)
}

// -----

// A write to the base reaches what reads a view of it (and the view itself
// is read again after the write): nothing of the class merges across it.
// Reads of a fresh result computed before the write still merge.

// CHECK-LABEL: fx.graph @barrier_through_view
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %v = fx.call_method "view"(%x, -1)
// CHECK-NEXT:    %a = fx.call_function "torch.mul"(%v, 2)
// CHECK-NEXT:    %t = fx.call_function "torch.tanh"(%a)
// CHECK-NEXT:    %w = fx.call_method "mul_"(%x, 2)
// CHECK-NEXT:    %b = fx.call_function "torch.mul"(%v, 2)
// CHECK-NEXT:    %s = fx.call_function "torch.add"(%t, %t)
// CHECK-NEXT:    fx.output (%a, %b, %s)
fx.graph @barrier_through_view {
  %x = fx.placeholder "x" : tensor<2x3xf32, "cpu">
  %v = fx.call_method "view"(%x, -1) : tensor<6xf32, "cpu">
  %a = fx.call_function "torch.mul"(%v, 2) : tensor<6xf32, "cpu">
  %t = fx.call_function "torch.tanh"(%a) : tensor<6xf32, "cpu">
  %w = fx.call_method "mul_"(%x, 2) : tensor<2x3xf32, "cpu">
  %b = fx.call_function "torch.mul"(%v, 2) : tensor<6xf32, "cpu">
  %u = fx.call_function "torch.tanh"(%a) : tensor<6xf32, "cpu">
  %s = fx.call_function "torch.add"(%t, %u) : tensor<6xf32, "cpu">
  fx.output (%a, %b, %s)
}

// -----

// `x[1] = 0` (operator.setitem) between two equal split/cat expressions:
// the second split and cat stay.

// CHECK-LABEL: fx.graph @barrier_setitem
// CHECK:         torch.split %x
// CHECK:         torch.cat
// CHECK:         fx.call_function "_operator.setitem"(%x, 1, 0)
// CHECK-NEXT:    torch.split %x
// CHECK-NEXT:    torch.cat
// CHECK-NEXT:    fx.output
fx.graph @barrier_setitem {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %p, %q = torch.split %x sections [2, 2] dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %y = torch.cat %q, %p dim 1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
  %s = fx.call_function "_operator.setitem"(%x, 1, 0) : !fx.value
  %r, %t = torch.split %x sections [2, 2] dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %z = torch.cat %t, %r dim 1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
  fx.output (%y, %z)
}

// -----

// Without the write, the same split/cat pair merges.

// CHECK-LABEL: fx.graph @no_barrier
// CHECK:         torch.split %x
// CHECK-NEXT:    torch.cat
// CHECK-NEXT:    torch.relu
// CHECK-NEXT:    torch.add
// CHECK-NEXT:    fx.output
fx.graph @no_barrier {
  %x = fx.placeholder "x" : tensor<3x4xf32>
  %p, %q = torch.split %x sections [2, 2] dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %y = torch.cat %q, %p dim 1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
  %r, %t = torch.split %x sections [2, 2] dim 1 : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %z = torch.cat %t, %r dim 1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
  %u = torch.relu %y : tensor<3x4xf32> -> tensor<3x4xf32>
  %v = torch.add %u, %z : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  fx.output %v
}

// -----

// Distinct outputs stay distinct tensors: two equal returned ops, and a
// returned op with an equal op whose view is returned, are not merged.
// An equal op that is not returned still merges into a returned one.

// CHECK-LABEL: fx.graph @distinct_outputs
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = fx.call_function "torch.add"(%x, 1)
// CHECK-NEXT:    %b = fx.call_function "torch.add"(%x, 1)
// CHECK-NEXT:    %c = fx.call_function "torch.add"(%x, 1)
// CHECK-NEXT:    %v = fx.call_method "view"(%c, 2, 2)
// CHECK-NEXT:    %e = fx.call_function "torch.mul"(%a, %a)
// CHECK-NEXT:    fx.output (%a, %b, %v, %e)
fx.graph @distinct_outputs {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.add"(%x, 1) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.add"(%x, 1) : tensor<4xf32, "cpu">
  %c = fx.call_function "torch.add"(%x, 1) : tensor<4xf32, "cpu">
  %v = fx.call_method "view"(%c, 2, 2) : tensor<2x2xf32, "cpu">
  %d = fx.call_function "torch.add"(%x, 1) : tensor<4xf32, "cpu">
  %e = fx.call_function "torch.mul"(%a, %d) : tensor<4xf32, "cpu">
  fx.output (%a, %b, %v, %e)
}

// -----

// Aliasing is asked of torch: `einsum('bd->db', h)` returns a view of `h`,
// so a write through it is a write to `h`, and the sums of `h` before and
// after it stay two ops. `x.short()` of an i16 `x` is `x` itself: the same.
// Two sums with no write between them are one.

// CHECK-LABEL: fx.graph @write_through_views
// CHECK:         %p = fx.call_method "sum"(%h, 0)
// CHECK-NEXT:    %p2 = fx.call_method "sum"(%h, 1)
// CHECK-NEXT:    %w = fx.call_method "mul_"(%e, 0.5)
// CHECK-NEXT:    %q = fx.call_method "sum"(%h, 0)
// CHECK-NEXT:    %a = fx.call_method "sum"(%i, 0)
// CHECK-NEXT:    %s = fx.call_method "short"(%i)
// CHECK-NEXT:    %ws = fx.call_method "add_"(%s, 1)
// CHECK-NEXT:    %b = fx.call_method "sum"(%i, 0)
// CHECK-NEXT:    fx.output (%p, %q, %p2, %a, %b)
fx.graph @write_through_views {
  %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
  %i = fx.placeholder "i" : tensor<2x4xi16, "cpu">
  %h = fx.call_function "torch.exp"(%x) : tensor<2x4xf32, "cpu">
  %e = fx.call_function "torch.functional.einsum"("bd->db", %h) : tensor<4x2xf32, "cpu">
  %p = fx.call_method "sum"(%h, 0) : tensor<4xf32, "cpu">
  %p2 = fx.call_method "sum"(%h, 1) : tensor<2xf32, "cpu">
  %p3 = fx.call_method "sum"(%h, 1) : tensor<2xf32, "cpu">
  %w = fx.call_method "mul_"(%e, 0.5) : tensor<4x2xf32, "cpu">
  %q = fx.call_method "sum"(%h, 0) : tensor<4xf32, "cpu">
  %a = fx.call_method "sum"(%i, 0) : tensor<4xi64, "cpu">
  %s = fx.call_method "short"(%i) : tensor<2x4xi16, "cpu">
  %ws = fx.call_method "add_"(%s, 1) : tensor<2x4xi16, "cpu">
  %b = fx.call_method "sum"(%i, 0) : tensor<4xi64, "cpu">
  fx.output (%p, %q, %p3, %a, %b)
}

// -----

// An embedding lookup is pure (merged, removable) unless it is given a
// `max_norm`: then it renormalizes the rows it reads of the weight in place.

// CHECK-LABEL: fx.graph @embeddings
// CHECK:         %a = fx.call_function "torch.nn.functional.embedding"(%i, %w)
// CHECK-NOT:     %b = fx.call_function "torch.nn.functional.embedding"(%i, %w)
// CHECK:         %c = fx.call_function "torch.nn.functional.embedding"(%i, %w, max_norm = 1.0
// CHECK-NEXT:    %d = fx.call_function "torch.nn.functional.embedding"(%i, %w, max_norm = 1.0
// CHECK-NEXT:    %t = fx.call_function "torch.add"(%a, %a)
// CHECK-NEXT:    %u = fx.call_function "torch.add"(%c, %d)
fx.graph @embeddings {
  %i = fx.placeholder "i" : tensor<3xi64, "cpu">
  %w = fx.get_attr "w" : tensor<10x4xf32, "cpu">
  %a = fx.call_function "torch.nn.functional.embedding"(%i, %w) : tensor<3x4xf32, "cpu">
  %b = fx.call_function "torch.nn.functional.embedding"(%i, %w) : tensor<3x4xf32, "cpu">
  %c = fx.call_function "torch.nn.functional.embedding"(%i, %w, max_norm = 1.0) : tensor<3x4xf32, "cpu">
  %d = fx.call_function "torch.nn.functional.embedding"(%i, %w, max_norm = 1.0) : tensor<3x4xf32, "cpu">
  %t = fx.call_function "torch.add"(%a, %b) : tensor<3x4xf32, "cpu">
  %u = fx.call_function "torch.add"(%c, %d) : tensor<3x4xf32, "cpu">
  fx.output (%t, %u)
}
