"""Issue 21 item 5: plumbing between fused ops. Consecutive fused groups stay
in the batched layout, and the lowering and the output boundary emit no op
that nobody needs (no `.contiguous()` on an output already contiguous, no
single-tensor stack/cat, no copy that only restores an unread layout), while
outputs keep eager's values, strides and distinctness."""

from __future__ import annotations

import collections

import torch
from torch import nn

from optimus_ir.api import op_kind, optimize
from pipelines import FUSE_ALL


def kinds(gm: torch.fx.GraphModule) -> collections.Counter[str]:
    """How many calls of each kind the optimized graph makes."""
    return collections.Counter(op_kind(n) for n in gm.graph.nodes if n.op.startswith("call"))


def assert_same_outputs(got: object, want: object) -> None:
    """Equal values and strides, output by output."""
    if isinstance(want, torch.Tensor):
        got, want = [got], [want]
    assert len(got) == len(want)  # type: ignore[arg-type]
    for g, w in zip(got, want):  # type: ignore[call-overload]
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride()


class AccumulatedLogit(nn.Module):
    """DeepFM's head: `logit = x.new_zeros(...)`, accumulated with `+=`, then
    `sigmoid(logit)`: row-major in eager and in the optimized graph."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 1)
        self.b = nn.Linear(8, 1)
        self.bias = nn.Parameter(torch.randn(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logit = x.new_zeros((x.shape[0], 1))
        logit += self.a(x)
        logit += torch.relu(self.b(x))
        logit += self.bias
        return torch.sigmoid(logit)


def test_no_contiguous_on_an_accumulated_logit() -> None:
    torch.manual_seed(0)
    model, x = AccumulatedLogit().eval(), torch.randn(16, 8)
    gm = optimize(model, (x,))
    assert kinds(gm)[".contiguous"] == 0, gm.code
    with torch.no_grad():
        assert_same_outputs(gm(x), model(x))


class TransposedAccumulator(nn.Module):
    """`t_()` changes strides in place: the output keeps eager's strides
    (a restore where the analysis cannot prove them)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.new_zeros((8, 16))
        z.t_()
        z += x
        return torch.sigmoid(z)


def test_an_in_place_transpose_keeps_eager_strides() -> None:
    model, x = TransposedAccumulator().eval(), torch.randn(16, 8)
    gm = optimize(model, (x,))
    with torch.no_grad():
        assert_same_outputs(gm(x), model(x))
