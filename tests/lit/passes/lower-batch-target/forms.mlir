// RUN: optimus-opt %s -p 'lower-batch{target=inductor}' --split-input-file | filecheck %s --check-prefix=IND
// RUN: optimus-opt %s -p 'lower-batch{target=inductor}' --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: optimus-opt %s -p lower-batch --split-input-file | filecheck %s --check-prefix=EAGER
// RUN: optimus-opt %s -p lower-batch --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=EAGER-REMARK --allow-empty

// lower-batch{target=inductor}: the cost model picks each batch op's form
// for Inductor (optimus_ir.analysis.cost_model.layer_norm_lowering / linear_lowering,
// measured with benchmarks/bench_inductor_forms.py) and remarks it; the
// eager target (the default) lowers every op batched, without remarks.
// EAGER-REMARK-NOT: target inductor

// A layer norm of 4 members whose parameters are graph inputs (Dynamo lifts
// parameters to inputs): per member under Inductor, each F.layer_norm on its
// slice with its own weight and bias (no stack of them on every call).
// IND-LABEL:   fx.graph @small_inputs
// IND-NOT:       torch.stack
// IND:           torch.unbind %x dim 0
// IND-NEXT:      %m0 = torch.layer_norm %{{.*}} normalized_shape [16] weight %g0 bias %b0
// IND-NEXT:      %m1 = torch.layer_norm %{{.*}} normalized_shape [16] weight %g1 bias %b1
// IND-NEXT:      %m2 = torch.layer_norm %{{.*}} normalized_shape [16] weight %g2 bias %b2
// IND-NEXT:      %m3 = torch.layer_norm %{{.*}} normalized_shape [16] weight %g3 bias %b3
// IND-NEXT:      torch.relu %m0
// REMARK:        remark: lower-batch: target inductor: layer norm of 4 members lowered per member (F.layer_norm each): at most 8 members
// EAGER-LABEL: fx.graph @small_inputs
// EAGER:         torch.stack %g0, %g1, %g2, %g3
// EAGER:         torch.layer_norm %x normalized_shape [16] {optimus.stacked} :
// EAGER:         torch.mul
// EAGER:         torch.add
fx.graph @small_inputs {
  %x = fx.placeholder "x" : tensor<4x8x16xf32>
  %g0 = fx.placeholder "g0" : tensor<16xf32>
  %g1 = fx.placeholder "g1" : tensor<16xf32>
  %g2 = fx.placeholder "g2" : tensor<16xf32>
  %g3 = fx.placeholder "g3" : tensor<16xf32>
  %b0 = fx.placeholder "b0" : tensor<16xf32>
  %b1 = fx.placeholder "b1" : tensor<16xf32>
  %b2 = fx.placeholder "b2" : tensor<16xf32>
  %b3 = fx.placeholder "b3" : tensor<16xf32>
  %g = batch.pack %g0, %g1, %g2, %g3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %b = batch.pack %b0, %b1, %b2, %b3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %n = batch.layer_norm %x normalized_shape [16] weight %g bias %b : tensor<4x8x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x8x16xf32>
  %m0, %m1, %m2, %m3 = batch.unpack %n : tensor<4x8x16xf32> -> tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  %r = torch.relu %m0 : tensor<8x16xf32> -> tensor<8x16xf32>
  fx.output (%r, %m1, %m2, %m3)
}

// -----

// 9 members (more than INDUCTOR_PER_MEMBER_LAYER_NORM_MAX = 8): one layer
// norm over the stack even under Inductor.
// IND-LABEL:   fx.graph @nine_inputs
// IND:           torch.stack %g0, %g1, %g2, %g3, %g4, %g5, %g6, %g7, %g8
// IND:           torch.layer_norm %x normalized_shape [16] :
// IND:           torch.mul
// IND-NOT:       torch.layer_norm
// REMARK:        remark: lower-batch: target inductor: layer norm of 9 members lowered batched (layer norm over the stack, stacked affine): more than 8 members
// EAGER-LABEL: fx.graph @nine_inputs
// EAGER:         torch.layer_norm %x normalized_shape [16] {optimus.stacked} :
fx.graph @nine_inputs {
  %x = fx.placeholder "x" : tensor<9x8x16xf32>
  %g0 = fx.placeholder "g0" : tensor<16xf32>
  %g1 = fx.placeholder "g1" : tensor<16xf32>
  %g2 = fx.placeholder "g2" : tensor<16xf32>
  %g3 = fx.placeholder "g3" : tensor<16xf32>
  %g4 = fx.placeholder "g4" : tensor<16xf32>
  %g5 = fx.placeholder "g5" : tensor<16xf32>
  %g6 = fx.placeholder "g6" : tensor<16xf32>
  %g7 = fx.placeholder "g7" : tensor<16xf32>
  %g8 = fx.placeholder "g8" : tensor<16xf32>
  %g = batch.pack %g0, %g1, %g2, %g3, %g4, %g5, %g6, %g7, %g8 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<9x16xf32>
  %n = batch.layer_norm %x normalized_shape [16] weight %g : tensor<9x8x16xf32>, tensor<9x16xf32> -> tensor<9x8x16xf32>
  %m0, %m1, %m2, %m3, %m4, %m5, %m6, %m7, %m8 = batch.unpack %n : tensor<9x8x16xf32> -> tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  %r = torch.relu %m0 : tensor<8x16xf32> -> tensor<8x16xf32>
  fx.output (%r, %m1, %m2, %m3, %m4, %m5, %m6, %m7, %m8)
}

// -----

// Constant parameters (fx.get_attr: frozen, or cached by the exported
// module): nothing is stacked per call, so one kernel over the stack.
// IND-LABEL:   fx.graph @small_constants
// IND:           torch.stack %g0, %g1, %g2, %g3
// IND:           torch.layer_norm %x normalized_shape [16] :
// IND-NOT:       torch.layer_norm
// REMARK:        remark: lower-batch: target inductor: layer norm of 4 members lowered batched (layer norm over the stack, stacked affine): its affine parameters are constants or absent
// EAGER-LABEL: fx.graph @small_constants
fx.graph @small_constants {
  %x = fx.placeholder "x" : tensor<4x8x16xf32>
  %g0 = fx.get_attr "g0" : tensor<16xf32>
  %g1 = fx.get_attr "g1" : tensor<16xf32>
  %g2 = fx.get_attr "g2" : tensor<16xf32>
  %g3 = fx.get_attr "g3" : tensor<16xf32>
  %b0 = fx.get_attr "b0" : tensor<16xf32>
  %b1 = fx.get_attr "b1" : tensor<16xf32>
  %b2 = fx.get_attr "b2" : tensor<16xf32>
  %b3 = fx.get_attr "b3" : tensor<16xf32>
  %g = batch.pack %g0, %g1, %g2, %g3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %b = batch.pack %b0, %b1, %b2, %b3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %n = batch.layer_norm %x normalized_shape [16] weight %g bias %b : tensor<4x8x16xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x8x16xf32>
  %m0, %m1, %m2, %m3 = batch.unpack %n : tensor<4x8x16xf32> -> tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  %r = torch.relu %m0 : tensor<8x16xf32> -> tensor<8x16xf32>
  fx.output (%r, %m1, %m2, %m3)
}

// -----

// A batched linear stays one baddbmm under Inductor (bmm without bias),
// remarked too.
// IND-LABEL:   fx.graph @linear
// IND:           torch.baddbmm
// IND-NOT:       torch.linear
// REMARK:        remark: lower-batch: target inductor: linear of 2 members lowered batched (baddbmm): one extern call for the group
// EAGER-LABEL: fx.graph @linear
// EAGER:         torch.baddbmm
fx.graph @linear {
  %x = fx.placeholder "x" : tensor<2x8x16xf32>
  %w0 = fx.placeholder "w0" : tensor<4x16xf32>
  %w1 = fx.placeholder "w1" : tensor<4x16xf32>
  %c0 = fx.placeholder "c0" : tensor<4xf32>
  %c1 = fx.placeholder "c1" : tensor<4xf32>
  %w = batch.pack %w0, %w1 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<2x4x16xf32>
  %c = batch.pack %c0, %c1 : tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %y = batch.linear %x, %w bias %c : tensor<2x8x16xf32>, tensor<2x4x16xf32>, tensor<2x4xf32> -> tensor<2x8x4xf32>
  %y0, %y1 = batch.unpack %y : tensor<2x8x4xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  fx.output (%y0, %y1)
}
