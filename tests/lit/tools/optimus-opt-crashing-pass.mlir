// A pass that crashes (a bug, not bad input) is an internal error naming
// the pass, exit status 2, no traceback unless OPTIMUS_TRACEBACK is set.

// RUN: not optimus-opt %s %{test_passes} -p 'canonicalize,test-fail{message=boom},dce' > %t.out 2>&1
// RUN: filecheck %s < %t.out
// RUN: not grep -l Traceback %t.out
// RUN: env OPTIMUS_TRACEBACK=1 not optimus-opt %s %{test_passes} -p test-fail 2>&1 | filecheck %s --check-prefix=TRACE

// CHECK: optimus-opt-crashing-pass.mlir: internal error in pass 'test-fail{message="boom"}': TestPassFailure: boom
// CHECK-NEXT: (set OPTIMUS_TRACEBACK=1 to see the Python traceback)
// TRACE: Traceback
// TRACE: TestPassFailure: deliberate failure
// TRACE: (raised inside the optimus-ir pass 'test-fail')

fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %y = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  fx.output %y
}
