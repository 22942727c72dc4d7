// RUN: optimus-opt %s -p lower-batch --split-input-file | filecheck %s
// RUN: optimus-opt %s -p lower-batch,lower-to-fx --split-input-file | filecheck %s --check-prefix=FX

// batch.pointwise of softmax / log_softmax: one op on the stack, over the
// member's dim moved past the stacking dim (1 -> 2); its dtype is kept.
// CHECK-LABEL: fx.graph @softmax
// CHECK:         %s = torch.movedim
// CHECK-NEXT:    %t = torch.softmax %s dim 2 : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
// CHECK-NEXT:    %u = torch.log_softmax %s dim 2 dtype f64 : tensor<3x4x16xf32> -> tensor<3x4x16xf64>
// FX-LABEL: fx.graph @softmax
// FX:         %t = fx.call_function "torch.softmax"(%s, 2) : tensor<3x4x16xf32>
// FX-NEXT:    %u = fx.call_function "torch.log_softmax"(%s, 2, dtype = #fx.dtype<f64>) : tensor<3x4x16xf64>
fx.graph @softmax {
  %x = fx.placeholder "x" : tensor<4x48xf32>
  %p0, %p1, %p2 = torch.split %x sections [16, 16, 16] dim 1 : tensor<4x48xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %s = batch.pack %p0, %p1, %p2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<3x4x16xf32>
  %t = batch.pointwise %s fn "torch.softmax" stacked [true] fn_properties {"dim": 1} : tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %u = batch.pointwise %s fn "torch.log_softmax" stacked [true] fn_properties {"dim": 1, "dtype": f64} : tensor<3x4x16xf32> -> tensor<3x4x16xf64>
  %a, %b, %c = batch.unpack %t : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %d, %e, %f = batch.unpack %u : tensor<3x4x16xf64> -> tensor<4x16xf64>, tensor<4x16xf64>, tensor<4x16xf64>
  fx.output (%a, %b, %c, %d, %e, %f)
}

// -----

// where / masked_fill: a shared mask broadcasts against the stack as it is;
// a stacked mask of lower rank gets unit dims after the stacking dim.
// CHECK-LABEL: fx.graph @selection
// CHECK:         %w = torch.where %m, %s scalar 0.0 : tensor<4x16xi1>, tensor<3x4x16xf32> -> tensor<3x4x16xf32>
// CHECK:         %[[R:.*]] = torch.reshape %k shape [3, 1, 16]
// CHECK-NEXT:    %{{.*}} = torch.masked_fill %s, %[[R]] value -inf : tensor<3x4x16xf32>, tensor<3x1x16xi1> -> tensor<3x4x16xf32>
// FX-LABEL: fx.graph @selection
// FX:         %w = fx.call_function "torch.where"(%m, %s, 0.0)
// FX:         fx.call_function "torch.masked_fill"(%s, %{{.*}}, -inf)
fx.graph @selection {
  %x = fx.placeholder "x" : tensor<4x48xf32>
  %m = fx.placeholder "m" : tensor<4x16xi1>
  %k0 = fx.placeholder "k0" : tensor<16xi1>
  %k1 = fx.placeholder "k1" : tensor<16xi1>
  %k2 = fx.placeholder "k2" : tensor<16xi1>
  %p0, %p1, %p2 = torch.split %x sections [16, 16, 16] dim 1 : tensor<4x48xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %s = batch.pack %p0, %p1, %p2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<3x4x16xf32>
  %k = batch.pack %k0, %k1, %k2 : tensor<16xi1>, tensor<16xi1>, tensor<16xi1> -> tensor<3x16xi1>
  %w = batch.pointwise %m, %s fn "torch.where" stacked [false, true] fn_properties {"scalar": 0.0} : tensor<4x16xi1>, tensor<3x4x16xf32> -> tensor<3x4x16xf32>
  %f = batch.pointwise %s, %k fn "torch.masked_fill" stacked [true, true] fn_properties {"value": -inf} : tensor<3x4x16xf32>, tensor<3x16xi1> -> tensor<3x4x16xf32>
  %a, %b, %c = batch.unpack %w : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %d, %e, %g = batch.unpack %f : tensor<3x4x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  fx.output (%a, %b, %c, %d, %e, %g)
}
