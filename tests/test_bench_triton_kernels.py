"""Smoke test of benchmarks/bench_triton_kernels.py: `--smoke` runs every
row on the CPU (the references stand in for the kernels) and prints the
issue's targets; without `--smoke` and without CUDA it refuses clearly."""

from __future__ import annotations


import pytest
import torch

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_triton_kernels")


def test_smoke_run_prints_every_row_and_target(capsys) -> None:
    assert _bench().main(["--smoke"]) == 0
    out = capsys.readouterr().out
    for row in ("grouped GEMM", "ragged", "layer norm", "+tanh", "pointwise", "recsys", "kernel calls"):
        assert row in out
    for target in ("HBM bandwidth", "loop of torch.mm", "over eager"):
        assert target in out
    assert "smoke run" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")
def test_without_cuda_the_full_run_says_so(capsys) -> None:
    assert _bench().main([]) == 2
    assert "no CUDA device" in capsys.readouterr().err
