"""Generated-graph fuzzing of the whole compiler (issue 9).

Every program `fx_graph_strategies.fx_programs()` draws (a GraphModule built
with `torch.fx.Graph`, seeded inputs and parameters) goes through
`optimus_ir.optimize` twice -- the default pipeline with differential
validation on, and without it -- and the optimized module must behave like
the GraphModule on clones of the same inputs (`assert_optimized_matches`):
equal outputs (bit-identical when the graph only moves data, the dtype
tolerances of `optimus_ir.validation.TOLERANCES` otherwise), the same output
structure, strides and aliasing, the same in-place writes to inputs and
buffers, and the original left unchanged.

Profiles (`FUZZ_PROFILE`):

* `ci` (default): `FUZZ_EXAMPLES` examples (60), derandomized, so every CI
  run checks the same graphs;
* `fuzz` (`make fuzz`): `FUZZ_EXAMPLES` examples (2000), random, with
  progress lines and a summary (graphs run, graphs the pipeline changed).

A failure shrinks to a minimal program whose printed `repr` is the Python
source that rebuilds it; `tests/test_fuzz_regressions.py` says how to turn
it into a regression test.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, settings

from fx_graph_strategies import FxProgram, assert_optimized_matches, fx_programs, pipeline_changed

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

STATS: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    line = (
        f"fuzz summary ({PROFILE}): {STATS['graphs']} graphs, {STATS['changed']} changed by "
        f"the pipeline ({STATS['fewer ops']} to fewer ops, {STATS['fused']} with a batch fusion), "
        f"{STATS['data movement']} "
        "data-movement only"
    )
    print("\n" + line, file=sys.stderr)
    path = os.environ.get("FUZZ_STATS_FILE")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"profile": PROFILE, **STATS}) + "\n")


@settings(settings.get_profile(PROFILE))
@given(program=fx_programs())
def test_generated_graph_survives_the_default_pipeline(program: FxProgram) -> None:
    exact = program.data_movement_only
    # the plain run first: it is the cheaper one to repeat while shrinking
    plain = assert_optimized_matches(program.gm, program.inputs, exact, validate=False)
    validated = assert_optimized_matches(program.gm, program.inputs, exact, validate=True)

    STATS["graphs"] += 1
    changed = pipeline_changed(plain)
    STATS["changed"] += changed
    fused = any(
        r.counters.get("groups fused", 0)
        for r in plain.optimus_report.statistics.by_pass("batch-fusion")  # type: ignore[attr-defined]
    )
    STATS["fused"] += fused
    report = plain.optimus_report  # type: ignore[attr-defined]
    STATS["fewer ops"] += sum(report.ops_after.values()) < sum(report.ops_before.values())
    STATS["data movement"] += exact
    event("changed by the pipeline" if changed else "unchanged")
    if fused:
        event("batch fusion fused a group")
    event("data movement only" if exact else "computes")
    assert pipeline_changed(validated) == changed
    if PROFILE != "ci" and STATS["graphs"] % 100 == 0:
        print(
            f"fuzz: {STATS['graphs']} graphs, {STATS['changed']} changed, {STATS['fused']} fused",
            file=sys.stderr, flush=True,
        )
