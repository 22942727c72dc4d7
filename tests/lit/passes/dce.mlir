// RUN: optimus-opt %s -p dce --split-input-file | filecheck %s

// Dead pure ops go, whole chains of them in one run; live ops stay.

// CHECK-LABEL: fx.graph @dead_chain
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %live = fx.call_function "torch.tanh"(%x)
// CHECK-NEXT:    fx.output %live
fx.graph @dead_chain {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %live = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.sigmoid"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_method "relu"(%a) : tensor<4xf32, "cpu">
  %c = fx.call_function "torch.nn.functional.gelu"(%b, approximate = "tanh") : tensor<4xf32, "cpu">
  %d = fx.call_function "operator.add"(%c, %a) : tensor<4xf32, "cpu">
  %e = fx.call_function "torch.ops.aten.mul.Tensor"(%d, %d) : tensor<4xf32, "cpu">
  %f = fx.call_function "operator.getitem"(%e, 0) : tensor<f32, "cpu">
  %w = fx.get_attr "weight" : tensor<4xf32, "cpu">
  %z = fx.call_function "torch.zeros"([4]) : tensor<4xf32, "cpu">
  fx.output %live
}

// -----

// Ops with side effects (or unknown ones) stay even when their result is unused.

// CHECK-LABEL: fx.graph @impure_stay
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %unused_input = fx.placeholder "unused_input"
// CHECK-NEXT:    %custom = fx.call_function "mylib.my_op"(%x)
// CHECK-NEXT:    %module = fx.call_module "tower.linear"(%x)
// CHECK-NEXT:    %inplace_method = fx.call_method "add_"(%x, 1)
// CHECK-NEXT:    %inplace_function = fx.call_function "torch.relu_"(%x)
// CHECK-NEXT:    %inplace_kwarg = fx.call_function "torch.nn.functional.relu"(%x, inplace = true)
// CHECK-NEXT:    %inplace_positional = fx.call_function "torch.nn.functional.relu"(%x, true)
// CHECK-NEXT:    %out_kwarg = fx.call_function "torch.add"(%x, %x, out = %x)
// CHECK-NEXT:    %aten_inplace = fx.call_function "torch.ops.aten.add_.Tensor"(%x, %x)
// CHECK-NEXT:    %aten_out = fx.call_function "torch.ops.aten.add.out"(%x, %x, out = %x)
// CHECK-NEXT:    %custom_op = fx.call_function "torch.ops.mylib.fused.default"(%x)
// CHECK-NEXT:    %random = fx.call_function "torch.rand"([4])
// CHECK-NEXT:    %dropout = fx.call_function "torch.nn.functional.dropout"(%x, 0.5)
// CHECK-NEXT:    %assert = fx.call_function "torch._assert"(true, "msg")
// CHECK-NEXT:    %sync = fx.call_function "torch.cuda.synchronize"()
// CHECK-NEXT:    %setitem = fx.call_function "operator.setitem"(%x, 0, 1.0)
// CHECK-NEXT:    %dunder = fx.call_method "__setitem__"(%x, 0, 1.0)
// CHECK-NEXT:    fx.output %x
fx.graph @impure_stay {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %unused_input = fx.placeholder "unused_input" : tensor<4xf32, "cpu">
  %custom = fx.call_function "mylib.my_op"(%x) : tensor<4xf32, "cpu">
  %module = fx.call_module "tower.linear"(%x) : tensor<4xf32, "cpu">
  %inplace_method = fx.call_method "add_"(%x, 1) : tensor<4xf32, "cpu">
  %inplace_function = fx.call_function "torch.relu_"(%x) : tensor<4xf32, "cpu">
  %inplace_kwarg = fx.call_function "torch.nn.functional.relu"(%x, inplace = true) : tensor<4xf32, "cpu">
  %inplace_positional = fx.call_function "torch.nn.functional.relu"(%x, true) : tensor<4xf32, "cpu">
  %out_kwarg = fx.call_function "torch.add"(%x, %x, out = %x) : tensor<4xf32, "cpu">
  %aten_inplace = fx.call_function "torch.ops.aten.add_.Tensor"(%x, %x) : tensor<4xf32, "cpu">
  %aten_out = fx.call_function "torch.ops.aten.add.out"(%x, %x, out = %x) : tensor<4xf32, "cpu">
  %custom_op = fx.call_function "torch.ops.mylib.fused.default"(%x) : tensor<4xf32, "cpu">
  %random = fx.call_function "torch.rand"([4]) : tensor<4xf32, "cpu">
  %dropout = fx.call_function "torch.nn.functional.dropout"(%x, 0.5) : tensor<4xf32, "cpu">
  %assert = fx.call_function "torch._assert"(true, "msg") : !fx.value
  %sync = fx.call_function "torch.cuda.synchronize"() : !fx.value
  %setitem = fx.call_function "operator.setitem"(%x, 0, 1.0) : !fx.value
  %dunder = fx.call_method "__setitem__"(%x, 0, 1.0) : !fx.value
  fx.output %x
}

// -----

// An op whose result is used by an impure op is live, and so are its inputs.

// CHECK-LABEL: fx.graph @used_by_impure
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = fx.call_function "torch.tanh"(%x)
// CHECK-NEXT:    %b = fx.call_method "mul"(%a, 2)
// CHECK-NEXT:    %print = fx.call_function "builtins.print"(%b)
// CHECK-NEXT:    fx.output %x
fx.graph @used_by_impure {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_method "mul"(%a, 2) : tensor<4xf32, "cpu">
  %print = fx.call_function "builtins.print"(%b) : !fx.value
  fx.output %x
}

// -----

// Nothing to do: the IR is unchanged.

// CHECK-LABEL: fx.graph @all_live
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %s = fx.call_function "torch.add"(%x, %y)
// CHECK-NEXT:    fx.output (%s, %x)
fx.graph @all_live {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %y = fx.placeholder "y" : tensor<4xf32, "cpu">
  %s = fx.call_function "torch.add"(%x, %y) : tensor<4xf32, "cpu">
  fx.output (%s, %x)
}

// -----

// Non-fx ops follow their traits: a dead cast with no memory effects goes.

// CHECK-LABEL: fx.graph @traits
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    fx.output %x
fx.graph @traits {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %c = builtin.unrealized_conversion_cast %x : tensor<4xf32, "cpu"> to tensor<4xf32>
  fx.output %x
}
