"""Issue 21 item 6: the split/cat cases PyTorch's split_cat passes handle.

Each model runs through `optimus_ir.optimize` on real inputs and must give
the module's outputs bit for bit (data movement and single products are
exact), with the strides of the module's outputs, without aliasing its
input, and with the op count the rewrite promises:

* split -> stack that is only a reshape: one view (or, returned, the view
  and one copy), where it was split + getitems + stack;
* consecutive selects -> cat/stack on another dim: one view or one copy;
* a pointwise op of a cat sliced back at the cat's boundaries: the op on
  each piece (bitwise for exact ops; a transcendental kernel such as sigmoid
  rounds its vectorized body and its scalar tail differently, so on pieces
  of other widths it agrees within the dtype's tolerance, as batch fusion
  does the other way round);
* a pointwise einsum: a mul (after unsqueezes).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.api import count_fx_ops


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class SplitStackReturned(nn.Module):
    """The issue's case: `stack(split(x, 4, 1), 1)` returned."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack(torch.split(x, 4, dim=1), dim=1)


class SplitStackOfTemporary(nn.Module):
    """The same of a temporary: the returned view needs no copy."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack(torch.split(x.relu(), 4, dim=1), dim=1)


class SplitStackOtherDim(nn.Module):
    """Stacked on the batch dim and read by a pointwise op."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack(torch.split(x, 4, dim=1), dim=0).neg()


class SelectCat(nn.Module):
    """`cat([x[:, 0], x[:, 1], x[:, 2]], 1)` returned."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x[:, 0], x[:, 1], x[:, 2]], 1)


class SelectCatRelu(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x[:, 0], x[:, 1], x[:, 2]], 1).relu()


class SelectStackOtherDim(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x.select(0, i) for i in range(3)], dim=1).abs()


class UnsqueezedSelectsCat(nn.Module):
    """`cat([x[:, i].unsqueeze(1) ...], 1)`: x itself (PyTorch: 13 ops)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x[:, i].unsqueeze(1) for i in range(4)], 1).relu()


class PointwiseOfCat(nn.Module):
    """One activation over concatenated features, then taken apart again."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = torch.sigmoid(torch.cat([x, y], 1))
        return h[:, :4] * 2, h[:, 4:] + 1


class PointwiseOfCatSplit(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b = torch.split(torch.tanh(torch.cat([x, y], 0)), [3, 5], 0)
        return a.relu(), b.neg()


class PointwiseOfCatWithEmptyInput(nn.Module):
    """A slice that starts where an empty input does is of the next input
    (the relu of the cat once crashed the pass: `KeyError` on the empty one)."""

    def forward(self, x: torch.Tensor, e: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = torch.relu(torch.cat([x, e, y], 1))
        return h[:, :2] * 2, h[:, 2:] + 1


class PointwiseEinsum(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.einsum("bi,bi->bi", a, b) + 1,
            torch.einsum("bij,bj->bij", c, a),
            torch.einsum("bi,bj->bij", a, b),
        )


class ContractionEinsum(nn.Module):
    def forward(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bij,bj->bi", c, a)


CASES: dict[str, tuple[type[nn.Module], tuple[tuple[int, ...], ...], dict[str, int]]] = {
    # model, input shapes, FX op counts (by kind) the optimized graph has
    "split_stack_returned": (SplitStackReturned, ((3, 16),), {"unflatten": 1, "cat": 1}),
    "split_stack_of_temporary": (SplitStackOfTemporary, ((3, 16),), {"relu": 1, "unflatten": 1}),
    "split_stack_other_dim": (
        # the neg of the moved view is strided: the output gets its layout back
        SplitStackOtherDim, ((3, 16),), {"unflatten": 1, "movedim": 1, "neg": 1, ".contiguous": 1}
    ),
    "select_cat": (SelectCat, ((2, 3, 5),), {"flatten": 1, "cat": 1}),
    "select_cat_relu": (SelectCatRelu, ((2, 3, 5),), {"flatten": 1, "relu": 1}),
    "select_stack_other_dim": (
        SelectStackOtherDim, ((3, 4),), {"movedim": 1, "abs": 1, ".contiguous": 1}
    ),
    "unsqueezed_selects_cat": (UnsqueezedSelectsCat, ((2, 4, 3),), {"relu": 1}),
    "pointwise_of_cat": (
        PointwiseOfCat, ((3, 4), (3, 6)), {"sigmoid": 2, "mul": 1, "add": 1}
    ),
    "pointwise_of_cat_split": (
        PointwiseOfCatSplit, ((3, 4), (5, 4)), {"tanh": 2, "relu": 1, "neg": 1}
    ),
    "pointwise_of_cat_empty_input": (
        PointwiseOfCatWithEmptyInput, ((3, 2), (3, 0), (3, 3)), {"relu": 2, "mul": 1, "add": 1}
    ),
    "pointwise_einsum": (
        PointwiseEinsum, ((3, 4), (3, 4), (3, 5, 4)), {"mul": 3, "add": 1, "unsqueeze": 3}
    ),
}


INEXACT = {"pointwise_of_cat", "pointwise_of_cat_split"}
"""Cases whose rewritten pointwise op is transcendental (see the docstring)."""


def _flat(out: Any) -> list[torch.Tensor]:
    return list(out) if isinstance(out, tuple | list) else [out]


@pytest.mark.parametrize("name", list(CASES))
def test_rewritten_graph_is_exact_and_small(name: str) -> None:
    make, shapes, expected_ops = CASES[name]
    inputs = tuple(_randn(*s, seed=i) for i, s in enumerate(shapes))
    model = make()
    optimized = optimus_ir.optimize(model, inputs)
    counts = {k: v for k, v in count_fx_ops(optimized).items() if v}
    assert counts == expected_ops
    for seed in (0, 7):  # the example inputs and fresh ones
        fresh = tuple(_randn(*s, seed=seed + i) for i, s in enumerate(shapes))
        expected = _flat(model(*fresh))
        got = _flat(optimized(*fresh))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            if name in INEXACT:
                torch.testing.assert_close(g, e)
            else:
                torch.testing.assert_close(g, e, rtol=0, atol=0)
            assert g.stride() == e.stride()


@pytest.mark.parametrize("name", ["split_stack_returned", "select_cat"])
def test_returned_result_does_not_alias_the_input(name: str) -> None:
    make, shapes, _ = CASES[name]
    x = _randn(*shapes[0])
    optimized = optimus_ir.optimize(make(), (x,))
    inp = x.clone()
    out = optimized(inp)
    out.mul_(0.0)  # a write into the result must not reach the input
    torch.testing.assert_close(inp, x, rtol=0, atol=0)


def test_contraction_einsum_is_kept() -> None:
    a, c = _randn(3, 4), _randn(3, 5, 4, seed=1)
    model = ContractionEinsum()
    optimized = optimus_ir.optimize(model, (a, c))
    counts = {k: v for k, v in count_fx_ops(optimized).items() if v}
    assert counts == {"einsum": 1}
    torch.testing.assert_close(optimized(a, c), model(a, c), rtol=0, atol=0)


def test_pointwise_of_cat_keeps_the_cat_under_an_in_place_write() -> None:
    """The input is written after the cat read it: f must stay on the cat."""

    class WrittenAfter(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
            t = x * 1.0
            h = torch.cat([t, y], 1)
            t.add_(5.0)
            r = torch.relu(h)
            return r[:, :4], r[:, 4:], t

    x, y = _randn(3, 4), _randn(3, 6, seed=1)
    model = WrittenAfter()
    optimized = optimus_ir.optimize(model, (x, y))
    for g, e in zip(optimized(x, y), model(x, y)):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
