// Differential validation and bisection, on the deliberately wrong
// `test-miscompile` pass (it turns the `nth` tanh into a sigmoid).

// A correct pipeline validates and prints the IR:
// RUN: optimus-opt %s -p raise-fx,cse,dce,lower-to-fx --validate-each | filecheck %s --check-prefix=OK
// OK: fx.graph @forward
// OK-COUNT-3: "torch.tanh"

// The wrong pass is caught, named, and the difference measured:
// RUN: not optimus-opt %s %{test_passes} -p 'test-miscompile{nth=1}' --validate-each 2>&1 | filecheck %s --check-prefix=CAUGHT
// CAUGHT: error: validation failed after pass 'test-miscompile{nth=1}': output #0: 8 of 8 elements differ, max abs difference

// Bisection names the one rewrite (pattern, op and source line) that breaks it:
// RUN: not optimus-opt %s %{test_passes} -p 'raise-fx,test-miscompile{nth=1}' --bisect 2>&1 | filecheck %s --check-prefix=BISECT
// BISECT: validate-each.mlir:30:5: error: rewrite #{{[0-9]+}} (test-miscompile: pattern 'tanh-to-sigmoid' on 'torch.tanh') is the first that changes the results

// The budget alone: with one rewrite allowed, only the first (harmless) one happens.
// RUN: optimus-opt %s %{test_passes} -p 'test-miscompile{nth=1}' --bisect-rewrites=1 | filecheck %s --check-prefix=BUDGET
// BUDGET-NOT: torch.sigmoid
// BUDGET: fx.output

// A correct pipeline has nothing to bisect:
// RUN: optimus-opt %s -p raise-fx,lower-to-fx --bisect 2>&1 | filecheck %s --check-prefix=CLEAN
// CLEAN: the pipeline keeps the results; nothing to bisect

builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
    %a = fx.call_function "torch.tanh"(%x) : tensor<2x4xf32, "cpu">
    %b = fx.call_function "torch.tanh"(%a) : tensor<2x4xf32, "cpu">
    %c = fx.call_function "torch.tanh"(%b) : tensor<2x4xf32, "cpu">
    fx.output (%c,)
  }
}
