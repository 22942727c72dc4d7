"""Wide sibling sets stay linear: no per-use work on K-operand joins, no
alias-class walks per pattern attempt when the pass has an analysis.

The timings live in `benchmarks/bench_wide_siblings.py`; these tests count
the operations that made the passes quadratic (an operand set one index at a
time rebuilds the whole operand tuple of the join; an alias-class walk spans
all K pieces of a split) and check the results stay bit-identical.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.fx
from torch import nn
from xdsl.ir.core import OpOperands

from optimus_ir.analysis import aliasing, forwarding
from optimus_ir.translate.exporter import export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.pipeline import run_pipeline

K = 48


class _Stack(nn.Module):
    """A stack of every piece of a K-way split."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 2, 1)
        return torch.stack([pieces[i] for i in range(K)]) * 2.0


class _SingleCats(nn.Module):
    """Every piece goes through a cat of one tensor, then relu; stacked."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 2, 1)
        return torch.stack([torch.relu(torch.cat([pieces[i]], 1)) for i in range(K)])


class _ReshapeChains(nn.Module):
    """Every piece reshaped flat and back (a foldable chain that may copy)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 2, 1)
        return torch.stack([torch.relu(pieces[i].reshape(-1).reshape(4, 2)) for i in range(K)])


def _program(module: nn.Module):
    x = torch.randn(4, 2 * K)
    gm = torch.fx.symbolic_trace(module)
    return gm, x, import_graph(gm, (x,))


def _check(gm: torch.fx.GraphModule, x: torch.Tensor, program) -> None:
    with torch.no_grad():
        torch.testing.assert_close(export_graph(program)(x.clone()), gm(x.clone()), rtol=0, atol=0)


def _count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    calls = [0]
    original: Callable = getattr(owner, name)

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


@pytest.mark.parametrize("passes", ["raise-fx", "raise-fx,lower-to-fx"])
def test_join_operands_are_not_set_one_use_at_a_time(monkeypatch, passes: str) -> None:
    gm, x, program = _program(_Stack())
    if passes != "raise-fx":
        run_pipeline(program.module, "raise-fx")
    last = passes.split(",")[-1]
    setitems = _count_calls(monkeypatch, OpOperands, "__setitem__")
    run_pipeline(program.module, last)
    # per-use replacement set each of the stack's K operands on its own,
    # rebuilding its operand tuple K times
    assert setitems[0] == 0
    monkeypatch.undo()
    if last == "raise-fx":
        run_pipeline(program.module, "lower-to-fx")
    _check(gm, x, program)


@pytest.mark.parametrize("pass_name", ["split-cat-simplify", "canonicalize"])
@pytest.mark.parametrize("model", [_SingleCats, _ReshapeChains])
def test_canonical_patterns_use_the_pass_analysis(monkeypatch, model: type[nn.Module], pass_name: str) -> None:
    gm, x, program = _program(model())
    run_pipeline(program.module, "raise-fx")
    walks = [
        _count_calls(monkeypatch, forwarding, "alias_class"),
        _count_calls(monkeypatch, aliasing, "alias_class"),
    ]
    run_pipeline(program.module, pass_name)
    # single-input-join / fold-view-chain ask the pass's analysis; each walk
    # would span all K pieces of the split
    assert sum(w[0] for w in walks) == 0
    monkeypatch.undo()
    text = str(program.module)
    assert "torch.cat" not in text and "torch.reshape" not in text
    run_pipeline(program.module, "lower-to-fx")
    _check(gm, x, program)
