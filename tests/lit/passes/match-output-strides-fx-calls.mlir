// RUN: optimus-opt %s -p 'match-output-strides{ranks=2,2,2,2,2,2,2 strides=6,1,6,1,6,1,6,1,6,1,6,1,6,1}' | filecheck %s

// The strides of an fx call's result are asked of torch: the call is run on
// meta/fake tensors with the strides its operands provably have. A
// row-major factory (`new_zeros`, `torch.zeros`, `.contiguous()`) and an
// in-place arithmetic call (`+=`, `add_`, which returns its first argument
// with its strides) need no restore. DeepFM, DCN and xDeepFM return
// `sigmoid(logit)` where `logit = x.new_zeros(...)` accumulates with `+=`.
// %deepfm: sigmoid of `new_zeros` accumulated with `+=` and `add_`: left alone.
// %made:   sigmoid of `torch.zeros(...).contiguous()`: left alone.
// %turned: `t_()` changes the strides in place (not an arithmetic write):
//          restored.
// %cl:     a factory given a memory format: unknown, restored.
// %mine:   a user function called `zeros`: unknown, restored.
// %ein:    `einsum('bd->db', ...)` of a row-major tensor is a transposed
//          view: restored.
// %same:   `.float()` of a float input is the input itself: row-major, left
//          alone.

// CHECK-LABEL: fx.graph @fx_calls
// CHECK:         %same_out = torch.sigmoid %same
// CHECK-NEXT:    %turned_out_contiguous = fx.call_method "contiguous"(%turned_out)
// CHECK-NEXT:    %cl_out_contiguous = fx.call_method "contiguous"(%cl_out)
// CHECK-NEXT:    %mine_out_contiguous = fx.call_method "contiguous"(%mine_out)
// CHECK-NEXT:    %ein_out_contiguous = fx.call_method "contiguous"(%ein_out)
// CHECK-NEXT:    fx.output (%deepfm, %made, %turned_out_contiguous, %cl_out_contiguous, %mine_out_contiguous, %ein_out_contiguous, %same_out)
fx.graph @fx_calls {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %y = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %z = fx.call_method "new_zeros"(%x, (4, 6)) : tensor<4x6xf32, "cpu">
  %z1 = fx.call_function "_operator.iadd"(%z, %y) : tensor<4x6xf32, "cpu">
  %z2 = fx.call_method "add_"(%z1, %y) : tensor<4x6xf32, "cpu">
  %deepfm = torch.sigmoid %z2 : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %f = fx.call_function "torch.zeros"((4, 6)) : tensor<4x6xf32, "cpu">
  %fc = fx.call_method "contiguous"(%f) : tensor<4x6xf32, "cpu">
  %made = torch.sigmoid %fc : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %sq = fx.call_function "torch.zeros"((6, 4)) : tensor<6x4xf32, "cpu">
  %turned = fx.call_method "t_"(%sq) : tensor<4x6xf32, "cpu">
  %turned_out = torch.sigmoid %turned : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %cl = fx.call_function "torch.empty"((4, 6), memory_format = "preserve") : tensor<4x6xf32, "cpu">
  %cl_out = torch.sigmoid %cl : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %m = fx.call_function "mylib.zeros"((4, 6)) : tensor<4x6xf32, "cpu">
  %mine_out = torch.sigmoid %m : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %ein = fx.call_function "torch.functional.einsum"("bd->db", %sq) : tensor<4x6xf32, "cpu">
  %ein_out = torch.sigmoid %ein : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %same = fx.call_method "float"(%x) : tensor<4x6xf32, "cpu">
  %same_out = torch.sigmoid %same : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  fx.output (%deepfm, %made, %turned_out, %cl_out, %mine_out, %ein_out, %same_out)
}

