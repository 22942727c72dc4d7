// RUN: optimus-opt %s --split-input-file --verify-diagnostics
// One case per verifier rejection of softmax, log_softmax, where and masked_fill.
builtin.module {
  fx.graph @f {
    %i = fx.placeholder "i" : tensor<4x8xi64>
    // expected-error@+1 {{'torch.softmax' does not support element type i64}}
    %r = torch.softmax %i dim 1 : tensor<4x8xi64> -> tensor<4x8xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    // expected-error@+1 {{'torch.log_softmax' dim 2 is out of range for rank 2}}
    %r = torch.log_softmax %x dim 2 : tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    // expected-error@+1 {{'torch.softmax' result #0 has element type f32, expected f64}}
    %r = torch.softmax %x dim 1 dtype f64 : tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    %m = fx.placeholder "m" : tensor<4x8xf32>
    // expected-error@+1 {{'torch.where' operand #0 (condition) must have element type i1 (bool), got f32}}
    %r = torch.where %m, %x scalar 0.0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    %m = fx.placeholder "m" : tensor<4x8xi1>
    // expected-error@+1 {{'torch.where' needs exactly one of an other operand and a scalar}}
    %r = torch.where %m, %x, %x scalar 1.0 : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    %m = fx.placeholder "m" : tensor<3x8xi1>
    // expected-error@+1 {{'torch.where' operands have shapes 3x8 and 4x8 that do not broadcast}}
    %r = torch.where %m, %x scalar 1.0 : tensor<3x8xi1>, tensor<4x8xf32> -> tensor<4x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %i = fx.placeholder "i" : tensor<4x8xi32>
    %m = fx.placeholder "m" : tensor<4x8xi1>
    // expected-error@+1 {{'torch.masked_fill' cannot fill element type i32 with inf: value cannot be converted}}
    %r = torch.masked_fill %i, %m value inf : tensor<4x8xi32>, tensor<4x8xi1> -> tensor<4x8xi32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<4x8xf32>
    %m = fx.placeholder "m" : tensor<4x8xi8>
    // expected-error@+1 {{'torch.masked_fill' operand #1 (mask) must have element type i1 (bool), got i8}}
    %r = torch.masked_fill %x, %m value 0.0 : tensor<4x8xf32>, tensor<4x8xi8> -> tensor<4x8xf32>
    fx.output []
  }
}
