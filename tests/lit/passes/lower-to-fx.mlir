// RUN: optimus-opt %s -p lower-to-fx --split-input-file | filecheck %s

// Multi-result ops become one call returning a tuple and a getitem per used result.

// CHECK-LABEL: fx.graph @split_unbind
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[T0:[0-9]+]] = fx.call_function "torch.split_with_sizes"(%x, [4, 4, 4], 1)
// CHECK-NEXT:    %a = fx.call_function "_operator.getitem"(%[[T0]], 0)
// CHECK-NEXT:    %b = fx.call_function "_operator.getitem"(%[[T0]], 2)
// CHECK-NEXT:    %[[T1:[0-9]+]] = fx.call_function "torch.unbind"(%x, 0)
// CHECK-NEXT:    %r3 = fx.call_function "_operator.getitem"(%[[T1]], 3)
// CHECK-NEXT:    fx.output (%a, %b, %r3)
fx.graph @split_unbind {
  %x = fx.placeholder "x" : tensor<4x12xf32>
  %a, %unused, %b = torch.split %x sections [4, 4, 4] dim 1 : tensor<4x12xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  %r0, %r1, %r2, %r3 = torch.unbind %x dim 0 : tensor<4x12xf32> -> tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>
  fx.output (%a, %b, %r3)
}

// -----

// CHECK-LABEL: fx.graph @linalg
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %w = fx.get_attr "w"
// CHECK-NEXT:    %b = fx.get_attr "b"
// CHECK-NEXT:    %wt = fx.get_attr "wt"
// CHECK-NEXT:    %bx = fx.placeholder "bx"
// CHECK-NEXT:    %by = fx.placeholder "by"
// CHECK-NEXT:    %l0 = fx.call_function "torch._C._nn.linear"(%x, %w, %b)
// CHECK-NEXT:    %l1 = fx.call_function "torch._C._nn.linear"(%x, %w)
// CHECK-NEXT:    %m = fx.call_function "torch.mm"(%x, %wt)
// CHECK-NEXT:    %am = fx.call_function "torch.addmm"(%b, %x, %wt, beta = 0.5)
// CHECK-NEXT:    %bm = fx.call_function "torch.bmm"(%bx, %by)
// CHECK-NEXT:    %mm = fx.call_function "torch.matmul"(%bx, %wt)
// CHECK-NEXT:    %n = fx.call_function "torch.nn.functional.layer_norm"(%l0, [3], %b, none, 1.0e-06)
// A layer norm without affine parameters: the helper that takes the CPU
// kernel's faster path (a weight of ones, the same values); with a bias and
// no weight F.layer_norm itself (the two paths round differently).
// CHECK-NEXT:    %n2 = fx.call_function "optimus_ir.kernels.norms.layer_norm"(%l0, [3], none, none, 1.0e-05)
// CHECK-NEXT:    %n3 = fx.call_function "torch.nn.functional.layer_norm"(%l0, [3], none, %b, 1.0e-05)
// Over a batched layer norm's stacked members (lower-batch marks it): the
// faster path under autograd too.
// CHECK-NEXT:    %n4 = fx.call_function "optimus_ir.kernels.norms.stacked_layer_norm"(%l0, [3], none, none, 1.0e-05)
// CHECK-NEXT:    fx.output (%l1, %m, %am, %bm, %mm, %n, %n2, %n3, %n4)
fx.graph @linalg {
  %x = fx.placeholder "x" : tensor<2x4xf32>
  %w = fx.get_attr "w" : tensor<3x4xf32>
  %b = fx.get_attr "b" : tensor<3xf32>
  %wt = fx.get_attr "wt" : tensor<4x3xf32>
  %bx = fx.placeholder "bx" : tensor<2x2x4xf32>
  %by = fx.placeholder "by" : tensor<2x4x3xf32>
  %l0 = torch.linear %x, %w, %b : tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %l1 = torch.linear %x, %w : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  %m = torch.mm %x, %wt : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %am = torch.addmm %b, %x, %wt beta 0.5 : tensor<3xf32>, tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %bm = torch.bmm %bx, %by : tensor<2x2x4xf32>, tensor<2x4x3xf32> -> tensor<2x2x3xf32>
  %mm = torch.matmul %bx, %wt : tensor<2x2x4xf32>, tensor<4x3xf32> -> tensor<2x2x3xf32>
  %n = torch.layer_norm %l0 normalized_shape [3] weight %b eps 1.0e-06 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %n2 = torch.layer_norm %l0 normalized_shape [3] : tensor<2x3xf32> -> tensor<2x3xf32>
  %n3 = torch.layer_norm %l0 normalized_shape [3] bias %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %n4 = torch.layer_norm %l0 normalized_shape [3] {optimus.stacked} : tensor<2x3xf32> -> tensor<2x3xf32>
  fx.output (%l1, %m, %am, %bm, %mm, %n, %n2, %n3, %n4)
}

// -----

// CHECK-LABEL: fx.graph @pointwise
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %a = fx.call_function "_operator.add"(2.0, %x)
// CHECK-NEXT:    %b = fx.call_function "torch.add"(%x, %y, alpha = 2)
// CHECK-NEXT:    %c = fx.call_function "torch.rsub"(%x, 1)
// CHECK-NEXT:    %d = fx.call_function "torch.div"(%x, %y)
// CHECK-NEXT:    %e = fx.call_function "torch.div"(%x, 3, rounding_mode = "floor")
// CHECK-NEXT:    %e2 = fx.call_function "_operator.truediv"(3, %x)
// CHECK-NEXT:    %e3 = fx.call_function "_operator.mul"(3, %x)
// CHECK-NEXT:    %f = fx.call_function "torch.relu"(%x)
// CHECK-NEXT:    %g = fx.call_function "torch._C._nn.gelu"(%x, approximate = "tanh")
// CHECK-NEXT:    %h = fx.call_function "torch.nn.functional.silu"(%x)
// CHECK-NEXT:    %i = fx.call_function "torch.clamp"(%x, min = -0.5)
// CHECK-NEXT:    %j = fx.call_function "torch.nn.functional.dropout"(%x, p = 0.25, training = false)
// CHECK-NEXT:    %j2 = fx.call_function "torch.nn.functional.dropout"(%x, p = 0.25, training = true)
// CHECK-NEXT:    %k = fx.call_function "torch.nan_to_num"(%x, posinf = 1.0)
// CHECK-NEXT:    %l = fx.call_function "torch.sum"(%x, [1], true)
// CHECK-NEXT:    %m = fx.call_function "torch.mean"(%x)
// CHECK-NEXT:    %s = fx.call_function "torch.sum"(%x, dtype = #fx.dtype<f64>)
// CHECK-NEXT:    fx.output (%a, %b, %c, %d, %e, %e2, %e3, %f, %g, %h, %i, %j, %j2, %k, %l, %m, %s)
fx.graph @pointwise {
  %x = fx.placeholder "x" : tensor<2x3xf32>
  %y = fx.placeholder "y" : tensor<2x3xf32>
  %a = torch.add %x scalar 2.0 reverse : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = torch.add %x, %y alpha 2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %c = torch.sub %x scalar 1 reverse : tensor<2x3xf32> -> tensor<2x3xf32>
  %d = torch.div %x, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %e = torch.div %x scalar 3 rounding_mode "floor" : tensor<2x3xf32> -> tensor<2x3xf32>
  %e2 = torch.div %x scalar 3 reverse : tensor<2x3xf32> -> tensor<2x3xf32>
  %e3 = torch.mul %x scalar 3 reverse : tensor<2x3xf32> -> tensor<2x3xf32>
  %f = torch.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %g = torch.gelu %x approximate "tanh" : tensor<2x3xf32> -> tensor<2x3xf32>
  %h = torch.silu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %i = torch.clamp %x min -0.5 : tensor<2x3xf32> -> tensor<2x3xf32>
  %j = torch.dropout %x p 0.25 : tensor<2x3xf32> -> tensor<2x3xf32>
  %j2 = torch.dropout %x p 0.25 train : tensor<2x3xf32> -> tensor<2x3xf32>
  %k = torch.nan_to_num %x posinf 1.0 : tensor<2x3xf32> -> tensor<2x3xf32>
  %l = torch.sum %x dims [1] keepdim : tensor<2x3xf32> -> tensor<2x1xf32>
  %m = torch.mean %x : tensor<2x3xf32> -> tensor<f32>
  %s = torch.sum %x dtype f64 : tensor<2x3xf32> -> tensor<f64>
  fx.output (%a, %b, %c, %d, %e, %e2, %e3, %f, %g, %h, %i, %j, %j2, %k, %l, %m, %s)
}

// -----

// CHECK-LABEL: fx.graph @shape_ops
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = fx.call_function "torch.unsqueeze"(%x, 3)
// CHECK-NEXT:    %b = fx.call_function "torch.squeeze"(%x, 1)
// CHECK-NEXT:    %c = fx.call_function "torch.transpose"(%x, 0, 2)
// CHECK-NEXT:    %d = fx.call_function "torch.permute"(%x, [2, 1, 0])
// CHECK-NEXT:    %e = fx.call_function "torch.Tensor.view"(%x, [2, -1])
// CHECK-NEXT:    %f = fx.call_function "torch.reshape"(%x, [12])
// CHECK-NEXT:    %g = fx.call_function "torch.flatten"(%x, 1, 2)
// CHECK-NEXT:    %h = fx.call_function "_operator.getitem"(%x, (slice(none, none, none), slice(none, none, none), slice(2, 6, 1)))
// CHECK-NEXT:    %i = fx.call_function "torch.select"(%x, 2, 5)
// CHECK-NEXT:    %k = fx.call_function "torch.cat"([%x, %x], 2)
// CHECK-NEXT:    %l = fx.call_function "torch.stack"([%x, %x], 3)
// CHECK-NEXT:    %m = fx.call_function "torch.unflatten"(%x, 2, [2, 3])
// CHECK-NEXT:    %n = fx.call_function "torch.movedim"(%x, [2], [0])
// CHECK-NEXT:    fx.output (%a, %b, %c, %d, %e, %f, %g, %h, %i, %k, %l, %m, %n)
fx.graph @shape_ops {
  %x = fx.placeholder "x" : tensor<2x1x6xf32>
  %a = torch.unsqueeze %x dim 3 : tensor<2x1x6xf32> -> tensor<2x1x6x1xf32>
  %b = torch.squeeze %x dims [1] : tensor<2x1x6xf32> -> tensor<2x6xf32>
  %c = torch.transpose %x dim0 0 dim1 2 : tensor<2x1x6xf32> -> tensor<6x1x2xf32>
  %d = torch.permute %x dims [2, 1, 0] : tensor<2x1x6xf32> -> tensor<6x1x2xf32>
  %e = torch.view %x shape [2, -1] : tensor<2x1x6xf32> -> tensor<2x6xf32>
  %f = torch.reshape %x shape [12] : tensor<2x1x6xf32> -> tensor<12xf32>
  %g = torch.flatten %x start_dim 1 end_dim 2 : tensor<2x1x6xf32> -> tensor<2x6xf32>
  %h = torch.slice %x dim 2 start 2 end 6 : tensor<2x1x6xf32> -> tensor<2x1x4xf32>
  %i = torch.select %x dim 2 index 5 : tensor<2x1x6xf32> -> tensor<2x1xf32>
  %k = torch.cat %x, %x dim 2 : tensor<2x1x6xf32>, tensor<2x1x6xf32> -> tensor<2x1x12xf32>
  %l = torch.stack %x, %x dim 3 : tensor<2x1x6xf32>, tensor<2x1x6xf32> -> tensor<2x1x6x2xf32>
  %m = torch.unflatten %x dim 2 sizes [2, 3] : tensor<2x1x6xf32> -> tensor<2x1x2x3xf32>
  %n = torch.movedim %x source [2] destination [0] : tensor<2x1x6xf32> -> tensor<6x2x1xf32>
  fx.output (%a, %b, %c, %d, %e, %f, %g, %h, %i, %k, %l, %m, %n)
}

// -----

// A chain of select/slice views whose links nobody else reads is one getitem
// (raise-fx splits `x[0, ..., 4]` into a select per index), placed where the
// chain starts; a second slice of a dim already sliced starts a new getitem,
// and a link read twice, returned or alone stays its own op.

// CHECK-LABEL: fx.graph @index_chains
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = fx.call_function "_operator.getitem"(%x, (0, slice(none, none, none), 4))
// CHECK-NEXT:    %c = fx.call_function "_operator.getitem"(%x, (1, slice(2, 4, 1), slice(1, 2, 1)))
// CHECK-NEXT:    %d0 = fx.call_function "_operator.getitem"(%x, (slice(none, none, none), slice(1, 5, 1)))
// CHECK-NEXT:    %d = fx.call_function "_operator.getitem"(%d0, (slice(none, none, none), slice(1, 2, 1)))
// CHECK-NEXT:    %e0 = fx.call_function "torch.select"(%x, 0, 2)
// CHECK-NEXT:    %e1 = fx.call_function "torch.select"(%e0, 0, 1)
// CHECK-NEXT:    %e2 = fx.call_function "torch.select"(%e0, 0, 3)
// CHECK-NEXT:    %w = fx.call_function "torch.select"(%x, 0, 3)
// CHECK-NEXT:    fx.call_method "add_"(%w, 1.0)
// CHECK-NEXT:    %r = fx.call_function "torch.select"(%w, 1, 0)
// CHECK-NEXT:    fx.output (%a, %c, %d, %e1, %e2, %r)
fx.graph @index_chains {
  %x = fx.placeholder "x" : tensor<4x6x5xf32>
  %a0 = torch.select %x dim 0 index 0 : tensor<4x6x5xf32> -> tensor<6x5xf32>
  %a = torch.select %a0 dim 1 index 4 : tensor<6x5xf32> -> tensor<6xf32>
  %c0 = torch.select %x dim 0 index 1 : tensor<4x6x5xf32> -> tensor<6x5xf32>
  %c1 = torch.slice %c0 dim 0 start 2 end 4 : tensor<6x5xf32> -> tensor<2x5xf32>
  %c = torch.slice %c1 dim 1 start 1 end 2 : tensor<2x5xf32> -> tensor<2x1xf32>
  %d0 = torch.slice %x dim 1 start 1 end 5 : tensor<4x6x5xf32> -> tensor<4x4x5xf32>
  %d = torch.slice %d0 dim 1 start 1 end 2 : tensor<4x4x5xf32> -> tensor<4x1x5xf32>
  %e0 = torch.select %x dim 0 index 2 : tensor<4x6x5xf32> -> tensor<6x5xf32>
  %e1 = torch.select %e0 dim 0 index 1 : tensor<6x5xf32> -> tensor<5xf32>
  %e2 = torch.select %e0 dim 0 index 3 : tensor<6x5xf32> -> tensor<5xf32>
  %w = torch.select %x dim 0 index 3 : tensor<4x6x5xf32> -> tensor<6x5xf32>
  %u = fx.call_method "add_"(%w, 1.0) : !fx.value
  %r = torch.select %w dim 1 index 0 : tensor<6x5xf32> -> tensor<6xf32>
  fx.output (%a, %c, %d, %e1, %e2, %r)
}
