// RUN: optimus-opt %s | filecheck %s
// RUN: optimus-opt %s | optimus-opt | filecheck %s
// RUN: optimus-opt %s --print-op-generic | optimus-opt | filecheck %s

// The custom assembly format of every fx op prints back as it was written.

// CHECK-LABEL: fx.graph @forward
// CHECK-NEXT:    %x = fx.placeholder "x" : tensor<2x?xf32, "cpu">
// CHECK-NEXT:    %n = fx.placeholder "n" default 3 : !fx.value
// CHECK-NEXT:    %w = fx.get_attr "tower.weight" : tensor<4x4xbf16, "cuda:0">
// CHECK-NEXT:    %s = fx.call_function "torch.functional.split"(%x, 4, dim = 1) : tuple<tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">>
// CHECK-NEXT:    %g = fx.call_function "operator.getitem"(%s, 0) : tensor<2x4xf32, "cpu">
// CHECK-NEXT:    %v = fx.call_method "view"(%g, [-1, 2], none) : tensor<4x2xf32, "cpu">
// CHECK-NEXT:    %m = fx.call_module "towers.0"(%v, scale = 0.5, flags = (true, false), sl = slice(0, none, 2)) : tensor<4x2xf32, "cpu">
// CHECK-NEXT:    %t = fx.call_function "torch.ops.aten.to.dtype"(%m, #fx.dtype<f16>, device = #fx.device<"cpu">, fmt = #fx.object<"torch.contiguous_format">) : tensor<4x2xf16, "cpu">
// CHECK-NEXT:    fx.output [%t, (%n,), none]
fx.graph @forward {
  %x = fx.placeholder "x" : tensor<2x?xf32, "cpu">
  %n = fx.placeholder "n" default 3 : !fx.value
  %w = fx.get_attr "tower.weight" : tensor<4x4xbf16, "cuda:0">
  %s = fx.call_function "torch.functional.split"(%x, 4, dim = 1) : tuple<tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">>
  %g = fx.call_function "operator.getitem"(%s, 0) : tensor<2x4xf32, "cpu">
  %v = fx.call_method "view"(%g, [-1, 2], none) : tensor<4x2xf32, "cpu">
  %m = fx.call_module "towers.0"(%v, scale = 0.5, flags = (true, false), sl = slice(0, none, 2)) : tensor<4x2xf32, "cpu">
  %t = fx.call_function "torch.ops.aten.to.dtype"(%m, #fx.dtype<f16>, device = #fx.device<"cpu">, fmt = #fx.object<"torch.contiguous_format">) : tensor<4x2xf16, "cpu">
  fx.output [%t, (%n,), none]
}
