"""The benchmark suite: every model, every variant, side by side (`make bench`).

For each model of `benchmarks/suite_models.py` (the recommendation family at
8/64/256/1024 towers, uniform and mixed widths, mixed activations and nested
split groups; DLRM; multi-task ranking; wide & deep) the runner measures the
variants

=================  ==========================================================
original           the `nn.Module`, eager
captured           the graph Dynamo captures (`optimus_ir.api.capture`), eager:
                   what FX-ification alone gives, the baseline ours must beat
ours               `optimus_ir.optimize(model, inputs, freeze=True)`, default
                   pipeline, eager: inference, the parameters are constants
                   (the suite times no_grad inference; without freeze the
                   weights of fused linears are stacked on every call)
pytorch            PyTorch's Optimus on the captured graph, eager:
                   `pre_grad_passes` with every pre-grad batch fusion and every
                   pre-grad split/cat pass (`pre_grad_fusion_options`, as
                   `benchmarks/bench_batch_fusion.py` sets them)
inductor           `torch.compile(model)`
inductor+pytorch   `torch.compile(model)` with PyTorch's Optimus options
inductor+ours      `torch.compile(model, backend="optimus")`: ours, then Inductor
inductor-frozen    `torch.compile(model)` under Inductor's freezing (parameters
                   are constants folded at compile time: inference)
inductor+ours-frozen  `torch.compile(model, backend="optimus",
                   options={"freeze": True})` under Inductor's freezing: ours
                   with the weight stacks of fused groups folded too
ours+triton        (CUDA only) ours with grouped linears of every shape and the
                   Triton kernel lowering forced (`lower-batch{kernels=triton}`)
=================  ==========================================================

and reports, per model and variant:

* ops: the compute ops of the graph that runs (eager variants) or that
  Inductor lowers (after its pre-grad passes, summed over the model's
  graphs): its call nodes less getitem, views, metadata and the parameter
  cache's lookup (`PLUMBING_KINDS`); every call node in parentheses;
* first call: the wall time from the model to the first result -- capture,
  optimization, compilation and the call -- in a fresh Python process with
  a fresh, empty Inductor (and Triton) cache directory, after the original
  model ran once in that process;
* passes: the time of the operator-level optimization passes themselves:
  our pipeline's passes for ours (under Inductor too), PyTorch's
  `pre_grad_passes` for pytorch and inductor+pytorch;
* steady state: per-call time, all variants interleaved in one process
  (`timing.measure`: round robin, rotated order, warm-up, GC off; CUDA
  events on a GPU), median and the interquartile spread of the repeats,
  and the speedup over original and over captured;
* peak live MiB: the tensor memory of one call (`optimus_ir.memory`,
  after the first call, under no_grad): the peak of the bytes allocated
  during the call and live at once, above what was live before it. On the
  CPU from the profiler's allocation events (every allocation of PyTorch's
  CPU allocator, in order: eager ops, a kernel's temporaries, and the
  buffers Inductor's generated code allocates, which go through the same
  allocator even though its C++ kernels never pass the dispatcher; memory
  a library allocates itself, such as oneDNN's scratch pads, is not seen);
  on a GPU `torch.cuda.max_memory_allocated` less the memory allocated
  before the call;
* held MiB: the tensor bytes the variant keeps alive between calls beyond
  what the model already held (its parameters and buffers, the inputs):
  every storage of a live Python tensor (`memory.live_tensor_storages`)
  after preparing the variant and dropping its first output, less those
  live before -- the weight stacks ours computed once with `freeze=True`,
  Inductor's frozen constants, the copies a pass made. Tensors only C++
  holds (no Python object) are not seen;
* RSS peak MiB: the process's peak resident set (VmHWM, reset after the
  first call) over five calls, in that fresh process (on a GPU
  `torch.cuda.max_memory_allocated` over five calls): interpreter and
  libraries included, so it hides differences of a few MiB of tensors;
* max abs diff to the original model's outputs, and whether they match
  (`assert_close`, rtol 1e-4, atol 1e-5: batched matmuls and Inductor's
  fusions reorder fp32 sums).

The freezing of the two `-frozen` variants is scoped to their compile and
first call (`torch._inductor.config.patch(freezing=True)`), never set for
the process: the other variants of the same process compile without it.
Freezing is a compile-time setting: their later calls run the frozen code
without the patch (15 us a call it would cost), and the steady-state
process fails if any variant recompiled while it was timed.

`--vs-inductor` answers one question instead (issue 23: is Inductor after
ours at least as fast as Inductor alone on every model?): per model, only
the compiled variants, paired -- inductor against inductor+ours, and
inductor-frozen against inductor+ours-frozen when `--variants` asks for
them -- timed interleaved in one process (one thread, batch 64, no_grad),
with the ratio of the medians (Inductor alone / after ours: above 1 is
faster), PASS or FAIL against `VS_INDUCTOR_TARGET`, the first-call compile
times (unless `--steady-only`) and the groups our cost model fused and
declined for the Inductor target (batch-fusion's remarks priced with
`target inductor:`). Its default models are the suite's without the
1024-tower ones (ten minutes and more per Inductor compile on two cores),
plus `plumbing`; `demo` (`make demo`'s model) is the same model as
`recsys-mixed-64`. The exit status is 1 when a pair fails the target or ours
fails or differs.

Then the scaling of our pipeline: the pass time of the default pipeline on
wide generated graphs of 1k to 100k FX nodes, with the growth exponent
fitted (time ~ nodes^k; near-linear is k close to 1).

Output: a markdown table (printed and written to `OUT/results.md`), every
figure as JSON (`OUT/results.json`) and a PNG plot of speedup and op count
per model and variant (`OUT/results.png`); progress on stderr.

The exit status is 1 when ours (eager or under Inductor) fails or differs
from the original, 0 otherwise; PyTorch's failures are reported, not fatal.

The code: this script runs the child processes and puts the run together
(`Children`, `run_model`, `parse_settings`, `main`); `suite_variants.py`
names the variants and prepares them, `suite_measure.py` is what the child
processes measure, `suite_results.py` holds the records of a run and
`suite_report.py` writes the report. Every public name of those modules is
importable from `suite` too (`from suite import prepare`).

Usage::

    python benchmarks/suite.py                      # everything (about an hour on 2 cores)
    python benchmarks/suite.py --quick              # small models, few repeats (~7 min on 2 cores; make bench-quick: < 1 min)
    python benchmarks/suite.py --models recsys-mixed-64,dlrm --variants original,ours,inductor
    python benchmarks/suite.py --compile-max-ops 0  # Inductor also on the 1024-tower models
    python benchmarks/suite.py --vs-inductor --steady-only            # ours under Inductor vs Inductor alone
    python benchmarks/suite.py --vs-inductor --models recsys-mixed-64,dlrm \
        --variants inductor,inductor+ours,inductor-frozen,inductor+ours-frozen
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent
for _path in (_ROOT, _HERE, _ROOT / "examples"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from suite_measure import (  # noqa: E402 - after the path setup above
    MEMORY_CALLS,
    PROGRESS,
    call_memory,
    child_first_call,
    child_scaling,
    child_steady,
    held_tensor_mib,
    peak_memory_mib,
)
from suite_report import (  # noqa: E402
    _fmt,
    fitted_exponent,
    format_details,
    format_scaling,
    format_summary,
    format_vs_inductor,
    machine_line,
    render,
    render_vs_inductor,
    verdict,
    vs_inductor_rows,
    write_plot,
)
from suite_results import Cell, ModelResult, Settings  # noqa: E402
from suite_variants import (  # noqa: E402
    ATOL,
    COMPILED,
    EAGER,
    FROZEN,
    GPU_ONLY,
    INDUCTOR_TARGET_MARK,
    OURS,
    RTOL,
    TRITON_PIPELINE,
    VARIANTS,
    VS_INDUCTOR_DEFAULT,
    VS_INDUCTOR_PAIRS,
    VS_INDUCTOR_TARGET,
    WITH_OUR_BACKEND,
    PreGradProbe,
    Prepared,
    build_on,
    compare,
    group_summaries,
    inductor_frozen,
    inductor_with_pytorch_optimus,
    op_counts,
    prepare,
    pytorch_options,
    to_device,
    variant_freezing,
    vs_inductor_pairs,
)

__all__ = [
    "ATOL", "COMPILED", "DEFAULT_COMPILE_MAX_OPS", "EAGER", "FROZEN", "FULL_SCALING_NODES", "GPU_ONLY",
    "INDUCTOR_TARGET_MARK", "MEMORY_CALLS", "OURS", "PROGRESS", "QUICK_SCALING_NODES", "RTOL",
    "TRITON_PIPELINE", "VARIANTS", "VS_INDUCTOR_DEFAULT", "VS_INDUCTOR_PAIRS", "VS_INDUCTOR_TARGET",
    "WITH_OUR_BACKEND",
    "Cell", "Children", "ModelResult", "PreGradProbe", "Prepared", "Settings",
    "build_on", "call_memory", "child_first_call", "child_scaling", "child_steady", "compare",
    "fitted_exponent", "format_details", "format_scaling", "format_summary", "format_vs_inductor",
    "group_summaries", "held_tensor_mib", "inductor_frozen", "inductor_with_pytorch_optimus",
    "machine_line", "main", "measure_scaling", "op_counts", "parse_settings", "peak_memory_mib",
    "prepare", "pytorch_options", "render", "render_vs_inductor", "run_model", "to_device",
    "variant_freezing", "verdict", "vs_inductor_pairs", "vs_inductor_rows", "write_plot",
]

FULL_SCALING_NODES = (1_000, 3_000, 10_000, 30_000, 100_000)
QUICK_SCALING_NODES = (1_000, 3_000, 10_000)
DEFAULT_COMPILE_MAX_OPS = 2000
"""Inductor variants are compiled for models of at most this many captured
ops: the 1024-tower models take Inductor over ten minutes per compile on
two cores (`--compile-max-ops 0` compiles everything)."""


# ---------------------------------------------------------------------------
# Scaling of our pipeline with the graph's size
# ---------------------------------------------------------------------------


def measure_scaling(children: Children, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """The scaling rows, measured in a child process (empty if it failed)."""
    print(f"scaling: our pipeline on {', '.join(map(str, sizes))} nodes ...", file=sys.stderr, flush=True)
    try:
        return children.run(["--child", "scaling", "--scaling-nodes", ",".join(map(str, sizes))],
                            children.root / "scaling")
    except RuntimeError as error:
        print(f"scaling FAILED: {error}", file=sys.stderr)
        return []


# ---------------------------------------------------------------------------
# The orchestrator
# ---------------------------------------------------------------------------


class Children:
    """Runs the child processes: each with fresh cache directories, keeping
    them so that the steady-state process of a model compiles from them."""

    def __init__(self, device: str, threads: int, timeout_s: float) -> None:
        self.device, self.threads, self.timeout_s = device, threads, timeout_s
        self.root = Path(tempfile.mkdtemp(prefix="optimus-bench-"))

    def run(self, arguments: Sequence[str], cache: Path) -> Any:
        cache.mkdir(parents=True, exist_ok=True)
        env = dict(
            os.environ,
            TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
            TRITON_CACHE_DIR=str(cache / "triton"),
        )
        command = [
            sys.executable, __file__, "--device", self.device, "--threads", str(self.threads),
            *arguments,
        ]
        with tempfile.TemporaryFile("w+") as stdout:
            child = subprocess.Popen(command, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
            timer = threading.Timer(self.timeout_s, child.kill)
            timer.start()
            lines = []
            assert child.stderr is not None
            for line in child.stderr:  # the child's progress lines, as they come
                if line.startswith(PROGRESS):
                    print(line[len(PROGRESS):], end="", file=sys.stderr, flush=True)
                elif line.strip():
                    lines.append(line.rstrip())
            returncode = child.wait()
            timed_out = not timer.is_alive()
            timer.cancel()
            if timed_out:
                raise RuntimeError(f"timed out after {self.timeout_s:.0f} s")
            if returncode != 0:
                raise RuntimeError(lines[-1] if lines else f"exit status {returncode}")
            stdout.seek(0)
            return json.loads(stdout.read().strip().splitlines()[-1])

    def merged_cache(self, model: str, caches: Sequence[Path]) -> Path:
        """One cache directory holding what the first-call processes compiled."""
        target = self.root / model / "steady"
        for cache in caches:
            if cache.exists():
                shutil.copytree(cache, target, dirs_exist_ok=True)
        return target

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def run_model(children: Children, settings: Settings, name: str, description: str, index: int) -> ModelResult:
    """Every figure of one model: a first-call process per variant, then
    one steady-state process for all of them."""
    started = time.perf_counter()
    result = ModelResult(name, description, repeats=settings.repeats)
    total = len(settings.models)
    caches = []

    def progress(text: str) -> None:
        print(f"[{index}/{total} {name}] {text}", file=sys.stderr, flush=True)

    variants = list(settings.variants)

    def first_call(variant: str) -> None:
        cell = result.cells[variant]
        if variant in COMPILED:
            captured_ops = result.cells.get("captured", Cell()).calls
            if settings.compiled_on is not None and name not in settings.compiled_on:
                cell.skipped = "not in --quick's compiled set"
                return
            if settings.compile_max_ops and captured_ops and captured_ops > settings.compile_max_ops:
                cell.skipped = f"{captured_ops} ops > --compile-max-ops {settings.compile_max_ops}"
                return
        cache = children.root / name / variant.replace("+", "-")
        try:
            figures = children.run(
                ["--child", "first-call", "--models", name, "--variants", variant, "--batch", str(settings.batch)],
                cache,
            )
        except RuntimeError as error:
            cell.error = str(error)
            progress(f"{variant}: FAILED: {cell.error}")
            return
        caches.append(cache)
        for key, value in figures.items():
            setattr(cell, key, value)
        progress(
            f"{variant}: first call {cell.first_call_s:.2f} s"
            + ("" if cell.matches else f"  MISMATCH: {cell.mismatch}")
        )

    for variant in variants:
        result.cells[variant] = Cell()
        if variant in COMPILED and settings.compiled_on is not None and name not in settings.compiled_on:
            # here too, not only in first_call: with --steady-only that never runs
            result.cells[variant].skipped = "not in --quick's compiled set"
    if not settings.steady_only:
        for variant in variants:  # captured before the compiled: its size decides --compile-max-ops
            first_call(variant)
    timed = [v for v in variants if result.cells[v].error is None and result.cells[v].skipped is None]
    progress(f"steady state: {', '.join(timed)} interleaved ...")
    try:
        steady = children.run(
            [
                "--child", "steady", "--models", name, "--variants", ",".join(timed),
                "--batch", str(settings.batch), "--repeats", str(settings.repeats),
                "--sample-ms", str(settings.sample_ms), "--clock", settings.clock,
            ],
            children.merged_cache(name, caches),
        )
    except RuntimeError as error:
        for variant in timed:
            result.cells[variant].error = f"steady state: {error}"
        progress(f"steady state FAILED: {error}")
    else:
        result.inner = steady["inner"]
        for variant, figures in steady["times"].items():
            for key, value in figures.items():
                setattr(result.cells[variant], key, value)
        for variant, error in steady["errors"].items():
            result.cells[variant].error = f"steady state: {error}"
        for variant, figures in steady.get("checks", {}).items():
            cell = result.cells[variant]  # the worse of the first-call and the steady-state check
            cell.max_abs_diff = max(cell.max_abs_diff or 0.0, figures["max_abs_diff"])
            cell.mismatch = cell.mismatch or figures["mismatch"]
            cell.matches = cell.mismatch is None
            if figures.get("fused_groups") is not None:
                cell.fused_groups, cell.declined_groups = figures["fused_groups"], figures["declined_groups"]
                cell.unchanged = figures["unchanged"]
    result.seconds = time.perf_counter() - started
    base = result.cells.get("original")
    captured = result.cells.get("captured")
    if base is not None and base.ops is None and captured is not None:
        base.ops, base.calls = captured.ops, captured.calls
    if settings.vs_inductor:
        summary = ", ".join(
            f"{ours} {s:.3f}x" for alone, ours in vs_inductor_pairs(timed)
            if (s := result.speedup(ours, alone)) is not None
        )
        progress(f"done in {result.seconds:.0f} s: Inductor alone / after ours: {summary}")
    else:
        summary = ", ".join(
            f"{v} {s:.2f}x" for v in timed if v != "original" and (s := result.speedup(v)) is not None
        )
        progress(f"done in {result.seconds:.0f} s: speedup over original: {summary}")
    shutil.rmtree(children.root / name, ignore_errors=True)
    return result


def parse_settings(argv: Sequence[str] | None) -> tuple[argparse.Namespace, Settings]:
    from suite_models import FULL, MODELS, SMALL

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small models, few repeats, Inductor on one model (a smoke run, ~7 min on 2 cores)")
    parser.add_argument("--models", help=f"comma-separated, of: {', '.join(MODELS)}")
    parser.add_argument("--variants", help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, help="interleaved steady-state repeats (default 20, quick 5)")
    parser.add_argument("--sample-ms", type=float, help="length of one timing sample (default 20, quick 5)")
    parser.add_argument("--compile-max-ops", type=int, default=DEFAULT_COMPILE_MAX_OPS,
                        help="compile Inductor variants only for models of at most this many ops (0: all)")
    parser.add_argument("--scaling-nodes", help="comma-separated FX node counts (default 1k..100k, quick 1k..10k)")
    parser.add_argument("--no-scaling", action="store_true", help="skip the scaling measurement")
    parser.add_argument("--device", default="auto", help="auto (cuda when available), cpu or cuda")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="steady-state clock on the CPU: wall (default) or cpu (the timing thread's CPU "
                        "time: steadier on a shared, loaded machine; one thread computes everything)")
    parser.add_argument("--out", type=Path, default=_ROOT / "build" / "bench", help="where the results go")
    parser.add_argument("--jobs", type=int, help="models measured at once (default 1; quick 2: the "
                        "smoke run's times are then not comparable, it checks the runner)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one child process may take")
    parser.add_argument("--vs-inductor", action="store_true",
                        help="Inductor alone vs Inductor after ours per model (pairs of the compiled variants; "
                        f"default {','.join(VS_INDUCTOR_DEFAULT)}), ratio, PASS/FAIL against "
                        f">= {VS_INDUCTOR_TARGET:g}x, groups fused/declined for the Inductor target")
    parser.add_argument("--steady-only", action="store_true",
                        help="steady state only: no first-call processes (no compile-time, ops or memory columns)")
    parser.add_argument("--child", choices=("first-call", "steady", "scaling"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    models = [m for m in (args.models or "").split(",") if m] or [
        m.name for m in (SMALL if args.quick else FULL)
        # --vs-inductor compiles every model: not the 1024-tower ones unless named
        if not (args.vs_inductor and not args.quick and m.name.endswith("-1024"))
    ]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown models {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    default_variants = [v for v in VARIANTS if device.startswith("cuda") or v not in GPU_ONLY]
    if args.vs_inductor and not args.variants:
        default_variants = list(VS_INDUCTOR_DEFAULT)
    variants = [v for v in (args.variants or "").split(",") if v] or default_variants
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if args.vs_inductor and not args.child:
        paired = {v for pair in VS_INDUCTOR_PAIRS for v in pair}
        variants = [v for v in variants if v in paired]
        if not vs_inductor_pairs(variants):
            parser.error("--vs-inductor needs a pair of variants: "
                         + " or ".join(",".join(pair) for pair in VS_INDUCTOR_PAIRS))
    elif not args.child:
        if "original" not in variants:
            variants.insert(0, "original")  # every speedup is over it
        if "captured" not in variants and any(v in COMPILED for v in variants):
            variants.insert(1, "captured")  # its op count decides --compile-max-ops
    if args.scaling_nodes:
        scaling = [int(n) for n in args.scaling_nodes.split(",") if n]
    else:
        scaling = list(QUICK_SCALING_NODES if args.quick else FULL_SCALING_NODES)
    settings = Settings(
        models=models,
        variants=variants,
        compiled_on={SMALL[0].name} if args.quick and not args.models else None,
        batch=args.batch,
        repeats=args.repeats or (5 if args.quick else 20),
        sample_ms=args.sample_ms or (5.0 if args.quick else 20.0),
        compile_max_ops=args.compile_max_ops,
        scaling_nodes=[] if args.no_scaling else scaling,
        device=device,
        threads=args.threads,
        quick=args.quick,
        jobs=args.jobs or (2 if args.quick else 1),
        clock=args.clock,
        vs_inductor=args.vs_inductor,
        steady_only=args.steady_only,
    )
    if args.vs_inductor:
        settings.scaling_nodes = []  # not its question
    return args, settings


def main(argv: Sequence[str] | None = None) -> int:
    args, settings = parse_settings(argv)
    if args.child == "first-call":
        print(json.dumps(child_first_call(settings.models[0], settings.variants[0], settings.batch,
                                          settings.device, settings.threads)))
        return 0
    if args.child == "steady":
        print(json.dumps(child_steady(settings.models[0], settings.variants, settings.batch, settings.device,
                                      settings.threads, settings.repeats, settings.sample_ms, settings.clock)))
        return 0
    if args.child == "scaling":
        print(json.dumps(child_scaling(settings.scaling_nodes)))
        return 0

    from suite_models import MODELS

    started = time.perf_counter()
    machine = machine_line(settings.device, settings.threads)
    print(f"optimus-ir benchmark suite: {len(settings.models)} models x {len(settings.variants)} variants, "
          f"batch {settings.batch}; {machine}", file=sys.stderr, flush=True)
    children = Children(settings.device, settings.threads, args.timeout)
    try:
        if any(v in COMPILED for v in settings.variants) and not settings.quick and not settings.steady_only:
            # The first compile on a machine also loads the C++ compiler and
            # its headers into the OS's file cache: not charged to a variant.
            print("warming up the compiler (one unmeasured Inductor compile) ...", file=sys.stderr, flush=True)
            with contextlib.suppress(RuntimeError):
                children.run(["--child", "first-call", "--models", settings.models[0], "--variants", "inductor",
                              "--batch", str(settings.batch)], children.root / "warm-up")
        jobs: list[Callable[[], Any]] = [
            functools.partial(run_model, children, settings, name, MODELS[name].description, index)
            for index, name in enumerate(settings.models, 1)
        ]
        if settings.scaling_nodes:
            jobs.append(functools.partial(measure_scaling, children, settings.scaling_nodes))
        with concurrent.futures.ThreadPoolExecutor(settings.jobs) as pool:
            done = list(pool.map(lambda job: job(), jobs))
        results = done[: len(settings.models)]
        scaling = done[len(settings.models)] if settings.scaling_nodes else []
    finally:
        children.close()
    elapsed = time.perf_counter() - started

    problems = verdict(results)
    pairs = vs_inductor_rows(results, settings.variants) if settings.vs_inductor else []
    if settings.vs_inductor:
        problems += [f"{row['model']} {row['ours']}: {row['verdict']} ({_fmt(row['ratio'], '.3f')}x)"
                     for row in pairs if row["verdict"] != "PASS"]
        text = render_vs_inductor(results, pairs, settings, machine, elapsed, problems)
    else:
        text = render(results, scaling, settings, machine, elapsed, problems)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(text + "\n")
    (args.out / "results.json").write_text(json.dumps({
        "machine": machine,
        "settings": {**asdict(settings), "compiled_on": sorted(settings.compiled_on or [])},
        "seconds": elapsed,
        "models": [{**asdict(r), "cells": {v: asdict(c) for v, c in r.cells.items()}} for r in results],
        "scaling": scaling,
        "vs_inductor": pairs,
        "problems": problems,
    }, indent=2))
    plotted = not settings.vs_inductor and write_plot(results, settings.variants, args.out / "results.png")
    written = ", ".join(str(args.out / f) for f in ("results.md", "results.json") + (("results.png",) if plotted else ()))
    print(f"\nwritten: {written}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
