"""Smoke test of benchmarks/bench_exported_module.py: the runner builds the
three variants, their outputs agree with the original model, and the table
and JSON come out (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_exported_module")


def test_quick_run_writes_table_and_json(tmp_path: Path) -> None:
    bench = _bench()
    table, report = tmp_path / "table.md", tmp_path / "out.json"
    num_threads = torch.get_num_threads()
    try:
        assert bench.main(
            ["--quick", "--rounds", "2", "--output", str(table), "--json", str(report)]
        ) == 0
    finally:
        torch.set_num_threads(num_threads)
    rows = json.loads(report.read_text())["rows"]
    assert [row["model"] for row in rows] == list(bench.QUICK_MODELS)
    for row in rows:
        assert row["mismatches"] == []
        assert row["batch"] == "64"
        assert set(row["median_ms"]) == {"original", "captured", "ours"}
        assert all(value > 0 for value in row["median_ms"].values())
    text = table.read_text()
    assert text.startswith("| model | batch | original ms | captured ms | ours ms |")
    assert text.count("\n| recsys-8 | 64 |") == 1


def test_captured_graph_takes_the_real_parameters() -> None:
    bench = _bench()
    from optimus_ir.examples.recsys import make_recsys_model

    model, inputs = make_recsys_model(num_towers=2, batch=4)
    gm, args = bench.capture_graph(model, inputs)
    assert isinstance(gm, torch.fx.GraphModule)
    assert not any(node.op == "get_attr" for node in gm.graph.nodes)
    parameters = {id(p) for p in model.parameters()}
    assert parameters <= {id(a) for a in args}
    (out,) = gm(*args)
    torch.testing.assert_close(out, model(*inputs), rtol=0, atol=0)


class _NoBatch(torch.nn.Module):
    """Leading dims tied together: x [3, 4] @ y [4, 5] takes no batch."""

    def forward(self, x, y):
        return torch.relu(x @ y)


def test_batched_inputs_or_own_inputs() -> None:
    bench = _bench()
    from models import CASES_BY_NAME

    model, inputs = CASES_BY_NAME["matmuls"].factory()
    batched = bench.batched_inputs(model, inputs, 64)
    assert batched is not None and all(x.shape[0] == 64 for x in batched)
    no_batch = bench.BenchModel(
        "no_batch", lambda: (_NoBatch(), (torch.randn(3, 4), torch.randn(4, 5)))
    )
    assert bench.bench_row(no_batch, 64, rounds=1, sample_ms=0.1) is None
    row = bench.bench_row(no_batch, None, rounds=1, sample_ms=0.1)
    assert row.batch == "own" and row.mismatches == [] and row.note == ""
    assert "| no_batch | own |" in bench.format_table([row])


def test_mismatch_is_reported() -> None:
    bench = _bench()
    x = torch.ones(3)
    calls = {"original": lambda: x, "captured": lambda: (x,), "ours": lambda: x + 1}
    problems = bench.check_outputs(calls, torch.nn.Identity(), (x,))
    assert len(problems) == 1 and problems[0].startswith("ours: output 0")
