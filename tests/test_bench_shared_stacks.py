"""benchmarks/bench_shared_stacks.py's summary over processes (`summarize`)
on given results, and a smoke run of `--processes` (with `--compare-chains`) on a 4-tower model;
timings are not judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark


def _run(captured: float, shared: float, faults: float) -> list[dict]:
    mode = {"ms": {"captured": captured, "shared": shared, "check": 0.01}, "page faults": {"captured": faults, "shared": 0.0}}
    return [{"towers": 64, "variant": "mixed", "batch": 512, "no_grad": mode, "train": mode}]


def test_summary_gives_each_columns_median_range_and_faults_over_processes() -> None:
    rows = load_benchmark("bench_shared_stacks").summarize([_run(30.0, 30.0, 0.0), _run(40.0, 32.0, 2500.0), _run(33.0, 30.0, 10.0)])
    assert [(r["row"], r["mode"]) for r in rows] == [("recsys-mixed-64, batch 512", "no_grad"), ("recsys-mixed-64, batch 512", "train")]
    columns = rows[1]["columns"]
    assert set(columns) == {"shared"}  # the prologue's test is no model
    shared = columns["shared"]
    assert shared["ratios"] == [1.0, 1.25, 1.1]
    assert (shared["median"], shared["min"], shared["max"]) == (1.1, 1.0, 1.25)
    assert shared["page faults"] == [0.0, 0.0, 0.0]
    assert rows[1]["baseline page faults"] == [0.0, 2500.0, 10.0]


@pytest.mark.slow
def test_processes_repeat_the_run_in_fresh_processes_and_summarize(capsys, tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    argv = [
        "--towers", "4", "--batch", "8", "--rounds", "1", "--sample-ms", "1", "--processes", "2", "--compare-chains",
        "--json", str(out),
    ]
    rows = load_benchmark("bench_shared_stacks").main(argv)
    written = json.loads(out.read_text())
    assert len(written["runs"]) == 2 and written["summary"] == rows
    for row in rows:
        assert set(row["columns"]) >= {"copy", "shared", "shared alone"}
        for column in row["columns"].values():
            assert len(column["ratios"]) == 2 and column["min"] <= column["median"] <= column["max"]
            assert len(column["page faults"]) == 2
    assert "over 2 processes" in capsys.readouterr().out
