"""A small model full of split/cat plumbing, for trying optimus-opt by hand.

`examples/plumbing.mlir` was made from it with::

    optimus-translate --import optimus_ir.examples.plumbing:make_model -o examples/plumbing.mlir

Each of the four towers takes a slice of the features, and the slices are
glued back in ways that the split-cat-simplify pass can see through.
"""

from __future__ import annotations

import torch
from torch import nn


class Plumbing(nn.Module):
    """split -> per-piece tanh towers -> cat, a split of a split, and a
    cat of all pieces of a split that is the input itself."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(4 * width, 4 * width)
        self.width = width

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pieces = torch.split(x, self.width, dim=1)
        towers = [torch.tanh(p) for p in pieces]
        joined = torch.cat(towers, dim=1)
        left, right = torch.split(self.proj(joined), [2 * self.width, 2 * self.width], dim=1)
        a, b = torch.split(left, self.width, dim=1)
        same = torch.cat([a, b, right], dim=1)
        return same, torch.stack(pieces, dim=0).sum(0)


def make_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Plumbing().eval(), (torch.randn(4, 32),)
