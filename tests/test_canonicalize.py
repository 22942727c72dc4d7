"""`canonicalize`: the local folds the ops declare (numerics, what runs, wide splits)."""

from __future__ import annotations

from collections import Counter
from dataclasses import FrozenInstanceError

import pytest
import torch
from torch import nn
from xdsl.dialects.builtin import ArrayAttr, Float32Type, ModuleOp
from xdsl.ir import Operation

from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.translate.exporter import export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.passes.canonicalize import Canonicalize, collect_canonicalization_patterns
from optimus_ir.passes.registry import get_pass_class
from optimus_ir.pipeline import run_pipeline
from optimus_ir.foundation.types import tensor_type

F32 = Float32Type()


def torch_ops(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.name.startswith("torch."))


class LocalFolds(nn.Module):
    """Every local fold: a split into one piece, a cat and a stack of one
    tensor, dead split pieces, a single live piece, view chains."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.tanh(x)
        (one,) = torch.split(a, 6, dim=1)
        joined = torch.cat([a], dim=0)
        stacked = torch.stack([a], dim=1)
        p = torch.split(a, 1, dim=1)
        q = torch.split(a, [2, 3, 1], dim=1)
        back = a.transpose(0, 1).transpose(0, 1)
        flat = a.unflatten(1, (2, 3)).flatten(1, 2)
        return (
            torch.relu(one),
            joined * back,
            torch.neg(stacked),
            p[0] + p[3],
            torch.relu(q[1]),
            flat.sum(1),
        )


def _canonicalized(model: nn.Module, x: torch.Tensor):
    gm = torch.fx.symbolic_trace(model)
    imported = import_graph(gm, (x,))
    run_pipeline(imported.module, "raise-fx")
    before = torch_ops(imported.module)
    stats = run_pipeline(imported.module, "canonicalize")
    text = str(imported.module)
    run_pipeline(imported.module, "canonicalize")
    assert str(imported.module) == text, "canonicalize is not idempotent"
    after = torch_ops(imported.module)
    run_pipeline(imported.module, "lower-to-fx")
    return gm, export_graph(imported), before, after, stats


def test_local_folds_keep_the_values_bit_for_bit() -> None:
    x = torch.randn(4, 6)
    gm, exported, before, after, stats = _canonicalized(LocalFolds(), x)
    with torch.no_grad():
        want, got = gm(x.clone()), exported(x.clone())
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert sum(after.values()) < sum(before.values())
    assert after["torch.cat"] == after["torch.stack"] == 0
    assert after["torch.transpose"] == after["torch.unflatten"] == after["torch.flatten"] == 0
    assert after["torch.slice"] == 1  # the single live piece of q
    record = stats.by_pass("canonicalize")[0]
    fired = {name for name, p in record.patterns.items() if p.rewrites}
    assert fired == {
        "erase-dead-plumbing",
        "split-whole",
        "single-input-join",
        "merge-dead-split-pieces",
        "fold-view-chain",
    }


def test_registered_and_frozen() -> None:
    assert get_pass_class("canonicalize") is Canonicalize
    with pytest.raises(FrozenInstanceError):
        Canonicalize().name = "other"  # type: ignore[misc]


def _graph(ops: list[Operation], outputs: list) -> ModuleOp:
    out = fx.OutputOp(ArrayAttr([fx.RefAttr(i) for i in range(len(outputs))]), outputs)
    return ModuleOp([fx.GraphOp("forward", [*ops, out])])


def test_only_the_patterns_of_the_ops_present_are_collected() -> None:
    x = fx.PlaceholderOp("x", tensor_type((4, 6), F32, "cpu"))
    relu = T.ReluOp(x.result)
    module = _graph([x, relu], [relu.result])
    assert collect_canonicalization_patterns(module) == []
    x = fx.PlaceholderOp("x", tensor_type((4, 6), F32, "cpu"))
    cat = T.CatOp([x.result], 0)
    split = T.SplitOp(cat.result, [3, 3], 1)
    module = _graph([x, cat, split], [split.results[0]])
    names = [type(p).__name__ for p in collect_canonicalization_patterns(module)]
    assert names == ["EraseDeadPlumbing", "SingleInputJoin", "SplitWhole", "MergeDeadSplitPieces"]


# ---------------------------------------------------------------------------
# merge-dead-split-pieces on a wide split: one rebuild, not one per pair
# ---------------------------------------------------------------------------

K = 4000


def _half_dead_split(dead_users: bool) -> tuple[ModuleOp, list[int]]:
    """`split(x, [2] * K, 1)` whose pieces 4i+2 and 4i+3 are dead: unused
    (`dead_users=False`) or used only by dead unsqueezes, which
    erase-dead-plumbing removes one after the other (the pieces die one by
    one while the pass runs). Returns the module and the live piece indices."""
    x = fx.PlaceholderOp("x", tensor_type((4, 2 * K), F32, "cpu"))
    split = T.SplitOp(x.result, [2] * K, 1)
    ops: list[Operation] = [x, split]
    outputs = []
    live = []
    for i, piece in enumerate(split.results):
        dead = i % 4 in (2, 3)
        if dead_users:
            unsqueeze = T.UnsqueezeOp(piece, 0)
            ops.append(unsqueeze)
            if not dead:
                outputs.append(unsqueeze.result)
        elif not dead:
            outputs.append(piece)
        if not dead:
            live.append(i)
    return _graph(ops, outputs), live


@pytest.mark.parametrize("pass_name", ["canonicalize", "split-cat-simplify"])
@pytest.mark.parametrize("dead_users", [False, True], ids=["dead", "dying"])
def test_half_dead_wide_split_is_rebuilt_once(pass_name: str, dead_users: bool) -> None:
    module, live = _half_dead_split(dead_users)
    stats = run_pipeline(module, pass_name)
    splits = [op for op in module.walk() if isinstance(op, T.SplitOp)]
    assert len(splits) == 1
    split = splits[0]
    # live pieces 4i, 4i+1 of width 2, each dead pair one section of width 4
    assert list(T.ints(split.sections)) == [2, 2, 4] * (K // 4)
    output = module.ops.first.body.block.last_op  # type: ignore[union-attr]
    assert isinstance(output, fx.OutputOp)
    for k, value in enumerate(output.operands):
        piece = value.owner.operands[0] if dead_users else value
        assert piece.owner is split
        # the live piece i of the old split is piece 3 * (i // 4) + i % 4 now
        i = live[k]
        assert piece.index == 3 * (i // 4) + i % 4
    record = stats.by_pass(pass_name)[0]
    assert record.patterns["merge-dead-split-pieces"].rewrites == 1
    if dead_users:
        assert record.patterns["erase-dead-plumbing"].rewrites == K // 2
