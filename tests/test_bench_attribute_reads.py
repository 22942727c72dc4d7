"""Smoke test of benchmarks/bench_attribute_reads.py: the prologue it cuts
out of the optimized module's code reads every attribute and returns
nothing, and its figures come out (no timing assertions: timings belong to
the benchmark)."""

from __future__ import annotations

import math


import optimus_ir
from benchmark_scripts import load_benchmark
from optimus_ir.examples.recsys import make_recsys_model

bench = load_benchmark("bench_attribute_reads")


def test_the_prologue_is_the_modules_own_reads() -> None:
    model, (x,) = make_recsys_model(num_towers=2, batch=4)
    module = optimus_ir.optimize(model, (x,), check_speed=False)
    prologue = bench.prologue_of(module)
    assert prologue(module, x) is None
    assert "_own_state" in prologue.__code__.co_varnames  # the reads it times are the watched ones


def test_smallest_run_reports_every_column() -> None:
    figures = bench.main(["--towers", "2", "--rounds", "2", "--sample-ms", "0.5"])["2"]
    assert set(figures) == {"reads", "prologue us", "changed us", "call us", "prologue %"}
    assert figures["reads"] > 0 and all(figures[k] > 0 for k in ("prologue us", "changed us", "call us"))
    assert not math.isnan(figures["changed us"])
