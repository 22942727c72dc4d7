"""Batch fusion on the recommendation model: ours against PyTorch's pre-grad Optimus.

For every variant of `examples/recsys.py`, number of towers and batch size
(all seeded, parameters and inputs):

* uniform -- tower widths 16, tower linears 16 -> 16, activations tanh/relu
  cycled, depth 2 (linear -> layer_norm -> act -> linear -> act per tower);
* mixed -- tower widths 16/32/64 cycled, tower linears w_i -> 32, activations
  tanh/relu/sigmoid cycled, depth 2;

the script builds four callables and compares them:

* original -- the `nn.Module`, called as `model(x)`;
* captured -- the graph `optimus_ir.api.capture` captures
  (`torch._dynamo.export(model, assume_static_by_default=True)`), run eagerly;
* ours -- `optimus_ir.optimize(model, [x])` with the default pipeline of the
  checkout the script runs in (whatever main does at the time);
* pytorch -- PyTorch's pre-grad Optimus on a deep copy of the captured graph:
  `torch._inductor.fx_passes.pre_grad.pre_grad_passes(gm, [x])` under
  `torch._inductor.config.patch(pattern_matcher=True, pre_grad_fusion_options=...)`
  with every pre-grad batch fusion PyTorch registers
  (`group_batch_fusion.PRE_GRAD_FUSIONS`: batch_linear, batch_linear_lhs,
  batch_layernorm, batch_tanh/relu/sigmoid/detach/nan_to_num/clamp/dropout,
  default graph-search options) and every pre-grad split/cat pattern pass
  (`compare_split_cat.PYTORCH_PASSES`, each run `--counter` times). The group
  fusions (`group_linear`) are post-grad only and need CUDA and fbgemm: they
  are not part of pre-grad Optimus and are not run. The options in force are
  printed with the table.

With `--lean` a fifth callable is timed: lean -- the same graph as a
`torch.compile` backend receives it, called with the parameters passed in
(no pytree flattening, no module attribute lookups per parameter; see
`benchmarks/bench_exported_module.py`), the lower bound of the captured
graph's own per-call overhead. `captured` pays that overhead on every call
and `optimize()`'s export does not, so captured/ours exceeds 1 even where
no rewrite applied; lean/ours is the ratio without that head start.

Reported per row:

* ops: call nodes (`call_function`, `call_method`, `call_module`, getitem
  included) of the captured graph, ours and PyTorch's;
* numerics: ours and PyTorch's outputs against the captured graph's with
  `torch.testing.assert_close` at its fp32 tolerance (rtol 1.3e-6, atol 1e-5:
  batched matmuls may sum in another order) and the max abs difference;
* eager per-call time of the four callables on one thread
  (`torch.set_num_threads(1)`), under `torch.no_grad()`, after a warm-up:
  in every repeat each callable runs `inner` calls back to back, round-robin
  over the four with the order rotated per repeat; `inner` makes one sample
  of the slowest callable last about `--sample-ms`. Medians over the repeats,
  of this thread's CPU time by default (`--clock wall` for elapsed time), and
  the ratios captured/ours and captured/pytorch (> 1: faster than captured);
* optimization time: `optimize()` in total and per phase (its report's
  `phase_seconds`: capture, import, passes, export) and per pass (the
  pipeline statistics), against the wall time of PyTorch's `pre_grad_passes`
  on the captured graph (the copy excluded, its lazy pattern registration
  done once beforehand). The fair comparison is ours without capture
  (PyTorch's passes get the captured graph for free).

Then the issue's targets, as PASS/FAIL lines (informational: the exit status
is 0 either way unless `--check` is given; a mismatch of ours always fails):
ours never slower than captured (captured/ours >= 1 on every row); the 64
mixed towers at batch 64 at least 1.5x; the 64 mixed towers at batch 512 at
least 1.05x; fewer ops than PyTorch's result on every row.

Usage::

    python benchmarks/bench_batch_fusion.py                  # full run (~10 min on 1 core)
    python benchmarks/bench_batch_fusion.py --quick          # 8 and 64 towers, few repeats
    python benchmarks/bench_batch_fusion.py --towers 64 --batches 64 --variants mixed
    python benchmarks/bench_batch_fusion.py --json out.json --check
    python benchmarks/bench_batch_fusion.py --quick --lean   # also the lean captured graph
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.utils import _pytree as pytree

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "benchmarks", _ROOT / "examples"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import optimus_ir  # noqa: E402
from compare_split_cat import PYTORCH_PASSES  # noqa: E402
from optimus_ir.api import capture  # noqa: E402
from optimus_ir.examples.recsys import VARIANTS as RECSYS_VARIANTS  # noqa: E402
from optimus_ir.examples.recsys import make_recsys_model  # noqa: E402
from optimus_ir.examples.timing import CLOCKS, measure, quantile  # noqa: E402

CALLABLES = ("original", "captured", "ours", "pytorch", "lean")

VARIANTS: dict[str, dict[str, Any]] = RECSYS_VARIANTS
"""The model variants: keyword options of `make_recsys_model`."""

RTOL, ATOL = 1.3e-6, 1e-5
"""`torch.testing.assert_close`'s fp32 defaults, spelled out."""



@dataclass
class Row:
    """Every figure of one (variant, towers, batch)."""

    variant: str
    towers: int
    batch: int
    ops: dict[str, int | None] = field(default_factory=dict)
    max_abs_diff: dict[str, float | None] = field(default_factory=dict)
    mismatch: dict[str, str | None] = field(default_factory=dict)
    median_ms: dict[str, float] = field(default_factory=dict)
    spread_pct: dict[str, float] = field(default_factory=dict)
    speedup: dict[str, float | None] = field(default_factory=dict)
    """captured time / the callable's time (> 1: faster than captured)."""
    ours_phase_ms: dict[str, float] = field(default_factory=dict)
    ours_pass_ms: list[tuple[str, float, int]] = field(default_factory=list)
    """(pass, ms, rewrites) in pipeline order."""
    ours_total_ms: float = float("nan")
    pytorch_ms: float | None = None
    pytorch_fired: dict[str, int] = field(default_factory=dict)
    """PyTorch's inductor counters bumped by its passes (fusions that fired)."""
    inner: int = 0
    repeats: int = 0
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.variant}-{self.towers}"

    @property
    def numerics_ok(self) -> bool:
        """Both results match the captured graph (and both ran)."""
        return all(self.mismatch.get(who, "missing") is None for who in ("ours", "pytorch"))


# ---------------------------------------------------------------------------
# The four callables
# ---------------------------------------------------------------------------


def build(variant: str, towers: int, batch: int) -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    """The seeded model of `variant` with `towers` towers and its input of `batch` rows."""
    return make_recsys_model(num_towers=towers, batch=batch, seed=0, **VARIANTS[variant])


def pytorch_options(counter: int) -> dict[str, dict[str, Any]]:
    """`config.pre_grad_fusion_options` with every pre-grad batch fusion and
    every pre-grad split/cat pattern pass of the installed torch."""
    from torch._inductor.fx_passes.group_batch_fusion import PRE_GRAD_FUSIONS

    options: dict[str, dict[str, Any]] = {name: {} for name in PRE_GRAD_FUSIONS}
    options.update({name: {"counter": counter} for name in PYTORCH_PASSES})
    return options


def run_pytorch(
    gm: torch.fx.GraphModule, inputs: Sequence[torch.Tensor], options: dict[str, dict[str, Any]]
) -> tuple[torch.fx.GraphModule, float, dict[str, int]]:
    """PyTorch's pre-grad passes on a copy of `gm`: the result, the wall time
    of the passes (the copy excluded) and the inductor counters they bumped."""
    from torch._dynamo.utils import counters
    from torch._inductor import config
    from torch._inductor.fx_passes.pre_grad import pre_grad_passes

    gm = copy.deepcopy(gm)
    before = dict(counters["inductor"])
    with config.patch(pre_grad_fusion_options=options, pattern_matcher=True):
        start = time.perf_counter()
        result = pre_grad_passes(gm, list(inputs))
        seconds = time.perf_counter() - start
    fired = {
        key: value - before.get(key, 0)
        for key, value in counters["inductor"].items()
        if value != before.get(key, 0)
    }
    return result, seconds, fired


def crashing_options(
    gm: torch.fx.GraphModule, inputs: Sequence[torch.Tensor], options: dict[str, dict[str, Any]]
) -> list[str]:
    """The options that raise when run alone (to name the culprit of a crash)."""
    bad = []
    for name, value in options.items():
        try:
            run_pytorch(gm, inputs, {name: value})
        except Exception as error:  # noqa: BLE001 - collecting, not handling
            bad.append(f"{name} ({type(error).__name__})")
    return bad


def count_calls(gm: torch.fx.GraphModule) -> int:
    """call_function / call_method / call_module nodes, getitem included."""
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


def compare(expected: Any, got: Any) -> tuple[float, str | None]:
    """(max abs difference, None or the assert_close message) of two outputs."""
    want, have = pytree.tree_leaves(expected), pytree.tree_leaves(got)
    if len(want) != len(have):
        return float("inf"), f"{len(have)} outputs, expected {len(want)}"
    diff, problem = 0.0, None
    for a, b in zip(want, have):
        diff = max(diff, float((a.double() - b.double()).abs().max()) if a.numel() else 0.0)
        try:
            torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL)
        except AssertionError as error:
            problem = problem or str(error).strip().splitlines()[0]
    return diff, problem


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# One row
# ---------------------------------------------------------------------------


def bench_row(
    variant: str,
    towers: int,
    batch: int,
    *,
    repeats: int,
    sample_ms: float,
    options: dict[str, dict[str, Any]],
    clock: Callable[[], int],
    lean: bool = False,
) -> Row:
    """Build, optimize both ways, check and time one configuration (with
    `lean`, also the captured graph as a torch.compile backend receives it)."""
    row = Row(variant, towers, batch, repeats=repeats)
    model, inputs = build(variant, towers, batch)
    gm = capture(model, inputs)
    row.ops["captured"] = count_calls(gm)
    calls: dict[str, Callable[[], Any]] = {
        "original": lambda: model(*inputs),
        "captured": lambda: gm(*inputs),
    }
    try:
        ours = optimus_ir.optimize(model, list(inputs))
    except Exception as error:  # noqa: BLE001 - reported in the table
        row.errors["ours"] = f"{type(error).__name__}: {error}".splitlines()[0]
    else:
        row.ops["ours"] = count_calls(ours)
        report = ours.optimus_report  # type: ignore[attr-defined]
        row.ours_phase_ms = {k: v * 1e3 for k, v in report.phase_seconds.items()}
        row.ours_total_ms = sum(row.ours_phase_ms.values())
        if report.statistics is not None:
            row.ours_pass_ms = [
                (p.name, p.seconds * 1e3, p.rewrites) for p in report.statistics.passes
            ]
        calls["ours"] = lambda: ours(*inputs)
    try:
        theirs, seconds, row.pytorch_fired = run_pytorch(gm, inputs, options)
    except Exception as error:  # noqa: BLE001 - reported in the table
        culprits = crashing_options(gm, inputs, options)
        row.errors["pytorch"] = (
            f"{type(error).__name__}: {error}".splitlines()[0]
            + (f" (alone, these raise: {', '.join(culprits)})" if culprits else "")
        )
    else:
        row.pytorch_ms = seconds * 1e3
        row.ops["pytorch"] = count_calls(theirs)
        calls["pytorch"] = lambda: theirs(*inputs)
    if lean:
        from bench_exported_module import capture_graph

        lean_gm, lean_args = capture_graph(model, inputs)
        calls["lean"] = lambda: lean_gm(*lean_args)

    with torch.no_grad():
        expected = gm(*inputs)
        for who in ("ours", "pytorch"):
            if who in calls:
                row.max_abs_diff[who], row.mismatch[who] = compare(expected, calls[who]())
            else:
                row.max_abs_diff[who], row.mismatch[who] = None, "did not run"

    samples, row.inner = measure(calls, repeats, sample_ms, clock)
    for name, values in samples.items():
        median = statistics.median(values)
        row.median_ms[name] = median
        row.spread_pct[name] = 100 * (quantile(values, 0.75) - quantile(values, 0.25)) / median
    for name in ("ours", "pytorch"):
        row.speedup[name] = (
            row.median_ms["captured"] / row.median_ms[name] if name in row.median_ms else None
        )
    if "lean" in row.median_ms and "ours" in row.median_ms:
        row.speedup["ours_vs_lean"] = row.median_ms["lean"] / row.median_ms["ours"]
    return row


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ops(value: int | None) -> str:
    return "failed" if value is None else str(value)


def format_table(rows: Sequence[Row]) -> str:
    """The markdown tables: ops, numerics and per-call times; optimization times."""
    with_lean = any("lean" in r.median_ms for r in rows)
    timed = CALLABLES if with_lean else CALLABLES[:-1]
    lines = [
        "| model | batch | ops captured | ops ours | ops pytorch | max abs diff ours | "
        "max abs diff pytorch | "
        + " | ".join(f"{name} ms" for name in timed)
        + " | captured/ours | captured/pytorch |"
        + (" lean/ours |" if with_lean else ""),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | "
        + "---: | " * len(timed)
        + "---: | ---: |"
        + (" ---: |" if with_lean else ""),
    ]
    for r in rows:
        diffs = []
        for who in ("ours", "pytorch"):
            cell = "-" if r.max_abs_diff.get(who) is None else f"{r.max_abs_diff[who]:.2e}"
            if r.mismatch.get(who) not in (None, "did not run"):
                cell += " MISMATCH"
            diffs.append(cell)
        times = [
            f"{r.median_ms[name]:.4f} ±{r.spread_pct[name]:.0f}%" if name in r.median_ms else "-"
            for name in timed
        ]
        lines.append(
            f"| {r.name} | {r.batch} | {_ops(r.ops.get('captured'))} | {_ops(r.ops.get('ours'))} | "
            f"{_ops(r.ops.get('pytorch'))} | {' | '.join(diffs)} | {' | '.join(times)} | "
            f"{_num(r.speedup.get('ours'))} | {_num(r.speedup.get('pytorch'))} |"
            + (f" {_num(r.speedup.get('ours_vs_lean'))} |" if with_lean else "")
        )
    lines += [
        "",
        "| model | batch | ours total ms | capture | import | passes | export | "
        "ours w/o capture | pytorch pre-grad ms | our slowest passes (ms, summed per name) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        phases = [_num(r.ours_phase_ms.get(k), 1) for k in ("capture", "import", "passes", "export")]
        without = (
            r.ours_total_ms - r.ours_phase_ms.get("capture", 0.0) if r.ours_phase_ms else None
        )
        per_name: dict[str, float] = {}
        for name, ms, _ in r.ours_pass_ms:  # a pass may run more than once
            per_name[name] = per_name.get(name, 0.0) + ms
        slowest = sorted(per_name.items(), key=lambda item: -item[1])[:3]
        passes = ", ".join(f"{name} {ms:.1f}" for name, ms in slowest) or "-"
        lines.append(
            f"| {r.name} | {r.batch} | {_num(r.ours_total_ms if r.ours_phase_ms else None, 1)} | "
            f"{' | '.join(phases)} | {_num(without, 1)} | {_num(r.pytorch_ms, 1)} | {passes} |"
        )
    lines.append("")
    for r in rows:
        fired = ", ".join(f"{k} {v}" for k, v in sorted(r.pytorch_fired.items())) or "nothing"
        lines.append(f"pytorch counters, {r.name} batch {r.batch}: {fired}")
    for r in rows:
        for who, text in r.errors.items():
            lines.append(f"{r.name} batch {r.batch} ({who}): {text}")
        for who, text in r.mismatch.items():
            if text not in (None, "did not run"):
                lines.append(f"{r.name} batch {r.batch} ({who}) differs from captured: {text}")
    return "\n".join(lines)


def targets(rows: Sequence[Row]) -> list[tuple[str, bool | None, str]]:
    """The issue's targets: (description, PASS/FAIL/None = not measured, detail)."""
    checks: list[tuple[str, bool | None, str]] = []
    timed = [r for r in rows if r.speedup.get("ours") is not None]
    if timed:
        worst = min(timed, key=lambda r: r.speedup["ours"])  # type: ignore[arg-type,return-value]
        checks.append(
            (
                "ours never slower than captured (captured/ours >= 1.0 on every row)",
                all(r.speedup["ours"] >= 1.0 for r in timed),  # type: ignore[operator]
                f"worst {worst.speedup['ours']:.3f} ({worst.name}, batch {worst.batch})",
            )
        )
    else:
        checks.append(("ours never slower than captured", None, "no row timed"))
    for batch, goal in ((64, 1.5), (512, 1.05)):
        match = [r for r in rows if (r.variant, r.towers, r.batch) == ("mixed", 64, batch)]
        label = f"mixed-64 at batch {batch}: captured/ours >= {goal}"
        if not match or match[0].speedup.get("ours") is None:
            checks.append((label, None, "not in this run"))
        else:
            value = match[0].speedup["ours"]
            assert value is not None
            checks.append((label, value >= goal, f"{value:.3f}"))
    counted = [r for r in rows if r.ops.get("ours") is not None]
    fewer = [
        r
        for r in counted
        if r.ops.get("pytorch") is None or r.ops["ours"] < r.ops["pytorch"]  # type: ignore[operator]
    ]
    checks.append(
        (
            "fewer ops than PyTorch's on every row",
            len(fewer) == len(counted) and bool(counted),
            f"{len(fewer)}/{len(counted)} rows",
        )
    )
    return checks


def format_targets(checks: Sequence[tuple[str, bool | None, str]]) -> str:
    """One PASS / FAIL / SKIP line per target."""
    word = {True: "PASS", False: "FAIL", None: "SKIP"}
    return "\n".join(f"{word[ok]}: {text} -- {detail}" for text, ok, detail in checks)


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables and the target lines.

    Returns 1 when our result differs from the captured graph or
    `optimize()` fails, or with `--check` when a target fails; 0 otherwise
    (PyTorch's crashes and mismatches are reported, not failures)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towers", default="8,64,256", help="comma-separated tower counts")
    parser.add_argument("--batches", default="64,512", help="comma-separated batch sizes")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of {sorted(VARIANTS)}"
    )
    parser.add_argument("--repeats", type=int, help="interleaved repeats (default 15, quick 5)")
    parser.add_argument(
        "--sample-ms", type=float, help="time of one sample (default 20 ms, quick 10 ms)"
    )
    parser.add_argument("--quick", action="store_true", help="8 and 64 towers, few repeats")
    parser.add_argument("--counter", type=int, default=2, help="runs of each PyTorch split/cat pass")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    parser.add_argument(
        "--lean",
        action="store_true",
        help="also time 'lean': the captured graph as a torch.compile backend gets it "
        "(parameters passed in, no pytree), as benchmarks/bench_exported_module.py does",
    )
    args = parser.parse_args(argv)

    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {sorted(VARIANTS)}")
    towers = _ints(args.towers)
    if args.quick and args.towers == parser.get_default("towers"):
        towers = [8, 64]
    batches = _ints(args.batches)
    repeats = args.repeats or (5 if args.quick else 15)
    sample_ms = args.sample_ms or (10.0 if args.quick else 20.0)
    clock = CLOCKS[args.clock]

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    from torch._inductor.fx_passes.pre_grad import lazy_init

    lazy_init()  # PyTorch registers its patterns once; not charged to the first row
    options = pytorch_options(args.counter)

    started = time.perf_counter()
    rows: list[Row] = []
    for variant in variants:
        for count in towers:
            for batch in batches:
                row = bench_row(
                    variant,
                    count,
                    batch,
                    repeats=repeats,
                    sample_ms=sample_ms,
                    options=options,
                    clock=clock,
                    lean=args.lean,
                )
                rows.append(row)
                print(
                    f"[{row.name} batch {batch}] captured/ours {_num(row.speedup.get('ours'))}, "
                    f"captured/pytorch {_num(row.speedup.get('pytorch'))}"
                    + ("" if row.numerics_ok else "  NUMERICS FAILED"),
                    file=sys.stderr,
                    flush=True,
                )
    elapsed = time.perf_counter() - started
    checks = targets(rows)
    print(
        f"torch {torch.__version__}, 1 thread, {args.clock} clock, {repeats} repeats, "
        f"~{sample_ms:g} ms samples, {elapsed:.0f} s"
    )
    print("ours: optimus_ir.optimize(model, inputs), default pipeline")
    print(
        "pytorch: pre_grad_passes with pre_grad_fusion_options = "
        + ", ".join(
            f"{name}{'' if not value else ' ' + json.dumps(value)}" for name, value in options.items()
        )
        + " (group fusions are post-grad, CUDA only: not run)"
    )
    print(f"numerics: assert_close(rtol={RTOL}, atol={ATOL}) against the captured graph")
    print()
    print(format_table(rows))
    print()
    print(format_targets(checks))
    if args.json:
        report = {
            "benchmark": "batch_fusion",
            "python": platform.python_version(),
            "torch": torch.__version__,
            "machine": platform.machine(),
            "clock": args.clock,
            "repeats": repeats,
            "sample_ms": sample_ms,
            "variants": {name: VARIANTS[name] for name in variants},
            "pytorch_options": options,
            "tolerance": {"rtol": RTOL, "atol": ATOL},
            "rows": [asdict(row) for row in rows],
            "targets": [{"target": t, "pass": ok, "detail": d} for t, ok, d in checks],
            "seconds": elapsed,
        }
        args.json.write_text(json.dumps(report, indent=2))
    if any(row.mismatch.get("ours") is not None for row in rows):
        return 1
    if args.check and any(ok is False for _, ok, _ in checks):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
