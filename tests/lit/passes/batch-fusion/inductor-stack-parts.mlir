// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default constant-parameters=true target=inductor}' | filecheck %s

// Under Inductor a pointwise group over a part of one fused stack pays only
// when that part is a strided slice of it (a view): an irregular part is a
// gather, and its results come out as a stack of their own that the
// consumers gather back -- Inductor left alone writes each member's result
// straight into the consumers' concatenation (issue 23:
// recsys-activations-64 measured 0.95x of Inductor alone with such groups).

// Regular parts (every other member): both activation groups fuse, reading
// strided slices of the linears' stack.
// CHECK-LABEL: fx.graph @regular
// CHECK:       batch.linear_shared_input
// CHECK:       torch.slice %{{.*}} dim 0 start 0 end 3 step 2
// CHECK:       batch.pointwise %{{.*}} fn "torch.tanh"
// CHECK:       torch.slice %{{.*}} dim 0 start 1 end 4 step 2
// CHECK:       batch.pointwise %{{.*}} fn "torch.relu"
// CHECK:       fx.output
fx.graph @regular {
  %x = fx.placeholder "x" : tensor<64x256xf32>
  %w0 = fx.get_attr "w0" : tensor<256x256xf32>
  %w1 = fx.get_attr "w1" : tensor<256x256xf32>
  %w2 = fx.get_attr "w2" : tensor<256x256xf32>
  %w3 = fx.get_attr "w3" : tensor<256x256xf32>
  %a = torch.linear %x, %w0 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %b = torch.linear %x, %w1 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %c = torch.linear %x, %w2 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %d = torch.linear %x, %w3 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %ta = torch.tanh %a : tensor<64x256xf32> -> tensor<64x256xf32>
  %rb = torch.relu %b : tensor<64x256xf32> -> tensor<64x256xf32>
  %tc = torch.tanh %c : tensor<64x256xf32> -> tensor<64x256xf32>
  %rd = torch.relu %d : tensor<64x256xf32> -> tensor<64x256xf32>
  fx.output (%ta, %rb, %tc, %rd)
}

// An irregular part (members 0, 1 and 3 of four): the tanh group is left
// alone, the linears still fuse.
// CHECK-LABEL: fx.graph @irregular
// CHECK:       batch.linear_shared_input
// CHECK-NOT:   batch.pointwise
// CHECK:       torch.tanh
// CHECK:       torch.tanh
// CHECK:       torch.relu
// CHECK:       torch.tanh
// CHECK-NOT:   batch.pointwise
// CHECK:       fx.output
fx.graph @irregular {
  %x = fx.placeholder "x" : tensor<64x256xf32>
  %w0 = fx.get_attr "w0" : tensor<256x256xf32>
  %w1 = fx.get_attr "w1" : tensor<256x256xf32>
  %w2 = fx.get_attr "w2" : tensor<256x256xf32>
  %w3 = fx.get_attr "w3" : tensor<256x256xf32>
  %a = torch.linear %x, %w0 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %b = torch.linear %x, %w1 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %c = torch.linear %x, %w2 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %d = torch.linear %x, %w3 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %ta = torch.tanh %a : tensor<64x256xf32> -> tensor<64x256xf32>
  %tb = torch.tanh %b : tensor<64x256xf32> -> tensor<64x256xf32>
  %rc = torch.relu %c : tensor<64x256xf32> -> tensor<64x256xf32>
  %td = torch.tanh %d : tensor<64x256xf32> -> tensor<64x256xf32>
  fx.output (%ta, %tb, %rc, %td)
}
