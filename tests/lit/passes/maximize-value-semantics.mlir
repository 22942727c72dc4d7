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

// -----

// Whether a call returns fresh storage is asked of torch (the call run on
// meta/fake tensors of its operand types), not of a list of names: a cast
// to the dtype a tensor has already (`short` of i16, `byte` of ui8, `char`
// of i8) and unary plus return the tensor itself, so a write through them
// is a write to the graph input and stays; a cast to another dtype is a
// fresh tensor, and its write goes out of place.

// CHECK-LABEL: fx.graph @casts
// CHECK:         %ws = fx.call_method "add_"(%s, 1)
// CHECK:         %wb = fx.call_method "add_"(%b, 1)
// CHECK:         %wc = fx.call_method "add_"(%c, 1)
// CHECK:         %wp = fx.call_method "add_"(%p, 1.0)
// CHECK:         %wf = fx.call_method "add"(%f, 1)
fx.graph @casts {
  %x16 = fx.placeholder "x16" : tensor<2x3xi16, "cpu">
  %xu8 = fx.placeholder "xu8" : tensor<2x3xui8, "cpu">
  %xi8 = fx.placeholder "xi8" : tensor<2x3xi8, "cpu">
  %x = fx.placeholder "x" : tensor<2x3xf32, "cpu">
  %y = fx.placeholder "y" : tensor<2x3xf32, "cpu">
  %s = fx.call_method "short"(%x16) : tensor<2x3xi16, "cpu">
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %s may be (a view of) a graph input (the caller sees the write)}}
  %ws = fx.call_method "add_"(%s, 1) : tensor<2x3xi16, "cpu">
  %b = fx.call_method "byte"(%xu8) : tensor<2x3xui8, "cpu">
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %b may be (a view of) a graph input (the caller sees the write)}}
  %wb = fx.call_method "add_"(%b, 1) : tensor<2x3xui8, "cpu">
  %c = fx.call_method "char"(%xi8) : tensor<2x3xi8, "cpu">
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %c may be (a view of) a graph input (the caller sees the write)}}
  %wc = fx.call_method "add_"(%c, 1) : tensor<2x3xi8, "cpu">
  %p = fx.call_function "_operator.pos"(%y) : tensor<2x3xf32, "cpu">
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %p may be (a view of) a graph input (the caller sees the write)}}
  %wp = fx.call_method "add_"(%p, 1.0) : tensor<2x3xf32, "cpu">
  %f = fx.call_method "short"(%x) : tensor<2x3xi16, "cpu">
  %wf = fx.call_method "add_"(%f, 1) : tensor<2x3xi16, "cpu">
  fx.output (%ws, %wb, %wc, %wp, %wf)
}

// -----

// A view made by a call no list knew (`einsum('bd->db', h)` returns a
// permuted view of `h`) observes the later write: it stays in place.

// CHECK-LABEL: fx.graph @einsum_view
// CHECK:         %e = fx.call_function "torch.functional.einsum"("bd->db", %h)
// CHECK-NEXT:    %m = fx.call_method "mul_"(%h, 0.5)
fx.graph @einsum_view {
  %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
  %h = fx.call_function "torch.exp"(%x) : tensor<2x4xf32, "cpu">
  %e = fx.call_function "torch.functional.einsum"("bd->db", %h) : tensor<4x2xf32, "cpu">
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %h is viewed or observed before the write (by 'torch.functional.einsum')}}
  %m = fx.call_method "mul_"(%h, 0.5) : tensor<2x4xf32, "cpu">
  fx.output (%e, %m)
}

// -----

// A module call returns fresh storage when the importer ran the module on
// fake tensors and recorded `fresh_result`; without it (hand-written IR, a
// module with hooks, a class not torch's own) the call may return anything.

// CHECK-LABEL: fx.graph @modules
// CHECK:         %r = fx.call_function "torch.nn.functional.relu"(%l)
// CHECK:         %k = fx.call_module "act2"(%u)
fx.graph @modules {
  %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
  %l = fx.call_module "lin"(%x) {module_type = "torch.nn.modules.linear.Linear", module_attrs = {in_features = 4 : i64, out_features = 4 : i64}, fresh_result, effect_free} : tensor<2x4xf32, "cpu">
  %r = fx.call_module "act"(%l) {module_type = "torch.nn.modules.activation.ReLU", module_attrs = {inplace = true}} : tensor<2x4xf32, "cpu">
  %u = fx.call_module "lin2"(%x) {module_type = "torch.nn.modules.linear.Linear", module_attrs = {in_features = 4 : i64, out_features = 4 : i64}} : tensor<2x4xf32, "cpu">
  // expected-remark@+1 {{maximize-value-semantics: kept in place: %u may share storage with another tensor: it is made by 'lin2', which has side effects}}
  %k = fx.call_module "act2"(%u) {module_type = "torch.nn.modules.activation.ReLU", module_attrs = {inplace = true}} : tensor<2x4xf32, "cpu">
  fx.output (%r, %k)
}
