"""The batch-fusion cost model (`optimus_ir.analysis.cost_model`): estimate arithmetic
and remark text, the calibration cache (round trip, corruption, staleness,
keys, unwritable directories), the overrides, and one real calibration.

Every test but `test_real_calibration` replaces the microbenchmark with a
stub, so the file stays fast and deterministic."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path

import pytest
import torch

from optimus_ir.analysis import cost_model as cm
from optimus_ir.analysis.cost_model import (
    CostModel,
    FusionEstimate,
    calibrated_cost_model,
    cost_model_from_options,
    default_cost_model,
)

FAKE = {
    "op_overhead_s": 2.0e-6,
    "view_overhead_s": 1.0e-6,
    "copy_bytes_per_s": 5.0e9,
    "flops_per_s": 8.0e10,
    "stack_bytes_per_s": 9.0e9,
    "contiguous_bytes_per_s": 5.0e9,
    "mm_flops_per_s": 9.0e10,
    "bmm_flops_per_s": 8.0e10,
    "seconds": 0.01,
    "spread": 1.02,
    "rounds": 3.0,
}
FAKE_FRESH = (32 * 2**20, 4.0e-10)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No override from the environment, no user cache, no in-memory models
    left by another test."""
    monkeypatch.delenv(cm.COST_MODEL_ENV, raising=False)
    monkeypatch.setenv(cm.CACHE_DIR_ENV, str(tmp_path / "env-cache"))
    monkeypatch.setattr(cm, "_IN_MEMORY", {})


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the microbenchmark by a stub that records each call."""
    calls: list[str] = []

    def fake_measure(device: str = "cpu") -> dict[str, float]:
        calls.append(device)
        return dict(FAKE)

    monkeypatch.setattr(cm, "measure", fake_measure)
    monkeypatch.setattr(cm, "measure_kernels", lambda device="cpu": {"pointwise": [(1.0, 1e-6), (1e6, 1e-4)]})
    monkeypatch.setattr(cm, "measure_fresh_allocations", lambda device="cpu": FAKE_FRESH)
    return calls


def _forbid_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(device: str = "cpu") -> dict[str, float]:
        raise AssertionError("the cost model measured again")

    monkeypatch.setattr(cm, "measure", fail)
    monkeypatch.setattr(cm, "measure_kernels", fail)
    monkeypatch.setattr(cm, "measure_fresh_allocations", fail)


# --- estimate ------------------------------------------------------------------------------


def test_estimate_profitable_and_describe() -> None:
    # 256 KiB at a bandwidth that makes the copy take exactly 21 us.
    model = cost_model_from_options(op_overhead_us=3.2, copy_gb_per_s=262144 / 21e-6 / 1e9)
    estimate = model.estimate(ops_before=16, ops_after=4, bytes_copied=256 * 1024)
    assert estimate.saved_s == pytest.approx(38.4e-6)
    assert estimate.cost_s == pytest.approx(21.0e-6)
    assert estimate.gain_s == pytest.approx(17.4e-6)
    assert estimate.profitable
    assert estimate.describe() == "saves 12 ops (~38.4 us), copies 256 KiB (~21.0 us): gain ~17.4 us"


def test_estimate_unprofitable_when_copies_dominate() -> None:
    model = cost_model_from_options(op_overhead_us=2.0, copy_gb_per_s=1.0)
    estimate = model.estimate(ops_before=4, ops_after=2, bytes_copied=1 << 20)
    assert estimate.saved_s == pytest.approx(4e-6)
    assert estimate.cost_s == pytest.approx((1 << 20) / 1e9)
    assert not estimate.profitable
    assert estimate.describe() == "saves 2 ops (~4.0 us), copies 1 MiB (~1048.6 us): gain ~-1044.6 us"


def test_break_even_is_not_profitable() -> None:
    model = cost_model_from_options(op_overhead_us=1.0, copy_gb_per_s=1.0)
    estimate = model.estimate(ops_before=3, ops_after=3)
    assert estimate.gain_s == 0.0
    assert not estimate.profitable
    assert estimate.describe() == "saves 0 ops (~0.0 us), copies nothing: gain ~0.0 us"


def test_added_ops_views_and_flops_are_priced() -> None:
    model = cost_model_from_options(op_overhead_us=2.0, copy_gb_per_s=1.0, view_overhead_us=0.5, gflops_per_s=1.0)
    estimate = model.estimate(ops_before=1, ops_after=3, views_before=0, views_after=4, extra_flops=3000)
    assert estimate.saved_s == 0.0
    assert estimate.cost_s == pytest.approx(4e-6 + 2e-6 + 3e-6)
    assert estimate.describe() == (
        "adds 2 ops (~4.0 us), adds 4 views (~2.0 us), copies nothing, adds 3 kFLOP (~3.0 us): gain ~-9.0 us"
    )
    saving = model.estimate(ops_before=9, ops_after=1, views_before=2, views_after=1, extra_flops=-1500)
    assert saving.saved_s == pytest.approx(16e-6 + 0.5e-6 + 1.5e-6)
    assert saving.cost_s == 0.0
    assert saving.describe() == (
        "saves 8 ops (~16.0 us), saves 1 view (~0.5 us), copies nothing, saves 1.5 kFLOP (~1.5 us): gain ~18.0 us"
    )


def test_estimate_rejects_negative_counts() -> None:
    model = default_cost_model()
    with pytest.raises(ValueError, match="bytes_copied"):
        model.estimate(ops_before=2, ops_after=1, bytes_copied=-1)
    with pytest.raises(ValueError, match="ops_after"):
        model.estimate(ops_before=2, ops_after=-1)


def test_fusion_estimate_from_the_two_contract_fields() -> None:
    estimate = FusionEstimate(saved_s=3e-6, cost_s=1e-6)
    assert estimate.gain_s == pytest.approx(2e-6)
    assert estimate.profitable


@pytest.mark.parametrize(
    ("count", "text"),
    [(0, "0 B"), (100, "100 B"), (1024, "1 KiB"), (1536, "1.5 KiB"), (300_000, "293.0 KiB"), (3 << 30, "3 GiB")],
)
def test_format_bytes(count: int, text: str) -> None:
    assert cm.format_bytes(count) == text


# --- constructors --------------------------------------------------------------------------


def test_default_and_options_models() -> None:
    cpu = default_cost_model()
    assert (cpu.device, cpu.source) == ("cpu", "default")
    cuda = default_cost_model("cuda:1")
    assert (cuda.device, cuda.source) == ("cuda", "default")
    assert cuda.op_overhead_s > cpu.op_overhead_s  # a launch on top of the dispatch
    options = cost_model_from_options(op_overhead_us=4.0, copy_gb_per_s=2.0)
    assert options.source == "options"
    assert options.op_overhead_s == pytest.approx(4e-6)
    assert options.copy_bytes_per_s == pytest.approx(2e9)
    assert options.view_overhead_s == pytest.approx(4e-6 * cpu.view_overhead_s / cpu.op_overhead_s)
    assert options.flops_per_s == cpu.flops_per_s


def test_invalid_constants_and_devices_are_rejected() -> None:
    with pytest.raises(ValueError, match="op_overhead_s"):
        cost_model_from_options(op_overhead_us=0.0, copy_gb_per_s=1.0)
    with pytest.raises(ValueError, match="copy_bytes_per_s"):
        cost_model_from_options(op_overhead_us=1.0, copy_gb_per_s=math.inf)
    with pytest.raises(ValueError, match="source"):
        CostModel("cpu", 1e-6, 1e-6, 1e9, 1e9, source="guessed")
    with pytest.raises(ValueError, match="no constants"):
        default_cost_model("meta")
    with pytest.raises(ValueError, match="not a device"):
        default_cost_model("gpu0")


# --- cache ---------------------------------------------------------------------------------


def test_cache_round_trip(tmp_path: Path, measured: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    first = calibrated_cost_model("cpu", cache_dir=tmp_path)
    assert first.source == "calibrated"
    assert measured == ["cpu"]
    path = cm.cache_path("cpu", tmp_path)
    assert path.parent == tmp_path and path.exists()
    data = json.loads(path.read_text())
    assert data["key"] == cm.calibration_key("cpu")
    assert data["measurements"]["stack_bytes_per_s"] == FAKE["stack_bytes_per_s"]

    _forbid_measuring(monkeypatch)
    second = calibrated_cost_model("cpu", cache_dir=tmp_path)
    assert second.source == "cached"
    assert [getattr(second, name) for name in cm._CONSTANTS] == [FAKE[name] for name in cm._CONSTANTS]
    assert (second.fresh_allocation_bytes, second.fresh_page_s_per_byte) == FAKE_FRESH
    assert (first.fresh_allocation_bytes, first.fresh_page_s_per_byte) == FAKE_FRESH


def test_fresh_pages_are_priced_from_their_size_on() -> None:
    model = dataclasses.replace(default_cost_model("cpu"), fresh_allocation_bytes=2**20, fresh_page_s_per_byte=1e-9)
    assert model.fresh_pages_seconds(2**20 - 1) == 0.0
    assert model.fresh_pages_seconds(2**20) == pytest.approx(2**20 * 1e-9)
    none_seen = dataclasses.replace(model, fresh_allocation_bytes=0)
    assert none_seen.fresh_pages_seconds(2**30) == 0.0
    cpu, cuda = default_cost_model("cpu"), default_cost_model("cuda")
    assert cpu.fresh_allocation_bytes == 32 * 2**20 and cpu.fresh_page_s_per_byte > 0
    assert cuda.fresh_allocation_bytes == 0  # the caching allocator keeps its blocks
    with pytest.raises(ValueError, match="fresh_allocation_bytes"):
        dataclasses.replace(model, fresh_page_s_per_byte=-1.0)


def test_fresh_allocations_are_measured_where_the_allocator_maps_them() -> None:
    """On this machine's allocator (glibc: blocks of 32 MiB and more are
    mapped afresh) the probe finds a size in its range and a positive cost a
    byte; never a size it did not probe; nothing on a caching device."""
    threshold, per_byte = cm.measure_fresh_allocations("cpu")
    probed = {mib * 2**20 for mib in cm._FRESH_PROBE_MIB}
    assert (threshold, per_byte) == (0, 0.0) or (threshold in probed and per_byte >= cm._FRESH_MIN_S_PER_BYTE)
    assert cm.measure_fresh_allocations("cuda") == (0, 0.0)


def test_a_cached_model_says_when_it_was_measured_and_how_steadily(
    tmp_path: Path, measured: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = calibrated_cost_model("cpu", cache_dir=tmp_path)
    _forbid_measuring(monkeypatch)
    second = calibrated_cost_model("cpu", cache_dir=tmp_path)
    assert second.calibrated_at == first.calibrated_at != ""
    assert second.spread == first.spread == FAKE["spread"]
    described = second.describe()
    assert f"calibrated {first.calibrated_at}" in described and "spread 1.02x" in described
    assert "noisy" not in described
    assert "calibrated" not in cm.default_cost_model("cpu").describe().split(":")[1]


def _round(op_us: float, stack_gb: float = 9.0) -> dict[str, float]:
    return {
        "op_overhead_s": op_us * 1e-6,
        "view_overhead_s": 1e-6,
        "stack_bytes_per_s": stack_gb * 1e9,
        "contiguous_bytes_per_s": 5e9,
        "mm_flops_per_s": 9e10,
        "bmm_flops_per_s": 8e10,
    }


def test_each_measurement_is_its_best_round_and_the_spread_is_kept() -> None:
    best, spread = cm._best_and_spread([_round(2.0), _round(8.0), _round(2.2, stack_gb=3.0)])
    assert best["op_overhead_s"] == pytest.approx(2e-6) and best["stack_bytes_per_s"] == pytest.approx(9e9)
    assert spread == pytest.approx(1.1)  # op: median 2.2 over best 2.0; stack: median 9 GB/s is the best
    _, steady = cm._best_and_spread([_round(2.0)] * 3)
    assert steady == 1.0


def test_a_noisy_calibration_runs_more_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy machine (one round in three steady) priced a view at 12 us
    instead of 2: rounds continue while they disagree, the best is kept."""
    rounds = iter([_round(12.0), _round(2.0), _round(12.0), _round(11.0), _round(2.1), _round(2.0), _round(2.0)])
    monkeypatch.setattr(cm, "_measure_round", lambda dev: next(rounds))
    result = cm.measure("cpu")
    assert result["op_overhead_s"] == pytest.approx(2e-6)
    assert result["rounds"] > cm._ROUNDS
    assert result["spread"] < cm.SPREAD_LIMIT or result["rounds"] == cm.MAX_ROUNDS
    quiet = iter([_round(2.0)] * 3)
    monkeypatch.setattr(cm, "_measure_round", lambda dev: next(quiet))
    assert cm.measure("cpu")["rounds"] == cm._ROUNDS


def test_recalibrate_measures_again(tmp_path: Path, measured: list[str]) -> None:
    calibrated_cost_model(cache_dir=tmp_path)
    again = calibrated_cost_model(cache_dir=tmp_path, recalibrate=True)
    assert again.source == "calibrated"
    assert measured == ["cpu", "cpu"]


def test_cache_dir_from_environment(tmp_path: Path, measured: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cm.CACHE_DIR_ENV, str(tmp_path / "from-env"))
    calibrated_cost_model()
    assert cm.cache_path("cpu").parent == tmp_path / "from-env"
    assert cm.cache_path("cpu").exists()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        "[1, 2]",
        json.dumps({"key": "wrong", "constants": {}}),
        None,  # a valid file with a negative constant
        None,  # a valid file measured under another torch version (stale)
    ],
    ids=["truncated", "empty", "not-a-dict", "bad-key", "negative", "stale"],
)
def test_corrupt_or_stale_cache_recalibrates(
    tmp_path: Path, measured: list[str], request: pytest.FixtureRequest, content: str | None
) -> None:
    path = cm.cache_path("cpu", tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        key = cm.calibration_key("cpu")
        constants = {name: FAKE[name] for name in cm._CONSTANTS}
        if request.node.callspec.id == "negative":
            constants["copy_bytes_per_s"] = -1.0
        else:
            key["torch"] = "0.0.1"
        content = json.dumps({"key": key, "constants": constants})
    path.write_text(content)
    model = calibrated_cost_model(cache_dir=tmp_path)
    assert model.source == "calibrated"
    assert measured == ["cpu"]
    # The broken file was replaced by a good one.
    assert calibrated_cost_model(cache_dir=tmp_path).source == "cached"


def test_cache_key_follows_thread_count(tmp_path: Path, measured: list[str]) -> None:
    threads = torch.get_num_threads()
    try:
        one = cm.cache_path("cpu", tmp_path)
        calibrated_cost_model(cache_dir=tmp_path)
        torch.set_num_threads(threads + 1)
        other = cm.cache_path("cpu", tmp_path)
        assert other != one
        assert f"-{threads + 1}t-" in other.name
        assert calibrated_cost_model(cache_dir=tmp_path).source == "calibrated"
        assert measured == ["cpu", "cpu"]
        assert json.loads(other.read_text())["key"]["threads"] == threads + 1
    finally:
        torch.set_num_threads(threads)
    assert calibrated_cost_model(cache_dir=tmp_path).source == "cached"


def test_cache_name_names_device_torch_and_threads(tmp_path: Path) -> None:
    name = cm.cache_path("cpu", tmp_path).name
    assert name.startswith("cost-model-v")
    assert "-cpu-" in name and f"-{torch.get_num_threads()}t-" in name
    assert torch.__version__.split("+")[0] in name


def test_unwritable_cache_dir_warns_once(tmp_path: Path, measured: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    unwritable = blocker / "cache"  # mkdir fails, also as root
    with pytest.warns(RuntimeWarning, match="cannot write the calibration cache"):
        first = calibrated_cost_model(cache_dir=unwritable)
    assert first.source == "calibrated"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = calibrated_cost_model(cache_dir=unwritable)
    assert second == first
    assert measured == ["cpu"]


# --- overrides -----------------------------------------------------------------------------


def test_environment_override_uses_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forbid_measuring(monkeypatch)
    monkeypatch.setenv(cm.COST_MODEL_ENV, "default")
    model = calibrated_cost_model(cache_dir=tmp_path)
    assert model == default_cost_model()
    assert model.source == "default"
    assert not any(tmp_path.iterdir())


def test_cuda_without_gpu_uses_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _forbid_measuring(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    model = calibrated_cost_model("cuda", cache_dir=tmp_path)
    assert model == default_cost_model("cuda")
    assert model.source == "default"


def test_cli_prints_constants_and_cache_path(
    tmp_path: Path, measured: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cm.main(["--device", "cpu", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "source            calibrated" in out
    assert str(cm.cache_path("cpu", tmp_path)) in out
    assert "op_overhead_s     2.000e-06" in out
    assert cm.main(["--cache-dir", str(tmp_path)]) == 0
    assert "source            cached" in capsys.readouterr().out


# --- the real microbenchmark, once ---------------------------------------------------------


def test_real_calibration(tmp_path: Path) -> None:
    model = calibrated_cost_model("cpu", cache_dir=tmp_path)
    assert model.source == "calibrated"
    for name in cm._CONSTANTS:
        value = getattr(model, name)
        assert math.isfinite(value) and value > 0, name
    data = json.loads(cm.cache_path("cpu", tmp_path).read_text())
    assert data["key"]["threads"] == torch.get_num_threads()
    assert all(math.isfinite(v) and v > 0 for v in data["measurements"].values())


def test_unknown_environment_mode_warns_once_and_calibrates(
    tmp_path: Path, measured: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cm, "_WARNED_MODES", set())
    monkeypatch.setenv(cm.COST_MODEL_ENV, "defualt")
    with pytest.warns(UserWarning, match="defualt"):
        assert calibrated_cost_model(cache_dir=tmp_path).source == "calibrated"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert calibrated_cost_model(cache_dir=tmp_path).source == "cached"


# --- kernel curves -------------------------------------------------------------------------


def test_kernel_seconds_interpolates_log_log_and_extrapolates() -> None:
    model = cm.CostModel(
        device="cpu", op_overhead_s=1e-6, view_overhead_s=1e-6, copy_bytes_per_s=1e9,
        flops_per_s=1e10, source="options",
        kernels=(("pointwise", ((1e3, 2e-6), (1e5, 2e-4))),),
    )
    assert model.kernel_seconds("pointwise", 10) == pytest.approx(2e-6)  # below: the smallest point
    assert model.kernel_seconds("pointwise", 1e4) == pytest.approx(2e-5)  # log-log midpoint
    assert model.kernel_seconds("pointwise", 1e6) == pytest.approx(2e-3)  # proportional above
    # no curve: the op overhead plus the bytes at the copy bandwidth (4 per element)
    assert model.kernel_seconds("layer_norm", 1e3) == pytest.approx(1e-6 + 4e3 / 1e9)


def test_kernel_curves_survive_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, measured) -> None:
    first = calibrated_cost_model("cpu", cache_dir=tmp_path)
    assert dict(first.kernels)["pointwise"] == ((1.0, 1e-6), (1e6, 1e-4))
    _forbid_measuring(monkeypatch)
    again = calibrated_cost_model("cpu", cache_dir=tmp_path)
    assert again.source == "cached" and again.kernels == first.kernels
