"""A pass plugin registering user replacements, for the lit tests of
`user-replacements` (`optimus-opt --load-pass-plugin=.../replacements_plugin.py`).

* `sigmoid-mul-to-silu`: `sigmoid(x) * x` -> `F.silu(x)`, any 2-d float32 shape;
* `tanh-half-to-sigmoid`: `tanh(x) * 0.5 + 0.5` -> `sigmoid(2 * x)` (literal
  arguments must match), any 1-d float32 shape.
"""

import torch
import torch.nn.functional as F

import optimus_ir

optimus_ir.register_replacement(
    "sigmoid-mul-to-silu",
    lambda x: torch.sigmoid(x) * x,
    lambda x: F.silu(x),
    [torch.randn(4, 8)],
)

optimus_ir.register_replacement(
    "tanh-half-to-sigmoid",
    lambda x: torch.tanh(x) * 0.5 + 0.5,
    lambda x: torch.sigmoid(2 * x),
    [torch.randn(16)],
)
