// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none grouped-linear=true}' | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=none grouped-linear=true}' | optimus-opt -p lower-batch | filecheck %s --check-prefix=LOWERED
// RUN: optimus-opt %s -p 'batch-fusion{grouped-linear=true cost-model=default}' --remarks 2>&1 | filecheck %s --check-prefix=CPU

// Linears of different shapes form one batch.grouped_linear when asked (a
// grouped-GEMM lowering computes them in one launch); the generic lowering
// is one linear per member, so on the CPU cost model it never pays.

// CHECK-LABEL: fx.graph @grouped
// CHECK:         %a, %b = batch.grouped_linear %x, %y, %w0, %w1 : tensor<4x16xf32>, tensor<4x32xf32>, tensor<8x16xf32>, tensor<24x32xf32> -> tensor<4x8xf32>, tensor<4x24xf32>
// LOWERED:       %a = torch.linear %x, %w0
// LOWERED-NEXT:  %b = torch.linear %y, %w1
// CPU:           remark: batch-fusion: 2 torch.linear (%a, %b) not fused: unprofitable
fx.graph @grouped {
  %x = fx.placeholder "x" : tensor<4x16xf32>
  %y = fx.placeholder "y" : tensor<4x32xf32>
  %w0 = fx.get_attr "w0" : tensor<8x16xf32>
  %w1 = fx.get_attr "w1" : tensor<24x32xf32>
  %a = torch.linear %x, %w0 : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %b = torch.linear %y, %w1 : tensor<4x32xf32>, tensor<24x32xf32> -> tensor<4x24xf32>
  fx.output (%a, %b)
}
