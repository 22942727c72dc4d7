"""Smoke test of benchmarks/bench_compile_time.py: `--smoke` compiles a
tiny recsys model with Inductor alone and with our backend, each in a fresh
process with empty caches, checks both against eager and prints the table;
timings are not judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_compile_time")


@pytest.mark.slow
def test_smoke_run_measures_both_variants_and_checks_results(capsys, tmp_path: Path) -> None:
    out_json = tmp_path / "compile.json"
    assert _bench().main(["--smoke", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "| recsys-mixed-8 |" in out and "WRONG RESULTS" not in out
    (row,) = json.loads(out_json.read_text())["table"]
    # Our stage ran inside the compile (its time is part of it). Whether it
    # fuses is the Inductor target's cost model's call (8 towers: declined;
    # tests/test_inductor_target.py checks what fuses).
    assert 0 < row["stage_s"] < row["ours_s"]
    assert row["max_abs_diff"] <= _bench().TOLERANCE


def test_unknown_models_and_variants_are_refused() -> None:
    with pytest.raises(SystemExit):
        _bench().main(["--models", "resnet"])
    with pytest.raises(ValueError, match="unknown variant"):
        _bench().child("recsys-mixed-8", "tvm", 8)
