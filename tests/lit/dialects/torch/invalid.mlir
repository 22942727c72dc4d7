// RUN: optimus-opt %s --split-input-file --verify-diagnostics
// One case per verifier rejection of the torch dialect.

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<f32>
    %w = fx.placeholder "w" : tensor<8x12xf32>
    // expected-error@+1 {{'torch.linear' operand #0 (input) has rank 0, expected at least 1}}
    %r = torch.linear %x, %w : tensor<f32>, tensor<8x12xf32> -> tensor<8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<12xf32>
    // expected-error@+1 {{'torch.linear' operand #1 (weight) has rank 1, expected 2}}
    %r = torch.linear %x, %w : tensor<2x12xf32>, tensor<12xf32> -> tensor<2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<8x10xf32>
    // expected-error@+1 {{'torch.linear' operand #0 (input) has 12 features but operand #1 (weight) has shape 8x10 (expected 10 features)}}
    %r = torch.linear %x, %w : tensor<2x12xf32>, tensor<8x10xf32> -> tensor<2x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<8x12xf32>
    %b = fx.placeholder "b" : tensor<7xf32>
    // expected-error@+1 {{'torch.linear' operand #2 (bias) has size 7, expected 8}}
    %r = torch.linear %x, %w, %b : tensor<2x12xf32>, tensor<8x12xf32>, tensor<7xf32> -> tensor<2x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<8x12xf32>
    %b = fx.placeholder "b" : tensor<1x8xf32>
    // expected-error@+1 {{'torch.linear' operand #2 (bias) has rank 2, expected 1}}
    %r = torch.linear %x, %w, %b : tensor<2x12xf32>, tensor<8x12xf32>, tensor<1x8xf32> -> tensor<2x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<8x12xf16>
    // expected-error@+1 {{'torch.linear' operand #1 (weight) has element type f16 but operand #0 (input) has f32}}
    %r = torch.linear %x, %w : tensor<2x12xf32>, tensor<8x12xf16> -> tensor<2x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32, "cpu">
    %w = fx.placeholder "w" : tensor<8x12xf32, "cuda:0">
    // expected-error@+1 {{'torch.linear' operand #1 (weight) is on device "cuda:0" but operand #0 (input) is on "cpu"}}
    %r = torch.linear %x, %w : tensor<2x12xf32, "cpu">, tensor<8x12xf32, "cuda:0"> -> tensor<2x8xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<8x12xf32>
    // expected-error@+1 {{'torch.linear' result #0 has shape 2x7, expected 2x8}}
    %r = torch.linear %x, %w : tensor<2x12xf32>, tensor<8x12xf32> -> tensor<2x7xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<8x12xf32>
    // expected-error@+1 {{'torch.linear' result #0 has rank 3, expected 2}}
    %r = torch.linear %x, %w : tensor<2x12xf32>, tensor<8x12xf32> -> tensor<2x8x1xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<8x12xf32>
    // expected-error@+1 {{'torch.linear' result #0 has element type f64, expected f32}}
    %r = torch.linear %x, %w : tensor<2x12xf32>, tensor<8x12xf32> -> tensor<2x8xf64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32, "cpu">
    %w = fx.placeholder "w" : tensor<8x12xf32>
    // expected-error@+1 {{'torch.linear' result #0 is on device "cuda:0", expected "cpu"}}
    %r = torch.linear %x, %w : tensor<2x12xf32, "cpu">, tensor<8x12xf32> -> tensor<2x8xf32, "cuda:0">
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %m = fx.placeholder "m" : tensor<10x4xf32>
    // expected-error@+1 {{'torch.mm' operand #0 (lhs) of shape 2x12 and operand #1 (rhs) of shape 10x4 have mismatched inner dims (12 vs 10)}}
    %r = torch.mm %x, %m : tensor<2x12xf32>, tensor<10x4xf32> -> tensor<2x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x3x12xf32>
    %m = fx.placeholder "m" : tensor<12x4xf32>
    // expected-error@+1 {{'torch.mm' operand #0 (lhs) has rank 3, expected 2}}
    %r = torch.mm %x, %m : tensor<2x3x12xf32>, tensor<12x4xf32> -> tensor<2x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %c = fx.placeholder "c" : tensor<3x4xf32>
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %m = fx.placeholder "m" : tensor<12x4xf32>
    // expected-error@+1 {{'torch.addmm' operand #0 (input) of shape 3x4 does not broadcast to 2x4}}
    %r = torch.addmm %c, %x, %m : tensor<3x4xf32>, tensor<2x12xf32>, tensor<12x4xf32> -> tensor<2x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %c = fx.placeholder "c" : tensor<4xi64>
    %x = fx.placeholder "x" : tensor<2x12xi64>
    %m = fx.placeholder "m" : tensor<12x4xi64>
    // expected-error@+1 {{'torch.addmm' alpha must be an integer for integral inputs of type i64}}
    %r = torch.addmm %c, %x, %m alpha 0.5 : tensor<4xi64>, tensor<2x12xi64>, tensor<12x4xi64> -> tensor<2x4xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %a = fx.placeholder "a" : tensor<3x2x12xf32>
    %b = fx.placeholder "b" : tensor<4x12x5xf32>
    // expected-error@+1 {{'torch.bmm' operand #0 (lhs) and operand #1 (rhs) have different batch sizes (3 vs 4)}}
    %r = torch.bmm %a, %b : tensor<3x2x12xf32>, tensor<4x12x5xf32> -> tensor<3x2x5xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %c = fx.placeholder "c" : tensor<3x2x6xf32>
    %a = fx.placeholder "a" : tensor<3x2x12xf32>
    %b = fx.placeholder "b" : tensor<3x12x5xf32>
    // expected-error@+1 {{'torch.baddbmm' operand #0 (input) of shape 3x2x6 does not broadcast to 3x2x5}}
    %r = torch.baddbmm %c, %a, %b : tensor<3x2x6xf32>, tensor<3x2x12xf32>, tensor<3x12x5xf32> -> tensor<3x2x5xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %a = fx.placeholder "a" : tensor<f32>
    %b = fx.placeholder "b" : tensor<3xf32>
    // expected-error@+1 {{'torch.matmul' operand #0 (lhs) has rank 0, expected at least 1}}
    %r = torch.matmul %a, %b : tensor<f32>, tensor<3xf32> -> tensor<f32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %a = fx.placeholder "a" : tensor<2x3x4xf32>
    %b = fx.placeholder "b" : tensor<5x4x6xf32>
    // expected-error@+1 {{'torch.matmul' operands have shapes 2 and 5 that do not broadcast (dim 0: 2 vs 5)}}
    %r = torch.matmul %a, %b : tensor<2x3x4xf32>, tensor<5x4x6xf32> -> tensor<2x3x6xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %a = fx.placeholder "a" : tensor<2x3x4xf32>
    %b = fx.placeholder "b" : tensor<5xf32>
    // expected-error@+1 {{'torch.matmul' operand #0 (lhs) of shape 2x3x4 and operand #1 (rhs) of shape 5 have mismatched inner dims (4 vs 5)}}
    %r = torch.matmul %a, %b : tensor<2x3x4xf32>, tensor<5xf32> -> tensor<2x3xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.layer_norm' normalized_shape must not be empty}}
    %r = torch.layer_norm %x normalized_shape [] : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.layer_norm' operand #0 (input) of shape 2x12 does not end with normalized_shape [2, 6]}}
    %r = torch.layer_norm %x normalized_shape [2, 6] : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %w = fx.placeholder "w" : tensor<6xf32>
    // expected-error@+1 {{'torch.layer_norm' operand #1 (weight) has shape 6, expected 12 (normalized_shape)}}
    %r = torch.layer_norm %x normalized_shape [12] weight %w : tensor<2x12xf32>, tensor<6xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %b = fx.placeholder "b" : tensor<12xf16>
    // expected-error@+1 {{'torch.layer_norm' operand #1 (bias) has element type f16 but operand #0 (input) has f32}}
    %r = torch.layer_norm %x normalized_shape [12] bias %b : tensor<2x12xf32>, tensor<12xf16> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.split' sections [4, 4] sum to 8 but dim 1 of the input has size 12}}
    %a, %b = torch.split %x sections [4, 4] dim 1 : tensor<2x12xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.split' dim 2 is out of range for rank 2 (expected 0 <= dim < 2)}}
    %a, %b = torch.split %x sections [6, 6] dim 2 : tensor<2x12xf32> -> tensor<2x6xf32>, tensor<2x6xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.split' sections [14, -2] has a negative size}}
    %a, %b = torch.split %x sections [14, -2] dim 1 : tensor<2x12xf32> -> tensor<2x14xf32>, tensor<2x0xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.split' has 2 results, expected 3}}
    %a, %b = torch.split %x sections [4, 4, 4] dim 1 : tensor<2x12xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.split' result #0 has shape 2x8, expected 2x4}}
    %a, %b = torch.split %x sections [4, 8] dim 1 : tensor<2x12xf32> -> tensor<2x8xf32>, tensor<2x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.unbind' has 1 results, expected 2}}
    %a = torch.unbind %x dim 0 : tensor<2x12xf32> -> tensor<12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<f32>
    // expected-error@+1 {{'torch.unbind' operand #0 (input) has rank 0, expected at least 1}}
    %a = torch.unbind %x dim 0 : tensor<f32> -> tensor<f32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %y = fx.placeholder "y" : tensor<2x12x1xf32>
    // expected-error@+1 {{'torch.cat' operand #1 has rank 3, expected 2}}
    %r = torch.cat %x, %y dim 0 : tensor<2x12xf32>, tensor<2x12x1xf32> -> tensor<4x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %y = fx.placeholder "y" : tensor<2x10xf32>
    // expected-error@+1 {{'torch.cat' operand #1 dim 1 has size 10, expected 12}}
    %r = torch.cat %x, %y dim 0 : tensor<2x12xf32>, tensor<2x10xf32> -> tensor<4x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.cat' dim 2 is out of range for rank 2 (expected 0 <= dim < 2)}}
    %r = torch.cat %x dim 2 : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    // expected-error@+1 {{'torch.cat' needs at least one operand}}
    %r = torch.cat dim 0 : -> tensor<2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %y = fx.placeholder "y" : tensor<2x12xf64>
    // expected-error@+1 {{'torch.cat' result #0 has element type f32, expected f64}}
    %r = torch.cat %x, %y dim 0 : tensor<2x12xf32>, tensor<2x12xf64> -> tensor<4x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32, "cpu">
    %y = fx.placeholder "y" : tensor<2x12xf32, "cuda:0">
    // expected-error@+1 {{'torch.cat' operand #1 is on device "cuda:0" but operand #0 is on "cpu"}}
    %r = torch.cat %x, %y dim 0 : tensor<2x12xf32, "cpu">, tensor<2x12xf32, "cuda:0"> -> tensor<4x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %y = fx.placeholder "y" : tensor<2x10xf32>
    // expected-error@+1 {{'torch.stack' operand #1 has shape 2x10, expected 2x12 (stacked tensors must have equal shapes)}}
    %r = torch.stack %x, %y dim 0 : tensor<2x12xf32>, tensor<2x10xf32> -> tensor<2x2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.stack' dim 3 is out of range for rank 2 (expected 0 <= dim <= 2)}}
    %r = torch.stack %x dim 3 : tensor<2x12xf32> -> tensor<1x2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x1x12xf32>
    // expected-error@+1 {{'torch.squeeze' cannot squeeze dim 0 of size 2 (expected size 1)}}
    %r = torch.squeeze %x dims [0] : tensor<2x1x12xf32> -> tensor<1x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x1x12xf32>
    // expected-error@+1 {{'torch.squeeze' dims [1, 1] has a repeated dim}}
    %r = torch.squeeze %x dims [1, 1] : tensor<2x1x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.unsqueeze' dim 3 is out of range for rank 2 (expected 0 <= dim <= 2)}}
    %r = torch.unsqueeze %x dim 3 : tensor<2x12xf32> -> tensor<2x12x1xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.reshape' shape [-1, -1] has more than one -1}}
    %r = torch.reshape %x shape [-1, -1] : tensor<2x12xf32> -> tensor<4x6xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.reshape' cannot reshape a tensor of 24 elements into shape [5, -1]}}
    %r = torch.reshape %x shape [5, -1] : tensor<2x12xf32> -> tensor<5x5xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.view' cannot reshape a tensor of 24 elements into shape [4, 5]}}
    %r = torch.view %x shape [4, 5] : tensor<2x12xf32> -> tensor<4x5xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.view' shape [4, -3] has a negative size}}
    %r = torch.view %x shape [4, -3] : tensor<2x12xf32> -> tensor<4x6xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.reshape' result #0 has shape 6x4, expected 4x6}}
    %r = torch.reshape %x shape [4, 6] : tensor<2x12xf32> -> tensor<6x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x3x4xf32>
    // expected-error@+1 {{'torch.flatten' start_dim 2 is after end_dim 1}}
    %r = torch.flatten %x start_dim 2 end_dim 1 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x3x4xf32>
    // expected-error@+1 {{'torch.flatten' end_dim 3 is out of range for rank 3 (expected 0 <= end_dim < 3)}}
    %r = torch.flatten %x start_dim 0 end_dim 3 : tensor<2x3x4xf32> -> tensor<24xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.unflatten' cannot reshape dim 1 of 12 elements into sizes [5, -1]}}
    %r = torch.unflatten %x dim 1 sizes [5, -1] : tensor<2x12xf32> -> tensor<2x5x2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.unflatten' sizes must not be empty}}
    %r = torch.unflatten %x dim 1 sizes [] : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x3x4xf32>
    // expected-error@+1 {{'torch.permute' dims [0, 0, 1] is not a permutation of 0..2}}
    %r = torch.permute %x dims [0, 0, 1] : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x3x4xf32>
    // expected-error@+1 {{'torch.permute' dims [1, 0] has 2 entries, expected 3 (the rank)}}
    %r = torch.permute %x dims [1, 0] : tensor<2x3x4xf32> -> tensor<3x2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.transpose' dim1 2 is out of range for rank 2 (expected 0 <= dim1 < 2)}}
    %r = torch.transpose %x dim0 0 dim1 2 : tensor<2x12xf32> -> tensor<12x2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x3x4xf32>
    // expected-error@+1 {{'torch.movedim' source [0, 1] and destination [2] have different lengths}}
    %r = torch.movedim %x source [0, 1] destination [2] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x3x4xf32>
    // expected-error@+1 {{'torch.movedim' source [0, 0] has a repeated dim}}
    %r = torch.movedim %x source [0, 0] destination [1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.slice' start 4 and end 13 are not canonical for dim 1 of size 12 (expected 0 <= start <= end <= 12)}}
    %r = torch.slice %x dim 1 start 4 end 13 : tensor<2x12xf32> -> tensor<2x9xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.slice' step 0 must be positive}}
    %r = torch.slice %x dim 1 start 0 end 12 step 0 : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.slice' result #0 has shape 2x2, expected 2x3}}
    %r = torch.slice %x dim 1 start 0 end 12 step 5 : tensor<2x12xf32> -> tensor<2x2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.select' index 2 is out of range for dim 0 of size 2}}
    %r = torch.select %x dim 0 index 2 : tensor<2x12xf32> -> tensor<12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.tanh' result #0 has shape 2x11, expected 2x12}}
    %r = torch.tanh %x : tensor<2x12xf32> -> tensor<2x11xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi64>
    // expected-error@+1 {{'torch.tanh' result #0 has element type i64, expected f32}}
    %r = torch.tanh %x : tensor<2xi64> -> tensor<2xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi64>
    // expected-error@+1 {{'torch.silu' does not support element type i64}}
    %r = torch.silu %x : tensor<2xi64> -> tensor<2xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi1>
    // expected-error@+1 {{'torch.neg' does not support element type i1}}
    %r = torch.neg %x : tensor<2xi1> -> tensor<2xi1>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xf80>
    // expected-error@+1 {{'torch.relu' operand #0 (input) has element type f80, which has no torch dtype}}
    %r = torch.relu %x : tensor<2xf80> -> tensor<2xf80>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.gelu' approximate must be one of "none" | "tanh", got "erf"}}
    %r = torch.gelu %x approximate "erf" : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.clamp' needs at least one of min and max}}
    %r = torch.clamp %x : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi64>
    // expected-error@+1 {{'torch.clamp' result #0 has element type i64, expected f32}}
    %r = torch.clamp %x min 0.5 : tensor<2xi64> -> tensor<2xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.dropout' p must be in [0, 1], got 1.5}}
    %r = torch.dropout %x p 1.5 train : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32, "cpu">
    // expected-error@+1 {{'torch.exp' result #0 is on device "cuda:0", expected "cpu"}}
    %r = torch.exp %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cuda:0">
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %y = fx.placeholder "y" : tensor<3x12xf32>
    // expected-error@+1 {{'torch.add' operands have shapes 2x12 and 3x12 that do not broadcast (dim 0: 2 vs 3)}}
    %r = torch.add %x, %y : tensor<2x12xf32>, tensor<3x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %y = fx.placeholder "y" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.add' needs exactly one of an rhs operand and a scalar}}
    %r = torch.add %x, %y scalar 1 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.mul' needs exactly one of an rhs operand and a scalar}}
    %r = torch.mul %x : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    %y = fx.placeholder "y" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.sub' reverse is only meaningful with a scalar}}
    %r = torch.sub %x, %y reverse : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi1>
    %y = fx.placeholder "y" : tensor<2xi1>
    // expected-error@+1 {{'torch.sub' does not support operands of element types i1 and i1}}
    %r = torch.sub %x, %y : tensor<2xi1>, tensor<2xi1> -> tensor<2xi1>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi64>
    %y = fx.placeholder "y" : tensor<2xf16>
    // expected-error@+1 {{'torch.mul' result #0 has element type i64, expected f16}}
    %r = torch.mul %x, %y : tensor<2xi64>, tensor<2xf16> -> tensor<2xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi64>
    // expected-error@+1 {{'torch.div' result #0 has element type i64, expected f32}}
    %r = torch.div %x scalar 2 : tensor<2xi64> -> tensor<2xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.div' rounding_mode must be one of "none" | "trunc" | "floor", got "round"}}
    %r = torch.div %x scalar 2 rounding_mode "round" : tensor<2x12xf32> -> tensor<2x12xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xi64>
    %y = fx.placeholder "y" : tensor<2xi64>
    // expected-error@+1 {{'torch.add' does not support operands of element types i64 and i64}}
    %r = torch.add %x, %y alpha 1.5 : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2xf32, "cpu">
    %y = fx.placeholder "y" : tensor<2xf32, "cuda:0">
    // expected-error@+1 {{'torch.add' operand #1 (rhs) is on device "cuda:0" but operand #0 (lhs) is on "cpu"}}
    %r = torch.add %x, %y : tensor<2xf32, "cpu">, tensor<2xf32, "cuda:0"> -> tensor<2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.sum' dims entry 2 is out of range for rank 2 (expected 0 <= dims entry < 2)}}
    %r = torch.sum %x dims [2] : tensor<2x12xf32> -> tensor<2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.sum' dims [1, 1] has a repeated dim}}
    %r = torch.sum %x dims [1, 1] : tensor<2x12xf32> -> tensor<2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xi64>
    // expected-error@+1 {{'torch.mean' does not support element type i64}}
    %r = torch.mean %x dims [1] : tensor<2x12xi64> -> tensor<2xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32>
    // expected-error@+1 {{'torch.sum' result #0 has rank 1, expected 2}}
    %r = torch.sum %x dims [1] keepdim : tensor<2x12xf32> -> tensor<2xf32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xi32>
    // expected-error@+1 {{'torch.sum' result #0 has element type i32, expected i64}}
    %r = torch.sum %x : tensor<2x12xi32> -> tensor<i32>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xi64>
    // expected-error@+1 {{'torch.softplus' does not support element type i64: "softplus_cpu" not implemented for 'Long'}}
    %r = torch.softplus %x : tensor<2x12xi64> -> tensor<2x12xi64>
    fx.output []
  }
}

// -----

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xi64>
    // expected-error@+1 {{'torch.erf' result #0 has element type i64, expected f32}}
    %r = torch.erf %x : tensor<2x12xi64> -> tensor<2x12xi64>
    fx.output []
  }
}
