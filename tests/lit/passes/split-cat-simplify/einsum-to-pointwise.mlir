// RUN: optimus-opt %s -p raise-fx --split-input-file | filecheck %s
// RUN: optimus-opt %s -p raise-fx --split-input-file --remarks --verify-diagnostics

// Issue 21 item 6 (PyTorch's einsum_to_pointwise): a two-operand einsum that
// sums over no letter and keeps each operand's letters in output order is a
// pointwise product: unsqueezes and one torch.mul (each output element is
// the product of the same two elements; ~50 us for einsum's equation
// handling against ~6 us for the mul on CPU).

// CHECK-LABEL: fx.graph @pointwise
// CHECK-NEXT:    %a = fx.placeholder "a"
// CHECK-NEXT:    %b = fx.placeholder "b"
// CHECK-NEXT:    %c = fx.placeholder "c"
// CHECK-NEXT:    %e = torch.mul %a, %b : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %[[U:.*]] = torch.unsqueeze %a dim 1 : tensor<3x4xf32> -> tensor<3x1x4xf32>
// CHECK-NEXT:    %f = torch.mul %c, %[[U]] : tensor<3x5x4xf32>, tensor<3x1x4xf32> -> tensor<3x5x4xf32>
// CHECK-NEXT:    %[[V:.*]] = torch.unsqueeze %a dim 2 : tensor<3x4xf32> -> tensor<3x4x1xf32>
// CHECK-NEXT:    %[[W:.*]] = torch.unsqueeze %b dim 1 : tensor<3x4xf32> -> tensor<3x1x4xf32>
// CHECK-NEXT:    %g = torch.mul %[[V]], %[[W]] : tensor<3x4x1xf32>, tensor<3x1x4xf32> -> tensor<3x4x4xf32>
// CHECK-NEXT:    fx.output [%e, %f, %g]
fx.graph @pointwise {
  %a = fx.placeholder "a" : tensor<3x4xf32>
  %b = fx.placeholder "b" : tensor<3x4xf32>
  %c = fx.placeholder "c" : tensor<3x5x4xf32>
  %e = fx.call_function "torch.functional.einsum"("bi,bi->bi", %a, %b) : tensor<3x4xf32>
  %f = fx.call_function "torch.functional.einsum"("bij,bj->bij", %c, %a) : tensor<3x5x4xf32>
  %g = fx.call_function "torch.einsum"("bi,bj->bij", [%a, %b]) : tensor<3x4x4xf32>
  fx.output [%e, %f, %g]
}

// -----

// Kept as fx ops, each with the remark that says why: a contraction (a sum
// over i), a transpose, a diagonal, an ellipsis, three operands.

// CHECK-LABEL: fx.graph @kept
// CHECK-NOT:     torch.mul
fx.graph @kept {
  %a = fx.placeholder "a" : tensor<3x4xf32>
  %b = fx.placeholder "b" : tensor<3x4xf32>
  %s = fx.placeholder "s" : tensor<4x4xf32>
  // expected-remark@+1 {{einsum-to-pointwise: einsum kept: a sum over a letter}}
  %e = fx.call_function "torch.functional.einsum"("bi,bi->b", %a, %b) : tensor<3xf32>
  // expected-remark@+1 {{einsum-to-pointwise: einsum kept: an operand's letters are not in output order}}
  %f = fx.call_function "torch.functional.einsum"("bi,bi->ib", %a, %b) : tensor<4x3xf32>
  // expected-remark@+1 {{einsum-to-pointwise: einsum kept: a repeated letter}}
  %g = fx.call_function "torch.functional.einsum"("ii,ij->ij", %s, %s) : tensor<4x4xf32>
  // expected-remark@+1 {{einsum-to-pointwise: einsum kept: an ellipsis}}
  %h = fx.call_function "torch.functional.einsum"("...i,...i->...i", %a, %b) : tensor<3x4xf32>
  // expected-remark@+1 {{einsum-to-pointwise: einsum kept: not two operands}}
  %k = fx.call_function "torch.functional.einsum"("bi,bi,bi->bi", %a, %b, %a) : tensor<3x4xf32>
  fx.output [%e, %f, %g, %h, %k]
}
