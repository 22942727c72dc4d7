"""Smoke test of benchmarks/bench_wide_siblings.py: its smallest size runs
every model through the default pipeline and the outputs match (no timing
assertions: timings belong to the benchmark)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_wide_siblings as bench  # noqa: E402


@pytest.mark.parametrize("model", bench.MODELS, ids=lambda m: m.name)
def test_smallest_size_matches(model) -> None:
    result = bench.run_one(model, 32, check=True)  # check: rtol=atol=0 against the trace
    assert set(result.seconds) == set(bench.PIPELINE.split(","))


def test_table_has_growth_factors() -> None:
    results = [bench.run_one(bench.MODELS[0], k, check=False) for k in (8, 32)]
    table = bench.format_table(results)
    assert "pairs" in table and "x)" in table
