"""The model zoo through optimize(): FuxiCTR, torchrec and torchfm models as their users call them.

Issue 34: users tried optimus-ir on recommendation models written by others.
For every model of `benchmarks/zoo_models.py` (FuxiCTR's LongCTR DCNv2,
FinalMLP and DIN, DeepFM and MMoE of FuxiCTR's classes; torchrec's DLRM,
DLRM_DCN and DeepFM; torchfm's FFM and DeepFM: the packages come with
`make .venv/.zoo`) and each mode (`frozen`: `optimize(model, example,
freeze=True)`; `live`: without; `shared`: without, with
`parameter_stacks="shared"`, asked for by `--modes`), one row:

* the model, its library, its input structure;
* the batch sizes called: the example's (fresh inputs) and the others of
  `--batches`, each with fresh inputs, in that order;
* correct: every call equals the model's own output on the same inputs (fp32
  tolerance), with at most an `OptimusGuardWarning` (the call ran the
  model); otherwise how the first bad call went wrong;
* groups fused (`optimus_report.groups_fused`), re-optimizations
  (`optimus_guard.reoptimizations`) after all the calls, and whether any
  call ran the model instead (a guard warning);
* the per-call time of the model and of ours at the example's batch size,
  on one fixed input batch (one thread, no_grad, interleaved repeats,
  medians of this thread's CPU time: `optimus_ir.examples.timing`), and
  model/ours; only where ours ran that batch without error.

A model that cannot be built, optimized or called is a row that says how
(the error), never a crash. A markdown table on stdout (and `--markdown
FILE`), every figure as JSON with `--json FILE` (`make bench-zoo` writes
both to build/bench/).

Usage::

    python benchmarks/bench_zoo.py                              # every model, both modes: a few minutes
    python benchmarks/bench_zoo.py --quick                      # few short repeats
    python benchmarks/bench_zoo.py --models torchrec.DLRM,torchfm.FFM --modes frozen --batches 64,256,8
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import optimus_ir  # noqa: E402
import zoo_models  # noqa: E402
from optimus_ir.examples.timing import CLOCKS, measure, quantile  # noqa: E402
from optimus_ir.api.guards import OptimusGuardWarning  # noqa: E402

MODES = ("frozen", "live", "shared")
DEFAULT_MODES = ("frozen", "live")
TIMING_SEED = 1000
"""Seed of the fixed input batch the timing calls reuse."""


@dataclass
class Row:
    """Every figure of one (model, mode)."""

    model: str
    mode: str
    library: str = ""
    origin: str = ""
    structure: str = ""
    batches: list[int] = field(default_factory=list)
    """The batch sizes called, in order (the example's first)."""
    calls: list[str] = field(default_factory=list)
    """How each call went: "equal", "equal (ran the model)", "differs: ...", "error: ..."."""
    correct: bool = False
    failure: str | None = None
    """Why the row has no or only some calls: the build, optimize() or a call raised."""
    groups_fused: int | None = None
    reoptimizations: int | None = None
    ran_the_model: bool = False
    """Some call warned `OptimusGuardWarning`: the model ran instead of ours."""
    optimize_s: float | None = None
    timing_batch: int | None = None
    median_ms: dict[str, float] = field(default_factory=dict)
    spread_pct: dict[str, float] = field(default_factory=dict)
    speedup: float | None = None
    """model ms / ours ms."""
    over_captured: float | None = None
    """captured ms / ours ms: against the graph Dynamo captured, run as
    `optimize(..., pipeline="")` returns it (what FX-ification alone gives)."""
    """model time / ours (> 1: ours is faster)."""


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def _outputs_equal(got: Any, want: Any) -> str | None:
    """None when equal at fp32 tolerance, else the first line of why not."""
    try:
        torch.testing.assert_close(got, want)
    except AssertionError as error:
        return " ".join(str(error).split())[:200]
    return None


def _call(module: Callable[..., Any], inputs: tuple[Any, ...]) -> tuple[Any, bool]:
    """`module(*inputs)` without autograd, and whether it warned that the
    model ran instead (`OptimusGuardWarning`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            result = module(*inputs)
    return result, any(issubclass(w.category, OptimusGuardWarning) for w in caught)


def bench_row(name: str, mode: str, batches: Sequence[int], *, repeats: int, sample_ms: float,
              clock: Callable[[], int]) -> Row:
    """Build, optimize, call at every batch size, check and time one (model, mode)."""
    info = zoo_models.ZOO[name]
    row = Row(name, mode, info.library, info.origin, info.structure)
    missing = info.missing()
    if missing is not None:
        row.failure = f"not installed: {missing}"
        return row
    try:
        model = zoo_models.build(name)
    except Exception as error:  # noqa: BLE001 - reported in the table
        row.failure = f"build: {_error(error)}"
        return row
    example_batch = batches[0]
    start = time.perf_counter()
    try:
        shared = {"parameter_stacks": "shared"} if mode == "shared" else {}
        optimized = optimus_ir.optimize(model, zoo_models.make_inputs(name, example_batch, seed=0),
                                        freeze=mode == "frozen", **shared)
    except Exception as error:  # noqa: BLE001 - reported in the table
        row.failure = f"optimize: {_error(error)}"
        return row
    row.optimize_s = time.perf_counter() - start
    row.groups_fused = optimized.optimus_report.groups_fused  # type: ignore[attr-defined]
    guard = getattr(optimized, "optimus_guard", None)

    for seed, batch in enumerate(batches, start=1):
        row.batches.append(batch)
        try:
            got, ran_the_model = _call(optimized, zoo_models.make_inputs(name, batch, seed))
        except Exception as error:  # noqa: BLE001 - reported in the table
            row.calls.append(f"error: {_error(error)}")
            continue
        with torch.no_grad():  # inputs of its own: FuxiCTR's LongCTR models write into theirs
            want = model(*zoo_models.make_inputs(name, batch, seed))
        row.ran_the_model |= ran_the_model
        differs = _outputs_equal(got, want)
        if differs is not None:
            row.calls.append(f"differs: {differs}")
        else:
            row.calls.append("equal (ran the model)" if ran_the_model else "equal")
    row.correct = all(call.startswith("equal") for call in row.calls)
    bad = [f"batch {b}: {c}" for b, c in zip(row.batches, row.calls) if not c.startswith("equal")]
    if bad:
        row.failure = bad[0]

    row.timing_batch = example_batch
    ours_inputs = zoo_models.make_inputs(name, example_batch, TIMING_SEED)
    model_inputs = zoo_models.make_inputs(name, example_batch, TIMING_SEED)
    calls: dict[str, Callable[[], Any]] = {"model": lambda: model(*model_inputs)}
    try:
        captured = optimus_ir.optimize(model, zoo_models.make_inputs(name, example_batch, seed=0), pipeline="")
        captured_inputs = zoo_models.make_inputs(name, example_batch, TIMING_SEED)
        _call(captured, captured_inputs)
    except Exception:  # noqa: BLE001 - the column stays empty
        pass
    else:
        calls["captured"] = lambda: captured(*captured_inputs)
    try:
        _call(optimized, ours_inputs)
    except Exception as error:  # noqa: BLE001 - ours is not timed then
        if row.failure is None:
            row.failure = f"timing batch: {_error(error)}"
    else:
        calls["ours"] = lambda: optimized(*ours_inputs)
    samples, _ = measure(calls, repeats, sample_ms, clock)
    for who, values in samples.items():
        median = statistics.median(values)
        row.median_ms[who] = median
        row.spread_pct[who] = 100 * (quantile(values, 0.75) - quantile(values, 0.25)) / median
    if "ours" in row.median_ms:
        row.speedup = row.median_ms["model"] / row.median_ms["ours"]
        if "captured" in row.median_ms:
            row.over_captured = row.median_ms["captured"] / row.median_ms["ours"]
    row.reoptimizations = getattr(guard, "reoptimizations", None)
    return row


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def format_table(rows: Sequence[Row]) -> str:
    """The markdown table, then how each failing row failed."""
    lines = [
        "| model | library | input | mode | batches called | correct | groups fused | re-optimizations | "
        "ran the model | batch timed | model ms | captured ms | ours ms | model/ours | captured/ours |",
        "| --- | --- | --- | --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        times = [
            f"{r.median_ms[w]:.4f} ±{r.spread_pct[w]:.0f}%" if w in r.median_ms else "-" for w in ("model", "captured", "ours")
        ]
        called = ", ".join(str(b) for b in r.batches) or "-"
        if r.correct:
            correct = "yes"
        elif not r.batches:
            correct = "no call (see below)"
        else:
            correct = f"no: {sum(c.startswith('equal') for c in r.calls)}/{len(r.calls)} equal"
        lines.append(
            f"| {r.model} | {r.library} | {r.structure} | {r.mode} | {called} | {correct} | "
            f"{_cell(r.groups_fused)} | {_cell(r.reoptimizations)} | {'yes' if r.ran_the_model else 'no'} | "
            f"{_cell(r.timing_batch)} | {' | '.join(times)} | {_cell(r.speedup)} | {_cell(r.over_captured)} |"
        )
    lines.append("")
    for r in rows:
        if r.failure is not None:
            lines.append(f"{r.model} ({r.mode}): {r.failure}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 1 when a call of ours differs from the model (a
    wrong value), else 0: a model that fails to build, optimize or run is a
    row saying how, not a failure of the run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(zoo_models.ZOO),
                        help=f"comma-separated, of {', '.join(zoo_models.ZOO)}")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES),
                        help="comma-separated, of frozen,live,shared (default frozen,live)")
    parser.add_argument("--batches", default="64,256,8",
                        help="batch sizes called in order, the first is the example's and the one timed")
    parser.add_argument("--repeats", type=int, help="interleaved repeats (default 15, quick 5)")
    parser.add_argument("--sample-ms", type=float, help="time of one sample (default 20 ms, quick 5 ms)")
    parser.add_argument("--quick", action="store_true", help="few, short repeats")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the table here too")
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(zoo_models.ZOO))
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {list(zoo_models.ZOO)}")
    modes = [m for m in args.modes.split(",") if m]
    if not modes or set(modes) - set(MODES):
        parser.error(f"--modes takes {', '.join(MODES)}")
    batches = [int(b) for b in args.batches.split(",") if b]
    if not batches or min(batches) < 1:
        parser.error("--batches takes positive batch sizes")
    repeats = args.repeats or (5 if args.quick else 15)
    sample_ms = args.sample_ms or (5.0 if args.quick else 20.0)

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    started = time.perf_counter()
    rows = []
    for name in names:
        for mode in modes:
            row = bench_row(name, mode, batches, repeats=repeats, sample_ms=sample_ms, clock=CLOCKS[args.clock])
            rows.append(row)
            print(f"[{name} {mode}] correct {row.correct}, groups {row.groups_fused}, "
                  f"model/ours {_cell(row.speedup)}, captured/ours {_cell(row.over_captured)}"
                  f"{'' if row.failure is None else ': ' + row.failure}",
                  file=sys.stderr, flush=True)
    header = (
        f"model zoo; torch {torch.__version__}, 1 thread, {args.clock} clock, {repeats} repeats, "
        f"~{sample_ms:g} ms samples, {time.perf_counter() - started:.0f} s\n"
        "ours: optimus_ir.optimize(model, example) (frozen: freeze=True; shared: parameter_stacks='shared'), "
        "default pipeline and options otherwise; "
        "each batch called with fresh inputs, compared with the model; "
        "captured: optimize(model, example, pipeline=\"\") (the graph Dynamo captured, no pass)\n"
    )
    table = format_table(rows)
    print(header)
    print(table)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(header + "\n" + table + "\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    return 1 if any(call.startswith("differs") for r in rows for call in r.calls) else 0


if __name__ == "__main__":
    sys.exit(main())
