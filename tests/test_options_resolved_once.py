"""Options resolved once (issue 35): an entry point turns `OptimizeOptions`
into typed values once (`OptimizeOptions.resolve`) and hands the passes
built in memory to the pipeline; no pipeline text is made to carry an
option and parsed again, and the memory budget is parsed once per call."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.analysis import cost_model
from optimus_ir.analysis.cost_model import MemoryBudget
from optimus_ir.options import OptimizeOptions
from optimus_ir.passes.registry import get_pass_class


class TwoTowers(nn.Module):
    """Two linears on two inputs: a group batch fusion looks at."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.a(x)) + torch.relu(self.b(y))


def _model() -> tuple[nn.Module, list[torch.Tensor]]:
    torch.manual_seed(0)
    return TwoTowers().eval(), [torch.randn(4, 8), torch.randn(4, 8)]


def _count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[tuple[Any, ...]]:
    """Replace `module.name` everywhere it is bound (every loaded module that
    imported it by name, too) with a wrapper recording each call's arguments."""
    original = getattr(module, name)
    calls: list[tuple[Any, ...]] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    for loaded in list(sys.modules.values()):
        if getattr(loaded, name, None) is original:
            monkeypatch.setattr(loaded, name, recording)
    return calls


def test_optimize_parses_the_memory_budget_once(monkeypatch: pytest.MonkeyPatch) -> None:
    model, inputs = _model()
    optimus_ir.optimize(model, inputs, memory_budget="2x")  # every module the call needs is loaded
    calls = _count_calls(monkeypatch, cost_model, "parse_memory_budget")
    result = optimus_ir.optimize(model, inputs, memory_budget="2x")
    assert calls == [("2x",)]
    assert result.optimus_report.statistics.by_pass("batch-fusion")  # the pass ran, on the parsed budget
    torch.testing.assert_close(result(*inputs), model(*inputs))


def test_the_default_budget_is_parsed_once_too(monkeypatch: pytest.MonkeyPatch) -> None:
    model, inputs = _model()
    optimus_ir.optimize(model, inputs)
    calls = _count_calls(monkeypatch, cost_model, "parse_memory_budget")
    optimus_ir.optimize(model, inputs)
    assert calls == [(cost_model.DEFAULT_MEMORY_BUDGET,)]


def test_no_pipeline_text_carries_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a pipeline text from the user the pipeline parser never
    runs: the default pipeline's passes are made in memory and the knobs are
    set on them as typed values (the budget reaches batch-fusion parsed)."""
    from optimus_ir import pipeline

    model, inputs = _model()
    optimus_ir.optimize(model, inputs)
    parsed = _count_calls(monkeypatch, pipeline, "parse_pipeline")
    fusion_class = get_pass_class("batch-fusion")
    budgets: list[Any] = []
    original_apply = fusion_class.apply

    def recording_apply(self: Any, ctx: Any, op: Any) -> None:
        budgets.append(self.memory_budget)
        original_apply(self, ctx, op)

    monkeypatch.setattr(fusion_class, "apply", recording_apply)
    result = optimus_ir.optimize(model, inputs, memory_budget="2x", kernels="torch", cost_model="default")
    assert parsed == []
    assert budgets == [MemoryBudget(ratio=2.0)]
    # the report still shows the pipeline as it ran, as the user would write it
    report_pipeline = result.optimus_report.pipeline
    assert 'memory_budget="2x"' in report_pipeline and 'kernels="torch"' in report_pipeline

    # a pipeline the user wrote is parsed once, when the options are made
    options = OptimizeOptions(pipeline="raise-fx,batch-fusion{cost-model=none},lower-to-fx", memory_budget="3x")
    assert len(parsed) == 1
    resolved = options.resolve()
    assert len(parsed) == 1
    (fusion,) = [p for p in resolved.pipeline.passes if p.name == "batch-fusion"]
    assert (fusion.cost_model, fusion.memory_budget) == ("none", MemoryBudget(ratio=3.0))


def test_resolve_reads_the_environment_once_into_typed_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTIMUS_STRICT", "1")
    monkeypatch.setenv("OPTIMUS_CHECK_SPEED", "0")
    resolved = OptimizeOptions(validate=True).resolve()
    assert (resolved.strict, resolved.check_speed, resolved.verify_each) == (True, False, True)
    assert resolved.pipeline.default and resolved.pipeline.passes[0].name == "maximize-value-semantics"
    monkeypatch.setenv("OPTIMUS_STRICT", "0")
    assert resolved.strict is True  # settled: the environment was read once
    assert OptimizeOptions(strict=False).resolve().strict is False
    # a pass knob set: the op-count guarantee is the untouched default pipeline's, as before
    assert not OptimizeOptions(cost_model="none").resolve().pipeline.default
