// RUN: optimus-opt %s -p raise-fx --split-input-file | filecheck %s

// Every spelling of softmax/log_softmax that torch.fx.symbolic_trace, Dynamo
// and torch.export record becomes torch.softmax / torch.log_softmax with a
// non-negative dim (and the dtype when given); torch.where with a tensor or
// scalar other and every masked_fill spelling raise too. Left alone: an
// implicit dim (F.softmax(x) without dim), the half_to_float fast path,
// where with a scalar input, and a masked_fill whose value is a tensor.

// CHECK-LABEL: fx.graph @spellings
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %m = fx.placeholder "m"
// CHECK-NEXT:    %v = fx.placeholder "v"
// CHECK-NEXT:    %s0 = torch.softmax %x dim 1 : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %s1 = torch.softmax %x dim 1 :
// CHECK-NEXT:    %s2 = torch.softmax %x dim 0 :
// CHECK-NEXT:    %s3 = torch.softmax %x dim 1 dtype f64 : tensor<2x8xf32> -> tensor<2x8xf64>
// CHECK-NEXT:    %s4 = torch.softmax %x dim 1 :
// CHECK-NEXT:    %s5 = torch.softmax %x dim 1 :
// CHECK-NEXT:    %s6 = torch.softmax %x dim 1 :
// CHECK-NEXT:    %s7 = torch.softmax %x dim 0 :
// CHECK-NEXT:    %s8 = torch.softmax %x dim 1 :
// CHECK-NEXT:    %l0 = torch.log_softmax %x dim 1 :
// CHECK-NEXT:    %l1 = torch.log_softmax %x dim 1 dtype f64 :
// CHECK-NEXT:    %l2 = torch.log_softmax %x dim 0 :
// CHECK-NEXT:    %l3 = torch.log_softmax %x dim 1 :
// CHECK-NEXT:    %l4 = torch.log_softmax %x dim 1 :
// CHECK-NEXT:    %l5 = torch.log_softmax %x dim 1 :
// CHECK-NEXT:    %w0 = torch.where %m, %x scalar 0.0 : tensor<2x8xi1>, tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %w1 = torch.where %m, %x, %s0 : tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %w2 = torch.where %m, %x scalar 2 :
// CHECK-NEXT:    %w3 = torch.where %m, %x scalar 0.5 :
// CHECK-NEXT:    %w4 = torch.where %m, %x, %s1 :
// CHECK-NEXT:    %f0 = torch.masked_fill %x, %m value -inf :
// CHECK-NEXT:    %f1 = torch.masked_fill %x, %m value 1.0 :
// CHECK-NEXT:    %f2 = torch.masked_fill %x, %m value 0 :
// CHECK-NEXT:    %k0 = fx.call_function "torch.nn.functional.softmax"(%x, dim = none, _stacklevel = 3, dtype = none)
// CHECK-NEXT:    %k1 = fx.call_function "torch.ops.aten._softmax.default"(%x, 1, true)
// CHECK-NEXT:    %k2 = fx.call_function "torch.ops.aten.where.ScalarSelf"(%m, 1.0, %x)
// CHECK-NEXT:    %k3 = fx.call_method "masked_fill"(%x, %m, %v)
fx.graph @spellings {
  %x = fx.placeholder "x" : tensor<2x8xf32>
  %m = fx.placeholder "m" : tensor<2x8xi1>
  %v = fx.placeholder "v" : tensor<f32>
  %s0 = fx.call_function "torch.softmax"(%x, -1) : tensor<2x8xf32>
  %s1 = fx.call_function "torch.nn.functional.softmax"(%x, dim = -1, _stacklevel = 3, dtype = none) : tensor<2x8xf32>
  %s2 = fx.call_method "softmax"(%x, 0) : tensor<2x8xf32>
  %s3 = fx.call_function "torch.softmax"(%x, dim = 1, dtype = #fx.dtype<f64>) : tensor<2x8xf64>
  %s4 = fx.call_function "torch.nn.functional.softmax"(%x, -1, _stacklevel = 5) : tensor<2x8xf32>
  %s5 = fx.call_module "sm"(%x) {module_type = "torch.nn.modules.activation.Softmax", module_attrs = {training = false, dim = #builtin.int<-1>}} : tensor<2x8xf32>
  %s6 = fx.call_function "torch.ops.aten._softmax.default"(%x, 1, false) : tensor<2x8xf32>
  %s7 = fx.call_function "torch.ops.aten.softmax.int"(%x, 0) : tensor<2x8xf32>
  %s8 = fx.call_function "torch._C._special.special_softmax"(%x, 1) : tensor<2x8xf32>
  %l0 = fx.call_function "torch.log_softmax"(%x, 1) : tensor<2x8xf32>
  %l1 = fx.call_function "torch.nn.functional.log_softmax"(%x, dim = 1, _stacklevel = 3, dtype = #fx.dtype<f64>) : tensor<2x8xf64>
  %l2 = fx.call_method "log_softmax"(%x, dim = -2) : tensor<2x8xf32>
  %l3 = fx.call_module "lsm"(%x) {module_type = "torch.nn.modules.activation.LogSoftmax", module_attrs = {training = false, dim = #builtin.int<1>}} : tensor<2x8xf32>
  %l4 = fx.call_function "torch.ops.aten._log_softmax.default"(%x, -1, false) : tensor<2x8xf32>
  %l5 = fx.call_function "torch.ops.aten.log_softmax.int"(%x, 1) : tensor<2x8xf32>
  %w0 = fx.call_function "torch.where"(%m, %x, 0.0) : tensor<2x8xf32>
  %w1 = fx.call_function "torch.where"(%m, %x, %s0) : tensor<2x8xf32>
  %w2 = fx.call_function "torch.ops.aten.where.ScalarOther"(%m, %x, 2) : tensor<2x8xf32>
  %w3 = fx.call_method "where"(%x, %m, 0.5) : tensor<2x8xf32>
  %w4 = fx.call_function "torch.ops.aten.where.self"(%m, %x, %s1) : tensor<2x8xf32>
  %f0 = fx.call_method "masked_fill"(%x, %m, -inf) : tensor<2x8xf32>
  %f1 = fx.call_function "torch.masked_fill"(%x, %m, 1.0) : tensor<2x8xf32>
  %f2 = fx.call_function "torch.ops.aten.masked_fill.Scalar"(%x, %m, 0) : tensor<2x8xf32>
  %k0 = fx.call_function "torch.nn.functional.softmax"(%x, dim = none, _stacklevel = 3, dtype = none) : tensor<2x8xf32>
  %k1 = fx.call_function "torch.ops.aten._softmax.default"(%x, 1, true) : tensor<2x8xf32>
  %k2 = fx.call_function "torch.ops.aten.where.ScalarSelf"(%m, 1.0, %x) : tensor<2x8xf32>
  %k3 = fx.call_method "masked_fill"(%x, %m, %v) : tensor<2x8xf32>
  fx.output (%s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7, %s8, %l0, %l1, %l2, %l3, %l4, %l5, %w0, %w1, %w2, %w3, %w4, %f0, %f1, %f2, %k0, %k1, %k2, %k3)
}

// -----

// A deprecated uint8 condition (torch.where still takes it) is left alone:
// the dialect's where takes a boolean condition.
// CHECK-LABEL: fx.graph @uint8_condition
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %m = fx.placeholder "m"
// CHECK-NEXT:    %w = fx.call_function "torch.where"(%m, %x, 0.0)
fx.graph @uint8_condition {
  %x = fx.placeholder "x" : tensor<2x8xf32>
  %m = fx.placeholder "m" : tensor<2x8xui8>
  %w = fx.call_function "torch.where"(%m, %x, 0.0) : tensor<2x8xf32>
  fx.output %w
}
