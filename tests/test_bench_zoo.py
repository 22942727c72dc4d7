"""Smoke test of benchmarks/bench_zoo.py: a row per (model, mode) with every
call compared to the model; a model that fails to build or optimize is a
row saying how, a wrong value is reported and fails the run, and a real
zoo model goes through the whole script (JSON and markdown written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from benchmark_scripts import load_benchmark

bench = load_benchmark("bench_zoo")
FAST = dict(repeats=1, sample_ms=0.5, clock=bench.CLOCKS["cpu"])


def _linear_inputs(batch: int, generator: torch.Generator) -> tuple[torch.Tensor]:
    return (torch.rand(batch, 4, generator=generator),)


def _add_model(monkeypatch: pytest.MonkeyPatch, name: str, builder: Any) -> None:
    model = bench.zoo_models.ZooModel(name, "torch", "a test model", "(x B x 4,)", "torch", builder, _linear_inputs)
    monkeypatch.setitem(bench.zoo_models.ZOO, name, model)


def test_a_model_that_cannot_be_built_is_a_row_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> torch.nn.Module:
        raise RuntimeError("no such table")

    _add_model(monkeypatch, "test.Broken", broken)
    row = bench.bench_row("test.Broken", "frozen", [8, 16], **FAST)
    assert row.failure == "build: RuntimeError: no such table" and not row.correct and not row.batches
    assert "test.Broken (frozen): build: RuntimeError: no such table" in bench.format_table([row])


def test_an_optimize_failure_is_a_row_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _add_model(monkeypatch, "test.Linear", lambda: torch.nn.Linear(4, 1))

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ValueError("cannot capture")

    monkeypatch.setattr(bench.optimus_ir, "optimize", refuse)
    row = bench.bench_row("test.Linear", "live", [8, 16], **FAST)
    assert row.failure == "optimize: ValueError: cannot capture" and row.groups_fused is None
    assert "| test.Linear | torch | (x B x 4,) | live | - | no call (see below) |" in bench.format_table([row])


def test_every_batch_is_called_and_compared_and_a_wrong_value_fails_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """The optimized module of this fake optimize() is off by one from
    batch 16 on: the first call is equal, the others differ, main exits 1."""
    _add_model(monkeypatch, "test.Linear", lambda: torch.nn.Linear(4, 1))

    class OffByOne(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model
            self.optimus_report = type("Report", (), {"groups_fused": 3})()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.model(x) + (x.shape[0] >= 16)

    monkeypatch.setattr(bench.optimus_ir, "optimize", lambda model, inputs, freeze: OffByOne(model))
    row = bench.bench_row("test.Linear", "frozen", [8, 16, 32], **FAST)
    assert row.batches == [8, 16, 32] and row.calls[0] == "equal"
    assert all(call.startswith("differs") for call in row.calls[1:]) and not row.correct
    assert row.groups_fused == 3 and row.failure.startswith("batch 16: differs")
    assert set(row.median_ms) == {"model", "ours"} and row.timing_batch == 8
    out = tmp_path / "zoo.json"
    argv = ["--models", "test.Linear", "--modes", "frozen", "--batches", "8,16", "--repeats", "1",
            "--sample-ms", "0.5", "--json", str(out)]
    assert bench.main(argv) == 1
    (written,) = json.loads(out.read_text())
    assert written["model"] == "test.Linear" and written["calls"][1].startswith("differs")


@pytest.mark.slow
def test_the_script_runs_a_zoo_model_end_to_end(tmp_path: Path) -> None:
    if bench.zoo_models.ZOO["fuxictr.DeepFM"].missing():
        pytest.skip(bench.zoo_models.ZOO["fuxictr.DeepFM"].missing())
    out, table = tmp_path / "zoo.json", tmp_path / "zoo.md"
    argv = ["--models", "fuxictr.DeepFM", "--modes", "frozen", "--batches", "16,32", "--repeats", "1",
            "--sample-ms", "0.5", "--json", str(out), "--markdown", str(table)]
    assert bench.main(argv) == 0  # no wrong value (a call that raises is a row, not a failure)
    (row,) = json.loads(out.read_text())
    assert row["batches"] == [16, 32] and row["calls"][0] == "equal" and row["groups_fused"] > 0
    assert row["median_ms"]["model"] > 0 and row["median_ms"]["ours"] > 0
    assert "| fuxictr.DeepFM | fuxictr 2.3.10 |" in table.read_text()
