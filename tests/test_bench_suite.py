"""The benchmark suite (`benchmarks/suite.py`, `make bench`): its quick
mode end to end (the CI smoke run: the runner works and every variant's
outputs match the original; timings are not judged) and its pieces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parent.parent
suite = load_benchmark("suite")
suite_models = load_benchmark("suite_models")
TEST_OVERRIDES = ("OPTIMUS_COST_MODEL", "OPTIMUS_CHECK_SPEED", "OPTIMUS_VERIFY_EACH")
"""What tests/conftest.py sets for the test process (see there)."""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("bench")
    # As `make bench-quick` runs: without the test suite's overrides (the
    # fixed cost model, no speed check), calibrating into a fresh cache.
    env = {k: v for k, v in os.environ.items() if k not in TEST_OVERRIDES}
    env["OPTIMUS_CACHE_DIR"] = str(tmp_path_factory.mktemp("optimus-cache"))
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "suite.py"), "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=900, env=env,
    )
    return done, out


def test_quick_run_succeeds_and_writes_every_output(quick_run) -> None:
    done, out = quick_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = (out / "results.md").read_text()
    assert table.strip() == done.stdout.split("\nwritten:")[0].strip()  # what it printed
    assert "## Speedup over the original model" in table and "## Scaling" in table
    assert "growth exponent" in table
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # progress while it ran: one line per variant and model
    assert "[1/5 recsys-mixed-8] ours: first call" in done.stderr


def test_quick_run_covers_every_family_and_every_result_matches(quick_run) -> None:
    _done, out = quick_run
    report = json.loads((out / "results.json").read_text())
    names = [m["name"] for m in report["models"]]
    assert names == [m.name for m in suite_models.SMALL]
    assert {suite_models.MODELS[n].family for n in names} == {"recsys", "dlrm", "mmoe", "wide-deep"}
    for model in report["models"]:
        for variant, cell in model["cells"].items():
            if cell["skipped"]:
                assert variant in suite.COMPILED and model["name"] != "recsys-mixed-8"
                continue
            where = f"{model['name']} {variant}"
            assert cell["error"] is None, where
            assert cell["matches"] is True and cell["max_abs_diff"] <= 1e-4, where
            assert cell["median_ms"] > 0 and cell["q1_ms"] <= cell["median_ms"] <= cell["q3_ms"], where
            assert cell["first_call_s"] > 0 and cell["peak_mib"] > 0, where
    recsys = report["models"][0]["cells"]
    assert all(recsys[v]["skipped"] is None for v in suite.COMPILED)  # Inductor ran there
    # ours never computes with more ops than the captured graph. Whether the
    # 8 small towers fuse at all is the calibrated cost model's call on this
    # machine (gains of a few us per group: a noisy calibration flips them;
    # 44 -> 25 ops when it fuses); fusion itself is tested with fixed cost
    # models (test_batch_fusion.py, test_example_models.py)
    assert recsys["ours"]["ops"] <= recsys["captured"]["ops"]
    assert recsys["ours"]["pass_ms"] > 0 and recsys["inductor+ours"]["pass_ms"] > 0
    assert [row["nodes"] for row in report["scaling"]] == [1000, 3000, 10000]
    assert report["problems"] == []


def test_fitted_exponent_recovers_the_power() -> None:
    nodes = [1e3, 1e4, 1e5]
    assert suite.fitted_exponent(nodes, [2e-3 * n for n in nodes]) == pytest.approx(1.0)
    assert suite.fitted_exponent(nodes, [1e-7 * n**2 for n in nodes]) == pytest.approx(2.0)
    assert suite.fitted_exponent([1e3], [1.0]) is None


def _result(**cells: object) -> object:
    result = suite.ModelResult("m", "a model")
    for variant, cell in cells.items():
        result.cells[variant] = cell
    return result


def test_verdict_fails_on_ours_not_on_pytorch() -> None:
    good = suite.Cell(median_ms=1.0, matches=True)
    wrong = suite.Cell(median_ms=1.0, matches=False, mismatch="Tensor-likes are not close!")
    broken = suite.Cell(error="RuntimeError: boom")
    assert suite.verdict([_result(original=good, ours=good, pytorch=wrong)]) == []
    assert suite.verdict([_result(original=good, ours=wrong)]) == [
        "m ours differs from the original: Tensor-likes are not close!"
    ]
    assert suite.verdict([_result(original=good, **{"inductor+ours": broken})]) == [
        "m inductor+ours failed: RuntimeError: boom"
    ]
    skipped = suite.Cell(skipped="too big")
    assert suite.verdict([_result(original=good, **{"inductor+ours": skipped})]) == []


def test_summary_shows_speedups_skips_and_failures() -> None:
    result = _result(
        original=suite.Cell(median_ms=2.0, ops=10),
        ours=suite.Cell(median_ms=1.0, ops=4),
        pytorch=suite.Cell(error="boom"),
        inductor=suite.Cell(skipped="too big"),
    )
    table = suite.format_summary([result], ["original", "ours", "pytorch", "inductor"])
    assert table.splitlines()[-1] == "| m | 10 | 2.00x (4 ops) | failed | skipped |"
    details = suite.format_details([result], ["original", "ours", "pytorch", "inductor"])
    assert "| m | pytorch | FAILED: boom |" in details
    assert "| m | inductor | skipped: too big |" in details


def test_op_counts_leave_out_views_and_getitem() -> None:
    import torch

    def f(x: torch.Tensor) -> torch.Tensor:
        a, b = torch.split(x, 2, dim=1)
        return torch.relu(a.reshape(-1)) + b.flatten()

    gm = torch.fx.symbolic_trace(f)
    assert suite.op_counts(gm) == (2, 7)  # relu, add; of split, 2 getitem, reshape, flatten, relu, add


def test_unknown_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        suite.parse_settings(["--models", "recsys-mixed-9"])
    assert exit_info.value.code == 2
    assert "unknown models recsys-mixed-9" in capsys.readouterr().err


def test_every_model_builds_seeded() -> None:
    import torch

    for model in suite_models.SMALL:
        first, inputs = suite_models.build(model.name, 4)
        second, again = suite_models.build(model.name, 4)
        for a, b in zip(first.state_dict().values(), second.state_dict().values()):
            assert torch.equal(a, b), model.name
        for a, b in zip(inputs, again):
            assert torch.equal(a, b), model.name
        with torch.no_grad():
            assert torch.isfinite(first(*inputs)).all(), model.name
