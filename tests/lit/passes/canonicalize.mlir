// RUN: optimus-opt %s -p canonicalize --split-input-file | filecheck %s

// The local folds the ops declare: a split into one piece (or whose one
// non-empty piece is everything) is its input, cat/stack of one tensor is
// that tensor / an unsqueeze of it, neighbouring dead split pieces merge
// into one section and a single live piece becomes a slice, inverse
// transposes cancel, dead plumbing (the unsqueeze -> squeeze chain) goes.

// CHECK-LABEL: fx.graph @folds
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %s = torch.unsqueeze %a dim 1 : tensor<4x6xf32> -> tensor<4x1x6xf32>
// CHECK-NEXT:    %p0, %{{.*}}, %p3, %{{.*}} = torch.split %a sections [1, 2, 1, 2] dim 1
// CHECK-NEXT:    %q1 = torch.slice %a dim 1 start 2 end 5 : tensor<4x6xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %r = torch.relu %a
// CHECK-NEXT:    %w = torch.relu %a
// CHECK-NEXT:    %m = torch.mul %a, %a
// CHECK-NEXT:    %n = torch.neg %s
// CHECK-NEXT:    %z = torch.add %p0, %p3
// CHECK-NEXT:    %y = torch.relu %q1
// CHECK-NEXT:    fx.output (%r, %w, %m, %n, %z, %y)
fx.graph @folds {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a = torch.tanh %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %one = torch.split %a sections [6] dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %e0, %whole, %e1 = torch.split %a sections [0, 6, 0] dim 1 : tensor<4x6xf32> -> tensor<4x0xf32>, tensor<4x6xf32>, tensor<4x0xf32>
  %k = torch.cat %a dim 0 : tensor<4x6xf32> -> tensor<4x6xf32>
  %s = torch.stack %a dim 1 : tensor<4x6xf32> -> tensor<4x1x6xf32>
  %p0, %p1, %p2, %p3, %p4, %p5 = torch.split %a sections [1, 1, 1, 1, 1, 1] dim 1 : tensor<4x6xf32> -> tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  %q0, %q1, %q2 = torch.split %a sections [2, 3, 1] dim 1 : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x3xf32>, tensor<4x1xf32>
  %t0 = torch.transpose %a dim0 0 dim1 1 : tensor<4x6xf32> -> tensor<6x4xf32>
  %t1 = torch.transpose %t0 dim0 1 dim1 0 : tensor<6x4xf32> -> tensor<4x6xf32>
  %u = torch.unsqueeze %a dim 0 : tensor<4x6xf32> -> tensor<1x4x6xf32>
  %dead = torch.squeeze %u dims [0] : tensor<1x4x6xf32> -> tensor<4x6xf32>
  %r = torch.relu %one : tensor<4x6xf32> -> tensor<4x6xf32>
  %w = torch.relu %whole : tensor<4x6xf32> -> tensor<4x6xf32>
  %m = torch.mul %k, %t1 : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %n = torch.neg %s : tensor<4x1x6xf32> -> tensor<4x1x6xf32>
  %z = torch.add %p0, %p3 : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  %y = torch.relu %q1 : tensor<4x3xf32> -> tensor<4x3xf32>
  fx.output (%r, %w, %m, %n, %z, %y)
}

// -----

// Left alone: what looks across several ops (split of a split, a cat of
// pieces: split-cat-simplify's patterns); a returned join of a graph input
// (the output would alias the input); a join written in place; a dead op
// that is not plumbing (dce's job); fx ops; a transpose that does something.

// CHECK-LABEL: fx.graph @leave_alone
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %b0, %b1 = torch.split %a sections [2, 4] dim 1
// CHECK-NEXT:    %c0, %c1 = torch.split %b1 sections [2, 2] dim 1
// CHECK-NEXT:    %j = torch.cat %b0, %c0 dim 1
// CHECK-NEXT:    %k = torch.cat %x dim 0
// CHECK-NEXT:    %h = torch.cat %a dim 0
// CHECK-NEXT:    %mut = fx.call_method "add_"(%h, 1)
// CHECK-NEXT:    %unused = torch.exp %x
// CHECK-NEXT:    %f = fx.call_function "torch.relu"(%x)
// CHECK-NEXT:    %t = torch.transpose %a dim0 0 dim1 1
// CHECK-NEXT:    fx.output (%j, %c1, %k, %h, %f, %t)
fx.graph @leave_alone {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %a = torch.tanh %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %b0, %b1 = torch.split %a sections [2, 4] dim 1 : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x4xf32>
  %c0, %c1 = torch.split %b1 sections [2, 2] dim 1 : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xf32>
  %j = torch.cat %b0, %c0 dim 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %k = torch.cat %x dim 0 : tensor<4x6xf32> -> tensor<4x6xf32>
  %h = torch.cat %a dim 0 : tensor<4x6xf32> -> tensor<4x6xf32>
  %mut = fx.call_method "add_"(%h, 1) : tensor<4x6xf32>
  %unused = torch.exp %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %f = fx.call_function "torch.relu"(%x) : tensor<4x6xf32>
  %t = torch.transpose %a dim0 0 dim1 1 : tensor<4x6xf32> -> tensor<6x4xf32>
  fx.output (%j, %c1, %k, %h, %f, %t)
}

// -----

// The batch dialect's conversions cancel: an unpack of a pack is the packed
// values, a pack of all members of an unpack in order is the stack, a pack
// of every other member a strided slice. Values returned by the graph keep
// their identity (the unpack feeding the output stays).
// CHECK-LABEL: fx.graph @batch_conversions
// CHECK:         %s = batch.pack %x, %y
// CHECK-NEXT:    %n = torch.neg %x
// CHECK-NEXT:    %t = batch.pointwise %s fn "torch.tanh"
// CHECK-NEXT:    %m0, %m1, %m2 = batch.unpack %t
// CHECK-NEXT:    %u = batch.pointwise %t fn "torch.relu"
// CHECK-NEXT:    %e = torch.slice %t dim 0 start 0 end 3 step 2
// CHECK-NEXT:    %v = batch.pointwise %e fn "torch.exp"
// CHECK-NEXT:    fx.output (%n, %u, %v, %m1)
fx.graph @batch_conversions {
  %x = fx.placeholder "x" : tensor<4xf32>
  %y = fx.placeholder "y" : tensor<4xf32>
  %z = fx.placeholder "z" : tensor<4xf32>
  %s = batch.pack %x, %y, %z : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %a, %b, %c = batch.unpack %s : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %n = torch.neg %a : tensor<4xf32> -> tensor<4xf32>
  %t = batch.pointwise %s fn "torch.tanh" stacked [true] fn_properties {} : tensor<3x4xf32> -> tensor<3x4xf32>
  %m0, %m1, %m2 = batch.unpack %t : tensor<3x4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %back = batch.pack %m0, %m1, %m2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %u = batch.pointwise %back fn "torch.relu" stacked [true] fn_properties {} : tensor<3x4xf32> -> tensor<3x4xf32>
  %e = batch.pack %m0, %m2 : tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %v = batch.pointwise %e fn "torch.exp" stacked [true] fn_properties {} : tensor<2x4xf32> -> tensor<2x4xf32>
  fx.output (%n, %u, %v, %m1)
}

// -----

// Returned no-op views of an input stay views (each a new tensor object,
// as in eager): the split into one piece and the view to the same shape
// are kept; the transposes that cancel become one view to the same shape.

// CHECK-LABEL: fx.graph @returned_views_of_an_input
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %one = torch.split %x sections [6] dim 1
// CHECK-NEXT:    %same = torch.view %x shape [4, 6]
// CHECK-NEXT:    %t1 = torch.view %x shape [4, 6]
// CHECK-NEXT:    fx.output (%one, %same, %t1)
fx.graph @returned_views_of_an_input {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %one = torch.split %x sections [6] dim 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  %same = torch.view %x shape [4, 6] : tensor<4x6xf32> -> tensor<4x6xf32>
  %t0 = torch.transpose %x dim0 0 dim1 1 : tensor<4x6xf32> -> tensor<6x4xf32>
  %t1 = torch.transpose %t0 dim0 0 dim1 1 : tensor<6x4xf32> -> tensor<4x6xf32>
  fx.output (%one, %same, %t1)
}
