// The driver's flags: IR dumps, statistics, timing, the rewrite budget and
// its log, named pipelines, stdin and -o.

// RUN: optimus-opt %s -p cse,dce -o %t.ir --print-ir-after-all 2> %t.after-all
// RUN: filecheck %s --check-prefix=RESULT < %t.ir
// RUN: filecheck %s --check-prefix=AFTER-ALL < %t.after-all
// RUN: optimus-opt %s -p cse,dce --print-ir-after=cse -o %t.ir 2>&1 | filecheck %s --check-prefix=AFTER-CSE
// RUN: optimus-opt %s -p cse,dce --pass-statistics -o %t.ir 2>&1 | filecheck %s --check-prefix=STATS
// RUN: optimus-opt %s -p cse,dce --time-passes -o %t.ir 2>&1 | filecheck %s --check-prefix=TIME
// RUN: optimus-opt %s -p cse,dce --max-rewrites=1 --print-rewrite-log 2>&1 | filecheck %s --check-prefix=BUDGET1
// RUN: optimus-opt %s -p cse,dce --max-rewrites=0 | filecheck %s --check-prefix=BUDGET0
// RUN: optimus-opt %s -p cse,dce --print-rewrite-log 2>&1 | filecheck %s --check-prefix=LOG
// RUN: optimus-opt - -p cleanup < %s | filecheck %s --check-prefix=RESULT
// RUN: optimus-opt %s -p default | filecheck %s --check-prefix=RESULT
// RUN: optimus-opt %s | filecheck %s --check-prefix=NOPASS

// RESULT-LABEL: fx.graph @g
// RESULT-NEXT:    %x = fx.placeholder "x"
// RESULT-NEXT:    %a = fx.call_function "torch.tanh"(%x)
// RESULT-NEXT:    %s = fx.call_function "torch.add"(%a, %a)
// RESULT-NEXT:    fx.output %s

// AFTER-ALL: // -----// IR Dump After cse //----- //
// AFTER-ALL:      %dead = fx.call_function "torch.sigmoid"
// AFTER-ALL:      %s = fx.call_function "torch.add"(%a, %a)
// AFTER-ALL: // -----// IR Dump After dce //----- //
// AFTER-ALL-NOT:  torch.sigmoid
// AFTER-ALL:      fx.output %s

// AFTER-CSE:     // -----// IR Dump After cse //----- //
// AFTER-CSE-NOT: IR Dump After dce

// STATS:      Pass statistics report
// STATS:      'cse'
// STATS-NEXT:   (S) 1 rewrites
// STATS-NEXT:   pattern merge-identical-op: tried 4, rewrote 1, {{[0-9.]+}} ms
// STATS-NEXT: 'dce'
// STATS-NEXT:   (S) 1 rewrites
// STATS-NEXT:   (S) 2 sweeps
// STATS-NEXT:   pattern erase-dead-op: tried {{[0-9]+}}, rewrote 1, {{[0-9.]+}} ms

// TIME:      Execution time report
// TIME:      Total Execution Time: {{[0-9.]+}} seconds
// TIME:      {{[0-9.]+}} ({{ *[0-9.]+}}%)  cse
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  dce
// The time outside the passes is in rows too, so the rows add up to Total.
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  parse
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  verify input
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  verify
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  print
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  other (pass manager)
// TIME-NEXT: {{[0-9.]+}} (100.0%)  Total

// With a budget of one rewrite, cse merges %b and dce may not touch %dead.
// BUDGET1:      rewrite [0] cse: merge-identical-op on fx.call_function #4 at {{.*}}optimus-opt-flags.mlir:[[# @LINE + 18]]:3
// BUDGET1-NOT:  rewrite [1]
// BUDGET1:      %dead = fx.call_function "torch.sigmoid"
// BUDGET1:      %s = fx.call_function "torch.add"(%a, %a)

// BUDGET0: %b = fx.call_function "torch.tanh"(%x)
// BUDGET0: %dead = fx.call_function "torch.sigmoid"

// LOG: rewrite [0] cse: merge-identical-op on fx.call_function #4 at {{.*}}optimus-opt-flags.mlir:[[# @LINE + 10]]:3
// LOG: rewrite [1] dce: erase-dead-op on fx.call_function #4 at {{.*}}optimus-opt-flags.mlir:[[# @LINE + 10]]:3

// No pipeline: the input is parsed, verified and printed back.
// NOPASS:      %b = fx.call_function "torch.tanh"(%x)
// NOPASS-NEXT: %dead = fx.call_function "torch.sigmoid"(%x)

fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %dead = fx.call_function "torch.sigmoid"(%x) : tensor<4xf32, "cpu">
  %s = fx.call_function "torch.add"(%a, %b) : tensor<4xf32, "cpu">
  fx.output %s
}
