"""Smoke test of benchmarks/bench_triton_kernels.py: `--smoke` runs every
row on the CPU (the references stand in for the kernels) and prints the
issue's targets; without `--smoke` and without CUDA it refuses clearly."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_triton_kernels.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_triton_kernels", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_triton_kernels", module)
    spec.loader.exec_module(module)
    return module


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
