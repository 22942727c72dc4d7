"""`make demo`: optimize the example recommendation model and show what happened.

A first experience of optimus-ir in about a minute, in numbered sections:

1. the model: the `mixed` variant of the recsys model (benchmarks/
   bench_batch_fusion.py): 64 towers of widths 16/32/64, depth 2, tanh/relu/
   sigmoid, batch 64 (optimus_ir/examples/recsys.py);
2. `optimus_ir.optimize(model, inputs, pipeline)`: ops per kind before and
   after, the passes run (time, rewrites), the groups batch fusion fused (kind,
   members, shapes, the cost model's estimate) and, grouped by reason, the
   remarks saying why the rest was not fused;
3. the IR of each stage written to files (`--out`, default build/demo): the
   imported fx-dialect IR, the IR after every pass (`NN-pass.mlir`, each one
   valid `optimus-opt` input) and the final FX graph's code;
4. the numerical check: the optimized module against the model on the
   example inputs and on fresh random ones (exit status 1 when they differ);
5. per-call time in eager mode: the nn.Module, the graph Dynamo captured and
   ours (one thread, no_grad, median of interleaved repeats, with the spread);
6. under torch.compile: Inductor alone against `backend="optimus"` (ours, then
   Inductor): first-call compile time and steady-state per-call time, both
   checked against eager (`--no-compile` skips it);
7. the split/cat plumbing model (optimus_ir/examples/plumbing.py), where
   split-cat-simplify has the work;

then a summary.

    python -m optimus_ir.examples.demo [--towers 64] [--batch 64] [--out build/demo]
                                       [--pipeline "raise-fx,...,lower-to-fx"] [--validate]
                                       [--no-compile] [--compile-towers N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

import optimus_ir
from optimus_ir.api import OptimizeReport, capture
from optimus_ir.examples.plumbing import make_model as make_plumbing_model
from optimus_ir.examples.recsys import VARIANTS as RECSYS_VARIANTS
from optimus_ir.examples.recsys import make_recsys_model
from optimus_ir.examples.timing import CLOCKS, measure, quantile

MODEL_VARIANT: dict[str, Any] = dict(RECSYS_VARIANTS["mixed"])
"""The `mixed` variant (optimus_ir/examples/recsys.py `VARIANTS`): the one the benchmarks use."""

RTOL, ATOL = 1.3e-6, 1e-5
"""`torch.testing.assert_close`'s fp32 defaults: optimize() must match eager that closely."""

COMPILE_ATOL = 1e-4
"""Largest max abs difference to eager accepted under torch.compile (Inductor
reorders sums; the same bound benchmarks/bench_compile.py uses)."""

EXAMPLES_PER_REASON = 2
"""How many remarks to quote for each reason something was not fused."""


def say(text: str = "") -> None:
    """Print one line at once: sections take seconds, the reader sees progress."""
    print(text, flush=True)


def shown(path: Path) -> str:
    """`path` relative to the current directory when it lies below it (shorter
    to read and to paste into a command), else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def section(title: str) -> None:
    """A numbered section header."""
    say()
    say(f"== {title}")


# ---------------------------------------------------------------------------
# 2. What optimize() did: passes, fusions, remarks
# ---------------------------------------------------------------------------


def format_passes(report: OptimizeReport) -> list[str]:
    """One line per pass run: its time, rewrites (by pattern) and counters."""
    lines = []
    for number, record in enumerate(report.statistics.passes, start=1):
        details = [f"{record.rewrites} rewrite(s)"]
        applied = [f"{name} {p.rewrites}" for name, p in record.patterns.items() if p.rewrites]
        if applied:
            details[0] += f" ({', '.join(applied)})"
        details += [f"{value} {name}" for name, value in record.counters.items()]
        lines.append(
            f"  {number:>2}. {record.spec or record.name:<20} {record.seconds * 1e3:7.1f} ms  "
            + "; ".join(details)
        )
    return lines


def _dims(value: Any) -> str:
    """`64x16` for a tensor-typed SSA value, else its type as text."""
    ty = value.type
    if hasattr(ty, "get_shape"):
        return "x".join("?" if d < 0 else str(d) for d in ty.get_shape()) or "scalar"
    return str(ty)


_FUSED = re.compile(r"^(?P<pass>[\w-]+): fused (?P<count>\d+) (?P<op>\S+) .*?into (?P<into>[\w.]+)(?: \((?P<why>.*)\))?$")
_GAIN = re.compile(r"gain ~(?P<us>[\d.]+) us")
_GROUP_NOT_FUSED = re.compile(r"^(?P<pass>[\w-]+): (?P<count>\d+) (?P<op>\S+) .*?not fused: (?P<reason>.*)$")
_ONE_NOT_FUSED = re.compile(r"^(?P<pass>[\w-]+): (?P<op>\S+) %\S+ not fused(?P<rest>.*)$")


@dataclass
class Fusion:
    """One group batch fusion fused, read from its remark."""

    count: int
    op: str
    into: str
    member_shapes: str
    gain_us: float | None


@dataclass
class RemarkSummary:
    """The remarks of one optimize() run: what was fused, and why the rest was not."""

    fusions: list[Fusion] = field(default_factory=list)
    not_fused: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    """reason -> (ops it covers, the remark's message) per remark."""
    other: list[str] = field(default_factory=list)

    @property
    def fused_ops(self) -> int:
        """Ops that went into a fused group."""
        return sum(f.count for f in self.fusions)

    @property
    def estimated_gain_us(self) -> float:
        """The cost model's estimated saving per call, summed over the groups."""
        return sum(f.gain_us or 0.0 for f in self.fusions)


def _reason(text: str) -> str:
    """The reason part of a "not fused" remark, without the per-op details
    (values in parentheses, the cost figures after the first colon), so
    that remarks for the same reason count together."""
    if text.startswith(" with ") and "key differs in " in text:
        fields = text.split("key differs in ", 1)[1]
        return "its key differs from a fused group's: " + re.sub(r"\s*\([^()]*\)", "", fields)
    text = text.removeprefix(": ")
    return re.sub(r"\s*\([^()]*\)", "", text.split(": ", 1)[0]).strip()


def summarize_remarks(remarks: Sequence[Any]) -> RemarkSummary:
    """Sort the remarks (`optimus_ir.foundation.diagnostics.Diagnostic`) into fused
    groups and not-fused reasons.

    The remark's text says how many ops and what they became; its `op` (the
    first member, detached from the IR once fused, but still typed) gives the
    member shapes. A remark of an unknown form is kept as it is."""
    summary = RemarkSummary()
    for remark in remarks:
        message = remark.message
        fused = _FUSED.match(message)
        if fused is not None:
            op = remark.op
            shapes = ""
            if op is not None:
                shapes = f"({', '.join(_dims(v) for v in op.operands)}) -> " + ", ".join(
                    _dims(r) for r in op.results
                )
            gain = _GAIN.search(fused["why"] or "")
            summary.fusions.append(
                Fusion(int(fused["count"]), fused["op"], fused["into"], shapes,
                       float(gain["us"]) if gain else None)
            )
            continue
        group = _GROUP_NOT_FUSED.match(message)
        if group is not None:
            reason = _reason(group["reason"])
            summary.not_fused.setdefault(reason, []).append((int(group["count"]), message))
            continue
        one = _ONE_NOT_FUSED.match(message)
        if one is not None:
            summary.not_fused.setdefault(_reason(one["rest"]), []).append((1, message))
            continue
        summary.other.append(message)
    return summary


def format_remarks(summary: RemarkSummary) -> list[str]:
    """The fused groups as a table, then the not-fused remarks counted per
    reason with a few quoted (a wide model has hundreds of them)."""
    lines = [
        f"fused {len(summary.fusions)} group(s) of {summary.fused_ops} ops; the cost model "
        f"estimates ~{summary.estimated_gain_us:.0f} us saved per call"
    ]
    if summary.fusions:
        lines.append(f"  {'ops':<16} {'members':>7}  {'into':<16} {'gain':>9}  member shapes (operands) -> result")
        for f in summary.fusions:
            gain = f"~{f.gain_us:.1f} us" if f.gain_us is not None else "-"
            lines.append(f"  {f.op:<16} {f.count:>7}  {f.into:<16} {gain:>9}  {f.member_shapes}")
    if summary.not_fused:
        total_ops = sum(n for entries in summary.not_fused.values() for n, _ in entries)
        lines.append(f"not fused: {total_ops} candidate op(s), by reason:")
        ranked = sorted(summary.not_fused.items(), key=lambda item: -sum(n for n, _ in item[1]))
        for reason, entries in ranked:
            ops = sum(n for n, _ in entries)
            lines.append(f"  {ops:>4} op(s): {reason}")
            for _, message in entries[:EXAMPLES_PER_REASON]:
                lines.append(f"         e.g. {message}")
            if len(entries) > EXAMPLES_PER_REASON:
                lines.append(f"         ... and {len(entries) - EXAMPLES_PER_REASON} more remark(s) like these")
    for message in summary.other:
        lines.append(f"  remark: {message}")
    return lines


# ---------------------------------------------------------------------------
# 3. The IR of each stage, in files
# ---------------------------------------------------------------------------


def _print_ir(module: Any, path: Path) -> None:
    """Write `module` as IR text (xDSL's printer: what `optimus-opt` parses)."""
    from xdsl.printer import Printer

    with path.open("w") as stream:
        Printer(stream=stream).print_op(module)
        stream.write("\n")


def frozen_pipeline(text: str) -> str:
    """`text` with batch fusion told that parameters are constants, as
    `optimize(freeze=True)` tells it (`constant-parameters=true`)."""

    def constant(match: re.Match[str]) -> str:
        options = match.group(2)
        return "batch-fusion{" + (f"{options} " if options else "") + "constant-parameters=true}"

    return re.sub(r"batch-fusion(\{([^}]*)\})?", constant, text)


def write_stage_ir(
    gm: torch.fx.GraphModule, inputs: Sequence[Any], pipeline: str, final_code: str, out: Path
) -> list[Path]:
    """Import the captured graph `gm`, run `pipeline` on it and write the IR
    of every stage under `out`: `00-import.mlir`, `NN-<pass>.mlir` after
    pass NN, and `final_graph.py` (`final_code`: the code of the module
    optimize() returned). Returns the files written, in order.

    optimize() exposes no per-pass hook, so this runs the same pipeline again
    on the same captured graph, through the public import and pipeline APIs,
    with `run_pipeline`'s after-each-pass hook writing the module as it is;
    the passes are deterministic, so these are the stages optimize() went
    through (optimize() also makes returned values contiguous before its
    final lower-to-fx, which this run leaves out). Nothing is parsed back
    from text: xDSL's parser would take longer than the passes."""
    from optimus_ir.pipeline import run_pipeline

    out.mkdir(parents=True, exist_ok=True)
    # Stale stages of an earlier run (another pipeline) would be misleading.
    for old in [*out.glob("[0-9][0-9]-*.mlir"), out / "final_graph.py"]:
        old.unlink(missing_ok=True)
    program = optimus_ir.import_graph(gm, list(inputs))
    written = [out / "00-import.mlir"]
    _print_ir(program.module, written[0])

    def after_pass(pass_: Any, module: Any) -> None:
        """Write the IR right after each pass, numbered in pipeline order."""
        path = out / f"{len(written):02d}-{pass_.name}.mlir"
        _print_ir(module, path)
        written.append(path)

    run_pipeline(program.module, pipeline, validate_each=after_pass)
    code = out / "final_graph.py"
    code.write_text(final_code)
    written.append(code)
    return written


# ---------------------------------------------------------------------------
# 4. Numerical check
# ---------------------------------------------------------------------------


def max_abs_difference(
    expected_fn: Callable[..., Any], actual_fn: Callable[..., Any], inputs: Sequence[Any],
    rtol: float, atol: float,
) -> tuple[float, str | None]:
    """The largest absolute difference between the two functions' outputs on
    `inputs` (under no_grad), and assert_close's message when they differ."""
    with torch.no_grad():
        expected = pytree.tree_leaves(expected_fn(*inputs))
        actual = pytree.tree_leaves(actual_fn(*inputs))
    if len(expected) != len(actual):
        return float("inf"), f"{len(actual)} outputs, expected {len(expected)}"
    diff = max(
        (float((a.double() - e.double()).abs().max()) for a, e in zip(actual, expected) if a.numel()),
        default=0.0,
    )
    try:
        for a, e in zip(actual, expected):
            torch.testing.assert_close(a, e, rtol=rtol, atol=atol)
    except AssertionError as error:
        return diff, str(error).splitlines()[0]
    return diff, None


def fresh_inputs(inputs: Sequence[torch.Tensor], seed: int) -> tuple[torch.Tensor, ...]:
    """Random inputs shaped like `inputs` (a generator of their own: the
    example inputs are not the only ones the result must be right on)."""
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(x.shape, generator=generator, dtype=x.dtype) for x in inputs)


def numerical_check(
    model: Callable[..., Any], optimized: Callable[..., Any], inputs: Sequence[torch.Tensor],
    rtol: float = RTOL, atol: float = ATOL,
) -> bool:
    """Compare on the example inputs and on two fresh random inputs; print
    each max abs difference. True when all match."""
    ok = True
    cases = [("example inputs", tuple(inputs))]
    cases += [(f"random inputs (seed {s})", fresh_inputs(inputs, s)) for s in (1, 2)]
    for name, args in cases:
        diff, failure = max_abs_difference(model, optimized, args, rtol, atol)
        verdict = "OK" if failure is None else f"MISMATCH: {failure}"
        say(f"  {name:<24} max abs difference {diff:.3g}  {verdict}")
        ok &= failure is None
    return ok


# ---------------------------------------------------------------------------
# 5./6. Timing
# ---------------------------------------------------------------------------


@dataclass
class Timing:
    """Per-call milliseconds of one callable: median and quartiles of the repeats."""

    median: float
    q1: float
    q3: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Timing:
        """Summarize the repeats `measure` took."""
        return cls(statistics.median(samples), quantile(samples, 0.25), quantile(samples, 0.75))

    def describe(self) -> str:
        """`1.234 ms [1.200, 1.250]`: median [q1, q3]."""
        return f"{self.median:.3f} ms [{self.q1:.3f}, {self.q3:.3f}]"


def time_calls(
    calls: dict[str, Callable[[], Any]], repeats: int, sample_ms: float, clock: str
) -> dict[str, Timing]:
    """Interleaved per-call times of every callable (optimus_ir/examples/timing.py)."""
    samples, _inner = measure(calls, repeats=repeats, sample_ms=sample_ms, clock=CLOCKS[clock])
    return {name: Timing.of(values) for name, values in samples.items()}


def machine() -> str:
    """The machine the figures were measured on, in one line."""
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} core(s), "
        f"python {platform.python_version()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s)"
    )


def compile_and_time(
    model: torch.nn.Module, inputs: Sequence[torch.Tensor], repeats: int, sample_ms: float, clock: str,
    pipeline: str | None = None,
) -> tuple[dict[str, float], dict[str, Timing], bool]:
    """torch.compile with Inductor alone and with `backend="optimus"`: the
    first call's wall time of each, their interleaved steady state, and
    whether both match eager (printed), with what our backend did to each
    graph Dynamo handed it. `pipeline`: the backend's pipeline (None: the
    default one).

    Each compile gets a fresh, empty Inductor cache directory (and Inductor's
    in-memory caches cleared), so a run before this one cannot serve it. A
    throwaway compile of a one-op function comes first: it pays what the
    first compile in a process pays once (imports, compiler start-up), which
    would otherwise be charged to whichever variant went first."""
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

    # `optimus_ir.backend()` is what backend="optimus" builds (same options),
    # kept here so that its `outcomes` say what happened to each graph.
    ours = optimus_ir.backend(**({"pipeline": pipeline} if pipeline else {}))
    variants = {
        "inductor": lambda: torch.compile(model),
        "optimus+inductor": lambda: torch.compile(model, backend=ours),
    }
    with torch.no_grad():
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="demo-inductor-") as cache, temporary_cache_dir(cache):
            torch.compile(lambda t: torch.tanh(t) + 1)(torch.randn(8))
        say(f"  warm-up compile of a one-op function (one-time start-up cost): {time.perf_counter() - start:.1f} s")
        compiled: dict[str, Callable[..., Any]] = {}
        first_call: dict[str, float] = {}
        for name, make in variants.items():
            with tempfile.TemporaryDirectory(prefix="demo-inductor-") as cache, temporary_cache_dir(cache):
                function = make()
                start = time.perf_counter()
                function(*inputs)
                first_call[name] = time.perf_counter() - start
            compiled[name] = function
            say(f"  compiled with {name:<17} first call {first_call[name]:.1f} s")
    for outcome in ours.outcomes:
        say(f"  {outcome.describe()}")
    ok = True
    for name, function in compiled.items():
        diff, failure = max_abs_difference(model, function, inputs, rtol=0.0, atol=COMPILE_ATOL)
        say(f"  {name:<17} vs eager: max abs difference {diff:.3g}  "
            + ("OK" if failure is None else f"MISMATCH: {failure}"))
        ok &= failure is None
    say("  steady state (interleaved) ...")
    calls = {name: (lambda f: lambda: f(*inputs))(f) for name, f in compiled.items()}
    return first_call, time_calls(calls, repeats, sample_ms, clock), ok


# ---------------------------------------------------------------------------
# The demo
# ---------------------------------------------------------------------------


def describe_model(model: Any, inputs: Sequence[torch.Tensor]) -> str:
    """One line on a recsys model: towers, widths, activations, depth, sizes."""
    widths = sorted(set(model.widths))
    parameters = sum(p.numel() for p in model.parameters())
    return (
        f"{model.num_towers} towers of input widths {'/'.join(map(str, widths))} "
        f"(cycled), each Linear(w, {model.tower_hidden}) -> LayerNorm -> act"
        + (f" -> Linear({model.tower_hidden}, {model.tower_hidden}) -> act" if model.tower_depth == 2 else "")
        + f", act cycling {'/'.join(dict.fromkeys(model.activations))}; then cat -> MLP.\n"
        f"  input {tuple(inputs[0].shape)} (batch {inputs[0].shape[0]}), "
        f"{parameters / 1e6:.2f} M parameters, eval mode"
    )


def describe_outcome(report: OptimizeReport) -> str:
    """`compute ops a -> b per call, view and metadata ops c -> d per call,
    N group(s) fused` (counted as the report counts: `OptimizeReport.op_counts`),
    and why when `optimize` fell back: from the report of the module
    returned only, so that the line cannot contradict itself (a speed check
    that fell back leaves no fused group in it)."""
    line = f"{report.op_counts().summary()}, {report.groups_fused} group(s) fused"
    if report.speed_check is not None and report.speed_check.fell_back:
        line += " (the speed check fell back to the pipeline without batch fusion)"
    if report.fallback is not None:
        line += f" (not optimized: {report.fallback})"
    elif any(r.message.startswith("optimize: op-count guard") for r in report.remarks):
        line += " (the op-count guard fell back to the pipeline without batch fusion)"
    return line


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 when every numerical check passed, else 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towers", type=int, default=None, help="parallel feature towers (default 64; 16 with --quick)")
    parser.add_argument("--batch", type=int, default=64, help="batch size of the example input")
    parser.add_argument("--pipeline", default=None, help="pass pipeline (default: the default pipeline)")
    parser.add_argument("--validate", action="store_true", help="validate every pass differentially")
    parser.add_argument("--out", type=Path, default=Path("build") / "demo", help="where the IR of each stage goes (relative to the current directory)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile section")
    parser.add_argument("--compile-towers", type=int, default=None,
                        help="towers of the model compiled with torch.compile (default: --towers)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved timing repeats (default 31; 5 with --quick)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: this thread's CPU time (steady on a shared machine); wall: elapsed time")
    parser.add_argument("--quick", action="store_true", help="16 towers and fewer, shorter timing repeats")
    args = parser.parse_args(argv)
    towers = args.towers if args.towers is not None else (16 if args.quick else 64)
    compile_towers = args.compile_towers if args.compile_towers is not None else towers
    repeats = args.repeats if args.repeats is not None else (5 if args.quick else 31)
    sample_ms = 5.0 if args.quick else 20.0
    # One thread: the per-call times measure the work, not how well small ops
    # spread over cores the other sessions of a shared machine are using.
    # Restored afterwards: main() also runs inside the test process.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(args, towers, compile_towers, repeats, sample_ms)
    finally:
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace, towers: int, compile_towers: int, repeats: int, sample_ms: float) -> int:
    """The demo's sections, with the options `main` parsed; its exit status."""
    ok = True
    demo_start = time.perf_counter()

    section("1. the model (optimus_ir/examples/recsys.py, the `mixed` variant)")
    model, inputs = make_recsys_model(num_towers=towers, batch=args.batch, seed=0, **MODEL_VARIANT)
    say(f"  {describe_model(model, inputs)}")
    say(f"  machine: {machine()}")

    section("2. optimus_ir.optimize(model, inputs, pipeline, freeze=True)")
    say("  capturing with Dynamo, importing, running the passes, exporting ...")
    start = time.perf_counter()
    # An inference demo: the parameters are constants, so the stacked
    # weights of fused linears are computed once (freeze=True).
    optimized = optimus_ir.optimize(model, inputs, args.pipeline, validate=args.validate, freeze=True)
    optimize_s = time.perf_counter() - start
    report: OptimizeReport = optimized.optimus_report
    say(f"  done in {optimize_s:.1f} s")
    say()
    say(report.format())
    say()
    say("passes run (time, rewrites by pattern, counters):")
    for line in format_passes(report):
        say(line)
    say()
    for line in format_remarks(summarize_remarks(report.remarks)):
        say(line)

    section(f"3. the IR of each stage (under {shown(args.out)})")
    # The graph Dynamo captures from the model: what the stages start from
    # here, and the "captured" baseline of the timings.
    gm = capture(model, inputs)
    files = write_stage_ir(gm, inputs, frozen_pipeline(report.pipeline), optimized.code, args.out / "recsys")
    for path in files:
        say(f"  {shown(path)}  ({path.stat().st_size / 1024:.0f} KiB)")
    say(f"  try: optimus-opt {shown(files[0])} -p raise-fx,batch-fusion --remarks >/dev/null"
        "   (the remarks at their lines)")

    section("4. numerical check: optimized module vs. the model")
    matched = numerical_check(model, optimized, inputs)
    ok &= matched
    say("  result: " + ("OK (outputs match the original model)" if matched else "FAILED"))

    section(f"5. per-call time, eager ({args.clock} clock, median [q1, q3] of {repeats} interleaved repeats)")
    x = inputs
    eager = time_calls(
        {"nn.Module": lambda: model(*x), "captured graph": lambda: gm(*x), "optimus-ir": lambda: optimized(*x)},
        repeats, sample_ms, args.clock,
    )
    for name, timing in eager.items():
        say(f"  {name:<15} {timing.describe()}")
    speedup_module = eager["nn.Module"].median / eager["optimus-ir"].median
    speedup_captured = eager["captured graph"].median / eager["optimus-ir"].median
    say(f"  speedup: {speedup_module:.2f}x over the nn.Module, {speedup_captured:.2f}x over the captured graph")
    # Tensor memory at the allocator (optimus_ir.memory), not process RSS:
    # measured with optimize's speed check, else now.
    memory = report.memory or report.measure_memory(optimized, model, inputs)
    for line in memory.describe().splitlines():
        say(f"  {line}")

    compile_line = "skipped (--no-compile)"
    if not args.no_compile:
        section("6. under torch.compile: Inductor alone vs. backend=\"optimus\" (ours, then Inductor)")
        compile_model, compile_inputs = model, inputs
        if compile_towers != towers:
            compile_model, compile_inputs = make_recsys_model(
                num_towers=compile_towers, batch=args.batch, seed=0, **MODEL_VARIANT
            )
            say(f"  a smaller model for this section (compiling takes long): {compile_towers} towers")
        say(f"  machine: {machine()}")
        first_call, steady, compiled_ok = compile_and_time(
            compile_model, compile_inputs, repeats, sample_ms, args.clock, args.pipeline
        )
        ok &= compiled_ok
        for name, timing in steady.items():
            say(f"  {name:<17} compile {first_call[name]:5.1f} s   steady {timing.describe()}")
        compile_ratio = first_call["optimus+inductor"] / first_call["inductor"]
        steady_speedup = steady["inductor"].median / steady["optimus+inductor"].median
        say(f"  optimus+inductor vs inductor alone: compile time {compile_ratio:.2f}x, "
            f"steady-state speedup {steady_speedup:.2f}x")
        # Why the gain is smaller than in eager: under torch.compile the
        # parameters are graph inputs, so stacking the weights of a fused
        # linear is a copy on every call, and Inductor fuses pointwise ops itself.
        say("  (under torch.compile the weights are graph inputs: a fused linear stacks them on every "
            "call, and Inductor fuses the pointwise ops itself)")
        compile_line = (
            f"{steady_speedup:.2f}x steady-state speedup over Inductor alone, compile time "
            f"{first_call['optimus+inductor']:.1f} s vs {first_call['inductor']:.1f} s"
            + (f" ({compile_towers} towers)" if compile_towers != towers else "")
        )

    section("7. the split/cat plumbing model (optimus_ir/examples/plumbing.py)")
    plumbing, plumbing_inputs = make_plumbing_model()
    plumbed = optimus_ir.optimize(plumbing, plumbing_inputs, args.pipeline, validate=args.validate)
    plumbing_report: OptimizeReport = plumbed.optimus_report
    say(plumbing_report.format())
    plumbing_files = write_stage_ir(
        capture(plumbing, plumbing_inputs), plumbing_inputs, plumbing_report.pipeline,
        plumbed.code, args.out / "plumbing",
    )
    say(f"  IR of each stage: {len(plumbing_files)} files under {shown(args.out / 'plumbing')}")
    plumbing_ok = numerical_check(plumbing, plumbed, plumbing_inputs)
    ok &= plumbing_ok
    say("  result: " + ("OK (outputs match the original model)" if plumbing_ok else "FAILED"))

    section("summary")
    say(f"  recsys model, {towers} towers: {describe_outcome(report)} (optimize took {optimize_s:.1f} s)")
    say(f"  plumbing model: {plumbing_report.op_counts().summary()}")
    say(f"  numerical checks: {'all OK' if ok else 'FAILED'}")
    say(f"  eager: {speedup_module:.2f}x over the nn.Module, {speedup_captured:.2f}x over the captured graph")
    say(f"  torch.compile: {compile_line}")
    say(f"  IR of each stage: {shown(args.out / 'recsys')}, {shown(args.out / 'plumbing')}")
    say(f"  demo time: {time.perf_counter() - demo_start:.0f} s (after the imports)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
