// RUN: optimus-opt %s -p 'match-output-strides{ranks=2,2,2,2,2,-1 strides=4,1,1,6,6,1,4,1,1,4}' | filecheck %s
// RUN: optimus-opt %s -p 'match-output-strides{ranks=2,2,2,2,2,-1 strides=4,1,1,6,6,1,4,1,1,4 rewritten=false}' | filecheck %s --check-prefix=UNREWRITTEN
// RUN: not optimus-opt %s -p 'match-output-strides{ranks=2 strides=4,1,1}' 2>&1 | filecheck %s --check-prefix=BAD

// Every output gets the strides the captured graph returned (the options:
// each output's rank, -1 for unknown, and the strides of the known ones).
// %t: a transpose, expected row-major (4, 1): `.contiguous()`.
// %u: a transpose, expected (1, 6): its strides already, left alone.
// %a: provably row-major, expected (6, 1): left alone.
// %r: an fx op reading an operator op's result, expected row-major: made
//     contiguous, unless no rewrite ran (`rewritten=false`: raising and
//     lowering keep every layout, so fx-only values are left alone).
// %b: expected column-major (1, 4), not provable: `match_strides`.
// %x: unknown strides (rank -1): left alone.

// CHECK-LABEL: fx.graph @outputs
// CHECK:         %b = torch.sigmoid %x
// CHECK-NEXT:    %t_contiguous = fx.call_method "contiguous"(%t)
// CHECK-NEXT:    %r_contiguous = fx.call_method "contiguous"(%r)
// CHECK-NEXT:    %b_restrided = fx.call_function "optimus_ir.passes.output_layout.match_strides"(%b, (1, 4))
// CHECK-NEXT:    fx.output (%t_contiguous, %u, %a, %r_contiguous, %b_restrided, %x)

// UNREWRITTEN-LABEL: fx.graph @outputs
// UNREWRITTEN:         %b = torch.sigmoid %x
// UNREWRITTEN-NEXT:    %t_contiguous = fx.call_method "contiguous"(%t)
// UNREWRITTEN-NEXT:    %b_restrided = fx.call_function "optimus_ir.passes.output_layout.match_strides"(%b, (1, 4))
// UNREWRITTEN-NEXT:    fx.output (%t_contiguous, %u, %a, %r, %b_restrided, %x)

// BAD: match-output-strides: 3 strides given for outputs of ranks [2] (want the sum of the known ranks)
fx.graph @outputs {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %a = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %t = torch.transpose %a dim0 0 dim1 1 : tensor<4x6xf32, "cpu"> -> tensor<6x4xf32, "cpu">
  %u = torch.transpose %a dim0 0 dim1 1 : tensor<4x6xf32, "cpu"> -> tensor<6x4xf32, "cpu">
  %r = fx.call_function "torch.relu"(%t) : tensor<6x4xf32, "cpu">
  %b = torch.sigmoid %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  fx.output (%t, %u, %a, %r, %b, %x)
}
