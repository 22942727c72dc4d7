// RUN: optimus-opt %s -p raise-fx | filecheck %s
// RUN: optimus-opt %s -p raise-fx,lower-to-fx | filecheck %s --check-prefix=LOWER

// The unary ops are raised from the spellings their facts declare: torch
// functions, F.* and torch._C builtins, Tensor methods, described modules
// (arguments read from the module's attributes) and aten overloads; each
// argument binds to the property of the same name, torch's defaults are
// left out. relu6 is hardtanh over [0, 6]. inplace = true stays fx.

// CHECK-LABEL: fx.graph @unary_spellings
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.erf %x :
// CHECK-NEXT:    %b = torch.erf %x :
// CHECK-NEXT:    %c = torch.sqrt %x :
// CHECK-NEXT:    %d = torch.softplus %x beta 2.0 :
// CHECK-NEXT:    %e = torch.leaky_relu %x negative_slope 0.2 :
// CHECK-NEXT:    %f = torch.elu %x alpha 0.5 :
// CHECK-NEXT:    %g = torch.elu %x :
// CHECK-NEXT:    %h = torch.hardtanh %x min_val 0.0 max_val 6.0 :
// CHECK-NEXT:    %i = torch.hardtanh %x min_val 0.0 max_val 6.0 :
// CHECK-NEXT:    %j = torch.hardtanh %x min_val -2.0 max_val 2.0 :
// CHECK-NEXT:    %k = torch.mish %x :
// CHECK-NEXT:    %l = torch.expm1 %x :
// CHECK-NEXT:    %m = torch.gelu %x approximate "tanh" :
// CHECK-NEXT:    %n = fx.call_function "torch.nn.functional.hardswish"(%x, inplace = true)
// CHECK-NEXT:    %o = fx.call_module "act"(%x)
// CHECK-NEXT:    fx.output

// The declared lowering: the op's lowers_to, non-default properties as torch
// keyword arguments.
// LOWER-LABEL: fx.graph @unary_spellings
// LOWER:         %a = fx.call_function "torch.erf"(%x)
// LOWER-NEXT:    %b = fx.call_function "torch.erf"(%x)
// LOWER-NEXT:    %c = fx.call_function "torch.sqrt"(%x)
// LOWER-NEXT:    %d = fx.call_function "torch._C._nn.softplus"(%x, beta = 2.0)
// LOWER-NEXT:    %e = fx.call_function "torch.nn.functional.leaky_relu"(%x, negative_slope = 0.2)
// LOWER-NEXT:    %f = fx.call_function "torch.nn.functional.elu"(%x, alpha = 0.5)
// LOWER-NEXT:    %g = fx.call_function "torch.nn.functional.elu"(%x)
// LOWER-NEXT:    %h = fx.call_function "torch.nn.functional.hardtanh"(%x, min_val = 0.0, max_val = 6.0)
// LOWER:         %m = fx.call_function "torch._C._nn.gelu"(%x, approximate = "tanh")
fx.graph @unary_spellings {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a = fx.call_function "torch._C._special.special_erf"(%x) : tensor<4x6xf32>
  %b = fx.call_function "torch.ops.aten.erf.default"(%x) : tensor<4x6xf32>
  %c = fx.call_method "sqrt"(%x) : tensor<4x6xf32>
  %d = fx.call_function "torch._C._nn.softplus"(%x, beta = 2.0) : tensor<4x6xf32>
  %e = fx.call_function "torch.nn.functional.leaky_relu"(%x, 0.2) : tensor<4x6xf32>
  %f = fx.call_module "elu"(%x) {module_type = "torch.nn.modules.activation.ELU", module_attrs = {alpha = 0.5, inplace = false}} : tensor<4x6xf32>
  %g = fx.call_function "torch.nn.functional.elu"(%x, 1, false) : tensor<4x6xf32>
  %h = fx.call_function "torch.nn.functional.relu6"(%x) : tensor<4x6xf32>
  %i = fx.call_module "relu6"(%x) {module_type = "torch.nn.modules.activation.ReLU6", module_attrs = {min_val = 0.0, max_val = 6.0, inplace = false}} : tensor<4x6xf32>
  %j = fx.call_function "torch.ops.aten.hardtanh.default"(%x, -2, 2) : tensor<4x6xf32>
  %k = fx.call_module "mish"(%x) {module_type = "torch.nn.modules.activation.Mish", module_attrs = {inplace = false}} : tensor<4x6xf32>
  %l = fx.call_function "torch._C._special.special_expm1"(%x) : tensor<4x6xf32>
  %m = fx.call_function "torch._C._nn.gelu"(%x, approximate = "tanh") : tensor<4x6xf32>
  %n = fx.call_function "torch.nn.functional.hardswish"(%x, inplace = true) : tensor<4x6xf32>
  %o = fx.call_module "act"(%x) {module_type = "torch.nn.modules.activation.LeakyReLU", module_attrs = {negative_slope = 0.2, inplace = true}} : tensor<4x6xf32>
  fx.output (%a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l, %m, %n, %o)
}
