// The harness fails on a wrong CHECK: FileCheck exits non-zero (so that
// `not filecheck` succeeds) for a pattern that is absent, for a CHECK-NOT
// that is present, and for a CHECK-NEXT that is not on the next line.
// tests/test_optimus_opt.py::test_lit_reports_a_wrong_check runs lit itself
// on a suite with a wrong CHECK and asserts that lit fails.

// RUN: optimus-opt %s -p dce | filecheck %s --check-prefix=RIGHT
// RUN: optimus-opt %s -p dce | not filecheck %s --check-prefix=ABSENT
// RUN: optimus-opt %s -p dce | not filecheck %s --check-prefix=PRESENT
// RUN: optimus-opt %s -p dce | not filecheck %s --check-prefix=NEXT
// RUN: optimus-opt %s | not filecheck %s --check-prefix=RIGHT

// RIGHT:      %x = fx.placeholder "x"
// RIGHT-NOT:  torch.sigmoid
// RIGHT:      fx.output %x

// ABSENT: torch.sigmoid

// PRESENT-NOT: fx.placeholder

// NEXT:      fx.placeholder
// NEXT-NEXT: fx.graph

fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %dead = fx.call_function "torch.sigmoid"(%x) : tensor<4xf32>
  fx.output %x
}
