"""`canonicalize` folds the identities a captured graph carries (issue 21,
item 2): eval-mode (or p = 0) dropout, `.contiguous()` of a contiguous
value, casts to the value's own dtype and device, `clone` of a temporary.
Each graph runs before and after on real inputs; what must stay stays."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from xdsl.dialects.builtin import Float32Type, ModuleOp

import optimus_ir
from optimus_ir.foundation import traits as tr
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.translate.exporter import export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.passes.registry import DEFAULT_PIPELINE_STAGES
from optimus_ir.pipeline import run_pipeline
from optimus_ir.foundation.types import tensor_type


def _ops(module: ModuleOp) -> Counter[str]:
    """Torch ops by name, fx calls by target."""
    counts: Counter[str] = Counter()
    for op in module.walk():
        if op.name.startswith("torch."):
            counts[op.name] += 1
        elif isinstance(op, fx.CallMethodOp | fx.CallFunctionOp):
            counts[op.target.data] += 1
    return counts


def _run(model: nn.Module, *inputs: torch.Tensor, pipeline: str = "raise-fx,canonicalize"):
    """`model` captured, imported, run through `pipeline`, exported: the
    captured graph, the exported one and the op counts before and after."""
    gm = optimus_ir.capture(model, list(inputs))
    imported = import_graph(gm, inputs)
    run_pipeline(imported.module, "raise-fx")
    before = _ops(imported.module)
    run_pipeline(imported.module, pipeline.removeprefix("raise-fx,"))
    after = _ops(imported.module)
    run_pipeline(imported.module, "lower-to-fx")
    return gm, export_graph(imported), before, after


def _same(got, want) -> None:
    torch.testing.assert_close(got, want, rtol=0, atol=0)


# ---------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------


class Dropouts(nn.Module):
    """Module, functional and `torch.dropout` spellings; a `p = 0` one."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.3)
        self.zero = nn.Dropout(0.0)
        self.linear = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = self.drop(torch.relu(self.linear(x)))
        b = F.dropout(torch.tanh(a), 0.2, self.training)
        c = self.zero(torch.sigmoid(b))
        return a + c, torch.dropout(x, 0.0, True)


def test_eval_dropout_folds_away_with_the_values_kept() -> None:
    model = Dropouts().eval()
    x = torch.randn(4, 6)
    gm, exported, before, after = _run(model, x)
    assert before["torch.dropout"] == 4
    assert after["torch.dropout"] == 0
    with torch.no_grad():
        _same(exported(x), gm(x))
        _same(exported(x), model(x))


def test_training_dropout_stays_and_p0_folds() -> None:
    model = Dropouts().train()
    x = torch.randn(4, 6)
    gm, exported, before, after = _run(model, x)
    assert before["torch.dropout"] == 4
    assert after["torch.dropout"] == 2  # p = 0.3 and p = 0.2 draw; the p = 0 ones are the input
    with torch.no_grad():
        torch.manual_seed(3)
        want = gm(x)
        torch.manual_seed(3)
        _same(exported(x), want)


def test_optimize_removes_eval_dropout_and_keeps_training_dropout() -> None:
    x = torch.randn(8, 6)
    eval_model = Dropouts().eval()
    with torch.no_grad():
        optimized = optimus_ir.optimize(eval_model, [x])
        _same(optimized(x), eval_model(x))
    report = optimized.optimus_report
    assert report.ops_before["dropout"] == 4 and report.ops_after["dropout"] == 0
    assert sum(report.ops_after.values()) < sum(report.ops_before.values())

    train_model = Dropouts().train()
    optimized = optimus_ir.optimize(train_model, [x])
    assert optimized.optimus_report.ops_after["dropout"] == 2
    torch.manual_seed(5)
    want = train_model(x)
    torch.manual_seed(5)
    _same(optimized(x), want)


def test_eval_dropout_is_effect_free_and_training_dropout_is_not() -> None:
    value = fx.PlaceholderOp("x", tensor_type((4,), Float32Type(), "cpu")).result
    eval_dropout = T.DropoutOp(value, 0.5, False)
    assert tr.is_removable(eval_dropout) and tr.is_mergeable(eval_dropout) and T.is_pure(eval_dropout)
    train_dropout = T.DropoutOp(value, 0.5, True)
    assert not tr.is_removable(train_dropout) and not tr.is_mergeable(train_dropout)
    names = [type(p).__name__ for p in tr.canonicalization_patterns(T.DropoutOp)]
    assert names == ["FoldIdentityDropout"]


def test_returned_dropout_and_its_input_stay_equal_outputs() -> None:
    """Eager returns the input object itself for an eval dropout: both
    outputs are one tensor there, and equal values here."""

    class ReturnsBoth(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            a = torch.tanh(x)
            return a, F.dropout(a, 0.5, False), F.dropout(x, 0.5, False)

    model = ReturnsBoth()
    x = torch.randn(3, 5)
    optimized = optimus_ir.optimize(model, [x])
    assert optimized.optimus_report.ops_after["dropout"] == 0
    got = optimized(x)
    _same(got, model(x))


# ---------------------------------------------------------------------------
# contiguous, casts, clone
# ---------------------------------------------------------------------------


class Identities(nn.Module):
    """Every identity call, each beside a look-alike that does something."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.tanh(x)
        same = a.contiguous() + a.float() + a.to(torch.float32) + a.type_as(y) + a.to(x.device) + a.to(y)
        strided = a.t().contiguous()  # a copy: stays
        half = a.type_as(h)  # a real cast: stays
        forced = a.to(torch.float32, copy=True)  # a forced copy: stays
        temp = torch.exp(x)
        cloned = temp.clone() * 2  # a temporary: folds
        return same, strided, half, forced, cloned, x.clone()  # the input's clone stays


def test_identity_calls_fold_and_the_values_are_kept() -> None:
    x, y, h = torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6).half()
    gm, exported, before, after = _run(Identities(), x, y, h)
    assert before["contiguous"] == 2 and after["contiguous"] == 1
    assert before["float"] == 1 and after["float"] == 0
    assert before["to"] == 4 and after["to"] == 1  # the copy=True one
    assert before["type_as"] == 2 and after["type_as"] == 1  # to half
    assert before["clone"] == 2 and after["clone"] == 1  # the input's
    got, want = exported(x, y, h), gm(x, y, h)
    _same(got, want)
    assert got[1].is_contiguous() and got[1].stride() == want[1].stride()
    assert got[3] is not got[0] and got[5] is not x and got[5].data_ptr() != x.data_ptr()


class CloneThenWrite(nn.Module):
    """A clone of a temporary written in place afterwards, and a clone
    written in place: both stay copies."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.tanh(x)
        before_write = a.clone()
        a.add_(1)
        b = torch.exp(x)
        written = b.clone()
        written.mul_(2)
        return a, before_write, b, written


def test_clone_of_a_written_temporary_stays() -> None:
    x = torch.randn(4, 6)
    gm, exported, before, after = _run(CloneThenWrite(), x)
    assert after["clone"] == before["clone"] == 2
    got = exported(x)
    _same(got, gm(x))
    assert not torch.equal(got[0], got[1]) and not torch.equal(got[2], got[3])


class CloneReturnedTwice(nn.Module):
    """`a` and its clone both returned: folding would make two distinct
    outputs one tensor."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.tanh(x)
        return a, a.clone()


def test_clone_returned_beside_its_source_stays_a_distinct_tensor() -> None:
    x = torch.randn(4, 6)
    optimized = optimus_ir.optimize(CloneReturnedTwice(), [x])
    a, c = optimized(x)
    _same((a, c), CloneReturnedTwice()(x))
    assert a.data_ptr() != c.data_ptr()
    a.add_(1)
    assert not torch.equal(a, c)


def test_fx_call_ops_declare_the_identity_patterns() -> None:
    names = [type(p).__name__ for p in tr.canonicalization_patterns(fx.CallMethodOp)]
    assert names == ["FoldCallReturningOperand", "FoldTemporaryClone"]
    assert tr.canonicalization_patterns(fx.CallFunctionOp) == tr.canonicalization_patterns(fx.CallMethodOp)
    assert tr.canonicalization_patterns(fx.CallModuleOp) == ()


# ---------------------------------------------------------------------------
# in the default pipeline: before fusion
# ---------------------------------------------------------------------------


def test_canonicalize_runs_before_batch_fusion() -> None:
    stages = list(DEFAULT_PIPELINE_STAGES)
    assert stages.index("canonicalize") < stages.index("batch-fusion")


class Experts(nn.Module):
    """Four experts of Linear -> ReLU -> Dropout, twice (deepctr's DNN)."""

    def __init__(self) -> None:
        super().__init__()
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 16), nn.ReLU(), nn.Dropout(0.2))
            for _ in range(4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([e(x) for e in self.experts], 1).sum(1)


@pytest.mark.parametrize("freeze", [False, True])
def test_experts_in_eval_mode_lose_every_dropout(freeze: bool) -> None:
    torch.manual_seed(0)
    model = Experts().eval()
    x = torch.randn(64, 16)
    with torch.no_grad():
        optimized = optimus_ir.optimize(model, [x], freeze=freeze)
        torch.testing.assert_close(optimized(x), model(x))
    report = optimized.optimus_report
    assert report.ops_before["dropout"] == 8 and report.ops_after["dropout"] == 0
    # without fusion, exactly the dropouts go
    with torch.no_grad():
        unfused = optimus_ir.optimize(model, [x], pipeline="unfused", freeze=freeze)
        torch.testing.assert_close(unfused(x), model(x), rtol=0, atol=0)
    before, after = unfused.optimus_report.ops_before, unfused.optimus_report.ops_after
    assert sum(after.values()) == sum(before.values()) - 8
    assert after["dropout"] == 0 and after["linear"] == before["linear"] == 8


class ReturnsTrainingDropout(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(torch.tanh(x))


def test_a_returned_training_dropout_of_a_contiguous_value_gets_no_contiguous_copy() -> None:
    """A dropout's result is laid out like its input (a mask times the
    input in training, the input itself in eval): no `.contiguous()` is
    added before the output."""
    model = ReturnsTrainingDropout().train()
    x = torch.randn(4, 6)
    optimized = optimus_ir.optimize(model, [x])
    assert optimized.optimus_report.ops_after == Counter({"tanh": 1, "dropout": 1})
    torch.manual_seed(7)
    want = model(x)
    torch.manual_seed(7)
    got = optimized(x)
    _same(got, want)
    assert got.stride() == want.stride()
