// RUN: optimus-opt %s | filecheck %s
// RUN: optimus-opt %s | optimus-opt | filecheck %s
// RUN: optimus-opt %s --print-op-generic | optimus-opt | filecheck %s

// Argument-structure literals added after the first cut: dicts (keys are
// literals, values may hold operands), non-ASCII strings (which xDSL prints
// as hex escapes and lexes as bytes), and the `name.N` value names the
// importer gives FX nodes such as `getitem_1`.

// CHECK-LABEL: fx.graph @forward
// CHECK-NEXT:    %x = fx.placeholder "x" : tensor<4xf32, "cpu">
// CHECK-NEXT:    %x.1 = fx.placeholder "x_1" default {"k": 1, 2: none} : !fx.value
// CHECK-NEXT:    %getitem.1 = fx.call_function "f#0"({"a": %x, "b": [%x.1, 1.5]}, {}) : tensor<4xf32, "cpu">
// CHECK-NEXT:    %caf = fx.call_function "operator.add"("caf\C3\A9", "\E4\B8\AD") : !fx.value
// CHECK-NEXT:    fx.output {"out": %getitem.1, "s": (%caf,)}
fx.graph @forward {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %x.1 = fx.placeholder "x_1" default {"k": 1, 2: none} : !fx.value
  %getitem.1 = fx.call_function "f#0"({"a": %x, "b": [%x.1, 1.5]}, {}) : tensor<4xf32, "cpu">
  %caf = fx.call_function "operator.add"("café", "中") : !fx.value
  fx.output {"out": %getitem.1, "s": (%caf,)}
}
