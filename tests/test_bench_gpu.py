"""benchmarks/bench_gpu.py (issue 38's `make bench-gpu`), kept working on
the CPU: `--smoke` measures tiny models with the eager columns and a launch
profile; the row order puts the issue's target first; the targets read the
rows they need; without CUDA the full run says so and exits 0."""

from __future__ import annotations

import json

import pytest
import torch

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_gpu")


def test_smoke_measures_every_row_checks_values_and_profiles(tmp_path, capsys) -> None:
    out = tmp_path / "gpu.json"
    assert _bench().main(["--smoke", "--profile", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())
    assert [r["model"] for r in rows] == ["recsys-mixed-8", "mmoe-small", "torchfm.DeepFM"]
    for row in rows:
        assert row["errors"] == {}, row["errors"]  # every variant built, ran and matched the module
        assert set(row["ms"]) == {"original", "captured", "ours", "ours+cudagraphs"}
        assert all(ms > 0 for ms in row["ms"].values())
        assert row["profile"] and all(p["calls"] >= 1 and p["host_us_per_call"] > 0 for p in row["profile"])
    assert rows[0]["groups_fused"] > 0
    assert "launch profile, recsys-mixed-8 fp32 b8" in printed
    assert "ours vs original" in printed


def test_rows_start_with_the_target_then_fp32_and_small_batches() -> None:
    bench = _bench()
    plan = bench.rows_in_priority(["mmoe", "recsys-mixed-64"], ["fp32", "bf16"], [4096, 512])
    assert plan[0] == ("recsys-mixed-64", "fp32", 512)
    assert plan[1:4] == [("mmoe", "fp32", 512), ("mmoe", "fp32", 4096), ("recsys-mixed-64", "fp32", 4096)]
    assert all(d == "bf16" for _, d, _ in plan[4:]) and len(plan) == 8


def test_targets_pass_and_fail_on_the_rows_measured() -> None:
    bench = _bench()
    target = bench.Row("recsys-mixed-64", "fp32", 512, ms={
        "original": 3.0, "captured": 2.5, "ours": 1.5, "inductor": 1.6,
        "ours+cudagraphs": 0.5, "inductor-reduce-overhead": 0.4,
    })
    slow = bench.Row("mmoe", "bf16", 4096, ms={"captured": 1.0, "ours": 1.2})
    lines = bench.targets([target, slow])
    assert "PASS ours eager 2.00x over the eager module (>= 1.5x)" in lines
    assert any(line.startswith("PASS ours eager 1.500 ms vs Inductor default") for line in lines)
    assert any(line.startswith("FAIL ours + CUDA graphs 0.500 ms") for line in lines)
    assert any(line.startswith("FAIL no suite model slower than its captured graph: mmoe bf16 b4096 (1.20x") for line in lines)
    assert bench.targets([]) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")
def test_without_cuda_the_full_run_says_so(capsys) -> None:
    assert _bench().main([]) == 0
    assert "no CUDA device here" in capsys.readouterr().out


def test_the_launch_profile_counts_each_fused_launchers_work_on_the_cpu(monkeypatch) -> None:
    """With the Triton launchers on the CPU (Triton's interpreter), the
    profile finds each `optimus::` op and counts what its launcher does per
    call (allocations: its outputs, statistics and metadata table), so the
    per-call work issue 38 wants cut is measurable without a device."""
    import os

    import optimus_ir
    from optimus_ir.examples.recsys import VARIANTS, make_recsys_model
    from pipelines import TRITON_FUSE_ALL

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("a CUDA device is here: the launchers' device work is what the GPU check profiles")
    monkeypatch.setenv("OPTIMUS_TRITON_ON_CPU", "1")
    model, (x,) = make_recsys_model(num_towers=4, batch=8, seed=0, **VARIANTS["mixed"])
    model.eval()
    with torch.no_grad():
        ours = optimus_ir.optimize(model, (x,), TRITON_FUSE_ALL, check_speed=False)
    profile = _bench().launch_profile(ours, (x,), "cpu")
    by_op = {entry["op"]: entry for entry in profile}
    assert "optimus::batched_layer_norm" in by_op, sorted(by_op)
    norm = by_op["optimus::batched_layer_norm"]
    assert norm["calls"] >= 1 and norm["host_us_per_call"] > 0
    assert norm["allocations"] >= 1  # counted: the launcher's outputs at least
    assert norm["copies"] == norm["syncs"] == norm["launches"] == 0  # no device here
