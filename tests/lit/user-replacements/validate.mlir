// Registered replacements go through the same checks as built-in patterns:
// differential validation after the pass, bisection over their rewrites,
// and the rewrite log names the replacement.

// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/replacements_plugin.py -p raise-fx,user-replacements --validate-each | filecheck %s --check-prefix=OK
// OK:          fx.graph @forward
// OK-COUNT-2:  torch.silu
// OK-NOT:      torch.sigmoid

// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/replacements_plugin.py -p raise-fx,user-replacements --bisect 2>&1 | filecheck %s --check-prefix=CLEAN
// CLEAN: the pipeline keeps the results; nothing to bisect

// One rewrite allowed: the first swish only (the rewrite log names it).
// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/replacements_plugin.py -p raise-fx,user-replacements --bisect-rewrites=1 --print-rewrite-log 2>&1 | filecheck %s --check-prefix=ONE
// ONE:      user-replacements{{.*}}sigmoid-mul-to-silu
// ONE-NOT:  sigmoid-mul-to-silu
// ONE:      torch.silu %x
// ONE:      torch.sigmoid %silu
// ONE:      fx.output

// Each replacement is a pass of its own name:
// RUN: optimus-opt %s --load-pass-plugin=%S/Inputs/replacements_plugin.py -p raise-fx,tanh-half-to-sigmoid,sigmoid-mul-to-silu --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=ALONE
// ALONE:      'tanh-half-to-sigmoid'
// ALONE-NEXT:   (S) 0 rewrites
// ALONE:      'sigmoid-mul-to-silu'
// ALONE-NEXT:   (S) 2 rewrites

builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
    %s = fx.call_function "torch.sigmoid"(%x) : tensor<2x4xf32, "cpu">
    %m = fx.call_function "operator.mul"(%s, %x) : tensor<2x4xf32, "cpu">
    %t = fx.call_method "sigmoid"(%m) : tensor<2x4xf32, "cpu">
    %n = fx.call_function "operator.mul"(%m, %t) : tensor<2x4xf32, "cpu">
    fx.output (%n,)
  }
}
