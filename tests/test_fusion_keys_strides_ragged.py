"""Issue 19, points 5-7: fusion keys that confused scalars, outputs that lost
eager's strides, and ragged groups that crashed lower-batch.

Each model runs through the default pipeline and FUSE_ALL (every group the
search finds fused) and is compared with eager: exactly where only data
moves or each element is computed by the same op, with the fp32 matmul
tolerance of `test_batch_fusion.py` where a batched matmul may sum in
another order; dtypes and strides (of dims of size > 1, as torch's
`is_contiguous` compares them) are those of eager.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from optimus_ir.api import optimize
from optimus_ir.passes.output_layout import match_strides
from pipelines import FUSE_ALL

PIPELINES = pytest.mark.parametrize("pipeline", [None, FUSE_ALL], ids=["default", "fuse-all"])
EXACT = dict(rtol=0.0, atol=0.0, equal_nan=True)
LANE_ULPS = dict(rtol=2.5e-7, atol=0.0, equal_nan=True)
"""Two fp32 ulps: tanh/sigmoid of the same element computed in another
layout run another of ATen's CPU loops (vector lanes or the scalar loop,
AVX2 or AVX512 builds), which differ by up to an ulp; the math is the same."""
F32 = dict(rtol=1e-5, atol=1e-5)


def _run(model: nn.Module, args: tuple, pipeline: str | None) -> torch.fx.GraphModule:
    if pipeline is None:
        return optimize(model, args)
    return optimize(model, args, pipeline=pipeline)


def _layout(t: torch.Tensor) -> tuple:
    """Strides of the dims of size > 1 (a size-1 dim's stride is free)."""
    return tuple(s if n > 1 else None for n, s in zip(t.shape, t.stride()))


def _compare(got, want, **tolerance) -> None:
    if isinstance(want, torch.Tensor):
        got, want = [got], [want]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"output {i}: dtype {g.dtype} != {w.dtype}"
        assert _layout(g) == _layout(w), f"output {i}: strides {g.stride()} != {w.stride()}"
        torch.testing.assert_close(g, w, **tolerance)


def _fused(gm: torch.fx.GraphModule) -> list[str]:
    return [r.message for r in gm.optimus_report.remarks if "batch-fusion: fused" in r.message]


# ---------------------------------------------------------------------------
# Point 5: scalars keyed by Python type and bits
# ---------------------------------------------------------------------------


class IntAndFloatScalars(nn.Module):
    """`q * 2` keeps an integral dtype, `q * 2.0` promotes to float32."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c, d = x.split(2, dim=1)
        return a * 2, b * 2.0, c * 2, d * 2.0, a + 3, b + 3.0, c + 3, d + 3.0


class SignedZeroBounds(nn.Module):
    """`clamp(min=0.0)` and `clamp(min=-0.0)` differ on negative inputs:
    `1 / x` turns the zero's sign into +-inf."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c, d = x.split(2, dim=1)
        return (
            1 / a.clamp(min=0.0),
            1 / b.clamp(min=-0.0),
            1 / c.clamp(min=0.0),
            1 / d.clamp(min=-0.0),
        )


class BoolAndIntScalars(nn.Module):
    """On a bool tensor `* True` stays bool, `* 1` becomes int64."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c, d = x.split(2, dim=1)
        return a * True, b * 1, c * True, d * 1


class NanBounds(nn.Module):
    """Equal NaN bounds are one key (NaN != NaN must not keep them apart)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c, d = x.split(2, dim=1)
        nan = float("nan")
        return a.clamp(max=nan), b.clamp(max=nan), c.clamp(max=nan), d.clamp(max=nan)


@PIPELINES
@pytest.mark.parametrize(
    "model, make_input",
    [
        (IntAndFloatScalars(), lambda: torch.arange(64).reshape(8, 8)),
        (SignedZeroBounds(), lambda: -torch.rand(8, 8) - 0.5),
        (BoolAndIntScalars(), lambda: torch.rand(8, 8) > 0.5),
        (NanBounds(), lambda: torch.randn(8, 8)),
    ],
    ids=["int-float", "signed-zero", "bool-int", "nan"],
)
def test_scalar_kinds_are_grouped_apart(pipeline, model, make_input) -> None:
    x = make_input()
    gm = _run(model, (x,), pipeline)
    with torch.no_grad():
        _compare(gm(x), model(x), **EXACT)
        other = make_input()
        _compare(gm(other), model(other), **EXACT)
    if pipeline is FUSE_ALL:
        fused = _fused(gm)
        assert fused, "the members of each scalar kind still fuse"
        if isinstance(model, NanBounds):
            assert any("fused 4 torch.clamp" in m for m in fused)


# ---------------------------------------------------------------------------
# Point 6: outputs keep the captured graph's strides, whatever the layout
# ---------------------------------------------------------------------------


class TransposedMembers(nn.Module):
    """`sigmoid(tanh(piece).t())`: (1, 4)-strided in eager."""

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.sigmoid(torch.tanh(p).t()) for p in x.split(4, dim=1)]


class PermutedMembers(nn.Module):
    """A 3-d permutation of each member's layout."""

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.relu(torch.tanh(p).permute(2, 0, 1)) for p in x.split(3, dim=2)]


class GappedMembers(nn.Module):
    """Every other column of each member: strides with a gap."""

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.tanh(p)[:, ::2] for p in x.split(4, dim=1)]


class BroadcastMembers(nn.Module):
    """A member's column broadcast along dim 1 (stride 0), one transposed."""

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.tanh(p)[:, :1].expand(4, 4).t() for p in x.split(4, dim=1)]


class UnknownOpAfterFusedMembers(nn.Module):
    """A fused clamp of transposed members read by an op the raise does not
    know (`torch.reciprocal`): the unknown op lays its result out like its
    input, the fused member (found by the fuzzer)."""

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.reciprocal(p.t().clamp(min=0.0)) for p in x.split(5, dim=1)]


@PIPELINES
@pytest.mark.parametrize(
    "model, shape",
    [
        (UnknownOpAfterFusedMembers(), (8, 15)),
        (TransposedMembers(), (4, 16)),
        (PermutedMembers(), (2, 5, 12)),
        (GappedMembers(), (4, 16)),
        (BroadcastMembers(), (4, 16)),
    ],
    ids=["unknown-op", "transposed", "permuted", "gapped", "broadcast"],
)
def test_outputs_keep_the_captured_strides(pipeline, model, shape) -> None:
    x = torch.randn(*shape)
    gm = _run(model, (x,), pipeline)
    with torch.no_grad():
        got, want = gm(x), model(x)
        _compare(got, want, **LANE_ULPS)
        for g, w in zip(got, want):
            if all(n > 1 for n in w.shape):
                assert g.stride() == w.stride()
    if pipeline is FUSE_ALL:
        assert _fused(gm)
    x.requires_grad_(True)  # the restore is differentiable
    sum(y.sum() for y in gm(x)).backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_match_strides_returns_its_input_when_laid_out_already() -> None:
    x = torch.randn(4, 6).t()
    assert match_strides(x, (1, 6)) is x
    row = x[:1]  # the stride of a size-1 dim does not matter
    assert match_strides(row, (99, 6)) is row


@pytest.mark.parametrize(
    "strides, sizes",
    [((1, 4), (4, 4)), ((1, 12, 3), (3, 2, 4)), ((8, 2), (4, 4)), ((0, 1), (3, 4)), ((1, 0, 3), (3, 5, 2))],
)
def test_match_strides_makes_any_non_overlapping_layout(strides, sizes) -> None:
    value = torch.randn(*sizes)
    for d, s in enumerate(strides):  # the values the broadcast layout can hold
        if s == 0:
            value = value.narrow(d, 0, 1).expand(sizes)
    out = match_strides(value.contiguous(), strides)
    assert out.stride() == strides
    assert torch.equal(out, value)


def test_match_strides_leaves_an_overlapping_layout_alone() -> None:
    value = torch.randn(3, 4)
    assert match_strides(value, (1, 1)) is value  # windows: no copy has these strides


# ---------------------------------------------------------------------------
# Point 7: ragged groups
# ---------------------------------------------------------------------------


class RaggedLinears(nn.Module):
    """Linears of widths that interleave (8/12/16 repeated) on one input."""

    def __init__(self, widths: list[int], mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.linears = nn.ModuleList(nn.Linear(16, w) for w in widths)

    def forward(self, x: torch.Tensor) -> torch.Tensor | list[torch.Tensor]:
        ys = [linear(x) for linear in self.linears]
        if self.mode == "cat":
            return torch.cat([y.relu() for y in ys], dim=-1)
        if self.mode == "sum":
            return sum(y[..., :4].tanh() for y in ys)  # type: ignore[return-value]
        return [y.sigmoid().transpose(-1, -2) for y in ys]


@PIPELINES
@pytest.mark.parametrize("mode", ["cat", "sum", "list"])
@pytest.mark.parametrize(
    "widths", [[8, 12, 16] * 4, [8, 12] * 3 + [16], [4, 6, 4, 6, 4]], ids=["8-12-16x4", "8-12x3-16", "4-6-4-6-4"]
)
def test_ragged_groups_match_eager(pipeline, mode, widths) -> None:
    torch.manual_seed(0)
    model = RaggedLinears(widths, mode)
    x = torch.randn(32, 2, 16)
    gm = _run(model, (x,), pipeline)
    with torch.no_grad():
        _compare(gm(x), model(x), **F32)
        other = torch.randn(32, 2, 16)
        _compare(gm(other), model(other), **F32)
    if pipeline is FUSE_ALL:
        assert any("torch.linear" in m for m in _fused(gm))
