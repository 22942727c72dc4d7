// RUN: optimus-opt %s --load-pass-plugin=optimus_example_plugin -p fold-idempotent-activations | filecheck %s
// RUN: optimus-opt %s -p fold-idempotent-activations --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// relu(relu(x)) keeps the inner relu only.
// CHECK-LABEL: fx.graph @twice
// CHECK:         %[[R:.*]] = torch.relu %x
// CHECK-NOT:     torch.relu
// CHECK:         fx.output %[[R]]
// REMARK: fold-idempotent-activation: torch.relu(torch.relu(x)) folded to torch.relu(x)
builtin.module {
  fx.graph @twice {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    %r = torch.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
    %rr = torch.relu %r : tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output %rr
  }

// Both relus returned: folding would make the two outputs one tensor.
// CHECK-LABEL: fx.graph @inner_returned
// CHECK:         %[[R:.*]] = torch.relu %x
// CHECK:         %[[RR:.*]] = torch.relu %[[R]]
// CHECK:         fx.output (%[[R]], %[[RR]])
// REMARK: fold-idempotent-activation: not folded: the inner torch.relu is also read elsewhere
  fx.graph @inner_returned {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    %r = torch.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
    %rr = torch.relu %r : tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output (%r, %rr)
  }

// relu(abs(x)) is not f(f(x)): left alone.
// CHECK-LABEL: fx.graph @different
// CHECK:         torch.abs
// CHECK:         torch.relu
  fx.graph @different {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    %a = torch.abs %x : tensor<4x8xf32> -> tensor<4x8xf32>
    %r = torch.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output %r
  }
}
