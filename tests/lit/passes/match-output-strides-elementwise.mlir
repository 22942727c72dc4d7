// RUN: optimus-opt %s -p 'match-output-strides{ranks=2,2 strides=24,1,5,1}' | filecheck %s

// A pointwise op whose operands have known strides that decrease outwards
// (strided slices of a stack) is allocated row-major by TensorIterator, so a
// cat of its members through movedim + flatten (a copy) is row-major: no
// restore. A pointwise op of a transposed value keeps the transposed
// layout: restored.
// CHECK-LABEL: fx.graph @elementwise
// CHECK:         %ts = torch.sigmoid %tr
// CHECK-NEXT:    %ts_contiguous = fx.call_method "contiguous"(%ts)
// CHECK-NEXT:    fx.output (%fl, %ts_contiguous)
fx.graph @elementwise {
  %st = fx.placeholder "st" : tensor<8x5x6xf32, "cpu">
  %a = torch.slice %st dim 0 start 0 end 8 step 2 : tensor<8x5x6xf32, "cpu"> -> tensor<4x5x6xf32, "cpu">
  %b = torch.slice %st dim 0 start 1 end 8 step 2 : tensor<8x5x6xf32, "cpu"> -> tensor<4x5x6xf32, "cpu">
  %sg = torch.sigmoid %b : tensor<4x5x6xf32, "cpu"> -> tensor<4x5x6xf32, "cpu">
  %m = torch.mul %a, %sg : tensor<4x5x6xf32, "cpu">, tensor<4x5x6xf32, "cpu"> -> tensor<4x5x6xf32, "cpu">
  %mv = torch.movedim %m source [0] destination [1] : tensor<4x5x6xf32, "cpu"> -> tensor<5x4x6xf32, "cpu">
  %fl = torch.flatten %mv start_dim 1 end_dim 2 : tensor<5x4x6xf32, "cpu"> -> tensor<5x24xf32, "cpu">
  %x = fx.placeholder "x" : tensor<5x6xf32, "cpu">
  %tr = torch.transpose %x dim0 0 dim1 1 : tensor<5x6xf32, "cpu"> -> tensor<6x5xf32, "cpu">
  %ts = torch.sigmoid %tr : tensor<6x5xf32, "cpu"> -> tensor<6x5xf32, "cpu">
  fx.output (%fl, %ts)
}
