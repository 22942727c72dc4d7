// RUN: optimus-opt %s -p 'lower-batch{kernels=triton}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'lower-batch{kernels=torch}' --split-input-file | filecheck %s --check-prefix=TORCH
// RUN: optimus-opt %s -p lower-batch --split-input-file | filecheck %s --check-prefix=AUTO

// Towers: the packed members are passed as they are (split pieces and
// parameters, no stack); a stack that is not a pack (%g) is unbound; the
// layer norm takes the tanh that consumes it; the unpack and the cat read
// the getitems.
// CHECK-LABEL: fx.graph @towers
// CHECK:         %y_kernel = fx.call_function "torch.ops.optimus.grouped_linear.default"([%p0, %p1], [%w0, %w1], [%b0, %b1], "none")
// CHECK-NEXT:    %y.0 = fx.call_function "_operator.getitem"(%y_kernel, 0) : tensor<4x8xf32>
// CHECK-NEXT:    %y.1 = fx.call_function "_operator.getitem"(%y_kernel, 1) : tensor<4x8xf32>
// CHECK-NEXT:    %[[G0:.*]], %[[G1:.*]] = torch.unbind %g dim 0
// CHECK-NEXT:    %n_kernel = fx.call_function "torch.ops.optimus.batched_layer_norm.default"([%y.0, %y.1], [%[[G0]], %[[G1]]], [none, none], 1.0e-05, "tanh")
// CHECK:         %r = torch.cat %n.0, %n.1 dim 1
// CHECK-NOT:     torch.stack
// CHECK-NOT:     torch.tanh
// TORCH-LABEL: fx.graph @towers
// TORCH-NOT:     torch.ops.optimus
// TORCH:         torch.baddbmm
// AUTO-LABEL:  fx.graph @towers
// AUTO-NOT:      torch.ops.optimus
// AUTO:          torch.baddbmm
fx.graph @towers {
  %x = fx.placeholder "x" : tensor<4x32xf32>
  %p0, %p1 = torch.split %x sections [16, 16] dim 1 : tensor<4x32xf32> -> tensor<4x16xf32>, tensor<4x16xf32>
  %w0 = fx.get_attr "w0" : tensor<8x16xf32>
  %w1 = fx.get_attr "w1" : tensor<8x16xf32>
  %b0 = fx.get_attr "b0" : tensor<8xf32>
  %b1 = fx.get_attr "b1" : tensor<8xf32>
  %g = fx.get_attr "g" : tensor<2x8xf32>
  %s = batch.pack %p0, %p1 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<2x4x16xf32>
  %w = batch.pack %w0, %w1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
  %b = batch.pack %b0, %b1 : tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %y = batch.linear %s, %w bias %b : tensor<2x4x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
  %n = batch.layer_norm %y normalized_shape [8] weight %g : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
  %t = batch.pointwise %n fn "torch.tanh" stacked [true] fn_properties {} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %a, %c = batch.unpack %t : tensor<2x4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %r = torch.cat %a, %c dim 1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  fx.output %r
}

// -----

// Different activations on disjoint members: one layer norm each.
// CHECK-LABEL: fx.graph @two_activations
// CHECK:         fx.call_function "torch.ops.optimus.batched_layer_norm.default"([%x0, %x2], [none, none], [none, none], 1.0e-05, "gelu_tanh")
// CHECK:         fx.call_function "torch.ops.optimus.batched_layer_norm.default"([%x1, %x3], [none, none], [none, none], 1.0e-05, "relu")
// CHECK-NOT:     torch.gelu
// CHECK-NOT:     torch.relu
fx.graph @two_activations {
  %x0 = fx.placeholder "x0" : tensor<4x8xbf16>
  %x1 = fx.placeholder "x1" : tensor<4x8xbf16>
  %x2 = fx.placeholder "x2" : tensor<4x8xbf16>
  %x3 = fx.placeholder "x3" : tensor<4x8xbf16>
  %s = batch.pack %x0, %x1, %x2, %x3 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x4x8xbf16>
  %n = batch.layer_norm %s normalized_shape [8] : tensor<4x4x8xbf16> -> tensor<4x4x8xbf16>
  %even = torch.slice %n dim 0 start 0 end 4 step 2 : tensor<4x4x8xbf16> -> tensor<2x4x8xbf16>
  %odd = torch.slice %n dim 0 start 1 end 4 step 2 : tensor<4x4x8xbf16> -> tensor<2x4x8xbf16>
  %u = batch.pointwise %even fn "torch.gelu" stacked [true] fn_properties {"approximate": "tanh"} : tensor<2x4x8xbf16> -> tensor<2x4x8xbf16>
  %v = batch.pointwise %odd fn "torch.relu" stacked [true] fn_properties {} : tensor<2x4x8xbf16> -> tensor<2x4x8xbf16>
  fx.output (%u, %v)
}

// -----

// What stays torch: add with alpha != 1 (the program grammar has no alpha)
// and fp64 members (no kernel takes them). A shared 1-D operand is every
// member's other.
// CHECK-LABEL: fx.graph @torch_left
// CHECK:         %[[X:.*]], %[[Y:.*]], %[[Z:.*]] = torch.unbind %x dim 0
// CHECK-NEXT:    %k_kernel = fx.call_function "torch.ops.optimus.multi_pointwise.default"([%[[X]], %[[Y]], %[[Z]]], [%o, %o, %o], "add(other)")
// CHECK:         %k = torch.stack %k.0, %k.1, %k.2 dim 0
// CHECK-NEXT:    %a = torch.add %k, %o alpha 2
// CHECK-NEXT:    %e = torch.exp %d
fx.graph @torch_left {
  %x = fx.placeholder "x" : tensor<3x4x8xf32>
  %o = fx.placeholder "o" : tensor<8xf32>
  %d = fx.placeholder "d" : tensor<3x4x8xf64>
  %k = batch.pointwise %x, %o fn "torch.add" stacked [true, false] fn_properties {"alpha": 1} : tensor<3x4x8xf32>, tensor<8xf32> -> tensor<3x4x8xf32>
  %a = batch.pointwise %k, %o fn "torch.add" stacked [true, false] fn_properties {"alpha": 2} : tensor<3x4x8xf32>, tensor<8xf32> -> tensor<3x4x8xf32>
  %e = batch.pointwise %d fn "torch.exp" stacked [true] fn_properties {} : tensor<3x4x8xf64> -> tensor<3x4x8xf64>
  fx.output (%a, %e)
}

// -----

// kernels=auto takes the kernels for CUDA-typed tensors only.
// CHECK-LABEL: fx.graph @on_cuda
// CHECK:         torch.ops.optimus.multi_pointwise.default{{.*}}"sigmoid"
// AUTO-LABEL:  fx.graph @on_cuda
// AUTO:          torch.ops.optimus.multi_pointwise.default{{.*}}"sigmoid"
// TORCH-LABEL: fx.graph @on_cuda
// TORCH:         torch.sigmoid
fx.graph @on_cuda {
  %x = fx.placeholder "x" : tensor<2x4x8xf16, "cuda:0">
  %s = batch.pointwise %x fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<2x4x8xf16, "cuda:0"> -> tensor<2x4x8xf16, "cuda:0">
  fx.output %s
}

// -----

// A returned member is copied out of the stack by batch fusion (a cat of one
// value); a kernel's member result has storage of its own, so the copy goes
// and the result keeps the kernel's (eager's) layout. A result read by
// something else as well keeps its copy (outputs must not share storage).
// CHECK-LABEL: fx.graph @returned_members
// CHECK:         %s_kernel = fx.call_function "torch.ops.optimus.multi_pointwise.default"([%t0, %t1], [], "sigmoid")
// CHECK-NEXT:    %s.0 = fx.call_function "_operator.getitem"(%s_kernel, 0)
// CHECK-NEXT:    %s.1 = fx.call_function "_operator.getitem"(%s_kernel, 1)
// CHECK-NEXT:    %r1 = torch.cat %s.1 dim 0
// CHECK-NEXT:    %n1 = torch.neg %s.1
// CHECK-NEXT:    fx.output [%s.0, %r1, %n1]
// Lowered to torch ops, the members share the stack's storage: the first
// returned member takes it (no copy), the second keeps its copy.
// TORCH-LABEL: fx.graph @returned_members
// TORCH:         %a, %b = torch.unbind %s dim 0
// TORCH-NEXT:    %r1 = torch.cat %b dim 0
// TORCH-NEXT:    %n1 = torch.neg %b
// TORCH-NEXT:    fx.output [%a, %r1, %n1]
fx.graph @returned_members {
  %x0 = fx.placeholder "x0" : tensor<5x4xf32>
  %x1 = fx.placeholder "x1" : tensor<5x4xf32>
  %t0 = torch.transpose %x0 dim0 0 dim1 1 : tensor<5x4xf32> -> tensor<4x5xf32>
  %t1 = torch.transpose %x1 dim0 0 dim1 1 : tensor<5x4xf32> -> tensor<4x5xf32>
  %p = batch.pack %t0, %t1 : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<2x4x5xf32>
  %s = batch.pointwise %p fn "torch.sigmoid" stacked [true] fn_properties {} : tensor<2x4x5xf32> -> tensor<2x4x5xf32>
  %a, %b = batch.unpack %s : tensor<2x4x5xf32> -> tensor<4x5xf32>, tensor<4x5xf32>
  %r0 = torch.cat %a dim 0 : tensor<4x5xf32> -> tensor<4x5xf32>
  %r1 = torch.cat %b dim 0 : tensor<4x5xf32> -> tensor<4x5xf32>
  %n1 = torch.neg %b : tensor<4x5xf32> -> tensor<4x5xf32>
  fx.output [%r0, %r1, %n1]
}

// -----

// Issue 20: the program is the member op's declaration (`OpFacts.kernel`):
// log has a program step now; clamp is maximum/minimum of its bounds; a
// rounding division and nan_to_num declare none and stay torch.
// CHECK-LABEL: fx.graph @declared_programs
// CHECK:         %l_kernel = fx.call_function "torch.ops.optimus.multi_pointwise.default"({{.*}}, [], "log")
// CHECK:         %c_kernel = fx.call_function "torch.ops.optimus.multi_pointwise.default"({{.*}}, [], "maximum(-1.0);minimum(2.0)")
// CHECK:         torch.div %{{.*}}, %o rounding_mode "floor"
// CHECK:         torch.nan_to_num
// CHECK-NOT:     torch.log
// TORCH-LABEL: fx.graph @declared_programs
// TORCH:         torch.log
fx.graph @declared_programs {
  %x = fx.placeholder "x" : tensor<3x4x8xf32>
  %o = fx.placeholder "o" : tensor<8xf32>
  %l = batch.pointwise %x fn "torch.log" stacked [true] fn_properties {} : tensor<3x4x8xf32> -> tensor<3x4x8xf32>
  %c = batch.pointwise %l fn "torch.clamp" stacked [true] fn_properties {"min": -1, "max": 2.0} : tensor<3x4x8xf32> -> tensor<3x4x8xf32>
  %f = batch.pointwise %c, %o fn "torch.div" stacked [true, false] fn_properties {"rounding_mode": "floor"} : tensor<3x4x8xf32>, tensor<8xf32> -> tensor<3x4x8xf32>
  %n = batch.pointwise %f fn "torch.nan_to_num" stacked [true] fn_properties {} : tensor<3x4x8xf32> -> tensor<3x4x8xf32>
  fx.output %n
}
