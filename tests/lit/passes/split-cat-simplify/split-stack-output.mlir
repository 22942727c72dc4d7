// RUN: optimus-opt %s -p split-cat-simplify,dce --split-input-file | filecheck %s
// RUN: optimus-opt %s -p split-cat-simplify --split-input-file --remarks --verify-diagnostics

// Issue 21 item 6: `torch.stack(torch.split(x, 4, dim=1), dim=1)` is only a
// reshape. PyTorch's passes return `x.unflatten(1, (4, -1))`, a view of the
// input; a returned view of an input would let a write to the output show in
// the input, so here the view is copied once: 2 ops for split + 4 getitems +
// stack.

// CHECK-LABEL: fx.graph @returned_of_input
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %[[U:.*]] = torch.unflatten %x dim 1 sizes [4, 4] : tensor<3x16xf32> -> tensor<3x4x4xf32>
// CHECK-NEXT:    %[[C:.*]] = torch.cat %[[U]] dim 0 : tensor<3x4x4xf32> -> tensor<3x4x4xf32>
// CHECK-NEXT:    fx.output %[[C]]
fx.graph @returned_of_input {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %s = torch.stack %a, %b, %c, %d dim 1 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4x4xf32>
  fx.output %s
}

// -----

// The split input is a temporary nothing else sees: the returned value may
// be a view of all of it (no copy), like returning the temporary itself.

// CHECK-LABEL: fx.graph @returned_of_temporary
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %r = torch.relu %x
// CHECK-NEXT:    %[[U:.*]] = torch.unflatten %r dim 1 sizes [4, 4] : tensor<3x16xf32> -> tensor<3x4x4xf32>
// CHECK-NEXT:    fx.output %[[U]]
fx.graph @returned_of_temporary {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %r = torch.relu %x : tensor<3x16xf32> -> tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %r sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %s = torch.stack %a, %b, %c, %d dim 1 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4x4xf32>
  fx.output %s
}

// -----

// The temporary is returned too: two outputs must not share storage, so the
// view is copied. Stacked on another dim than the split's: movedim, then
// the copy (contiguous, as the stack was).

// CHECK-LABEL: fx.graph @temporary_returned_too
// CHECK:         %[[U:.*]] = torch.unflatten %r dim 1 sizes [4, 4]
// CHECK-NEXT:    %[[M:.*]] = torch.movedim %[[U]] {{.*}} -> tensor<4x3x4xf32>
// CHECK-NEXT:    %[[C:.*]] = torch.cat %[[M]] dim 0 : tensor<4x3x4xf32> -> tensor<4x3x4xf32>
// CHECK-NEXT:    fx.output (%[[C]], %r)
fx.graph @temporary_returned_too {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %r = torch.relu %x : tensor<3x16xf32> -> tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %r sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  %s = torch.stack %a, %b, %c, %d dim 0 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<4x3x4xf32>
  fx.output (%s, %r)
}

// -----

// Left alone, with a remark: the input is written in place after the stack
// (the stack's copy must stay where it is, and neither a view nor a moved
// copy is proven safe).

// CHECK-LABEL: fx.graph @written_in_place
// CHECK:         torch.stack %a, %b, %c, %d dim 1
fx.graph @written_in_place {
  %x = fx.placeholder "x" : tensor<3x16xf32>
  %a, %b, %c, %d = torch.split %x sections [4, 4, 4, 4] dim 1 : tensor<3x16xf32> -> tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  // expected-remark@+1 {{split-stack-to-view: torch.stack left alone: its result would alias its split input}}
  %s = torch.stack %a, %b, %c, %d dim 1 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4x4xf32>
  %m = fx.call_method "add_"(%x, 1) : tensor<3x16xf32>
  fx.output %s
}
