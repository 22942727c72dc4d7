builtin.module {
  fx.graph @forward {
    %l_x_ = fx.placeholder "arg0" : tensor<4x32xf32, "cpu">
    %split = fx.call_function "torch.functional.split"(%l_x_, 8, dim = 1) : tuple<tensor<4x8xf32, "cpu">, tensor<4x8xf32, "cpu">, tensor<4x8xf32, "cpu">, tensor<4x8xf32, "cpu">>
    %p = fx.call_function "_operator.getitem"(%split, 0) : tensor<4x8xf32, "cpu">
    %p.1 = fx.call_function "_operator.getitem"(%split, 1) : tensor<4x8xf32, "cpu">
    %p.2 = fx.call_function "_operator.getitem"(%split, 2) : tensor<4x8xf32, "cpu">
    %p.3 = fx.call_function "_operator.getitem"(%split, 3) : tensor<4x8xf32, "cpu">
    %tanh = fx.call_function "torch.tanh"(%p) : tensor<4x8xf32, "cpu">
    %tanh.1 = fx.call_function "torch.tanh"(%p.1) : tensor<4x8xf32, "cpu">
    %tanh.2 = fx.call_function "torch.tanh"(%p.2) : tensor<4x8xf32, "cpu">
    %tanh.3 = fx.call_function "torch.tanh"(%p.3) : tensor<4x8xf32, "cpu">
    %joined = fx.call_function "torch.cat"([%tanh, %tanh.1, %tanh.2, %tanh.3], dim = 1) : tensor<4x32xf32, "cpu">
    %l__self___proj_weight = fx.get_attr "L__self___proj_weight" : tensor<32x32xf32, "cpu">
    %l__self___proj_bias = fx.get_attr "L__self___proj_bias" : tensor<32xf32, "cpu">
    %linear = fx.call_function "torch._C._nn.linear"(%joined, %l__self___proj_weight, %l__self___proj_bias) : tensor<4x32xf32, "cpu">
    %split.1 = fx.call_function "torch.functional.split"(%linear, [16, 16], dim = 1) : tuple<tensor<4x16xf32, "cpu">, tensor<4x16xf32, "cpu">>
    %left = fx.call_function "_operator.getitem"(%split.1, 0) : tensor<4x16xf32, "cpu">
    %right = fx.call_function "_operator.getitem"(%split.1, 1) : tensor<4x16xf32, "cpu">
    %split.2 = fx.call_function "torch.functional.split"(%left, 8, dim = 1) : tuple<tensor<4x8xf32, "cpu">, tensor<4x8xf32, "cpu">>
    %a = fx.call_function "_operator.getitem"(%split.2, 0) : tensor<4x8xf32, "cpu">
    %b = fx.call_function "_operator.getitem"(%split.2, 1) : tensor<4x8xf32, "cpu">
    %same = fx.call_function "torch.cat"([%a, %b, %right], dim = 1) : tensor<4x32xf32, "cpu">
    %stack = fx.call_function "torch.stack"((%p, %p.1, %p.2, %p.3), dim = 0) : tensor<4x4x8xf32, "cpu">
    %sum.1 = fx.call_method "sum"(%stack, 0) : tensor<4x8xf32, "cpu">
    fx.output [%same, %sum.1]
  }
}
