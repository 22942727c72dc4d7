"""Smoke test of benchmarks/bench_compile_time.py: `--smoke` compiles a
tiny recsys model with Inductor alone and with our backend, each in a fresh
process with a fresh cache seeded with the vector-ISA probe's files only,
checks both against eager and prints the tables; timings are not judged.
The seed holds the probe's files and nothing else, and a seeded child
compiles no probe program (it only loads them)."""

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
    # Inductor generated C++ kernels for both; the breakdown adds up to the
    # first call and names our stage's share; the seeded cache spared every
    # run the probe's compiles (it still ran, loading the seed).
    assert row["kernels"]["inductor"] > 0 and row["kernels"]["ours+inductor"] > 0
    for variant, runs in json.loads(out_json.read_text())["runs"]["recsys-mixed-8"].items():
        (run,) = runs
        assert sum(run["phases"].values()) == pytest.approx(run["seconds"])
        assert run["phases"]["kernel_cxx"] > 0 and run["phases"]["isa_probe"] > 0
        assert run["isa_probe_builds"] == 0
        assert (run["phases"]["ours"] > 0) == (variant == "ours+inductor")
        # our share split into its phases adds up to it
        assert sum(run["our_phases"].values()) == pytest.approx(run["phases"]["ours"])
        if variant == "ours+inductor":
            assert run["our_phases"]["passes"] > 0 and run["our_phases"]["export"] > 0
    assert "| recsys-mixed-8 | ours+inductor |" in out and "vector-ISA probe (once, not counted)" in out


@pytest.mark.slow
def test_the_isa_seed_holds_the_probe_files_only(tmp_path: Path) -> None:
    seed = tmp_path / "inductor"
    assert _bench().seed_isa_cache(seed, timeout_s=600) > 0
    files = [p.relative_to(seed) for p in seed.rglob("*") if p.is_file()]
    assert any(f.suffix == ".so" for f in files)
    assert all(f.suffix in (".cpp", ".so") or f.parts[0] == "locks" for f in files), files


def test_unknown_models_and_variants_are_refused() -> None:
    with pytest.raises(SystemExit):
        _bench().main(["--models", "resnet"])
    with pytest.raises(ValueError, match="unknown variant"):
        _bench().child("recsys-mixed-8", "tvm", 8)


def test_tower_counts_name_recsys_models() -> None:
    bench = _bench()
    assert bench.recsys_towers("recsys-mixed-2048") == 2048
    assert bench.recsys_towers("recsys-mixed-0") is None and bench.recsys_towers("DCN") is None
    with pytest.raises(SystemExit):
        bench.main(["--models", "recsys-mixed-x"])


def test_the_third_party_models_are_the_third_party_benchmark_s() -> None:
    """One list of deepctr-torch models, bench_third_party's, and one of the
    zoo's (FuxiCTR, torchrec, torchfm), zoo_models'."""
    assert set(load_benchmark("bench_third_party").MODELS) <= set(_bench().MODELS)
    assert set(load_benchmark("zoo_models").ZOO) <= set(_bench().MODELS)
    assert set(_bench().DEFAULT_MODELS) <= set(_bench().MODELS)
