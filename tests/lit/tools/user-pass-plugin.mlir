// A user's pass plugin (tests/plugins/user_passes.py: passes registered with
// the public @optimus_ir.register_pass) is a pass like the built-in ones:
// -p names it, its patterns are in --pass-statistics, its remarks show with
// --remarks, and --validate-each, --bisect and --bisect-rewrites apply to it.

// RUN: optimus-opt %s --load-pass-plugin=%S/../../plugins/user_passes.py -p raise-fx,fold-double-neg,dce --pass-statistics --remarks 2>%t.err | filecheck %s --check-prefix=FOLD
// RUN: filecheck %s --check-prefix=STATS < %t.err
// FOLD:      %x = fx.placeholder "x"
// FOLD-NEXT: %c = torch.tanh %x
// FOLD-NEXT: %d = torch.neg %c
// FOLD-NEXT: fx.output (%d,)
// STATS:      'fold-double-neg'
// STATS-NEXT:   (S) 1 rewrites
// STATS:        pattern fold-double-neg: tried {{[0-9]+}}, rewrote 1
// STATS:      user-pass-plugin.mlir:[[# @LINE + 25]]:5: remark: fold-double-neg: neg(neg(x)) folded to x

// The deliberately wrong user pass is caught by validation, and bisection
// names its wrong pattern after stepping over its correct rewrites:
// RUN: not optimus-opt %s --load-pass-plugin=%S/../../plugins/user_passes.py -p raise-fx,test-drop-neg --validate-each 2>&1 | filecheck %s --check-prefix=CAUGHT
// CAUGHT: error: validation failed after pass 'test-drop-neg': output #0: 8 of 8 elements differ
// RUN: not optimus-opt %s --load-pass-plugin=%S/../../plugins/user_passes.py -p raise-fx,test-drop-neg --bisect 2>&1 | filecheck %s --check-prefix=BISECT
// BISECT: user-pass-plugin.mlir:[[# @LINE + 20]]:5: error: rewrite #3 (test-drop-neg: pattern 'drop-neg' on 'torch.neg') is the first that changes the results (2 rewrites before it are fine)

// With the budget of the correct rewrite only, the single neg stays:
// RUN: optimus-opt %s --load-pass-plugin=%S/../../plugins/user_passes.py -p raise-fx,test-drop-neg --bisect-rewrites=1 --print-rewrite-log 2>%t.log | filecheck %s --check-prefix=BUDGET
// RUN: filecheck %s --check-prefix=LOG < %t.log
// BUDGET:      %c = torch.tanh %x
// BUDGET-NEXT: %d = torch.neg %c
// LOG:      rewrite [0] test-drop-neg: fold-double-neg on torch.neg
// LOG-NOT:  rewrite [1]

// Without the plugin the pass is unknown:
// RUN: not optimus-opt %s -p fold-double-neg 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: unknown pass 'fold-double-neg'

builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
    %a = fx.call_function "torch.neg"(%x) : tensor<2x4xf32, "cpu">
    %b = fx.call_function "torch.neg"(%a) : tensor<2x4xf32, "cpu">
    %c = fx.call_function "torch.tanh"(%b) : tensor<2x4xf32, "cpu">
    %d = fx.call_function "torch.neg"(%c) : tensor<2x4xf32, "cpu">
    fx.output (%d,)
  }
}
