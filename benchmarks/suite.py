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
import copy
import functools
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent
for _path in (_ROOT, _HERE, _ROOT / "examples"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

EAGER = ("original", "captured", "ours", "pytorch")
FROZEN = ("inductor-frozen", "inductor+ours-frozen")
"""The variants compiled and timed under Inductor's freezing."""
COMPILED = ("inductor", "inductor+pytorch", "inductor+ours") + FROZEN
GPU_ONLY = ("ours+triton",)
VARIANTS = EAGER + COMPILED + GPU_ONLY
OURS = ("ours", "inductor+ours", "inductor+ours-frozen", "ours+triton")
"""The variants whose failure or mismatch fails the run."""
WITH_OUR_BACKEND = ("inductor+ours", "inductor+ours-frozen")
"""The variants compiled through our torch.compile backend (their remarks
say which groups were fused or declined for the Inductor target)."""
VS_INDUCTOR_PAIRS = (("inductor", "inductor+ours"), ("inductor-frozen", "inductor+ours-frozen"))
"""`--vs-inductor`'s comparisons: (Inductor alone, Inductor after ours)."""
VS_INDUCTOR_DEFAULT = ("inductor", "inductor+ours")
VS_INDUCTOR_TARGET = 1.0
"""Inductor alone's median over Inductor after ours', at least (issue 23:
never slower than Inductor alone)."""
INDUCTOR_TARGET_MARK = "target inductor:"
"""What batch-fusion's remark says of a group priced for Inductor
(`optimus_ir.analysis.cost_model.GroupEstimate.describe`)."""

RTOL, ATOL = 1e-4, 1e-5
PROGRESS = "progress: "
"""A child's stderr line with this prefix is shown while it runs (the rest is
kept for the error message)."""
MEMORY_CALLS = 5
TRITON_PIPELINE = (
    "raise-fx,split-cat-simplify,batch-fusion{cost-model=none grouped-linear=true},"
    "lower-batch{kernels=triton},split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
)
FULL_SCALING_NODES = (1_000, 3_000, 10_000, 30_000, 100_000)
QUICK_SCALING_NODES = (1_000, 3_000, 10_000)
DEFAULT_COMPILE_MAX_OPS = 2000
"""Inductor variants are compiled for models of at most this many captured
ops: the 1024-tower models take Inductor over ten minutes per compile on
two cores (`--compile-max-ops 0` compiles everything)."""


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass
class Cell:
    """The figures of one (model, variant)."""

    ops: int | None = None
    """Compute ops: calls less views, getitem and lookups (`op_counts`)."""
    calls: int | None = None
    """Every call node."""
    first_call_s: float | None = None
    pass_ms: float | None = None
    median_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    rss_peak_mib: float | None = None
    """The process's peak resident set over `MEMORY_CALLS` calls (CPU), or
    `torch.cuda.max_memory_allocated` (GPU): process-wide, not tensors."""
    peak_live_mib: float | None = None
    """Peak tensor bytes live during one call, above what was live before
    (`optimus_ir.memory.measure_call_memory`: profiler allocation events on
    the CPU, the CUDA allocator's counters on a GPU)."""
    held_mib: float | None = None
    """Tensor bytes the variant holds between calls beyond the model's
    parameters and buffers and the inputs (`held_tensor_mib`)."""
    memory_method: str | None = None
    """How `peak_live_mib` was measured ("profiler" or "cuda")."""
    max_abs_diff: float | None = None
    matches: bool | None = None
    mismatch: str | None = None
    error: str | None = None
    skipped: str | None = None
    fused_groups: list[str] | None = None
    """Our backend's variants: the groups batch fusion fused for the
    Inductor target (`group_summaries`)."""
    declined_groups: list[str] | None = None
    """Our backend's variants: the groups the Inductor-target cost model
    declined as unprofitable."""
    unchanged: bool | None = None
    """Our backend's variants: Inductor got Dynamo's graphs unchanged
    (`Prepared.unchanged`)."""

    @property
    def spread_pct(self) -> float | None:
        if self.median_ms is None or self.q1_ms is None or self.q3_ms is None:
            return None
        return 100 * (self.q3_ms - self.q1_ms) / self.median_ms


@dataclass
class ModelResult:
    """All variants of one model."""

    name: str
    description: str
    cells: dict[str, Cell] = field(default_factory=dict)
    inner: int = 0
    repeats: int = 0
    seconds: float = 0.0

    def speedup(self, variant: str, base: str = "original") -> float | None:
        here, there = self.cells.get(variant), self.cells.get(base)
        if here is None or there is None or not here.median_ms or not there.median_ms:
            return None
        return there.median_ms / here.median_ms


# ---------------------------------------------------------------------------
# Building and preparing variants (run in the child processes)
# ---------------------------------------------------------------------------


def op_counts(gm: Any) -> tuple[int, int]:
    """(compute ops, all calls): the calls that compute or move data
    (every call less `PLUMBING_KINDS`), and every call (getitem included)."""
    from optimus_ir.api import is_plumbing, op_kind

    calls = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    return sum(1 for n in calls if not is_plumbing(op_kind(n))), len(calls)


def to_device(value: Any, device: Any) -> Any:
    import torch

    return value.to(device) if isinstance(value, torch.Tensor) else value


def build_on(name: str, batch: int, device: str) -> tuple[Any, tuple[Any, ...]]:
    """The seeded model and inputs on `device`."""
    from suite_models import build

    model, inputs = build(name, batch)
    return model.to(device).eval(), tuple(to_device(x, device) for x in inputs)


class PreGradProbe:
    """Wraps Inductor's `pre_grad_passes` while active: the seconds spent in
    it and the call ops of the graphs it hands on to Inductor's lowering."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.ops = (0, 0)
        self.graphs = 0

    @contextlib.contextmanager
    def active(self) -> Iterator[PreGradProbe]:
        from torch._inductor import compile_fx

        original = compile_fx.pre_grad_passes

        def timed(gm: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            result = original(gm, *args, **kwargs)
            self.seconds += time.perf_counter() - start
            compute, calls = op_counts(result)
            self.ops = (self.ops[0] + compute, self.ops[1] + calls)
            self.graphs += 1
            return result

        compile_fx.pre_grad_passes = timed
        try:
            yield self
        finally:
            compile_fx.pre_grad_passes = original


def pytorch_options() -> dict[str, dict[str, Any]]:
    """PyTorch's Optimus: every pre-grad batch fusion and split/cat pass."""
    from bench_batch_fusion import pytorch_options as options

    return options(counter=2)


def inductor_with_pytorch_optimus(gm: Any, example_inputs: Sequence[Any]) -> Any:
    """Inductor with PyTorch's Optimus, as a backend of its own: Dynamo
    then keeps its code apart from plain Inductor's (one `torch.compile(model)`
    after another on the same model class shares compiled code), and a
    recompile gets the same options."""
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx

    with config.patch(pre_grad_fusion_options=pytorch_options(), pattern_matcher=True):
        return compile_fx(gm, list(example_inputs))


def inductor_frozen(gm: Any, example_inputs: Sequence[Any]) -> Any:
    """Inductor with its freezing, as a backend of its own: Dynamo then keeps
    its code apart from plain Inductor's (the same model class compiled
    with the same backend shares compiled code), and a recompile freezes
    too. (The first call runs under `freezing` as well: Dynamo reads the
    option when it traces.)"""
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx

    with config.patch(freezing=True):
        return compile_fx(gm, list(example_inputs))


@dataclass
class Prepared:
    """A variant ready to call: the callable, its ops and pass time, and
    the first call's output and wall time (preparation included)."""

    call: Callable[[], Any]
    ops: tuple[int, int] | None
    """(compute ops, all calls), see `op_counts`."""
    pass_ms: float | None
    first_output: Any
    first_call_s: float
    remarks: list[str] = field(default_factory=list)
    """Our backend's variants: every remark of every graph it optimized."""
    unchanged: bool | None = None
    """Our backend's variants: every graph went to Inductor as Dynamo made
    it (nothing fused or rewritten: then Inductor's code is Inductor
    alone's, and a difference in time is noise)."""


def variant_freezing(variant: str) -> Any:
    """Inductor's freezing for a `-frozen` variant, else nothing. A scoped
    patch, never set for the process: a freezing left on makes Dynamo hand
    the later variants' graphs their parameters as attributes."""
    if variant not in FROZEN:
        return contextlib.nullcontext()
    from torch._inductor import config

    return config.patch(freezing=True)


def group_summaries(remarks: Sequence[str]) -> tuple[list[str], list[str]]:
    """(fused, declined): one line per batch-fusion group priced for the
    Inductor target -- `N op gain ~X us` from its remark (`batch-fusion:
    fused N op(...) into ... (target inductor: ... gain ~X us)` and
    `batch-fusion: N op(...) not fused: unprofitable: target inductor: ...`)."""
    fused, declined = [], []
    for message in remarks:
        if INDUCTOR_TARGET_MARK not in message or not message.startswith("batch-fusion: "):
            continue
        body = message[len("batch-fusion: "):]
        gain = message.rsplit("gain ~", 1)[-1].split(" us", 1)[0] if "gain ~" in message else "?"
        if body.startswith("fused "):
            count, op = body[len("fused "):].split(" ", 2)[:2]
            fused.append(f"{count} {op.split('(')[0]} (gain ~{gain} us)")
        elif "not fused: unprofitable:" in body:
            count, op = body.split(" ", 2)[:2]
            declined.append(f"{count} {op.split('(')[0]} (gain ~{gain} us)")
    return fused, declined


def _since(start: float) -> float:
    """Seconds since `start`, after the GPU (if any) finished its work."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def prepare(variant: str, model: Any, inputs: tuple[Any, ...]) -> Prepared:
    """Turn `model` into `variant` and call it once, timed from the start."""
    import torch

    import optimus_ir
    from optimus_ir.api import capture

    start = time.perf_counter()
    if variant == "original":
        output = model(*inputs)
        return Prepared(lambda: model(*inputs), None, None, output, _since(start))
    if variant == "captured":
        gm = capture(model, inputs)
        output = gm(*inputs)
        return Prepared(lambda: gm(*inputs), op_counts(gm), None, output, _since(start))
    if variant in ("ours", "ours+triton"):
        pipeline = TRITON_PIPELINE if variant == "ours+triton" else None
        ours = optimus_ir.optimize(model, list(inputs), pipeline, freeze=True)
        output = ours(*inputs)
        seconds = _since(start)
        passes = ours.optimus_report.phase_seconds.get("passes", 0.0)  # type: ignore[attr-defined]
        return Prepared(lambda: ours(*inputs), op_counts(ours), passes * 1e3, output, seconds)
    if variant == "pytorch":
        from bench_batch_fusion import run_pytorch

        gm = capture(model, inputs)
        theirs, pass_seconds, _fired = run_pytorch(gm, inputs, pytorch_options())
        output = theirs(*inputs)
        seconds = _since(start)
        return Prepared(lambda: theirs(*inputs), op_counts(theirs), pass_seconds * 1e3, output, seconds)
    if variant in COMPILED:
        probe = PreGradProbe()
        made = None
        if variant in WITH_OUR_BACKEND:
            made = optimus_ir.backend(freeze=variant in FROZEN)
            function = torch.compile(model, backend=made)
        elif variant == "inductor+pytorch":
            function = torch.compile(model, backend=inductor_with_pytorch_optimus)
        elif variant == "inductor-frozen":
            function = torch.compile(model, backend=inductor_frozen)
        else:
            function = torch.compile(model)
        frames = _compiled_frames()
        with probe.active(), variant_freezing(variant):
            output = function(*inputs)
        seconds = _since(start)
        if _compiled_frames() == frames:
            raise RuntimeError("Dynamo compiled nothing: the call ran code another variant compiled")
        remarks: list[str] = []
        unchanged = None
        if made is not None:
            failed = [o for o in made.outcomes if not o.optimized]
            if failed:
                raise RuntimeError(f"the optimus backend passed a graph through: {failed[0].reason}")
            pass_ms = 1e3 * sum(
                o.report.phase_seconds.get("passes", 0.0) for o in made.outcomes if o.report is not None
            )
            remarks = [r.message for o in made.outcomes if o.report is not None for r in o.report.remarks]
            unchanged = all(o.unchanged for o in made.outcomes)
        else:
            pass_ms = probe.seconds * 1e3 if variant == "inductor+pytorch" else None
        # With a warm cache AOTAutograd serves the graph before the pre-grad
        # passes run (torch >= 2.13): then no ops are known.
        ops = probe.ops if probe.graphs else None
        return Prepared(lambda: function(*inputs), ops, pass_ms, output, seconds, remarks, unchanged)
    raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")


def compare(expected: Any, got: Any) -> tuple[float, str | None]:
    """(max abs difference, None or the first line of assert_close's message)."""
    import torch
    from torch.utils import _pytree as pytree

    want, have = pytree.tree_leaves(expected), pytree.tree_leaves(got)
    if len(want) != len(have):
        return math.inf, f"{len(have)} outputs, expected {len(want)}"
    diff, problem = 0.0, None
    for a, b in zip(want, have):
        if isinstance(a, torch.Tensor) and a.numel():
            diff = max(diff, float((a.double() - b.double()).abs().max()))
        try:
            torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL)
        except AssertionError as error:
            problem = problem or str(error).strip().splitlines()[0]
    return diff, problem


def _proc_status_kib(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def peak_memory_mib(call: Callable[[], Any], device: str) -> float | None:
    """Peak memory over `MEMORY_CALLS` calls: allocated on a GPU, the
    resident set on the CPU (Linux: the high-water mark reset first)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        for _ in range(MEMORY_CALLS):
            call()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() / 2**20
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # resets VmHWM to the current resident set
        for _ in range(MEMORY_CALLS):
            call()
        return _proc_status_kib("VmHWM") / 1024
    except OSError:
        return None


def call_memory(call: Callable[[], Any]) -> tuple[float, str]:
    """(peak live MiB of one call, method): `optimus_ir.memory.measure_call_memory`
    of `call` -- on the CPU by the profiler's allocation events, which see
    the buffers of compiled code too (the dispatch-mode tracker would miss
    Inductor's kernels), on a GPU by the CUDA allocator's counters."""
    from optimus_ir.memory import measure_call_memory

    memory = measure_call_memory(call)
    return memory.peak_mib, memory.method


def held_tensor_mib(before: dict[Any, int], *exclude: Any) -> float:
    """MiB of the storages of live tensors now that were not live at
    `before` (`memory.live_tensor_storages`), less those of `exclude`
    (outputs still referenced): what preparing a variant left held."""
    from optimus_ir.memory import live_tensor_storages, tensor_storages

    excluded = tensor_storages(exclude)
    now = live_tensor_storages()
    return sum(size for key, size in now.items() if key not in before and key not in excluded) / 2**20


def child_first_call(model_name: str, variant: str, batch: int, device: str, threads: int) -> dict[str, Any]:
    """In a fresh process: prepare and first-call one variant; its figures."""
    import torch

    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    from optimus_ir.memory import live_tensor_storages

    model, inputs = build_on(model_name, batch, device)
    cell = Cell()
    with torch.no_grad():
        before = live_tensor_storages()  # the model's parameters and buffers, the inputs
        if variant == "original":
            prepared = prepare(variant, model, inputs)
            expected = prepared.first_output
        else:
            expected = model(*inputs)
            prepared = prepare(variant, model, inputs)
        cell.first_call_s = prepared.first_call_s
        if prepared.ops is not None:
            cell.ops, cell.calls = prepared.ops
        cell.pass_ms = prepared.pass_ms
        cell.max_abs_diff, cell.mismatch = compare(expected, prepared.first_output)
        cell.matches = cell.mismatch is None
        if variant in WITH_OUR_BACKEND:
            cell.fused_groups, cell.declined_groups = group_summaries(prepared.remarks)
            cell.unchanged = prepared.unchanged
        cell.rss_peak_mib = peak_memory_mib(prepared.call, device)
        cell.peak_live_mib, cell.memory_method = call_memory(prepared.call)
        prepared.first_output = None
        cell.held_mib = held_tensor_mib(before, expected)
    return asdict(cell)


def child_steady(
    model_name: str, variants: Sequence[str], batch: int, device: str, threads: int,
    repeats: int, sample_ms: float, clock: str = "wall",
) -> dict[str, Any]:
    """In one process: every variant prepared, then timed interleaved (on the
    CPU with `timing.CLOCKS[clock]`)."""
    import torch

    from optimus_ir.examples.timing import CLOCKS, measure, measure_cuda, quantile

    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    model, inputs = build_on(model_name, batch, device)
    calls: dict[str, Callable[[], Any]] = {}
    errors: dict[str, str] = {}
    checks: dict[str, dict[str, Any]] = {}
    with torch.no_grad():
        expected = model(*inputs)
        for variant in variants:
            # A compiled variant gets its own copy: Dynamo's caches hang off the module.
            subject = copy.deepcopy(model) if variant in COMPILED else model
            try:
                prepared = prepare(variant, subject, inputs)
            except Exception as error:  # noqa: BLE001 - reported in the table
                errors[variant] = _one_line(error)
                continue
            calls[variant] = prepared.call
            # checked here too: with --steady-only no first-call process checks them
            diff, mismatch = compare(expected, prepared.first_output)
            checks[variant] = {"max_abs_diff": diff, "mismatch": mismatch, "matches": mismatch is None}
            if variant in WITH_OUR_BACKEND:
                fused, declined = group_summaries(prepared.remarks)
                checks[variant].update(fused_groups=fused, declined_groups=declined, unchanged=prepared.unchanged)
    frames_before = _compiled_frames()
    # Timed under no_grad, as prepared (Dynamo guards on grad mode: with it
    # on every compiled variant would recompile as a training graph).
    with torch.no_grad():
        if device.startswith("cuda"):
            samples, inner = measure_cuda(calls, repeats, sample_ms)
        else:
            samples, inner = measure(calls, repeats, sample_ms, clock=CLOCKS[clock])
    if _compiled_frames() != frames_before:
        raise RuntimeError("a compiled variant recompiled while it was timed")
    times = {
        name: {
            "median_ms": statistics.median(values),
            "q1_ms": quantile(values, 0.25),
            "q3_ms": quantile(values, 0.75),
        }
        for name, values in samples.items()
    }
    return {"times": times, "errors": errors, "inner": inner, "checks": checks}


def _compiled_frames() -> int:
    from torch._dynamo.utils import counters

    return sum(counters["frames"].values())


def _one_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0][:300]


# ---------------------------------------------------------------------------
# Scaling of our pipeline with the graph's size
# ---------------------------------------------------------------------------


def child_scaling(sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Import, pipeline and export time of wide generated graphs of about
    `sizes` FX nodes (the tower graphs of `bench_batch_fusion_pass.py`)."""
    import gc

    import torch

    from bench_batch_fusion_pass import Towers
    from optimus_ir.translate.exporter import export_graph
    from optimus_ir.translate.importer import import_graph
    from optimus_ir.passes.registry import DEFAULT_PIPELINE
    from optimus_ir.pipeline import run_pipeline

    warnings.filterwarnings("ignore")
    warm_up = torch.fx.symbolic_trace(Towers(8).eval())  # first-use costs (lazy imports, fake mode)
    run_pipeline(import_graph(warm_up, (torch.randn(4, 64),)).module, DEFAULT_PIPELINE, verify_each=False)
    rows = []
    for size in sizes:
        towers = max(1, (size - 4) // 4)  # 4 T + 4 nodes
        model = Towers(towers).eval()
        gm = torch.fx.symbolic_trace(model)
        x = torch.randn(4, towers * model.width)
        gc.collect()
        start = time.perf_counter()
        program = import_graph(gm, (x,))
        imported = time.perf_counter()
        statistics_ = run_pipeline(program.module, DEFAULT_PIPELINE, verify_each=False)
        passed = time.perf_counter()
        exported = export_graph(program)
        done = time.perf_counter()
        fused = sum(r.counters.get("groups fused", 0) for r in statistics_.by_pass("batch-fusion"))
        rows.append({
            "nodes": len(gm.graph.nodes),
            "ops_after": op_counts(exported)[0],
            "import_s": imported - start,
            "passes_s": passed - imported,
            "export_s": done - passed,
            "groups_fused": fused,
        })
        print(f"{PROGRESS}  scaling: {rows[-1]['nodes']} nodes, passes {rows[-1]['passes_s']:.2f} s",
              file=sys.stderr, flush=True)
    return rows


def measure_scaling(children: Children, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """The scaling rows, measured in a child process (empty if it failed)."""
    print(f"scaling: our pipeline on {', '.join(map(str, sizes))} nodes ...", file=sys.stderr, flush=True)
    try:
        return children.run(["--child", "scaling", "--scaling-nodes", ",".join(map(str, sizes))],
                            children.root / "scaling")
    except RuntimeError as error:
        print(f"scaling FAILED: {error}", file=sys.stderr)
        return []


def fitted_exponent(nodes: Sequence[float], seconds: Sequence[float]) -> float | None:
    """The least-squares slope of log(seconds) over log(nodes)."""
    points = [(math.log(n), math.log(s)) for n, s in zip(nodes, seconds) if n > 0 and s > 0]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    var = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else None


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


@dataclass
class Settings:
    """What one run measures."""

    models: list[str]
    variants: list[str]
    compiled_on: set[str] | None
    batch: int
    repeats: int
    sample_ms: float
    compile_max_ops: int
    scaling_nodes: list[int]
    device: str
    threads: int
    quick: bool
    jobs: int
    """Models measured at once (1 unless --quick: more disturb each other's times)."""
    clock: str = "wall"
    """The steady state's clock on the CPU (`timing.CLOCKS`): `wall`, or
    `cpu` (this thread's CPU time: steadier on a shared machine)."""
    vs_inductor: bool = False
    """`--vs-inductor`: the compiled variants only, reported as pairs."""
    steady_only: bool = False
    """`--steady-only`: no first-call processes (no compile time, ops or memory)."""


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


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def _fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def format_summary(results: Sequence[ModelResult], variants: Sequence[str]) -> str:
    """Speedup over the original model per model and variant, with ops."""
    shown = [v for v in variants if v != "original"]
    lines = [
        "| model | ops original | " + " | ".join(f"{v}" for v in shown) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in shown) + " |",
    ]
    for r in results:
        cells = []
        for v in shown:
            cell = r.cells.get(v, Cell())
            speed = r.speedup(v)
            if cell.skipped:
                cells.append("skipped")
            elif cell.error or speed is None:
                cells.append("failed")
            else:
                cells.append(f"{speed:.2f}x ({_fmt(cell.ops, 'd', '?')} ops)")
        lines.append(f"| {r.name} | {_fmt(r.cells.get('original', Cell()).ops, 'd', '?')} | {' | '.join(cells)} |")
    return "\n".join(lines)


def format_details(results: Sequence[ModelResult], variants: Sequence[str]) -> str:
    """Every figure of every (model, variant)."""
    lines = [
        "| model | variant | ops (all calls) | first call s | passes ms | steady ms (median ±IQR) | "
        "vs original | vs captured | peak live MiB | held MiB | RSS peak MiB | max abs diff |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        for v in variants:
            cell = r.cells.get(v)
            if cell is None:
                continue
            if cell.skipped or (cell.error and cell.median_ms is None and cell.first_call_s is None):
                why = f"skipped: {cell.skipped}" if cell.skipped else f"FAILED: {cell.error}"
                lines.append(f"| {r.name} | {v} | {why} | | | | | | | | | |")
                continue
            steady = "-"
            if cell.median_ms is not None:
                steady = f"{cell.median_ms:.4f} ±{_fmt(cell.spread_pct, '.0f')}%"
            elif cell.error:
                steady = f"FAILED: {cell.error}"
            diff = _fmt(cell.max_abs_diff, ".1e")
            if cell.matches is False:
                diff += " MISMATCH"
            lines.append(
                f"| {r.name} | {v} | {_fmt(cell.ops, 'd')} ({_fmt(cell.calls, 'd')}) | "
                f"{_fmt(cell.first_call_s, '.2f')} | "
                f"{_fmt(cell.pass_ms, '.1f')} | {steady} | {_fmt(r.speedup(v), '.2f')} | "
                f"{_fmt(r.speedup(v, 'captured'), '.2f')} | {_fmt(cell.peak_live_mib, '.2f')} | "
                f"{_fmt(cell.held_mib, '.2f')} | {_fmt(cell.rss_peak_mib, '.0f')} | {diff} |"
            )
    return "\n".join(lines)


def format_scaling(rows: Sequence[dict[str, Any]]) -> str:
    """The scaling table and the fitted exponent."""
    if not rows:
        return ""
    lines = [
        "| FX nodes | compute ops after | groups fused | import s | passes s | export s | passes us/node |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['nodes']} | {row['ops_after']} | {row['groups_fused']} | {row['import_s']:.2f} | "
            f"{row['passes_s']:.2f} | {row['export_s']:.2f} | {1e6 * row['passes_s'] / row['nodes']:.0f} |"
        )
    nodes = [row["nodes"] for row in rows]
    exponent = fitted_exponent(nodes, [row["passes_s"] for row in rows])
    total = fitted_exponent(nodes, [row["import_s"] + row["passes_s"] + row["export_s"] for row in rows])
    lines.append("")
    lines.append(
        f"growth exponent (time ~ nodes^k, least squares on log-log, {nodes[0]}..{nodes[-1]} nodes): "
        f"passes k = {_fmt(exponent, '.2f')}, import + passes + export k = {_fmt(total, '.2f')}"
    )
    return "\n".join(lines)


def machine_line(device: str, threads: int) -> str:
    import torch

    where = torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor() or platform.machine()
    return (
        f"{time.strftime('%Y-%m-%d')}, {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"device {device} ({where}), {threads} thread(s), Python {platform.python_version()}, "
        f"torch {torch.__version__}"
    )


def write_plot(results: Sequence[ModelResult], variants: Sequence[str], path: Path) -> bool:
    """Speedup over original and op count per model and variant, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written", file=sys.stderr)
        return False
    shown = [v for v in variants if v != "original"]
    names = [r.name for r in results]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(max(9, 1.2 * len(names) * len(shown) / 3), 9))
    width = 0.8 / max(len(shown), 1)
    for k, variant in enumerate(shown):
        xs = [i + (k - (len(shown) - 1) / 2) * width for i in range(len(names))]
        speed = [r.speedup(variant) or 0.0 for r in results]
        ops = [r.cells.get(variant, Cell()).ops or 0 for r in results]
        top.bar(xs, speed, width, label=variant)
        bottom.bar(xs, ops, width, label=variant)
    top.axhline(1.0, color="black", linewidth=0.8)
    top.set_ylabel("speedup over the original model (x)")
    bottom.set_ylabel("compute ops (log)")
    bottom.set_yscale("log")
    for axis in (top, bottom):
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    top.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    top.set_title("optimus-ir benchmark suite (0 = not run)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def vs_inductor_pairs(variants: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of `VS_INDUCTOR_PAIRS` whose both variants are in `variants`."""
    return [(alone, ours) for alone, ours in VS_INDUCTOR_PAIRS if alone in variants and ours in variants]


def vs_inductor_rows(results: Sequence[ModelResult], variants: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (model, pair): both steady-state medians and spreads, the
    ratio Inductor alone / after ours (computed from those medians: above 1
    is faster), the verdict against `VS_INDUCTOR_TARGET` (PASS, FAIL, or
    what kept it from being measured), both first-call times, and the
    groups our cost model fused and declined for the Inductor target."""
    rows = []
    for r in results:
        for alone, ours in vs_inductor_pairs(variants):
            base, mine = r.cells.get(alone, Cell()), r.cells.get(ours, Cell())
            ratio = r.speedup(ours, alone)
            problem = next((f"{v} {c.skipped or c.error}" for v, c in ((alone, base), (ours, mine))
                            if c.skipped or c.error), None)
            if problem is not None:
                verdict_ = f"not measured: {problem}"
            elif mine.matches is False:
                verdict_ = f"MISMATCH: {mine.mismatch}"
            elif ratio is None:
                verdict_ = "not measured"
            else:
                verdict_ = "PASS" if ratio >= VS_INDUCTOR_TARGET else "FAIL"
                if verdict_ == "FAIL" and mine.unchanged:
                    # Inductor compiled Dynamo's own graphs both times
                    verdict_ += " (same code as Inductor alone: noise)"
            rows.append({
                "model": r.name,
                "inductor": alone,
                "ours": ours,
                "inductor_ms": base.median_ms,
                "inductor_spread_pct": base.spread_pct,
                "ours_ms": mine.median_ms,
                "ours_spread_pct": mine.spread_pct,
                "ratio": ratio,
                "target": VS_INDUCTOR_TARGET,
                "verdict": verdict_,
                "inductor_first_call_s": base.first_call_s,
                "ours_first_call_s": mine.first_call_s,
                "max_abs_diff": mine.max_abs_diff,
                "fused_groups": mine.fused_groups,
                "declined_groups": mine.declined_groups,
                "unchanged": mine.unchanged,
            })
    return rows


def _groups(groups: Sequence[str] | None) -> str:
    if groups is None:
        return "?"
    return "; ".join(groups) if groups else "none"


def format_vs_inductor(rows: Sequence[dict[str, Any]], steady_only: bool) -> str:
    """`--vs-inductor`'s table: one line per model and pair."""
    compile_head = "" if steady_only else " first call s: alone / ours |"
    lines = [
        "| model | Inductor alone ms (±IQR) | Inductor after ours ms (±IQR) | ratio | "
        f">= {VS_INDUCTOR_TARGET:g}x |{compile_head} groups fused (target inductor) | "
        "groups declined (target inductor) |",
        "| --- | ---: | ---: | ---: | --- |" + ("" if steady_only else " ---: |") + " --- | --- |",
    ]
    for row in rows:
        name = row["model"] + ("" if row["inductor"] == "inductor" else " (frozen)")
        alone = f"{_fmt(row['inductor_ms'], '.4f')} ±{_fmt(row['inductor_spread_pct'], '.0f')}%"
        ours = f"{_fmt(row['ours_ms'], '.4f')} ±{_fmt(row['ours_spread_pct'], '.0f')}%"
        first = "" if steady_only else (
            f" {_fmt(row['inductor_first_call_s'], '.1f')} / {_fmt(row['ours_first_call_s'], '.1f')} |"
        )
        fused = _groups(row["fused_groups"]) + (" (graphs handed over unchanged)" if row.get("unchanged") else "")
        lines.append(
            f"| {name} | {alone} | {ours} | {_fmt(row['ratio'], '.3f')}x | {row['verdict']} |{first} "
            f"{fused} | {_groups(row['declined_groups'])} |"
        )
    return "\n".join(lines)


def render_vs_inductor(
    results: Sequence[ModelResult], rows: Sequence[dict[str, Any]], settings: Settings,
    machine: str, elapsed: float, problems: Sequence[str],
) -> str:
    """`--vs-inductor`'s markdown report: the pairs' table, every figure, the verdict."""
    from suite_models import MODELS

    clock = "CUDA events" if settings.device.startswith("cuda") else f"{settings.clock} clock"
    failing = [row for row in rows if row["verdict"] != "PASS"]
    parts = [
        "# optimus-ir under Inductor vs Inductor alone" + (" (--quick)" if settings.quick else ""),
        "",
        f"Machine: {machine}. Batch {settings.batch}, no_grad, eval mode; steady state "
        f"{settings.repeats} interleaved repeats ({clock}, ~{settings.sample_ms:g} ms samples), medians; "
        "ratio = Inductor alone / Inductor after ours (above 1: ours is faster); "
        f"target >= {VS_INDUCTOR_TARGET:g}x on every model; run took {elapsed:.0f} s.",
        "",
        "Models: " + "; ".join(f"{name}: {MODELS[name].description}" for name in settings.models) + ".",
        "",
        "## Inductor alone vs Inductor after ours (steady state)",
        "",
        format_vs_inductor(rows, settings.steady_only),
        "",
        "## Every figure",
        "",
        format_details(results, settings.variants),
        "",
        "## Verdict",
        "",
    ]
    parts += [f"- FAIL: {p}" for p in problems] or [
        f"- every model at >= {VS_INDUCTOR_TARGET:g}x of Inductor alone; ours ran and matched everywhere"
    ]
    if failing:
        parts.append(f"- {len(failing)} of {len(rows)} pairs below the target or not measured")
    return "\n".join(parts)


def verdict(results: Sequence[ModelResult]) -> list[str]:
    """The problems that fail the run: ours failing or differing."""
    problems = []
    for r in results:
        for variant in OURS:
            cell = r.cells.get(variant)
            if cell is None or cell.skipped:
                continue
            if cell.error:
                problems.append(f"{r.name} {variant} failed: {cell.error}")
            elif cell.matches is False:
                problems.append(f"{r.name} {variant} differs from the original: {cell.mismatch}")
    return problems


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


def render(
    results: Sequence[ModelResult], scaling: Sequence[dict[str, Any]], settings: Settings,
    machine: str, elapsed: float, problems: Sequence[str],
) -> str:
    """The whole markdown report."""
    from suite_models import MODELS

    clock = "CUDA events" if settings.device.startswith("cuda") else f"{settings.clock} clock"
    parts = [
        "# optimus-ir benchmark suite" + (" (--quick: small sizes, few repeats)" if settings.quick else ""),
        "",
        f"Machine: {machine}. Batch {settings.batch}, no_grad, eval mode; steady state "
        f"{settings.repeats} interleaved repeats ({clock}, ~{settings.sample_ms:g} ms samples); "
        f"first call in a fresh process with empty compiler caches; run took {elapsed:.0f} s.",
        "",
        "Models: " + "; ".join(f"{name}: {MODELS[name].description}" for name in settings.models) + ".",
        "",
        "## Speedup over the original model (steady state; ops of the graph that runs)",
        "",
        format_summary(results, settings.variants),
        "",
        "## Every figure",
        "",
        format_details(results, settings.variants),
    ]
    if scaling:
        parts += ["", "## Scaling: our default pipeline against graph size", "", format_scaling(scaling)]
    parts += ["", "## Verdict", ""]
    parts += [f"- FAIL: {p}" for p in problems] or ["- ours ran and matched the original on every model"]
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
