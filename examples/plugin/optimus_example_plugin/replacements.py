"""Replacements written as two torch functions (`optimus_ir.register_replacement`).

`sigmoid(x) * x` is `F.silu(x)`: one op and one pass
over memory instead of two ops, two passes and a temporary. Models written
before `nn.SiLU` existed, and many that copy them, spell swish by hand.

`register_replacement` traces both functions, raises them to optimus-ir's
operator dialect and checks at registration that they agree on the example
inputs and on randomized variants (other shapes, special values); a
replacement that computes something else is refused with a `ValueError`.
The pattern also matches `x * sigmoid(x)`: optimus-ir tries the operands of
a two-tensor `mul` both ways round.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import optimus_ir

EXAMPLE_INPUTS = (torch.randn(8, 16),)
"""One float32 matrix: matches float32 tensors of rank 2, any size."""


def swish(x: torch.Tensor) -> torch.Tensor:
    """Swish as written by hand."""
    return torch.sigmoid(x) * x


def silu(x: torch.Tensor) -> torch.Tensor:
    """The fused op."""
    return F.silu(x)


optimus_ir.register_replacement("swish-to-silu", swish, silu, EXAMPLE_INPUTS)
