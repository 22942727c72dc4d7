// RUN: optimus-opt %s | optimus-opt | filecheck %s
// Every torch op prints, parses and prints again identically; defaults
// (alpha 1, step 1, approximate "none", eps 1e-05, ...) are left out.

builtin.module {
  fx.graph @f {
    %x = fx.placeholder "x" : tensor<2x12xf32, "cpu">
    %w = fx.placeholder "w" : tensor<8x12xf32, "cpu">
    %b = fx.placeholder "b" : tensor<8xf32, "cpu">
    %d = fx.placeholder "d" : tensor<?x4xf32>
    %i = fx.placeholder "i" : tensor<2x12xi64, "cpu">
    %m = fx.placeholder "m" : tensor<12x4xf32, "cpu">
    %bx = fx.placeholder "bx" : tensor<3x2x12xf32, "cpu">
    %bm = fx.placeholder "bm" : tensor<3x12x4xf32, "cpu">
    %s = fx.placeholder "s" : tensor<f64, "cpu">
    %g = fx.placeholder "g" : tensor<12xf32>
    %h = fx.placeholder "h" : tensor<2x12xbf16, "cpu">
    %lin = torch.linear %x, %w, %b : tensor<2x12xf32, "cpu">, tensor<8x12xf32, "cpu">, tensor<8xf32, "cpu"> -> tensor<2x8xf32, "cpu">
    %lin2 = torch.linear %x, %w : tensor<2x12xf32, "cpu">, tensor<8x12xf32, "cpu"> -> tensor<2x8xf32, "cpu">
    %mm = torch.mm %x, %m : tensor<2x12xf32, "cpu">, tensor<12x4xf32, "cpu"> -> tensor<2x4xf32, "cpu">
    %addmm = torch.addmm %mm, %x, %m beta 0.5 alpha 2 : tensor<2x4xf32, "cpu">, tensor<2x12xf32, "cpu">, tensor<12x4xf32, "cpu"> -> tensor<2x4xf32, "cpu">
    %bmm = torch.bmm %bx, %bm : tensor<3x2x12xf32, "cpu">, tensor<3x12x4xf32, "cpu"> -> tensor<3x2x4xf32, "cpu">
    %baddbmm = torch.baddbmm %bmm, %bx, %bm : tensor<3x2x4xf32, "cpu">, tensor<3x2x12xf32, "cpu">, tensor<3x12x4xf32, "cpu"> -> tensor<3x2x4xf32, "cpu">
    %matmul = torch.matmul %bx, %m : tensor<3x2x12xf32, "cpu">, tensor<12x4xf32, "cpu"> -> tensor<3x2x4xf32, "cpu">
    %ln = torch.layer_norm %x normalized_shape [12] : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %ln2 = torch.layer_norm %h normalized_shape [12] weight %g bias %g eps 1.0e-06 : tensor<2x12xbf16, "cpu">, tensor<12xf32>, tensor<12xf32> -> tensor<2x12xbf16, "cpu">
    %p0, %p1, %p2 = torch.split %x sections [4, 4, 4] dim 1 : tensor<2x12xf32, "cpu"> -> tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">
    %u0, %u1 = torch.unbind %x dim 0 : tensor<2x12xf32, "cpu"> -> tensor<12xf32, "cpu">, tensor<12xf32, "cpu">
    %cat = torch.cat %p0, %p1, %d dim 0 : tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">, tensor<?x4xf32> -> tensor<?x4xf32, "cpu">
    %stack = torch.stack %u0, %u1 dim 1 : tensor<12xf32, "cpu">, tensor<12xf32, "cpu"> -> tensor<12x2xf32, "cpu">
    %uns = torch.unsqueeze %x dim 2 : tensor<2x12xf32, "cpu"> -> tensor<2x12x1xf32, "cpu">
    %sq = torch.squeeze %uns dims [2] : tensor<2x12x1xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %rs = torch.reshape %x shape [3, -1] : tensor<2x12xf32, "cpu"> -> tensor<3x8xf32, "cpu">
    %vw = torch.view %d shape [-1, 2, 2] : tensor<?x4xf32> -> tensor<?x2x2xf32>
    %fl = torch.flatten %bx start_dim 1 end_dim 2 : tensor<3x2x12xf32, "cpu"> -> tensor<3x24xf32, "cpu">
    %ufl = torch.unflatten %x dim 1 sizes [3, -1] : tensor<2x12xf32, "cpu"> -> tensor<2x3x4xf32, "cpu">
    %perm = torch.permute %bx dims [2, 0, 1] : tensor<3x2x12xf32, "cpu"> -> tensor<12x3x2xf32, "cpu">
    %tr = torch.transpose %x dim0 0 dim1 1 : tensor<2x12xf32, "cpu"> -> tensor<12x2xf32, "cpu">
    %mv = torch.movedim %bx source [0] destination [2] : tensor<3x2x12xf32, "cpu"> -> tensor<2x12x3xf32, "cpu">
    %sl = torch.slice %x dim 1 start 2 end 12 step 3 : tensor<2x12xf32, "cpu"> -> tensor<2x4xf32, "cpu">
    %unf = torch.unfold %x dim 1 size 4 step 5 : tensor<2x12xf32, "cpu"> -> tensor<2x2x4xf32, "cpu">
    %sl2 = torch.slice %d dim 0 start 1 end 9223372036854775807 : tensor<?x4xf32> -> tensor<?x4xf32>
    %sel = torch.select %x dim 0 index 1 : tensor<2x12xf32, "cpu"> -> tensor<12xf32, "cpu">
    %tanh = torch.tanh %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %itanh = torch.tanh %i : tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
    %sig = torch.sigmoid %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %relu = torch.relu %i : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
    %silu = torch.silu %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %exp = torch.exp %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %log = torch.log %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %neg = torch.neg %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %abs = torch.abs %i : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
    %det = torch.detach %x {note = "kept"} : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %gelu = torch.gelu %x approximate "tanh" : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %gelu2 = torch.gelu %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %n2n = torch.nan_to_num %x nan 0.0 posinf 1.0e+30 neginf -inf : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %clamp = torch.clamp %x min -1.5 max 2 : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %iclamp = torch.clamp %i min 0.5 : tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
    %drop = torch.dropout %x p 0.1 train : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %drop2 = torch.dropout %x p 0.1 : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %b1 = torch.select %x dim 0 index 0 : tensor<2x12xf32, "cpu"> -> tensor<12xf32, "cpu">
    %add = torch.add %x, %b1 alpha 2 : tensor<2x12xf32, "cpu">, tensor<12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %adds = torch.add %i scalar 2.5 : tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
    %addp = torch.add %x, %s : tensor<2x12xf32, "cpu">, tensor<f64, "cpu"> -> tensor<2x12xf32, "cpu">
    %sub = torch.sub %x scalar 1 alpha 3 reverse : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %mul = torch.mul %x, %i : tensor<2x12xf32, "cpu">, tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
    %muls = torch.mul %i scalar true : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
    %div = torch.div %i, %i : tensor<2x12xi64, "cpu">, tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
    %divf = torch.div %i scalar 2 rounding_mode "floor" reverse : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
    %sum = torch.sum %i : tensor<2x12xi64, "cpu"> -> tensor<i64, "cpu">
    %sum2 = torch.sum %x dims [1] keepdim dtype f64 : tensor<2x12xf32, "cpu"> -> tensor<2x1xf64, "cpu">
    %mean = torch.mean %bx dims [0, 2] : tensor<3x2x12xf32, "cpu"> -> tensor<2xf32, "cpu">
    fx.output [%lin, %p2]
  }
}

// CHECK-LABEL: fx.graph @f
// CHECK: %lin = torch.linear %x, %w, %b : tensor<2x12xf32, "cpu">, tensor<8x12xf32, "cpu">, tensor<8xf32, "cpu"> -> tensor<2x8xf32, "cpu">
// CHECK: %lin2 = torch.linear %x, %w : tensor<2x12xf32, "cpu">, tensor<8x12xf32, "cpu"> -> tensor<2x8xf32, "cpu">
// CHECK: %mm = torch.mm %x, %m : tensor<2x12xf32, "cpu">, tensor<12x4xf32, "cpu"> -> tensor<2x4xf32, "cpu">
// CHECK: %addmm = torch.addmm %mm, %x, %m beta 0.5 alpha 2 : tensor<2x4xf32, "cpu">, tensor<2x12xf32, "cpu">, tensor<12x4xf32, "cpu"> -> tensor<2x4xf32, "cpu">
// CHECK: %bmm = torch.bmm %bx, %bm : tensor<3x2x12xf32, "cpu">, tensor<3x12x4xf32, "cpu"> -> tensor<3x2x4xf32, "cpu">
// CHECK: %baddbmm = torch.baddbmm %bmm, %bx, %bm : tensor<3x2x4xf32, "cpu">, tensor<3x2x12xf32, "cpu">, tensor<3x12x4xf32, "cpu"> -> tensor<3x2x4xf32, "cpu">
// CHECK: %matmul = torch.matmul %bx, %m : tensor<3x2x12xf32, "cpu">, tensor<12x4xf32, "cpu"> -> tensor<3x2x4xf32, "cpu">
// CHECK: %ln = torch.layer_norm %x normalized_shape [12] : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %ln2 = torch.layer_norm %h normalized_shape [12] weight %g bias %g eps 1.0e-06 : tensor<2x12xbf16, "cpu">, tensor<12xf32>, tensor<12xf32> -> tensor<2x12xbf16, "cpu">
// CHECK: %p0, %p1, %p2 = torch.split %x sections [4, 4, 4] dim 1 : tensor<2x12xf32, "cpu"> -> tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">
// CHECK: %u0, %u1 = torch.unbind %x dim 0 : tensor<2x12xf32, "cpu"> -> tensor<12xf32, "cpu">, tensor<12xf32, "cpu">
// CHECK: %cat = torch.cat %p0, %p1, %d dim 0 : tensor<2x4xf32, "cpu">, tensor<2x4xf32, "cpu">, tensor<?x4xf32> -> tensor<?x4xf32, "cpu">
// CHECK: %stack = torch.stack %u0, %u1 dim 1 : tensor<12xf32, "cpu">, tensor<12xf32, "cpu"> -> tensor<12x2xf32, "cpu">
// CHECK: %uns = torch.unsqueeze %x dim 2 : tensor<2x12xf32, "cpu"> -> tensor<2x12x1xf32, "cpu">
// CHECK: %sq = torch.squeeze %uns dims [2] : tensor<2x12x1xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %rs = torch.reshape %x shape [3, -1] : tensor<2x12xf32, "cpu"> -> tensor<3x8xf32, "cpu">
// CHECK: %vw = torch.view %d shape [-1, 2, 2] : tensor<?x4xf32> -> tensor<?x2x2xf32>
// CHECK: %fl = torch.flatten %bx start_dim 1 end_dim 2 : tensor<3x2x12xf32, "cpu"> -> tensor<3x24xf32, "cpu">
// CHECK: %ufl = torch.unflatten %x dim 1 sizes [3, -1] : tensor<2x12xf32, "cpu"> -> tensor<2x3x4xf32, "cpu">
// CHECK: %perm = torch.permute %bx dims [2, 0, 1] : tensor<3x2x12xf32, "cpu"> -> tensor<12x3x2xf32, "cpu">
// CHECK: %tr = torch.transpose %x dim0 0 dim1 1 : tensor<2x12xf32, "cpu"> -> tensor<12x2xf32, "cpu">
// CHECK: %mv = torch.movedim %bx source [0] destination [2] : tensor<3x2x12xf32, "cpu"> -> tensor<2x12x3xf32, "cpu">
// CHECK: %sl = torch.slice %x dim 1 start 2 end 12 step 3 : tensor<2x12xf32, "cpu"> -> tensor<2x4xf32, "cpu">
// CHECK: %unf = torch.unfold %x dim 1 size 4 step 5 : tensor<2x12xf32, "cpu"> -> tensor<2x2x4xf32, "cpu">
// CHECK: %sl2 = torch.slice %d dim 0 start 1 end 9223372036854775807 : tensor<?x4xf32> -> tensor<?x4xf32>
// CHECK: %sel = torch.select %x dim 0 index 1 : tensor<2x12xf32, "cpu"> -> tensor<12xf32, "cpu">
// CHECK: %tanh = torch.tanh %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %itanh = torch.tanh %i : tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %sig = torch.sigmoid %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %relu = torch.relu %i : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
// CHECK: %silu = torch.silu %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %exp = torch.exp %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %log = torch.log %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %neg = torch.neg %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %abs = torch.abs %i : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
// CHECK: %det = torch.detach %x {note = "kept"} : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %gelu = torch.gelu %x approximate "tanh" : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %gelu2 = torch.gelu %x : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %n2n = torch.nan_to_num %x nan 0.0 posinf 1.0e+30 neginf -inf : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %clamp = torch.clamp %x min -1.5 max 2 : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %iclamp = torch.clamp %i min 0.5 : tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %drop = torch.dropout %x p 0.1 train : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %drop2 = torch.dropout %x p 0.1 : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %b1 = torch.select %x dim 0 index 0 : tensor<2x12xf32, "cpu"> -> tensor<12xf32, "cpu">
// CHECK: %add = torch.add %x, %b1 alpha 2 : tensor<2x12xf32, "cpu">, tensor<12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %adds = torch.add %i scalar 2.5 : tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %addp = torch.add %x, %s : tensor<2x12xf32, "cpu">, tensor<f64, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %sub = torch.sub %x scalar 1 alpha 3 reverse : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %mul = torch.mul %x, %i : tensor<2x12xf32, "cpu">, tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %muls = torch.mul %i scalar true : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
// CHECK: %div = torch.div %i, %i : tensor<2x12xi64, "cpu">, tensor<2x12xi64, "cpu"> -> tensor<2x12xf32, "cpu">
// CHECK: %divf = torch.div %i scalar 2 rounding_mode "floor" reverse : tensor<2x12xi64, "cpu"> -> tensor<2x12xi64, "cpu">
// CHECK: %sum = torch.sum %i : tensor<2x12xi64, "cpu"> -> tensor<i64, "cpu">
// CHECK: %sum2 = torch.sum %x dims [1] keepdim dtype f64 : tensor<2x12xf32, "cpu"> -> tensor<2x1xf64, "cpu">
// CHECK: %mean = torch.mean %bx dims [0, 2] : tensor<3x2x12xf32, "cpu"> -> tensor<2xf32, "cpu">
// CHECK: fx.output [%lin, %p2]
