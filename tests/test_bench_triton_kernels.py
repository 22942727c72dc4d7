"""Smoke test of benchmarks/bench_triton_kernels.py: `--smoke` runs every
row on the CPU (the references stand in for the kernels, a direct call for
a CUDA graph's replay) and prints the issue's targets; without `--smoke` and
without CUDA it says so, runs the smoke with the real kernels in Triton's
interpreter, and exits 0 (`make bench-triton` on a machine without a GPU)."""

from __future__ import annotations

import os

import pytest
import torch

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_triton_kernels")


def test_smoke_run_prints_every_row_and_target(capsys) -> None:
    assert _bench().main(["--smoke"]) == 0
    out = capsys.readouterr().out
    for row in ("grouped GEMM", "ragged", "layer norm", "+tanh", "pointwise", "recsys", "kernel calls",
                "cuda graph grouped GEMM", "cuda graph layer norm", "cuda graph pointwise",
                "odd + ", "tables:"):
        assert row in out
    for target in ("HBM bandwidth", "loop of torch.mm", "over eager", "CUDA-graph replay"):
        assert target in out
    assert "smoke run: CPU references" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")
def test_without_cuda_the_full_run_says_so_and_runs_the_interpreter_smoke(capsys) -> None:
    before = os.environ.get("OPTIMUS_TRITON_ON_CPU")
    assert _bench().main([]) == 0
    captured = capsys.readouterr()
    assert "no CUDA device" in captured.err
    assert "kernels: Triton interpreter" in captured.out
    # The real kernels ran (their metadata tables were built) ...
    assert "cuda graph layer norm" in captured.out and " 0 misses" not in captured.out
    # ... and the switch is off again for the rest of the process.
    assert os.environ.get("OPTIMUS_TRITON_ON_CPU") == before
