"""Smoke test of benchmarks/bench_batch_fusion.py on its smallest configuration
(8 towers, batch 4, 1 repeat): every row comes out, ours and PyTorch's
pre-grad Optimus both ran and match the captured graph, and the JSON holds
the figures (no timing assertions: timings belong to the benchmark)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_batch_fusion as bench  # noqa: E402


@pytest.fixture(scope="module")
def smallest(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, dict]:
    report = tmp_path_factory.mktemp("bench") / "out.json"
    threads = torch.get_num_threads()
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            status = bench.main(
                [
                    "--towers", "8",
                    "--batches", "4",
                    "--repeats", "1",
                    "--sample-ms", "1",
                    "--json", str(report),
                ]
            )
    finally:
        torch.set_num_threads(threads)
    return status, stdout.getvalue(), json.loads(report.read_text())


def test_exit_status_and_table_rows(smallest) -> None:
    status, text, _ = smallest
    assert status == 0
    for variant in bench.VARIANTS:
        assert text.count(f"\n| {variant}-8 | 4 | ") == 2  # timing table and optimization table
    assert "| model | batch | ops captured | ops ours | ops pytorch |" in text
    assert "MISMATCH" not in text
    verdicts = [line for line in text.splitlines() if line[:5] in ("PASS:", "FAIL:", "SKIP:")]
    assert len(verdicts) == 4
    for target in ("ours never slower", "mixed-64 at batch 64", "mixed-64 at batch 512", "fewer ops"):
        assert sum(target in line for line in verdicts) == 1
    assert "batch_linear" in text and "merge_splits_pass" in text  # the options are printed


def test_numerics_passed_and_figures_saved(smallest) -> None:
    _, _, report = smallest
    rows = report["rows"]
    assert [(r["variant"], r["towers"], r["batch"]) for r in rows] == [
        ("uniform", 8, 4),
        ("mixed", 8, 4),
    ]
    for row in rows:
        assert row["mismatch"] == {"ours": None, "pytorch": None}
        assert row["errors"] == {}
        assert all(row["max_abs_diff"][who] <= bench.ATOL for who in ("ours", "pytorch"))
        assert set(row["median_ms"]) == {"original", "captured", "ours", "pytorch"}
        assert all(row["ops"][who] > 0 for who in ("captured", "ours", "pytorch"))
        assert {"capture", "import", "passes", "export"} <= set(row["ours_phase_ms"])
        assert row["ours_pass_ms"] and row["pytorch_ms"] > 0
    # PyTorch's batch fusions did run: 8 uniform towers have 8 same-shaped linears.
    assert rows[0]["pytorch_fired"].get("batch_linear", 0) >= 1
    assert set(bench.pytorch_options(2)) == set(report["pytorch_options"])


def test_variants_build_the_models_the_issue_names() -> None:
    uniform, (x,) = bench.build("uniform", 8, 4)
    assert x.shape == (4, 8 * 16) and uniform.tower_depth == 2
    mixed, (y,) = bench.build("mixed", 8, 4)
    assert mixed.widths == (16, 32, 64, 16, 32, 64, 16, 32)
    assert y.shape == (4, sum(mixed.widths))
    assert set(mixed.activations) == {"tanh", "relu", "sigmoid"}
