// RUN: optimus-opt %s -p canonicalize --split-input-file | filecheck %s

// The identities a captured graph carries fold away: a dropout in eval mode
// or with p = 0 is its input (torch returns the input itself), a
// `.contiguous()` of a contiguous value is the value, a cast to the value's
// own dtype and device is the value, a clone of a temporary nothing writes
// is the temporary.

// CHECK-LABEL: fx.graph @dropout
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %r = torch.relu %a
// CHECK-NEXT:    %s = torch.relu %a
// CHECK-NEXT:    %train = torch.dropout %a p 0.5 train
// CHECK-NEXT:    %one = torch.dropout %a p 1.0 train
// CHECK-NEXT:    fx.output (%r, %s, %train, %one, %a, %x)
fx.graph @dropout {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %a = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %eval = torch.dropout %a p 0.5 : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %zero = torch.dropout %a p 0.0 train : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %r = torch.relu %eval : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %s = torch.relu %zero : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  // training with p > 0 is random: kept (p = 1 too: it zeroes)
  %train = torch.dropout %a p 0.5 train : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %one = torch.dropout %a p 1.0 train : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  // returned together with its input, and of a graph input: torch returns
  // the input object itself, so the graph does too
  %ret = torch.dropout %a p 0.1 : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %in = torch.dropout %x p 0.1 : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  fx.output (%r, %s, %train, %one, %ret, %in)
}

// -----

// CHECK-LABEL: fx.graph @contiguous
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %t = torch.transpose %a dim0 0 dim1 1
// CHECK-NEXT:    %ct = fx.call_method "contiguous"(%t)
// CHECK-NEXT:    %cl = fx.call_method "contiguous"(%a, memory_format = #fx.object<"torch.channels_last">)
// CHECK-NEXT:    %opaque = fx.call_function "mylib.f"(%a)
// CHECK-NEXT:    %co = fx.call_method "contiguous"(%opaque)
// CHECK-NEXT:    %r = torch.relu %a
// CHECK-NEXT:    fx.output (%r, %a, %x, %ct, %cl, %co)
fx.graph @contiguous {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %a = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %ca = fx.call_method "contiguous"(%a) : tensor<4x6xf32, "cpu">
  %cf = fx.call_method "contiguous"(%a, memory_format = #fx.object<"torch.contiguous_format">) : tensor<4x6xf32, "cpu">
  %cx = fx.call_method "contiguous"(%x) : tensor<4x6xf32, "cpu">
  // not contiguous: a copy
  %t = torch.transpose %a dim0 0 dim1 1 : tensor<4x6xf32, "cpu"> -> tensor<6x4xf32, "cpu">
  %ct = fx.call_method "contiguous"(%t) : tensor<6x4xf32, "cpu">
  // another memory format, and a layout nobody knows: left alone
  %cl = fx.call_method "contiguous"(%a, memory_format = #fx.object<"torch.channels_last">) : tensor<4x6xf32, "cpu">
  %opaque = fx.call_function "mylib.f"(%a) : tensor<4x6xf32, "cpu">
  %co = fx.call_method "contiguous"(%opaque) : tensor<4x6xf32, "cpu">
  %r = torch.relu %ca : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  fx.output (%r, %cf, %cx, %ct, %cl, %co)
}

// -----

// CHECK-LABEL: fx.graph @casts
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %y = fx.placeholder "y"
// CHECK-NEXT:    %z = fx.placeholder "z"
// CHECK-NEXT:    %h = fx.placeholder "h"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %s = torch.add %a, %a
// CHECK-NEXT:    %s2 = torch.add %s, %a
// CHECK-NEXT:    %s3 = torch.add %s2, %a
// CHECK-NEXT:    %s4 = torch.add %s3, %a
// CHECK-NEXT:    %d = fx.call_method "double"(%a)
// CHECK-NEXT:    %td = fx.call_method "to"(%a, #fx.dtype<f64>)
// CHECK-NEXT:    %tz = fx.call_method "type_as"(%a, %z)
// CHECK-NEXT:    %copy = fx.call_method "to"(%a, #fx.dtype<f32>, copy = true)
// CHECK-NEXT:    %pos = fx.call_method "to"(%a, #fx.dtype<f32>, false, true)
// CHECK-NEXT:    %mf = fx.call_method "float"(%a, memory_format = #fx.object<"torch.channels_last">)
// CHECK-NEXT:    %unknown = fx.call_method "to"(%h, "cpu")
// CHECK-NEXT:    fx.output (%s4, %x, %d, %td, %tz, %copy, %pos, %mf, %unknown, %h)
fx.graph @casts {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %y = fx.placeholder "y" : tensor<4x6xf32, "cpu">
  %z = fx.placeholder "z" : tensor<4x6xf16, "cpu">
  %h = fx.placeholder "h" : tensor<4x6xf32>
  %a = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %f = fx.call_method "float"(%a) : tensor<4x6xf32, "cpu">
  %to = fx.call_method "to"(%a, #fx.dtype<f32>) : tensor<4x6xf32, "cpu">
  %ty = fx.call_method "type_as"(%a, %y) : tensor<4x6xf32, "cpu">
  %dev = fx.call_method "to"(%a, #fx.device<"cpu">, dtype = #fx.dtype<f32>, non_blocking = true) : tensor<4x6xf32, "cpu">
  %other = fx.call_method "to"(%a, %y) : tensor<4x6xf32, "cpu">
  %s = torch.add %f, %to : tensor<4x6xf32, "cpu">, tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %s2 = torch.add %s, %ty : tensor<4x6xf32, "cpu">, tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %s3 = torch.add %s2, %dev : tensor<4x6xf32, "cpu">, tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %s4 = torch.add %s3, %other : tensor<4x6xf32, "cpu">, tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  // a graph input cast to its own dtype is the input object itself in torch
  %xc = fx.call_method "to"(%x, "cpu", #fx.dtype<f32>) : tensor<4x6xf32, "cpu">
  // real casts, a forced copy, a positional True (copy), a memory format,
  // an unknown device: left alone (`float` never moves a tensor, so it
  // folds whatever the device)
  %d = fx.call_method "double"(%a) : tensor<4x6xf64, "cpu">
  %td = fx.call_method "to"(%a, #fx.dtype<f64>) : tensor<4x6xf64, "cpu">
  %tz = fx.call_method "type_as"(%a, %z) : tensor<4x6xf16, "cpu">
  %copy = fx.call_method "to"(%a, #fx.dtype<f32>, copy = true) : tensor<4x6xf32, "cpu">
  %pos = fx.call_method "to"(%a, #fx.dtype<f32>, false, true) : tensor<4x6xf32, "cpu">
  %mf = fx.call_method "float"(%a, memory_format = #fx.object<"torch.channels_last">) : tensor<4x6xf32, "cpu">
  %unknown = fx.call_method "to"(%h, "cpu") : tensor<4x6xf32>
  %hf = fx.call_method "float"(%h) : tensor<4x6xf32>
  fx.output (%s4, %xc, %d, %td, %tz, %copy, %pos, %mf, %unknown, %hf)
}

// -----

// CHECK-LABEL: fx.graph @clone
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %r = torch.relu %a
// CHECK-NEXT:    %b = torch.exp %x
// CHECK-NEXT:    %g = torch.sigmoid %x
// CHECK-NEXT:    fx.output (%r, %b, %g)
fx.graph @clone {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %a = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %c = fx.call_method "clone"(%a) : tensor<4x6xf32, "cpu">
  %r = torch.relu %c : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  // returned: the temporary itself is returned instead (nothing else returns it)
  %b = torch.exp %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %cb = fx.call_function "torch.clone"(%b) : tensor<4x6xf32, "cpu">
  %g = torch.sigmoid %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %cg = fx.call_method "clone"(%g, memory_format = #fx.object<"torch.preserve_format">) : tensor<4x6xf32, "cpu">
  fx.output (%r, %cb, %cg)
}

// -----

// Left alone: a clone of a graph input, of a temporary written in place
// before or after, a clone written in place, a clone returned beside the
// temporary it copies (two outputs would become one tensor), a clone of a
// view, a clone to another memory format.

// CHECK-LABEL: fx.graph @clone_leave_alone
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %cx = fx.call_method "clone"(%x)
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %ca = fx.call_method "clone"(%a)
// CHECK-NEXT:    %w = fx.call_method "add_"(%a, 1)
// CHECK-NEXT:    %b = torch.exp %x
// CHECK-NEXT:    %cb = fx.call_method "clone"(%b)
// CHECK-NEXT:    %wb = fx.call_method "mul_"(%cb, 2)
// CHECK-NEXT:    %c = torch.sigmoid %x
// CHECK-NEXT:    %cc = fx.call_method "clone"(%c)
// CHECK-NEXT:    %t = torch.transpose %c dim0 0 dim1 1
// CHECK-NEXT:    %ct = fx.call_method "clone"(%t)
// CHECK-NEXT:    %d = torch.relu %x
// CHECK-NEXT:    %cd = fx.call_method "clone"(%d, memory_format = #fx.object<"torch.contiguous_format">)
// CHECK-NEXT:    fx.output (%cx, %ca, %a, %cb, %c, %cc, %ct, %cd)
fx.graph @clone_leave_alone {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %cx = fx.call_method "clone"(%x) : tensor<4x6xf32, "cpu">
  %a = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %ca = fx.call_method "clone"(%a) : tensor<4x6xf32, "cpu">
  %w = fx.call_method "add_"(%a, 1) : tensor<4x6xf32, "cpu">
  %b = torch.exp %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %cb = fx.call_method "clone"(%b) : tensor<4x6xf32, "cpu">
  %wb = fx.call_method "mul_"(%cb, 2) : tensor<4x6xf32, "cpu">
  %c = torch.sigmoid %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %cc = fx.call_method "clone"(%c) : tensor<4x6xf32, "cpu">
  %t = torch.transpose %c dim0 0 dim1 1 : tensor<4x6xf32, "cpu"> -> tensor<6x4xf32, "cpu">
  %ct = fx.call_method "clone"(%t) : tensor<6x4xf32, "cpu">
  %d = torch.relu %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %cd = fx.call_method "clone"(%d, memory_format = #fx.object<"torch.contiguous_format">) : tensor<4x6xf32, "cpu">
  fx.output (%cx, %ca, %a, %cb, %c, %cc, %ct, %cd)
}

// -----

// Which calls return an operand itself is asked of torch (the call run on
// meta/fake tensors), not of a list of casts: `short` of an i16 tensor,
// `+x`, an eval-mode `F.dropout` fold; `short` of an f32 tensor (a copy),
// `x.cuda()` of a tensor whose device nobody knows (a copy on the CPU, the
// tensor itself on CUDA), an in-place `add_(0)` (it writes) stay.

// CHECK-LABEL: fx.graph @asked_of_torch
// CHECK-NEXT:    %x = fx.placeholder "x"
// CHECK-NEXT:    %i = fx.placeholder "i"
// CHECK-NEXT:    %h = fx.placeholder "h"
// CHECK-NEXT:    %a = torch.tanh %x
// CHECK-NEXT:    %f = fx.call_method "short"(%a)
// CHECK-NEXT:    %c = fx.call_method "cuda"(%h)
// CHECK-NEXT:    %w = fx.call_method "add_"(%a, 0)
// CHECK-NEXT:    fx.output (%i, %a, %a, %f, %c, %w)
fx.graph @asked_of_torch {
  %x = fx.placeholder "x" : tensor<4x6xf32, "cpu">
  %i = fx.placeholder "i" : tensor<4x6xi16, "cpu">
  %h = fx.placeholder "h" : tensor<4x6xf32>
  %a = torch.tanh %x : tensor<4x6xf32, "cpu"> -> tensor<4x6xf32, "cpu">
  %s = fx.call_method "short"(%i) : tensor<4x6xi16, "cpu">
  %p = fx.call_function "_operator.pos"(%a) : tensor<4x6xf32, "cpu">
  %d = fx.call_function "torch.nn.functional.dropout"(%a, 0.5, false) : tensor<4x6xf32, "cpu">
  %f = fx.call_method "short"(%a) : tensor<4x6xi16, "cpu">
  %c = fx.call_method "cuda"(%h) : tensor<4x6xf32>
  %w = fx.call_method "add_"(%a, 0) : tensor<4x6xf32, "cpu">
  fx.output (%s, %p, %d, %f, %c, %w)
}
