"""A pass plugin registering replacements whose layout needs differ, for the
lit tests of `user-replacements`' layout check (`layout.mlir`).

* `half-tanh-flat`: `(tanh(x) * 0.5 + 0.5).reshape(-1)` ->
  `sigmoid(2 * x.view(-1))`. The `view` raises on a transposed `x` at
  registration (the pattern's `reshape` copies), so `x` must be provably
  contiguous where it matches;
* `sigmoid-mul-to-silu`: `sigmoid(x) * x` -> `F.silu(x)`, which runs on
  every layout variant: it matches any layout.
"""

import torch
import torch.nn.functional as F

import optimus_ir

optimus_ir.register_replacement(
    "half-tanh-flat",
    lambda x: (torch.tanh(x) * 0.5 + 0.5).reshape(-1),
    lambda x: torch.sigmoid(2 * x.view(-1)),
    [torch.randn(4, 8)],
)

optimus_ir.register_replacement(
    "sigmoid-mul-to-silu",
    lambda x: torch.sigmoid(x) * x,
    lambda x: F.silu(x),
    [torch.randn(4, 8)],
)
