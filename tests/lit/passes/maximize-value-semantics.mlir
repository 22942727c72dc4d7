// RUN: optimus-opt %s -p maximize-value-semantics --split-input-file | filecheck %s
// RUN: optimus-opt %s -p maximize-value-semantics --split-input-file --remarks --verify-diagnostics

// In-place writes to temporaries (fresh results of this graph, not viewed or
// observed before the write) become their out-of-place forms; readers after
// the write, and the users of the in-place call's result, read the new value.

// CHECK-LABEL: fx.graph @rewrites
// CHECK:         %h = fx.call_function "torch._C._nn.linear"(%x, %w, %b)
// CHECK-NEXT:    %before = fx.call_function "torch.sigmoid"(%h)
// CHECK-NEXT:    %r = fx.call_function "torch.nn.functional.relu"(%h) :
// CHECK-NEXT:    %s = fx.call_function "_operator.add"(%r, 1) :
// CHECK-NEXT:    %a = fx.call_method "add"(%s, 2.0) :
// CHECK-NEXT:    %m = fx.call_method "mul"(%a, 3.0) :
// CHECK-NEXT:    %after = fx.call_function "torch.sigmoid"(%m)
// CHECK-NEXT:    %e = fx.call_function "torch.exp"(%x)
// CHECK-NEXT:    %l = fx.call_function "torch.nn.functional.leaky_relu"(%e, 0.2{{.*}}) :
// CHECK-NEXT:    %e2 = fx.call_function "torch.exp"(%x)
// CHECK-NEXT:    %t = fx.call_function "torch.relu"(%e2) :
// CHECK-NEXT:    %e3 = fx.call_function "torch.exp"(%x)
// CHECK-NEXT:    %g = fx.call_function "torch.ops.aten.sigmoid.default"(%e3) :
// CHECK-NEXT:    %e4 = fx.call_function "torch.exp"(%x)
// CHECK-NEXT:    %d = fx.call_function "torch.nn.functional.dropout"(%e4, 0.5, false, false) :
// CHECK-NEXT:    %e5 = fx.call_function "torch.exp"(%x)
// CHECK-NEXT:    %c = fx.call_function "torch.nn.functional.relu"(%e5, false) :
// CHECK-NEXT:    fx.output (%before, %m, %m, %m, %after, %l, %t, %g, %d, %c)
fx.graph @rewrites {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %w = fx.get_attr "w" : tensor<3x4xf32>
  %b = fx.get_attr "b" : tensor<3xf32>
  %h = fx.call_function "torch._C._nn.linear"(%x, %w, %b) : tensor<2x3xf32>
  %before = fx.call_function "torch.sigmoid"(%h) : tensor<2x3xf32>
  %r = fx.call_function "torch.nn.functional.relu"(%h, inplace = true) : tensor<2x3xf32>
  %s = fx.call_function "_operator.iadd"(%r, 1) : tensor<2x3xf32>
  %a = fx.call_method "add_"(%h, 2.0) : tensor<2x3xf32>
  %m = fx.call_method "mul_"(%h, 3.0) : tensor<2x3xf32>
  %after = fx.call_function "torch.sigmoid"(%h) : tensor<2x3xf32>
  %e = fx.call_function "torch.exp"(%x) : tensor<2x4xf32>
  %l = fx.call_module "act"(%e) {module_type = "torch.nn.modules.activation.LeakyReLU", module_attrs = {negative_slope = 0.2 : f64, inplace = true, training = false}} : tensor<2x4xf32>
  %e2 = fx.call_function "torch.exp"(%x) : tensor<2x4xf32>
  %t = fx.call_function "torch.relu_"(%e2) : tensor<2x4xf32>
  %e3 = fx.call_function "torch.exp"(%x) : tensor<2x4xf32>
  %g = fx.call_function "torch.ops.aten.sigmoid_.default"(%e3) : tensor<2x4xf32>
  %e4 = fx.call_function "torch.exp"(%x) : tensor<2x4xf32>
  %d = fx.call_function "torch.nn.functional.dropout"(%e4, 0.5, false, true) : tensor<2x4xf32>
  %e5 = fx.call_function "torch.exp"(%x) : tensor<2x4xf32>
  %c = fx.call_function "torch.nn.functional.relu"(%e5, true) : tensor<2x4xf32>
  fx.output (%before, %s, %a, %m, %after, %l, %t, %g, %d, %c)
}

// -----

// Writes that must stay: to a graph input, to a parameter, to a temporary
// viewed before the write, to one an unknown call observed, a dropout in
// training, and a `+=` whose out-of-place result would be f64 (promotion).

// CHECK-LABEL: fx.graph @keeps
// CHECK:         fx.call_method "relu_"(%x)
// CHECK:         fx.call_function "operator.iadd"(%w, 1)
// CHECK:         fx.call_function "torch.relu_"(%t)
// CHECK:         fx.call_method "sigmoid_"(%o)
// CHECK:         fx.call_function "torch.nn.functional.dropout"(%e4, 0.5, true, true)
// CHECK:         fx.call_function "operator.iadd"(%e, %y)
fx.graph @keeps {
  %x = fx.placeholder "x" : tensor<2x3xf32>
  %y = fx.placeholder "y" : tensor<2x3xf64>
  %w = fx.get_attr "w" : tensor<2x3xf32>
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %x is a graph input (the caller sees the write)}}
  %i = fx.call_method "relu_"(%x) : tensor<2x3xf32>
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %w is a parameter, buffer or constant of the module}}
  %p = fx.call_function "operator.iadd"(%w, 1) : tensor<2x3xf32>
  %t = fx.call_function "torch.exp"(%x) : tensor<2x3xf32>
  %v = fx.call_method "view"(%t, 6) : tensor<6xf32>
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %t is viewed or observed before the write (by 'view')}}
  %tr = fx.call_function "torch.relu_"(%t) : tensor<2x3xf32>
  %o = fx.call_function "torch.exp"(%x) : tensor<2x3xf32>
  %printed = fx.call_function "builtins.print"(%o) : !fx.value
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %o is viewed or observed before the write (by 'builtins.print')}}
  %so = fx.call_method "sigmoid_"(%o) : tensor<2x3xf32>
  %e4 = fx.call_function "torch.exp"(%x) : tensor<2x3xf32>
  // expected-remark@+1 {{maximize-value-semantics: kept in place: a dropout in training mode (its random numbers need not be the same out of place)}}
  %d4 = fx.call_function "torch.nn.functional.dropout"(%e4, 0.5, true, true) : tensor<2x3xf32>
  %e = fx.call_function "torch.exp"(%x) : tensor<2x3xf32>
  // expected-remark@+1 {{maximize-value-semantics: kept in place: out of place the result would be float64 where %e is float32 (type promotion)}}
  %pr = fx.call_function "operator.iadd"(%e, %y) : tensor<2x3xf32>
  fx.output (%i, %p, %v, %tr, %so, %d4, %pr)
}

// -----

// A view of the target made after the write reads the new value (it is a
// view of the out-of-place result); a view of an in-place call's result is
// a view of the new value too.

// CHECK-LABEL: fx.graph @views_after
// CHECK:         %r = fx.call_method "relu"(%e) :
// CHECK-NEXT:    %v = fx.call_method "view"(%r, 6)
// CHECK-NEXT:    %u = fx.call_method "unsqueeze"(%r, 0)
fx.graph @views_after {
  %x = fx.placeholder "x" : tensor<2x3xf32>
  %e = fx.call_function "torch.exp"(%x) : tensor<2x3xf32>
  %r = fx.call_method "relu_"(%e) : tensor<2x3xf32>
  %v = fx.call_method "view"(%e, 6) : tensor<6xf32>
  %u = fx.call_method "unsqueeze"(%r, 0) : tensor<1x2x3xf32>
  fx.output (%v, %u)
}
