"""Per-call time of the module `optimize()` returns, against the graph it came from.

For every model of the test corpus (`tests/models.py`, one row per distinct
model and inputs) and for the recommendation model of `examples/recsys.py` at
8, 64 and 256 towers, at batch 64 and 512, on one thread, three variants are
timed on the same inputs:

* original -- the user's `nn.Module`, called as `model(*inputs)`.
* captured -- the graph Dynamo captured, run eagerly. It is obtained with
  `torch.compile(model, backend=<recorder>, fullgraph=True, dynamic=False)`:
  the recorder backend keeps the `torch.fx.GraphModule` Dynamo hands to a
  backend and the example inputs of that call. In torch 2.13 Dynamo lifts
  parameters and buffers to graph inputs, so those example inputs are the
  user's inputs followed by the model's *real* parameter and buffer tensors
  (the very objects, not copies). The variant calls that GraphModule directly,
  `gm(*example_inputs)`: no guards, no Dynamo frame evaluation, no pytree
  handling, parameters passed in positionally. This is the lower bound that
  the exported module must meet: the same graph, minus everything around it.
* ours -- `optimus_ir.optimize(model, inputs)` (default pipeline), called as
  `ours(*inputs)`, exactly as the model is called.

Batching: where every tensor input has a leading dimension, the inputs are
remade with that dimension set to the batch size (seeded: floats from randn,
integers in the range the corpus inputs use, bools at random) and the model
must accept them; a model that does not (its leading dimensions are tied to
other sizes) is timed once on its own corpus inputs ("own" in the batch column).

Times are the CPU time of the calling thread (`time.thread_time_ns`; with
one thread every operator runs on it), so that other processes taking the core
do not count; `--clock wall` measures elapsed time instead (the same on an
idle machine). Timing is interleaved: in every round each variant runs `inner` calls back to
back (round-robin, the order rotated each round), and the per-call time of
that sample is recorded; `inner` is chosen so that one sample of the slowest
variant takes about `--sample-ms`. The table gives medians over the rounds
and, for ours/captured, the ratio of medians with the inter-quartile spread of
the per-round ratios. The garbage collector is paused while timing.

Before timing, each variant's outputs are compared with the original's
(rtol = atol = 0, NaNs equal); a mismatch is reported and fails the run.

Usage::

    python benchmarks/bench_exported_module.py                 # full run (a few minutes)
    python benchmarks/bench_exported_module.py --quick         # smoke run: 3 models, batch 64
    python benchmarks/bench_exported_module.py --models recsys-64 --batches 64 --profile
    python benchmarks/bench_exported_module.py --output table.md --json out.json

`--profile` runs cProfile over `--profile-calls` calls of captured and ours for
every selected row and prints the top functions by own time, to find per-call
costs outside the graph's operators.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.utils import _pytree as pytree

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "tests", _ROOT / "examples", _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import optimus_ir  # noqa: E402
from models import CASES, clone_inputs  # noqa: E402
from optimus_ir.examples.recsys import make_recsys_model  # noqa: E402
from optimus_ir.examples.timing import CLOCKS, quantile  # noqa: E402
from optimus_ir.examples.timing import measure as _measure  # noqa: E402

VARIANTS = ("original", "captured", "ours")
QUICK_MODELS = ("recsys-8", "tuple_outputs", "dict_output")
RECSYS_TOWERS = (8, 64, 256)


@dataclass(frozen=True)
class BenchModel:
    """One model to time: a name and a factory of ``(module, corpus_inputs)``."""

    name: str
    factory: Callable[[], tuple[torch.nn.Module, tuple[Any, ...]]]


@dataclass
class Row:
    """The measurements of one model at one batch size."""

    model: str
    batch: str
    median_ms: dict[str, float] = field(default_factory=dict)
    spread_pct: dict[str, float] = field(default_factory=dict)
    ratio: float = float("nan")
    ratio_spread: tuple[float, float] = (float("nan"), float("nan"))
    inner: int = 0
    rounds: int = 0
    mismatches: list[str] = field(default_factory=list)
    note: str = ""
    profile: str = ""

    def as_json(self) -> dict[str, Any]:
        """The row as plain data (for --json)."""
        return {
            "model": self.model,
            "batch": self.batch,
            "median_ms": self.median_ms,
            "spread_pct": self.spread_pct,
            "ours_over_captured": self.ratio,
            "ratio_p25_p75": list(self.ratio_spread),
            "inner": self.inner,
            "rounds": self.rounds,
            "mismatches": self.mismatches,
            "note": self.note,
        }


# ---------------------------------------------------------------------------
# Models and inputs
# ---------------------------------------------------------------------------


def _signature(module: torch.nn.Module, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    shapes = tuple(
        (tuple(x.shape[1:]), x.dtype) if isinstance(x, torch.Tensor) else repr(x) for x in inputs
    )
    return (type(module).__qualname__, shapes)


def bench_models() -> list[BenchModel]:
    """The corpus models (one per distinct model and inputs) and the recsys sizes."""
    models = [
        BenchModel(
            f"recsys-{towers}",
            lambda towers=towers: make_recsys_model(num_towers=towers, batch=64, seed=0),
        )
        for towers in RECSYS_TOWERS
    ]
    seen = {_signature(*model.factory()) for model in models[:1]}
    for case in CASES:
        signature = _signature(*case.factory())
        if signature in seen:
            continue
        seen.add(signature)
        models.append(BenchModel(case.name, case.factory))
    return models


def _remake(value: torch.Tensor, batch: int, generator: torch.Generator) -> torch.Tensor:
    shape = (batch, *value.shape[1:])
    if value.dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if value.dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(value.dtype)
    low, high = int(value.min()), int(value.max())
    return torch.randint(low, high + 1, shape, generator=generator, dtype=value.dtype)


def batched_inputs(
    module: torch.nn.Module, inputs: tuple[Any, ...], batch: int, seed: int = 0
) -> tuple[Any, ...] | None:
    """`inputs` remade with leading dimension `batch`, or None where the model
    does not take a batch (a tensor input without dims, or the model rejects them)."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    if not tensors or any(x.dim() == 0 for x in tensors):
        return None
    generator = torch.Generator().manual_seed(seed)
    remade = tuple(
        _remake(x, batch, generator) if isinstance(x, torch.Tensor) else x for x in inputs
    )
    try:
        with torch.no_grad():
            module(*clone_inputs(remade))
    except Exception:  # noqa: BLE001 - any failure means "no batch dimension"
        return None
    return remade


def capture_graph(
    module: torch.nn.Module, inputs: tuple[Any, ...]
) -> tuple[torch.fx.GraphModule, list[Any]]:
    """The GraphModule Dynamo hands to a backend, and its example inputs (the
    user's inputs followed by the real parameters and buffers)."""
    recorded: list[tuple[torch.fx.GraphModule, list[Any]]] = []

    def recorder(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        recorded.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()  # noqa: SLF001
    compiled = torch.compile(module, backend=recorder, fullgraph=True, dynamic=False)
    compiled(*clone_inputs(inputs))
    torch._dynamo.reset()  # noqa: SLF001
    if len(recorded) != 1:
        raise RuntimeError(f"Dynamo captured {len(recorded)} graphs, expected one")
    return recorded[0]


# ---------------------------------------------------------------------------
# Checking and timing
# ---------------------------------------------------------------------------


def _leaves(value: Any) -> list[Any]:
    return pytree.tree_leaves(value)


def _same(expected: Any, actual: Any) -> str | None:
    """None when the two outputs are identical (rtol = atol = 0, NaNs equal)."""
    want, got = _leaves(expected), _leaves(actual)
    if len(want) != len(got):
        return f"{len(got)} outputs, expected {len(want)}"
    for index, (a, b) in enumerate(zip(want, got)):
        if isinstance(a, torch.Tensor):
            try:
                torch.testing.assert_close(b, a, rtol=0, atol=0, equal_nan=True)
            except AssertionError as error:
                return f"output {index}: {str(error).splitlines()[0]}"
        elif a != b:
            return f"output {index}: {b!r} != {a!r}"
    return None


def check_outputs(
    calls: dict[str, Callable[[], Any]], module: torch.nn.Module, inputs: tuple[Any, ...]
) -> list[str]:
    """Mismatches of each variant against the original (empty when all agree).

    The captured graph returns only the tensors it computes (an input returned
    as it is stays outside the graph), so it is compared leaf by leaf where the
    number of outputs agrees, and otherwise only run."""
    with torch.no_grad():
        expected = module(*clone_inputs(inputs))
        problems = []
        for name, call in calls.items():
            if name == "original":
                continue
            result = call()
            if name == "captured" and len(_leaves(result)) != len(_leaves(expected)):
                continue
            problem = _same(expected, result)
            if problem is not None:
                problems.append(f"{name}: {problem}")
    return problems


_clock: Callable[[], int] = time.thread_time_ns


def measure(
    calls: dict[str, Callable[[], Any]], rounds: int, sample_ms: float
) -> tuple[dict[str, list[float]], int]:
    """Interleaved per-call times (ms) of every variant, and the inner count
    (`benchmarks/timing.py`, on the clock `--clock` chose)."""
    return _measure(calls, rounds, sample_ms, _clock)


def profile_calls(call: Callable[[], Any], count: int, top: int = 12) -> str:
    """cProfile of `count` calls, the `top` functions by own time."""
    profiler = cProfile.Profile()
    with torch.no_grad():
        profiler.enable()
        for _ in range(count):
            call()
        profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
    return stream.getvalue()


def bench_row(
    model: BenchModel,
    batch: int | None,
    *,
    rounds: int,
    sample_ms: float,
    profile: int = 0,
) -> Row | None:
    """Build, check and time the three variants of `model` at `batch`.

    None when the model takes no batch and `batch` is not the first size asked
    (the row on its own inputs is made once)."""
    module, corpus_inputs = model.factory()
    inputs: tuple[Any, ...] | None = corpus_inputs
    label = "own"
    if batch is not None:
        inputs = batched_inputs(module, corpus_inputs, batch)
        if inputs is None:
            return None
        label = str(batch)
    assert inputs is not None
    row = Row(model.name, label)
    gm, graph_args = capture_graph(module, inputs)
    frozen_inputs = clone_inputs(inputs)
    calls: dict[str, Callable[[], Any]] = {
        "original": lambda: module(*frozen_inputs),
        "captured": lambda: gm(*graph_args),
    }
    try:
        ours = optimus_ir.optimize(module, clone_inputs(inputs))
    except Exception as error:  # noqa: BLE001 - reported in the table, not fatal
        row.note = f"optimize failed: {type(error).__name__}: {error}".splitlines()[0]
    else:
        calls["ours"] = lambda: ours(*frozen_inputs)
    row.mismatches = check_outputs(calls, module, inputs)
    samples, row.inner = measure(calls, rounds, sample_ms)
    row.rounds = rounds
    for name, values in samples.items():
        median = statistics.median(values)
        row.median_ms[name] = median
        row.spread_pct[name] = (
            100 * (quantile(values, 0.75) - quantile(values, 0.25)) / median
        )
    if "ours" in samples:
        ratios = [o / c for o, c in zip(samples["ours"], samples["captured"])]
        row.ratio = row.median_ms["ours"] / row.median_ms["captured"]
        row.ratio_spread = (quantile(ratios, 0.25), quantile(ratios, 0.75))
    if profile:
        row.profile = "\n".join(
            f"--- {name}: {model.name} batch {label}, {profile} calls ---\n"
            + profile_calls(calls[name], profile)
            for name in ("captured", "ours")
            if name in calls
        )
    return row


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def format_table(rows: Sequence[Row]) -> str:
    """A markdown table of the rows."""
    lines = [
        "| model | batch | original ms | captured ms | ours ms | ours/captured (p25-p75) |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        cells = [
            f"{row.median_ms[name]:.4f} ±{row.spread_pct[name]:.0f}%"
            if name in row.median_ms
            else "failed"
            for name in VARIANTS
        ]
        low, high = row.ratio_spread
        ratio = f"{row.ratio:.3f} ({low:.3f}-{high:.3f})" if row.median_ms.get("ours") else "-"
        flag = " MISMATCH" if row.mismatches else ""
        lines.append(f"| {row.model} | {row.batch} | {' | '.join(cells)} | {ratio}{flag} |")
    return "\n".join(lines)


def summary(rows: Sequence[Row]) -> str:
    """One line: how many rows have ours at most as slow as captured."""
    failed = [row for row in rows if "ours" not in row.median_ms]
    notes = "".join(f"\n{row.model} batch {row.batch}: {row.note}" for row in failed)
    rows = [row for row in rows if "ours" in row.median_ms]
    if not rows:
        return "no rows timed" + notes
    at_most = sum(1 for row in rows if row.ratio <= 1.0)
    worst = max(rows, key=lambda row: row.ratio)
    return (
        f"ours <= captured on {at_most}/{len(rows)} rows; worst ratio {worst.ratio:.3f} "
        f"({worst.model}, batch {worst.batch}); geometric mean "
        f"{statistics.geometric_mean(row.ratio for row in rows):.3f}"
    ) + notes


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 1 when some variant's outputs differ or
    `optimize` fails on a model (the row says which)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 models, batch 64, few rounds")
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--batches", default="64,512", help="comma-separated batch sizes")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 40, quick 3)")
    parser.add_argument(
        "--sample-ms", type=float, help="time of one sample (default 4 ms, quick 0.5 ms)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: this thread's CPU time (default; immune to other processes "
        "taking the core, exact with one thread); wall: elapsed time",
    )
    parser.add_argument("--output", type=Path, help="also write the markdown table here")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile captured and ours on every row"
    )
    parser.add_argument("--profile-calls", type=int, default=200)
    parser.add_argument("--list", action="store_true", help="list the model names and exit")
    args = parser.parse_args(argv)

    global _clock
    _clock = CLOCKS[args.clock]
    torch.set_num_threads(args.threads)
    models = bench_models()
    if args.list:
        print("\n".join(model.name for model in models))
        return 0
    wanted = args.models.split(",") if args.models else (QUICK_MODELS if args.quick else None)
    if wanted is not None:
        by_name = {model.name: model for model in models}
        unknown = [name for name in wanted if name not in by_name]
        if unknown:
            parser.error(f"unknown models {unknown}; --list shows the names")
        models = [by_name[name] for name in wanted]
    batches = [int(b) for b in args.batches.split(",") if b]
    if args.quick and args.batches == parser.get_default("batches"):
        batches = [64]
    rounds = args.rounds or (3 if args.quick else 40)
    sample_ms = args.sample_ms or (0.5 if args.quick else 4.0)

    rows: list[Row] = []
    started = time.perf_counter()
    for model in models:
        own_done = False
        for batch in batches:
            row = bench_row(
                model,
                batch,
                rounds=rounds,
                sample_ms=sample_ms,
                profile=args.profile_calls if args.profile else 0,
            )
            if row is None:
                if own_done:
                    continue
                own_done = True
                row = bench_row(
                    model,
                    None,
                    rounds=rounds,
                    sample_ms=sample_ms,
                    profile=args.profile_calls if args.profile else 0,
                )
            assert row is not None
            rows.append(row)
            print(
                f"[{row.model} batch {row.batch}] ours/captured {row.ratio:.3f}"
                + (f"  MISMATCH {row.mismatches}" if row.mismatches else "")
                + (f"  {row.note}" if row.note else ""),
                file=sys.stderr,
                flush=True,
            )
    table = format_table(rows)
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), {args.clock} clock, "
        f"{rounds} rounds, ~{sample_ms} ms samples, {time.perf_counter() - started:.0f} s"
    )
    print(table)
    print(summary(rows))
    for row in rows:
        if row.profile:
            print(row.profile)
    if args.output:
        args.output.write_text(table + "\n\n" + summary(rows) + "\n")
    if args.json:
        report = {
            "benchmark": "exported_module",
            "python": platform.python_version(),
            "torch": torch.__version__,
            "machine": platform.machine(),
            "threads": args.threads,
            "clock": args.clock,
            "rounds": rounds,
            "rows": [row.as_json() for row in rows],
        }
        args.json.write_text(json.dumps(report, indent=2))
    return 1 if any(row.mismatches or row.note for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
