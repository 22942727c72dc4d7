"""Issue 34: aliasing facts from torch, not from name lists.

Each case runs the model eagerly and optimized on copies of the same inputs
and compares what the caller sees: the outputs (values, strides, storage
offset, whether they share the input's storage) and the inputs after the
call (an in-place write through an alias must still reach them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import optimus_ir


def _remarks(module: torch.nn.Module) -> list[str]:
    return [str(r) for r in module.optimus_report.remarks]


def _counter(module: torch.nn.Module, pass_name: str, name: str) -> int:
    return sum(r.counters.get(name, 0) for r in module.optimus_report.statistics.by_pass(pass_name))


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _same_as_eager(
    model: nn.Module, make_inputs: Callable[[], list[torch.Tensor]], **options: object
) -> nn.Module:
    """Optimize `model`, run both on fresh copies of the inputs and assert
    the caller sees the same: outputs, their layout and aliasing, and the
    inputs after the call. Returns the optimized module."""
    eager_inputs, opt_inputs = make_inputs(), make_inputs()
    with torch.no_grad():
        opt = optimus_ir.optimize(copy.deepcopy(model), make_inputs(), **options)
        want = model(*eager_inputs)
        got = opt(*opt_inputs)
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    for w, g in zip(wants, gots, strict=True):
        assert torch.equal(w, g), (w, g)
        assert w.stride() == g.stride() and w.storage_offset() == g.storage_offset()
        for wi, gi in zip(eager_inputs, opt_inputs, strict=True):
            assert _shares(w, wi) == _shares(g, gi)
    for wi, gi in zip(eager_inputs, opt_inputs, strict=True):
        assert torch.equal(wi, gi), "the caller's tensor differs after the call"
    return opt


# ---------------------------------------------------------------------------
# maximize-value-semantics
# ---------------------------------------------------------------------------


class CastThenWrite(nn.Module):
    """`y = x.<cast>(); y.add_(1)`: the cast returns `x` itself when `x`
    has that dtype already, so the write reaches the caller's tensor."""

    def __init__(self, cast: str) -> None:
        super().__init__()
        self.cast = cast

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = getattr(x, self.cast)()
        y.add_(1)
        return y * 2


@pytest.mark.parametrize(
    ("cast", "dtype"), [("short", torch.int16), ("byte", torch.uint8), ("char", torch.int8)]
)
def test_cast_to_its_own_dtype_keeps_the_write_on_the_input(cast: str, dtype: torch.dtype) -> None:
    opt = _same_as_eager(CastThenWrite(cast), lambda: [torch.arange(6, dtype=dtype).reshape(2, 3)])
    assert _counter(opt, "maximize-value-semantics", "in-place ops made out of place") == 0
    assert any("kept in place" in r and "graph input" in r for r in _remarks(opt))


def test_cast_to_another_dtype_is_a_temporary() -> None:
    """`.short()` of a float tensor is a fresh tensor: its write goes out of
    place and the input is untouched."""
    opt = _same_as_eager(CastThenWrite("short"), lambda: [torch.arange(6.0).reshape(2, 3)])
    assert _counter(opt, "maximize-value-semantics", "in-place ops made out of place") == 1


class PosThenWrite(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = +x
        y.add_(1)
        return y * 2


def test_unary_plus_is_the_input() -> None:
    opt = _same_as_eager(PosThenWrite(), lambda: [torch.arange(6.0).reshape(2, 3)])
    assert _counter(opt, "maximize-value-semantics", "in-place ops made out of place") == 0


class EinsumViewThenWrite(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        e = torch.einsum("bd->db", h)  # a view of h
        h.mul_(0.5)
        return e + 0


def test_write_shows_through_an_einsum_view() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    model = EinsumViewThenWrite()
    _same_as_eager(model, lambda: [x.clone()])
    opt = _same_as_eager(model, lambda: [x.clone()], pipeline="maximize-value-semantics")
    assert any(
        "kept in place: %h is viewed or observed before the write" in r and "einsum" in r
        for r in _remarks(opt)
    ), _remarks(opt)


# ---------------------------------------------------------------------------
# identity folds and the returned layout
# ---------------------------------------------------------------------------


class ReturnsEvalDropoutOfSlice(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x[:, :4], 0.3, training=False)


class ReturnsEvalDropoutModuleOfTranspose(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.2).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(x.t()[1:])


class ReturnsNoOpCast(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[:, 2:].float(), x.t().contiguous().relu()


@pytest.mark.parametrize(
    "model", [ReturnsEvalDropoutOfSlice(), ReturnsEvalDropoutModuleOfTranspose(), ReturnsNoOpCast()],
    ids=lambda m: type(m).__name__,
)
def test_folded_identity_returns_what_eager_returns(model: nn.Module) -> None:
    """Eager returns the input (a view of it) itself: the optimized module
    returns a tensor with the same storage, strides and offset, so a write
    through the output reaches the input in both."""
    x = torch.randn(4, 16)
    _same_as_eager(model.eval(), lambda: [x.clone()])
    eager_x, opt_x = x.clone(), x.clone()
    with torch.no_grad():
        opt = optimus_ir.optimize(copy.deepcopy(model), [x.clone()])
        want, got = model(eager_x), opt(opt_x)
    want = want[0] if isinstance(want, tuple) else want
    got = got[0] if isinstance(got, tuple) else got
    want.add_(1)
    got.add_(1)
    assert torch.equal(eager_x, opt_x)
    assert not torch.equal(eager_x, x)  # the write did reach the input


def test_returned_einsum_view_keeps_its_strides() -> None:
    class ReturnsEinsum(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.einsum("bd->db", x.exp())

    x = torch.randn(3, 5)
    _same_as_eager(ReturnsEinsum(), lambda: [x.clone()])


# ---------------------------------------------------------------------------
# CSE
# ---------------------------------------------------------------------------


class ReadsAcrossAWriteThroughAView(nn.Module):
    """`p` and `q` read `h` before and after a write through `e`, an
    einsum view of `h`: CSE must not make them one."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.lin(x)
        e = torch.einsum("bd->db", h)
        p = h.sum(dim=0)
        e.mul_(0.5)
        q = h.sum(dim=0)
        return p, q


def test_cse_does_not_merge_across_a_write_through_a_view() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    _same_as_eager(ReadsAcrossAWriteThroughAView(), lambda: [x.clone()])


def test_cse_pass_alone_keeps_reads_across_the_write() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    _same_as_eager(ReadsAcrossAWriteThroughAView(), lambda: [x.clone()], pipeline="cse")


# ---------------------------------------------------------------------------
# Embeddings are pure unless they renormalize
# ---------------------------------------------------------------------------


class PerFeatureTowers(nn.Module):
    """An embedding lookup per feature, each followed by its own linear."""

    def __init__(self, features: int = 4, max_norm: float | None = None, bag: bool = False) -> None:
        super().__init__()
        self.bag = bag
        if bag:
            self.tables = nn.ModuleList(
                nn.EmbeddingBag(20, 8, mode="sum", max_norm=max_norm) for _ in range(features)
            )
        else:
            self.tables = nn.ModuleList(nn.Embedding(20, 8, max_norm=max_norm) for _ in range(features))
        self.towers = nn.ModuleList(nn.Linear(8, 16) for _ in range(features))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        outs = []
        for i, (table, tower) in enumerate(zip(self.tables, self.towers, strict=True)):
            looked_up = table(ids[:, i : i + 1]) if self.bag else table(ids[:, i])
            outs.append(torch.relu(tower(looked_up)))
        return torch.cat(outs, dim=1)


def _grouped(opt: nn.Module, kind: str) -> bool:
    """The four ops of `kind` were one fusion candidate group: fused, or
    priced and found unprofitable (the cost model's call), not split by a
    barrier."""
    return any(
        f"batch-fusion: fused 4 torch.{kind}" in r or (f"batch-fusion: 4 torch.{kind}" in r and "unprofitable" in r)
        for r in _remarks(opt)
    )


def _barriers(opt: nn.Module) -> list[str]:
    return [r for r in _remarks(opt) if "side effects lies between" in r or "mutation:" in r]


@pytest.mark.parametrize("bag", [False, True], ids=["embedding", "embedding_bag"])
@pytest.mark.parametrize("traced", [False, True], ids=["dynamo", "call_module"])
def test_embeddings_do_not_stop_fusion(bag: bool, traced: bool) -> None:
    torch.manual_seed(0)
    model = PerFeatureTowers(bag=bag).eval()
    ids = torch.randint(0, 20, (6, 4))
    subject: nn.Module = torch.fx.symbolic_trace(model) if traced else model
    with torch.no_grad():
        want = model(ids)
        opt = optimus_ir.optimize(subject, [ids], check_speed=False)
        torch.testing.assert_close(opt(ids), want)
    assert opt.optimus_report.side_effect_free
    assert _grouped(opt, "linear") and _grouped(opt, "relu"), _remarks(opt)
    assert not _barriers(opt)


@pytest.mark.parametrize("traced", [False, True], ids=["dynamo", "call_module"])
def test_max_norm_keeps_the_embedding_a_barrier(traced: bool) -> None:
    torch.manual_seed(0)
    model = PerFeatureTowers(max_norm=0.5).eval()
    ids = torch.randint(0, 20, (6, 4))
    subject: nn.Module = torch.fx.symbolic_trace(model) if traced else model
    eager_model = copy.deepcopy(model)
    with torch.no_grad():
        opt = optimus_ir.optimize(subject, [ids], check_speed=False)
        want = eager_model(ids)
        got = opt(ids)
    torch.testing.assert_close(got, want)
    # the optimized module renormalized the weights in place, as eager did
    for ours, theirs in zip(model.tables, eager_model.tables, strict=True):
        torch.testing.assert_close(ours.weight, theirs.weight)
    assert not opt.optimus_report.side_effect_free
    assert not _grouped(opt, "linear")
    assert any("an op with side effects lies between them" in r for r in _barriers(opt))
