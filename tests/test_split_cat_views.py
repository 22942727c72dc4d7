"""The view-chain patterns of split-cat-simplify (passes/split_cat_views.py).

Numerical differential tests: small models per pattern and the benchmark
models, optimized with `raise-fx,split-cat-simplify,dce,lower-to-fx`, must
give bitwise identical outputs, fewer ops, and a second run of the pass must
change nothing. Plus unit tests of the view-program simplifier.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.api import capture, count_fx_ops
from optimus_ir.translate.exporter import export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.passes.split_cat_views import VIEW_PATTERNS
from optimus_ir.passes.canonicalization_patterns.view_programs import simplify
from optimus_ir.pipeline import run_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from split_cat_models import MODELS  # noqa: E402

PIPELINE = "raise-fx,split-cat-simplify,dce,lower-to-fx"

warnings.filterwarnings("ignore", category=UserWarning)


def _ops(gm: torch.fx.GraphModule) -> int:
    return sum(count_fx_ops(gm).values())


def _check(model: nn.Module, *inputs: torch.Tensor, fewer: bool | None = True) -> torch.fx.GraphModule:
    """Optimize, compare outputs bitwise, check the op count, and check that
    a second run of split-cat-simplify is a no-op."""
    with torch.no_grad():
        expected = model(*inputs)
        gm = optimus_ir.optimize(model, list(inputs), pipeline=PIPELINE)
        got = gm(*inputs)
    for e, g in zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)):  # noqa: SLF001
        torch.testing.assert_close(g, e, rtol=0, atol=0)
    report = gm.optimus_report
    before, after = sum(report.ops_before.values()), sum(report.ops_after.values())
    if fewer:
        assert after < before, report.format()
    elif fewer is None:
        assert after <= before, report.format()
    else:
        assert after == before, report.format()
    _assert_idempotent(model, inputs)
    return gm


def _assert_idempotent(model: nn.Module, inputs) -> None:
    program = import_graph(capture(model, list(inputs)), list(inputs))
    run_pipeline(program.module, "raise-fx,split-cat-simplify,dce")
    once = str(program.module)
    run_pipeline(program.module, "split-cat-simplify")
    assert str(program.module) == once


def _targets(gm: torch.fx.GraphModule) -> list[str]:
    """The calls' names: functions', and methods' (`torch.Tensor.view` exports as `x.view(...)`)."""
    return [getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes if n.op in ("call_function", "call_method")]


# ---------------------------------------------------------------------------
# split/unbind -> join
# ---------------------------------------------------------------------------


class SplitStack(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.stack(torch.split(x, 4, dim=1), dim=self.dim).relu()


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_split_stack_is_a_view(dim):
    gm = _check(SplitStack(dim), torch.randn(3, 16))
    targets = _targets(gm)
    assert "stack" not in targets and "split" not in targets
    assert "unflatten" in targets


class SplitCatOtherDim(nn.Module):
    def forward(self, x):
        return torch.cat(torch.split(x, 4, dim=1), dim=0).relu()


def test_split_cat_other_dim_is_unflatten_movedim_flatten():
    gm = _check(SplitCatOtherDim(), torch.randn(3, 16))
    assert [t for t in _targets(gm) if t != "relu"] == ["unflatten", "movedim", "flatten"]


class UnbindJoins(nn.Module):
    def forward(self, x):
        pieces = torch.unbind(x, dim=1)
        return torch.stack(pieces, dim=0).relu(), torch.cat(pieces, dim=1).neg()


def test_unbind_stack_and_cat():
    gm = _check(UnbindJoins(), torch.randn(2, 5, 3))
    assert "unbind" not in _targets(gm)


class Interleaved(nn.Module):
    def forward(self, x, a, b):
        p = torch.split(x, 2, dim=1)
        rows = torch.cat([a, *p[:6], b, *p[6:]], dim=0)
        return rows.relu()


def test_foreign_inputs_stay_in_place():
    gm = _check(Interleaved(), torch.randn(3, 24), torch.randn(2, 2), torch.randn(1, 2))
    cat = [n for n in gm.graph.nodes if n.target is torch.cat]
    assert len(cat) == 1 and len(cat[0].args[0]) == 4


class InterleavedTooShort(nn.Module):
    def forward(self, x, a, b):
        p = torch.split(x, 4, dim=1)
        return torch.cat([a, p[0], p[1], b, p[2], p[3]], dim=0).relu()


def test_unprofitable_runs_are_kept():
    # two 2-piece runs: a coarser split and two view chains are more ops
    _check(InterleavedTooShort(), torch.randn(3, 16), torch.randn(2, 4), torch.randn(1, 4), fewer=False)


class InterleavedStack(nn.Module):
    def forward(self, x, a):
        p = torch.split(x, 4, dim=1)
        return torch.stack([a, *p[:5], a, *p[5:]], dim=1).relu()


def test_stack_with_foreign_inputs_becomes_cat():
    gm = _check(InterleavedStack(), torch.randn(3, 32), torch.randn(3, 4))
    assert "stack" not in _targets(gm) or "cat" in _targets(gm)


class Shuffled(nn.Module):
    def forward(self, x):
        p = torch.split(x, 2, dim=1)
        return torch.stack([p[3], p[4], p[5], p[0], p[1], p[2]], dim=0).relu()


def test_shuffled_ranges():
    gm = _check(Shuffled(), torch.randn(3, 12))
    assert "stack" not in _targets(gm)


class PartialRun(nn.Module):
    def forward(self, x):
        p = torch.split(x, 2, dim=1)
        return torch.stack(p[1:5], dim=0).relu(), p[0].neg(), p[5].abs()


def test_partial_run_merges_split_sections():
    gm = _check(PartialRun(), torch.randn(3, 12))
    split = [n for n in gm.graph.nodes if "split" in str(n.target)]
    assert len(split) == 1 and split[0].args[1] == [2, 8, 2]


class SplitReshapeStack(nn.Module):
    def forward(self, x):
        mats = [p.reshape(3, 2, 2) for p in torch.split(x, 4, dim=1)]
        return torch.stack(mats, dim=1).relu()


def test_split_reshape_stack_is_one_view():
    gm = _check(SplitReshapeStack(), torch.randn(3, 16))
    assert [t for t in _targets(gm) if t != "relu"] == ["view"] or len(_targets(gm)) <= 2


class SplitSqueezeStack(nn.Module):
    def forward(self, x):
        return torch.stack([p.squeeze(1) for p in torch.split(x, 1, dim=1)], dim=1).relu()


def test_split_squeeze_stack_back_is_the_input():
    gm = _check(SplitSqueezeStack(), torch.randn(3, 5))
    assert [t for t in _targets(gm)] == ["relu"]


# ---------------------------------------------------------------------------
# cases left alone
# ---------------------------------------------------------------------------


class StackToOutput(nn.Module):
    def forward(self, x):
        return torch.stack(torch.split(x, 4, dim=1), dim=0)


def test_stack_returned_as_output_is_one_copy_of_a_view():
    # A view would alias the input (observable by the caller): the view
    # chain and one copy of it stand for split + getitems + stack (issue 21).
    x = torch.randn(3, 16)
    gm = _check(StackToOutput(), x)
    assert sorted(_targets(gm)) == ["cat", "movedim", "unflatten"]
    inp = x.clone()
    gm(inp).mul_(0.0)
    torch.testing.assert_close(inp, x, rtol=0, atol=0)


class MutatedInput(nn.Module):
    def forward(self, x):
        s = torch.stack(torch.split(x, 4, dim=1), dim=0)
        x.add_(1)
        return s.relu()


def test_mutated_source_is_kept():
    model = MutatedInput()
    x = torch.randn(3, 16)
    with torch.no_grad():
        expected = model(x.clone())
        gm = optimus_ir.optimize(model, [x.clone()], pipeline=PIPELINE)
        got = gm(x.clone())
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert "stack" in _targets(gm)


class UnequalSections(nn.Module):
    def forward(self, x):
        return torch.cat(torch.split(x, [4, 12], dim=1), dim=0).relu()  # invalid shapes otherwise


def test_pieces_used_elsewhere_are_kept():
    class M(nn.Module):
        def forward(self, x):
            p = torch.split(x, 4, dim=1)
            return torch.stack([p[0], p[1]], dim=0).relu(), p[1].neg()

    _check(M(), torch.randn(3, 8), fewer=False)


# ---------------------------------------------------------------------------
# view chains
# ---------------------------------------------------------------------------


class InversePermutes(nn.Module):
    def forward(self, x):
        a = x.permute(2, 0, 1).permute(1, 2, 0)
        b = x.transpose(0, 1).transpose(1, 0)
        c = torch.movedim(x, 0, 2).movedim(2, 0)
        return a.relu(), b.neg(), c.abs()


def test_inverse_permutes_cancel():
    gm = _check(InversePermutes(), torch.randn(2, 3, 4))
    assert _targets(gm) == ["relu", "neg", "abs"]


class ReshapeChains(nn.Module):
    def forward(self, x):
        a = x.reshape(6, 4).reshape(4, 6)
        b = x.view(6, 4).view(24)
        c = torch.flatten(torch.unflatten(x, 2, (2, 2)), 2, 3)
        d = x.view(2, 3, 4)
        return a.relu(), b.neg(), c.abs(), d.relu()


def test_reshape_chains_fold():
    gm = _check(ReshapeChains(), torch.randn(2, 3, 4))
    names = _targets(gm)
    assert names.count("reshape") + names.count("view") == 2
    assert "unflatten" not in names and "flatten" not in names


class ViewOfPermute(nn.Module):
    def forward(self, x):
        return x.t().reshape(12).reshape(3, 4).relu()


def test_reshape_of_permuted_keeps_values():
    _check(ViewOfPermute(), torch.randn(4, 3))


class MutatedReshapeChain(nn.Module):
    def forward(self, x):
        y = x.t().reshape(12).reshape(4, 3)
        y.add_(1)  # y aliases x iff no copy was made: keep the chain
        return y.relu()


def test_mutated_reshape_chain_is_kept():
    model = MutatedReshapeChain()
    x = torch.randn(4, 3)
    with torch.no_grad():
        expected = model(x.clone())
        gm = optimus_ir.optimize(model, [x.clone()], pipeline=PIPELINE)
        got = gm(x.clone())
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert _targets(gm).count("reshape") == 2


# ---------------------------------------------------------------------------
# benchmark models
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_benchmark_model(name):
    spec = MODELS[name]
    # interleaved_foreign: its pieces are shared by a cat and a stack with
    # other inputs between runs; no rewrite lowers the op count there.
    _check(spec.make(), *spec.inputs(), fewer=None if name == "interleaved_foreign" else True)


# ---------------------------------------------------------------------------
# the simplifier
# ---------------------------------------------------------------------------


def test_simplify_rules():
    # permute then its inverse
    assert simplify((2, 3, 4), [("permute", (2, 0, 1)), ("permute", (1, 2, 0))]) == []
    # unflatten then flatten of the same dims
    assert simplify((2, 12), [("reshape", (2, 3, 4)), ("reshape", (2, 12))]) == []
    # a permute of size-1 dims is a reshape
    assert simplify((1, 5), [("permute", (1, 0))]) == [("reshape", (5, 1))]
    # split -> stack on the split dim: one unflatten
    assert simplify(
        (3, 16), [("reshape", (3, 4, 4)), ("permute", (1, 0, 2)), ("permute", (1, 0, 2))]
    ) == [("reshape", (3, 4, 4))]
    # split -> squeeze -> stack back in place: nothing
    steps = [("reshape", (3, 5, 1)), ("permute", (1, 0, 2)), ("reshape", (5, 3)), ("permute", (1, 0))]
    assert simplify((3, 5), steps) == []
    # an unflatten after a permute moves before it so permutes compose
    steps = [("reshape", (8, 6, 16)), ("permute", (1, 0, 2)), ("reshape", (6, 8, 4, 4)), ("permute", (1, 0, 2, 3))]
    assert simplify((8, 96), steps) == [("reshape", (8, 6, 4, 4))]
    # a real transpose stays
    assert simplify((2, 3), [("permute", (1, 0))]) == [("permute", (1, 0))]


def test_view_patterns_are_named():
    names = [p.name for p in VIEW_PATTERNS]
    assert names == [
        "split-stack-to-view",
        "split-cat-to-view",
        "split-reshape-join-to-view",
        "fold-view-chain",
    ]
    assert all(type(p).__doc__ for p in VIEW_PATTERNS)


def test_export_roundtrip_of_view_ops():
    model = SplitCatOtherDim()
    x = torch.randn(3, 16)
    program = import_graph(capture(model, [x]), [x])
    run_pipeline(program.module, PIPELINE)
    gm = export_graph(program)
    torch.testing.assert_close(gm(x), model(x), rtol=0, atol=0)
