"""Smoke test of benchmarks/bench_compile.py: `--smoke` runs every variant
(fresh processes with fresh Inductor cache dirs for the compile times, the
steady state interleaved) on a tiny model, checks every result against eager
and prints the table; it does not judge timings."""

from __future__ import annotations


import pytest

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_compile")


@pytest.mark.slow
def test_smoke_run_measures_every_variant_and_checks_results(capsys) -> None:
    assert _bench().main(["--smoke"]) == 0
    out = capsys.readouterr().out
    for variant in ("inductor", "inductor+optimus", "ours+inductor"):
        assert f"| {variant} |" in out
        assert f"compile {variant}" in out
    assert "WRONG RESULTS" not in out
    assert "smoke run" in out


def test_unknown_variant_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown variant 'tvm'"):
        _bench().compile_and_call("tvm", None, None)


@pytest.mark.slow
def test_freeze_smoke_run_compares_under_freezing(capsys) -> None:
    """`--freeze`: every variant under Inductor's freezing, ours with
    freeze=True; results still equal eager."""
    assert _bench().main(["--smoke", "--freeze", "--variants", "inductor,ours+inductor"]) == 0
    out = capsys.readouterr().out
    assert "Inductor freezing (ours: freeze=True)" in out
    assert "| ours+inductor |" in out and "| inductor |" in out
    assert "WRONG RESULTS" not in out
