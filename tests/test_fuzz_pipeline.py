"""Generated-graph fuzzing of the whole compiler (issues 9 and 19).

Three of four programs are fusion-rich (`fx_graph_strategies.fusion_programs`:
parallel members through levels of linears, layer norms, pointwise ops with
int and float scalars, on transposed, expanded and nan/inf/-0.0 inputs, with
in-place writes and shared weights), the others general graphs
(`fx_programs`: split/cat plumbing, views, reductions, unknown calls). Each
goes through `optimus_ir.optimize` with

* the default pipeline (validation off),
* `FUSE_ALL` (every group the search finds fused; differential validation on),
* on a few programs, `TRITON_FUSE_ALL` with the kernels run by Triton's
  interpreter (`TRITON_INTERPRET=1`, `OPTIMUS_TRITON_ON_CPU=1`),

and the optimized module must behave like the GraphModule on clones of the
same inputs (`assert_optimized_matches`): equal outputs -- bit-identical,
NaN positions and signs of zeros included, where no op may round
differently when fused (`FxProgram.exact`), the dtype tolerances of
`optimus_ir.pipeline.validation.TOLERANCES` where matmuls, normalizations,
transcendental functions or divisions are (the kernels' own tolerance under
Triton) -- the same output structure, dtypes, strides and aliasing, the
same in-place writes to inputs and buffers, and the original left unchanged.

Generator features that hit bugs fixed on other branches are off while
named in `fx_graph_strategies.KNOWN_BUG_FEATURES` (`FUZZ_KNOWN_BUGS=1`
turns them on).

Profiles (`FUZZ_PROFILE`):

* `ci` (default): `FUZZ_EXAMPLES` examples (60), derandomized, so every CI
  run checks the same graphs; Triton on the first `FUZZ_TRITON` (3)
  programs batch fusion fused;
* `fuzz` (`make fuzz`): `FUZZ_EXAMPLES` examples (2000), random, Triton on
  one fused program in `FUZZ_TRITON_EVERY` (5), with progress lines and a
  summary. With `FUZZ_KEEP_GOING=1` a failing program does not stop the run:
  failures are counted by kind, the first three programs of each kind written to
  `FUZZ_FAILURES` (build/fuzz-failures.txt), and the module's teardown fails.

The summary line (stderr; JSON to `FUZZ_STATS_FILE`): graphs run, how many
batch fusion fused a group in under the default pipeline and under
FUSE_ALL, Triton runs, failures.

A failure shrinks to a minimal program whose printed `repr` is the Python
source that rebuilds it; `tests/test_fuzz_regressions.py` says how to turn
it into a regression test.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
import warnings
from collections import Counter
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fx_graph_strategies import (
    FxProgram,
    assert_optimized_matches,
    feature_enabled,
    fusion_programs,
    fx_programs,
    pipeline_changed,
)
from pipelines import FUSE_ALL, TRITON_FUSE_ALL

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile(
    "ci", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), derandomize=True,
    print_blob=True, **_COMMON,
)
settings.register_profile(
    "fuzz", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "2000")), derandomize=False,
    print_blob=True, **_COMMON,
)
PROFILE = os.environ.get("FUZZ_PROFILE", "ci")
TRITON_LIMIT = int(os.environ.get("FUZZ_TRITON", "3"))
"""ci: how many programs go through the Triton interpreter (it is slow)."""
TRITON_EVERY = int(os.environ.get("FUZZ_TRITON_EVERY", "5"))
"""fuzz: one fused program in this many goes through the Triton interpreter."""
KEEP_GOING = PROFILE != "ci" and os.environ.get("FUZZ_KEEP_GOING") == "1"
FAILURES_FILE = Path(os.environ.get("FUZZ_FAILURES", "build/fuzz-failures.txt"))

KERNEL_DTYPES = {"torch.float32", "torch.bfloat16", "torch.float16"}
KERNEL_TOLERANCE = (2e-4, 2e-4)
"""The kernels accumulate in another order and use their own tanh/erf
(`tests/test_kernel_lowering.py`); half precision keeps its dtype tolerance."""

STATS: Counter[str] = Counter()
FAILURES: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    graphs = max(STATS["graphs"], 1)
    line = (
        f"fuzz summary ({PROFILE}): {STATS['graphs']} graphs "
        f"({STATS['fusion-rich']} fusion-rich, {STATS['data movement']} data-movement only); "
        f"batch fusion fused a group in {STATS['fused']} ({100 * STATS['fused'] / graphs:.0f}%) "
        f"under the default pipeline, {STATS['fused all']} "
        f"({100 * STATS['fused all'] / graphs:.0f}%) under FUSE_ALL; "
        f"{STATS['changed']} changed, {STATS['fewer ops']} to fewer ops; "
        f"{STATS['triton']} through the Triton interpreter; "
        f"{sum(FAILURES.values())} failures"
    )
    print("\n" + line, file=sys.stderr)
    for kind, count in FAILURES.most_common():
        print(f"  {count} x {kind}", file=sys.stderr)
    path = os.environ.get("FUZZ_STATS_FILE")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"profile": PROFILE, **STATS, "failures": dict(FAILURES)}) + "\n")
    if FAILURES:  # FUZZ_KEEP_GOING=1 collected them instead of raising: the run fails here
        pytest.fail(f"{sum(FAILURES.values())} failures, see {FAILURES_FILE}: {dict(FAILURES)}")


@contextlib.contextmanager
def _triton_interpreter():
    """CPU tensors take the Triton launchers (Triton's interpreter), as
    `tests/test_kernel_lowering.py`'s `triton_on_cpu` fixture does."""
    old = os.environ.get("OPTIMUS_TRITON_ON_CPU")
    os.environ["OPTIMUS_TRITON_ON_CPU"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["OPTIMUS_TRITON_ON_CPU"]
        else:
            os.environ["OPTIMUS_TRITON_ON_CPU"] = old


def _triton_ready() -> bool:
    from optimus_ir.kernels import ops as K

    with _triton_interpreter():
        return K.triton_on_cpu() and K.triton_importable()


def _wants_triton(program: FxProgram, fused: bool) -> bool:
    """Whether this program goes through the Triton interpreter too: one
    batch fusion fused, of kernel dtypes only, within the sampling budget,
    and without the features of unfixed Triton bugs."""
    if not fused or not all(str(t.dtype) in KERNEL_DTYPES for t in program.inputs):
        return False
    if not feature_enabled("triton-nan") and "nan/inf/-0.0 input" in program.features:
        return False
    if not feature_enabled("triton-signed-zero") and "clamp(min=-0.0)" in program.features:
        return False
    if not feature_enabled("triton-strided") and program.features & {
        "transposed input", "transposed members"
    }:
        return False
    if PROFILE == "ci":
        return STATS["triton"] < TRITON_LIMIT
    STATS["triton candidates"] += 1
    return STATS["triton candidates"] % TRITON_EVERY == 1 % TRITON_EVERY


def _fused(result) -> bool:
    return any(
        r.counters.get("groups fused", 0)
        for r in result.optimus_report.statistics.by_pass("batch-fusion")
    )


class StageFailure(AssertionError):
    """A check failed under one pipeline: names it (`default`, `FUSE_ALL`,
    `Triton`) so failures are counted by where they happen."""


@contextlib.contextmanager
def _stage(name: str):
    try:
        yield
    except Exception as error:
        raise StageFailure(f"[{name}] {type(error).__name__}: {error}") from error


def _check(program: FxProgram) -> None:
    exact = program.exact
    # the plain run first: it is the cheapest to repeat while shrinking
    with _stage("default"):
        plain = assert_optimized_matches(program.gm, program.inputs, exact, validate=False)
    with _stage("FUSE_ALL"):
        fuse_all = assert_optimized_matches(program.gm, program.inputs, exact, validate=True,
                                            pipeline=FUSE_ALL)
    fused, fused_all = _fused(plain), _fused(fuse_all)
    if _wants_triton(program, fused_all) and _triton_ready():
        half = any(t.dtype != torch.float32 for t in program.inputs)
        # a kernel evaluates a chain of steps in registers (fp32, and on a
        # GPU with fused multiply-adds): only data movement stays bit-exact
        with _stage("Triton"), _triton_interpreter():
            assert_optimized_matches(
                program.gm, program.inputs, program.data_movement_only, validate=False,
                pipeline=TRITON_FUSE_ALL, tolerance=None if half else KERNEL_TOLERANCE,
            )
        STATS["triton"] += 1
        event("through the Triton interpreter")

    STATS["graphs"] += 1
    changed = pipeline_changed(plain)
    STATS["changed"] += changed
    STATS["fused"] += fused
    STATS["fused all"] += fused_all
    STATS["fusion-rich"] += "parallel members" in program.features
    report = plain.optimus_report  # type: ignore[attr-defined]
    STATS["fewer ops"] += sum(report.ops_after.values()) < sum(report.ops_before.values())
    STATS["data movement"] += program.data_movement_only
    event("changed by the pipeline" if changed else "unchanged")
    event("batch fusion fused a group (default)" if fused else "no group fused (default)")
    event("batch fusion fused a group (FUSE_ALL)" if fused_all else "no group fused (FUSE_ALL)")
    event("exact comparison" if exact else "within tolerance")
    for feature in program.features:
        event(f"feature: {feature}")
    if PROFILE != "ci" and STATS["graphs"] % 100 == 0:
        print(
            f"fuzz: {STATS['graphs']} graphs, {STATS['fused']} fused (default), "
            f"{STATS['fused all']} fused (FUSE_ALL), {STATS['triton']} Triton, "
            f"{sum(FAILURES.values())} failures",
            file=sys.stderr, flush=True,
        )


def _failure_kind(error: BaseException) -> str:
    """What kind of failure: the exception type and its message's first line
    with the numbers and the graph code left out."""
    lines = str(error).strip().splitlines() or [""]
    # the comparison's own first line says less than its details
    detail = next((line for line in lines[1:] if line.startswith(("Mismatched", "Greatest"))), "")
    text = " ".join(line for line in (lines[0], detail) if line)
    text = "".join("#" if c.isdigit() else c for c in text)[:200]
    return f"{type(error).__name__}: {text}"


@st.composite
def programs(draw) -> FxProgram:
    """A fusion-rich program three times in four, else a general one (the
    fusion-rich first: hypothesis favours a sampled_from's first choice)."""
    if draw(st.sampled_from(["fusion-rich", "fusion-rich", "fusion-rich", "general"])) == "general":
        return draw(fx_programs())
    return draw(fusion_programs())


@pytest.mark.slow  # the fuzz profile: 60 generated graphs (make test-all, CI)
@settings(settings.get_profile(PROFILE))
@given(program=programs())
def test_generated_graph_survives_the_pipelines(program: FxProgram) -> None:
    if not KEEP_GOING:
        _check(program)
        return
    try:
        _check(program)
    except Exception as error:  # noqa: BLE001 -- counted, the first of a kind kept
        kind = _failure_kind(error)
        FAILURES[kind] += 1
        STATS["graphs"] += 1
        event(f"failure: {kind}")
        if FAILURES[kind] <= 3:
            FAILURES_FILE.parent.mkdir(parents=True, exist_ok=True)
            with FAILURES_FILE.open("a") as f:
                f.write(f"==== {kind}\n{program!r}\n{traceback.format_exc()}\n")



def test_most_fusion_rich_programs_reach_batch_fusion() -> None:
    """The generator keeps batch fusion busy: of 20 derandomized
    fusion-rich programs, most get a group fused under FUSE_ALL (the old
    generator reached batch fusion on 3 graphs in 200)."""
    import optimus_ir

    drawn: list[FxProgram] = []

    @settings(max_examples=20, derandomize=True, database=None, **_COMMON)
    @given(program=fusion_programs())
    def collect(program: FxProgram) -> None:
        drawn.append(program)

    collect()
    fused = 0
    for program in drawn:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result = optimus_ir.optimize(program.gm, [t.clone() for t in program.inputs],
                                             FUSE_ALL)
            except Exception:  # noqa: BLE001 -- a known bug (FUZZ_KNOWN_BUGS=1): the main test reports it
                continue
        fused += _fused(result)
    assert len(drawn) == 20 and fused > len(drawn) * 3 // 4, f"{fused} of {len(drawn)} fused"
