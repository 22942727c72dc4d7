// RUN: optimus-opt %s -p raise-fx --split-input-file | filecheck %s

// Every spelling of split becomes torch.split with explicit sections and a
// non-negative dim; the getitem users become the piece results.

// CHECK-LABEL: fx.graph @split_spellings
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a, %{{.*}}, %b = torch.split %x sections [4, 4, 4] dim 1 :
// CHECK-NEXT:    %{{.*}}, %c = torch.split %x sections [5, 7] dim 1 :
// CHECK-NEXT:    %{{.*}}, %{{.*}}, %d = torch.split %x sections [5, 5, 2] dim 1 :
// CHECK-NEXT:    %e, %{{.*}} = torch.split %x sections [1, 3] dim 0 :
// CHECK-NEXT:    %{{.*}}, %f = torch.split %x sections [2, 2] dim 0 :
// CHECK-NEXT:    %{{.*}}, %{{.*}}, %{{.*}}, %g = torch.unbind %x dim 0 :
// CHECK-NOT:     getitem
// CHECK-NEXT:    fx.output (%a, %b, %c, %d, %e, %f, %g)
fx.graph @split_spellings {
  %x = fx.placeholder "x" : tensor<4x12xf32>
  %s0 = fx.call_function "torch.functional.split"(%x, 4, dim = -1) : tuple<tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>>
  %a = fx.call_function "_operator.getitem"(%s0, 0) : tensor<4x4xf32>
  %b = fx.call_function "_operator.getitem"(%s0, -1) : tensor<4x4xf32>
  %s1 = fx.call_method "split"(%x, [5, 7], 1) : tuple<tensor<4x5xf32>, tensor<4x7xf32>>
  %c = fx.call_function "operator.getitem"(%s1, 1) : tensor<4x7xf32>
  %s2 = fx.call_function "torch.ops.aten.split.Tensor"(%x, 5, 1) : tuple<tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x2xf32>>
  %d = fx.call_function "_operator.getitem"(%s2, 2) : tensor<4x2xf32>
  %s3 = fx.call_function "torch.ops.aten.split_with_sizes.default"(%x, [1, 3], 0) : tuple<tensor<1x12xf32>, tensor<3x12xf32>>
  %e = fx.call_function "_operator.getitem"(%s3, 0) : tensor<1x12xf32>
  %s4 = fx.call_method "chunk"(%x, 2, dim = 0) : tuple<tensor<2x12xf32>, tensor<2x12xf32>>
  %f = fx.call_function "_operator.getitem"(%s4, 1) : tensor<2x12xf32>
  %s5 = fx.call_function "torch.unbind"(%x) : tuple<tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>>
  %g = fx.call_function "_operator.getitem"(%s5, 3) : tensor<12xf32>
  fx.output (%a, %b, %c, %d, %e, %f, %g)
}

// -----

// F.linear, nn.Linear (a described call_module), aten.linear and
// aten.addmm/aten.mm of a transposed weight all become torch.linear.

// CHECK-LABEL: fx.graph @linear_spellings
// CHECK:         %l0 = torch.linear %x, %w, %b :
// CHECK-NEXT:    %proj_weight = fx.get_attr "proj.weight" : tensor<3x4xf32>
// CHECK-NEXT:    %l1 = torch.linear %x, %proj_weight :
// CHECK-NEXT:    %l2 = torch.linear %x, %w :
// CHECK-NEXT:    %t = torch.transpose %w dim0 0 dim1 1 :
// CHECK-NEXT:    %l3 = torch.linear %x, %w, %b :
// CHECK-NEXT:    %l4 = torch.linear %x, %w :
// CHECK-NEXT:    %l5 = torch.addmm %b, %x, %t beta 0.5 :
// CHECK-NEXT:    fx.output (%l0, %l1, %l2, %l3, %l4, %l5)
fx.graph @linear_spellings {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %w = fx.get_attr "w" : tensor<3x4xf32>
  %b = fx.get_attr "b" : tensor<3xf32>
  %l0 = fx.call_function "torch._C._nn.linear"(%x, %w, bias = %b) : tensor<2x3xf32>
  %l1 = fx.call_module "proj"(%x) {module_type = "torch.nn.modules.linear.Linear", module_attrs = {in_features = #builtin.int<4>, out_features = #builtin.int<3>, weight = tensor<3x4xf32>, bias = #fx.none}} : tensor<2x3xf32>
  %l2 = fx.call_function "torch.ops.aten.linear.default"(%x, %w) : tensor<2x3xf32>
  %t = fx.call_function "torch.ops.aten.t.default"(%w) : tensor<4x3xf32>
  %l3 = fx.call_function "torch.ops.aten.addmm.default"(%b, %x, %t) : tensor<2x3xf32>
  %p = fx.call_function "torch.ops.aten.permute.default"(%w, [1, 0]) : tensor<4x3xf32>
  %l4 = fx.call_function "torch.ops.aten.mm.default"(%x, %p) : tensor<2x3xf32>
  %l5 = fx.call_function "torch.addmm"(%b, %x, %t, beta = 0.5) : tensor<2x3xf32>
  fx.output (%l0, %l1, %l2, %l3, %l4, %l5)
}

// -----

// layer_norm: F.layer_norm with keywords, nn.LayerNorm, and
// aten.native_layer_norm when only its output (getitem 0) is used.

// CHECK-LABEL: fx.graph @layer_norm_spellings
// CHECK:         %n0 = torch.layer_norm %x normalized_shape [8] weight %w eps 1.0e-06 :
// CHECK-NEXT:    %ln_weight = fx.get_attr "ln.weight"
// CHECK-NEXT:    %ln_bias = fx.get_attr "ln.bias"
// CHECK-NEXT:    %n1 = torch.layer_norm %x normalized_shape [8] weight %ln_weight bias %ln_bias :
// CHECK-NEXT:    %n2 = torch.layer_norm %x normalized_shape [8] weight %w :
// CHECK-NEXT:    %kl = fx.call_function "torch.ops.aten.native_layer_norm.default"
// CHECK-NEXT:    %n3 = fx.call_function "_operator.getitem"(%kl, 0)
// CHECK-NEXT:    %mean = fx.call_function "_operator.getitem"(%kl, 1)
fx.graph @layer_norm_spellings {
  %x = fx.placeholder "x" : tensor<2x8xf32>
  %w = fx.get_attr "w" : tensor<8xf32>
  %n0 = fx.call_function "torch.nn.functional.layer_norm"(%x, (8,), weight = %w, eps = 1.0e-06) : tensor<2x8xf32>
  %n1 = fx.call_module "ln"(%x) {module_type = "torch.nn.modules.normalization.LayerNorm", module_attrs = {normalized_shape = [#builtin.int<8>], eps = 1.0e-05 : f64, weight = tensor<8xf32>, bias = tensor<8xf32>}} : tensor<2x8xf32>
  %nl = fx.call_function "torch.ops.aten.native_layer_norm.default"(%x, [8], %w, none, 1.0e-05) : tuple<tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>>
  %n2 = fx.call_function "_operator.getitem"(%nl, 0) : tensor<2x8xf32>
  %kl = fx.call_function "torch.ops.aten.native_layer_norm.default"(%x, [8], none, none, 1.0e-05) : tuple<tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>>
  %n3 = fx.call_function "_operator.getitem"(%kl, 0) : tensor<2x8xf32>
  %mean = fx.call_function "_operator.getitem"(%kl, 1) : tensor<2x1xf32>
  fx.output (%n0, %n1, %n2, %n3, %mean)
}

// -----

// Pointwise ops in their function, method, operator and ATen spellings.

// CHECK-LABEL: fx.graph @pointwise
// CHECK:         %a = torch.add %x scalar 2.0 reverse :
// CHECK-NEXT:    %b = torch.add %x, %y alpha 2 :
// CHECK-NEXT:    %c = torch.sub %x scalar 1 reverse :
// CHECK-NEXT:    %d = torch.div %x, %y :
// CHECK-NEXT:    %e = torch.div %x scalar 3 rounding_mode "floor" :
// CHECK-NEXT:    %f = torch.relu %x :
// CHECK-NEXT:    %g = torch.gelu %x approximate "tanh" :
// CHECK-NEXT:    %h = torch.silu %x :
// CHECK-NEXT:    %i = torch.clamp %x min -0.5 :
// CHECK-NEXT:    %j = torch.dropout %x p 0.25 :
// CHECK-NEXT:    %k = torch.neg %x :
// CHECK-NEXT:    %l = torch.sum %x dims [1] keepdim :
// CHECK-NEXT:    %m = torch.mean %x dims [0, 1] :
fx.graph @pointwise {
  %x = fx.placeholder "x" : tensor<2x3xf32>
  %y = fx.placeholder "y" : tensor<2x3xf32>
  %a = fx.call_function "_operator.add"(2.0, %x) : tensor<2x3xf32>
  %b = fx.call_function "torch.add"(%x, %y, alpha = 2) : tensor<2x3xf32>
  %c = fx.call_function "torch.ops.aten.rsub.Scalar"(%x, 1) : tensor<2x3xf32>
  %d = fx.call_function "_operator.truediv"(%x, %y) : tensor<2x3xf32>
  %e = fx.call_method "div"(%x, 3, rounding_mode = "floor") : tensor<2x3xf32>
  %f = fx.call_method "relu"(%x) : tensor<2x3xf32>
  %g = fx.call_function "torch.ops.aten.gelu.default"(%x, approximate = "tanh") : tensor<2x3xf32>
  %h = fx.call_function "torch.nn.functional.silu"(%x) : tensor<2x3xf32>
  %i = fx.call_function "torch.clamp"(%x, min = -0.5) : tensor<2x3xf32>
  %j = fx.call_function "torch.nn.functional.dropout"(%x, p = 0.25, training = false) : tensor<2x3xf32>
  %k = fx.call_function "_operator.neg"(%x) : tensor<2x3xf32>
  %l = fx.call_method "sum"(%x, -1, keepdim = true) : tensor<2x1xf32>
  %m = fx.call_function "torch.ops.aten.mean.dim"(%x, [-1, 0]) : tensor<f32>
  fx.output (%a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l, %m)
}

// -----

// Shape ops: negative dims are made non-negative using the input rank.

// CHECK-LABEL: fx.graph @shape_ops
// CHECK:         %a = torch.unsqueeze %x dim 3 :
// CHECK-NEXT:    %b = torch.squeeze %x dims [1] :
// CHECK-NEXT:    %c = torch.transpose %x dim0 0 dim1 2 :
// CHECK-NEXT:    %d = torch.permute %x dims [2, 1, 0] :
// CHECK-NEXT:    %e = torch.view %x shape [2, -1] :
// CHECK-NEXT:    %f = torch.reshape %x shape [12] :
// CHECK-NEXT:    %g = torch.flatten %x start_dim 1 end_dim 2 :
// CHECK-NEXT:    %h = torch.slice %x dim 2 start 2 end 6 :
// CHECK-NEXT:    %i = torch.select %x dim 2 index 5 :
// CHECK-NEXT:    %j = torch.slice %x dim 2 start 1 end 3 :
// CHECK-NEXT:    %k = torch.cat %x, %x dim 2 :
// CHECK-NEXT:    %l = torch.stack %x, %x dim 3 :
// CHECK-NEXT:    %m = torch.unflatten %x dim 2 sizes [2, 3] :
// CHECK-NEXT:    %n = torch.movedim %x source [2] destination [0] :
fx.graph @shape_ops {
  %x = fx.placeholder "x" : tensor<2x1x6xf32>
  %a = fx.call_method "unsqueeze"(%x, -1) : tensor<2x1x6x1xf32>
  %b = fx.call_function "torch.squeeze"(%x) : tensor<2x6xf32>
  %c = fx.call_method "transpose"(%x, -1, 0) : tensor<6x1x2xf32>
  %d = fx.call_method "permute"(%x, 2, -2, 0) : tensor<6x1x2xf32>
  %e = fx.call_method "view"(%x, 2, -1) : tensor<2x6xf32>
  %f = fx.call_function "torch.reshape"(%x, (12,)) : tensor<12xf32>
  %g = fx.call_function "torch.flatten"(%x, 1) : tensor<2x6xf32>
  %h = fx.call_function "torch.ops.aten.slice.Tensor"(%x, -1, -4, 9223372036854775807) : tensor<2x1x4xf32>
  %i = fx.call_method "select"(%x, 2, -1) : tensor<2x1xf32>
  %j = fx.call_function "torch.narrow"(%x, -1, 1, 2) : tensor<2x1x2xf32>
  %k = fx.call_function "torch.cat"([%x, %x], dim = -1) : tensor<2x1x12xf32>
  %l = fx.call_function "torch.stack"([%x, %x], -1) : tensor<2x1x6x2xf32>
  %m = fx.call_method "unflatten"(%x, -1, (2, 3)) : tensor<2x1x2x3xf32>
  %n = fx.call_function "torch.movedim"(%x, -1, 0) : tensor<6x2x1xf32>
  fx.output (%a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l, %m, %n)
}

// -----

// What must stay fx: unknown targets, in-place ops and out= calls, inplace
// activations, symbolic sizes, a split whose tuple is used whole, a module
// call without a description, a native_layer_norm whose statistics are used.

// CHECK-LABEL: fx.graph @stays_fx
// CHECK-NOT:     = torch.
// CHECK:         %u = fx.call_function "torch.cumsum"(%x, dim = -1)
// CHECK-NEXT:    %v = fx.call_method "add_"(%x, 1.0)
// CHECK-NEXT:    %w = fx.call_function "_operator.iadd"(%x, %x)
// CHECK-NEXT:    %o = fx.call_function "torch.tanh"(%x, out = %u)
// CHECK-NEXT:    %r = fx.call_function "torch.nn.functional.relu"(%x, inplace = true)
// CHECK-NEXT:    %n = fx.call_method "size"(%x, 0)
// CHECK-NEXT:    %y = fx.call_method "view"(%x, %n, -1)
// CHECK-NEXT:    %s = fx.call_function "torch.functional.split"(%x, 3, 1)
// CHECK-NEXT:    %c = fx.call_function "torch.cat"(%s, 1)
// CHECK-NEXT:    %m = fx.call_module "act"(%x)
// CHECK-NEXT:    %q = fx.call_module "act2"(%x)
// CHECK-NEXT:    fx.output
fx.graph @stays_fx {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %u = fx.call_function "torch.cumsum"(%x, dim = -1) : tensor<4x6xf32>
  %v = fx.call_method "add_"(%x, 1.0) : tensor<4x6xf32>
  %w = fx.call_function "_operator.iadd"(%x, %x) : tensor<4x6xf32>
  %o = fx.call_function "torch.tanh"(%x, out = %u) : tensor<4x6xf32>
  %r = fx.call_function "torch.nn.functional.relu"(%x, inplace = true) : tensor<4x6xf32>
  %n = fx.call_method "size"(%x, 0) : !fx.value
  %y = fx.call_method "view"(%x, %n, -1) : tensor<4x6xf32>
  %s = fx.call_function "torch.functional.split"(%x, 3, 1) : tuple<tensor<4x3xf32>, tensor<4x3xf32>>
  %c = fx.call_function "torch.cat"(%s, 1) : tensor<4x6xf32>
  %m = fx.call_module "act"(%x) {module_type = "torch.nn.modules.activation.ReLU"} : tensor<4x6xf32>
  %q = fx.call_module "act2"(%x) {module_type = "torch.nn.modules.activation.ReLU", module_attrs = {inplace = true}} : tensor<4x6xf32>
  fx.output (%u, %v, %w, %o, %r, %y, %c, %m, %q, %s)
}

// -----

// Basic indexing (ints, slices, None, one Ellipsis) becomes a select / slice /
// unsqueeze chain; a no-op index and tensor indices stay fx.

// CHECK-LABEL: fx.graph @getitem_indexing
// CHECK:         %a = torch.slice %x dim 1 start 1 end 3 :
// CHECK-NEXT:    %[[U:[0-9]+]] = torch.unsqueeze %x dim 2 :
// CHECK-NEXT:    %b = torch.select %[[U]] dim 3 index 11 :
// CHECK-NEXT:    %c = torch.select %x dim 0 index 0 :
// CHECK-NEXT:    %d = fx.call_function "_operator.getitem"(%x, slice(none, none, none))
// CHECK-NEXT:    %e = fx.call_function "_operator.getitem"(%x, %idx)
fx.graph @getitem_indexing {
  %x = fx.placeholder "x" : tensor<4x5x12xf32>
  %idx = fx.placeholder "idx" : tensor<3xi64>
  %a = fx.call_function "_operator.getitem"(%x, (slice(none, none, none), slice(1, 3, none))) : tensor<4x2x12xf32>
  %b = fx.call_function "_operator.getitem"(%x, (#fx.object<"builtins.Ellipsis">, none, -1)) : tensor<4x5x1xf32>
  %c = fx.call_function "_operator.getitem"(%x, 0) : tensor<5x12xf32>
  %d = fx.call_function "_operator.getitem"(%x, slice(none, none, none)) : tensor<4x5x12xf32>
  %e = fx.call_function "_operator.getitem"(%x, %idx) : tensor<3x5x12xf32>
  fx.output (%a, %b, %c, %d, %e)
}
