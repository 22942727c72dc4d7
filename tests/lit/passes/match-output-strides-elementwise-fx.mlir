// RUN: optimus-opt %s -p 'match-output-strides{ranks=2,2,2 strides=4,1,4,1,4,1}' | filecheck %s

// Elementwise fx calls (unraised arithmetic such as `1 / t`, casts) lay
// their result out like their operands: of contiguous operands, contiguous
// (left alone); of a transposed operand, unknown (restored).
// CHECK-LABEL: fx.graph @elementwise_fx_calls
// CHECK:         %inv = fx.call_function "_operator.truediv"(1, %d)
// CHECK-NEXT:    %out = torch.add %x, %inv
// CHECK-NEXT:    %xt = torch.transpose %x dim0 0 dim1 1
// CHECK-NEXT:    %tinv = fx.call_function "_operator.truediv"(1, %xt)
// CHECK-NEXT:    %tinv_contiguous = fx.call_method "contiguous"(%tinv)
// CHECK-NEXT:    fx.output (%out, %inv, %tinv_contiguous)
fx.graph @elementwise_fx_calls {
  %x = fx.placeholder "x" : tensor<4x4xf64, "cpu">
  %f = fx.call_function "torch.full"((4, 4), 2.0) : tensor<4x4xf32, "cpu">
  %d = fx.call_method "double"(%f) : tensor<4x4xf64, "cpu">
  %inv = fx.call_function "_operator.truediv"(1, %d) : tensor<4x4xf64, "cpu">
  %out = torch.add %x, %inv : tensor<4x4xf64, "cpu">, tensor<4x4xf64, "cpu"> -> tensor<4x4xf64, "cpu">
  %xt = torch.transpose %x dim0 0 dim1 1 : tensor<4x4xf64, "cpu"> -> tensor<4x4xf64, "cpu">
  %tinv = fx.call_function "_operator.truediv"(1, %xt) : tensor<4x4xf64, "cpu">
  fx.output (%out, %inv, %tinv)
}
