"""Issue 38 on a GPU: the suite's models and others' models, every way a user
runs them, in one prepared command (`make bench-gpu`).

Rows: a model at a dtype and batch size, in priority order (the issue's
targets first, so that a run cut short by the device's time limit still has
them): recsys-mixed-64 fp32 at batch 512, then the other suite models
(recsys uniform/mixed at 64 and 256 towers, mmoe, dlrm, wide-deep) and two
third-party models (torchfm's DeepFM and FFM, `benchmarks/zoo_models.py`;
a missing package is reported, not fatal), at fp32 and bf16, batch 512 and
4096.

Columns (steady state, interleaved, CUDA events: `timing.measure_cuda`;
each variant's output checked against the eager module's first):

==========================  =================================================
original                    the eager `nn.Module`
captured                    the graph Dynamo captured, eager
ours                        `optimus_ir.optimize(model, inputs)`, default
                            options (Triton kernels where the cost model
                            picks them), launched eagerly: what users run
ours+cudagraphs             `ours` captured once with `torch.cuda.graph`
                            and replayed (static inputs)
inductor                    `torch.compile(model)`
inductor-reduce-overhead    `torch.compile(model, mode="reduce-overhead")`
inductor+pytorch            `torch.compile` with PyTorch's Optimus passes
==========================  =================================================

`--profile`: one eager call of `ours` under `torch.profiler` (CPU and CUDA
activity) per row, summarised per `optimus::` op (the fused kernels'
launchers): calls, host time per call, and per call the device copies
(`cudaMemcpyAsync`, host-to-device), synchronisations
(`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize`),
allocations (`aten::empty*`, `cudaMalloc`, `cudaHostAlloc`) and kernel
launches (`cudaLaunchKernel`, `cuLaunchKernel`) inside it: issue 38's item 1,
what one eager launch costs before anything is changed.

A wall-clock budget (`--budget-s`, default 480 s: one device call is at
most 10 minutes) stops starting new rows; the rows not run are listed. The
JSON (`--json`, default `build/bench/gpu.json`) is rewritten after every
row, so a run killed at its limit still leaves what it measured.

Targets (printed as PASS/FAIL where measured): recsys-mixed-64 fp32 batch
512, `ours` >= 1.5x over `original` and faster than `inductor`;
`ours+cudagraphs` at least as fast as `inductor-reduce-overhead`; no suite
model's `ours` slower than its `captured`.

`--smoke`: the CPU, tiny sizes, two repeats, no Inductor or CUDA-graph
columns (a direct call stands in for a replay): the test suite runs it to
keep the script working. The numbers mean nothing there.

Usage::

    python benchmarks/bench_gpu.py                                   # on the device machine
    python benchmarks/bench_gpu.py --models recsys-mixed-64 --dtypes fp32 --batches 512 --profile
    python benchmarks/bench_gpu.py --smoke
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

SUITE_MODELS = (
    "recsys-mixed-64", "recsys-uniform-64", "recsys-mixed-256", "recsys-uniform-256", "mmoe", "dlrm", "wide-deep",
)
THIRD_PARTY = ("torchfm.DeepFM", "torchfm.FFM")
SMOKE_MODELS = ("recsys-mixed-8", "mmoe-small", "torchfm.DeepFM")
VARIANTS = (
    "original", "captured", "ours", "ours+cudagraphs", "inductor", "inductor-reduce-overhead", "inductor+pytorch",
)
SMOKE_VARIANTS = ("original", "captured", "ours", "ours+cudagraphs")
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}
TOLERANCE = {"fp32": (1e-4, 1e-4), "bf16": (5e-2, 5e-2)}
TARGET_ROW = ("recsys-mixed-64", "fp32", 512)

COPY_EVENTS = ("cudaMemcpyAsync", "cudaMemcpy")
SYNC_EVENTS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
ALLOC_EVENTS = ("aten::empty", "aten::empty_strided", "cudaMalloc", "cudaHostAlloc")
LAUNCH_EVENTS = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC")


@dataclass
class Row:
    """One model at one dtype and batch size: per-variant figures."""

    model: str
    dtype: str
    batch: int
    ms: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    groups_fused: int | None = None
    profile: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def rows_in_priority(models: Sequence[str], dtypes: Sequence[str], batches: Sequence[int]) -> list[tuple[str, str, int]]:
    """Every (model, dtype, batch), the issue's target row first, then fp32
    before bf16 and the smaller batch first, models in the order given."""
    rows = [(m, d, b) for d in dtypes for b in sorted(batches) for m in models]
    if TARGET_ROW in rows:
        rows.remove(TARGET_ROW)
        rows.insert(0, TARGET_ROW)
    return rows


def _cast(value: Any, dtype: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _to(value: Any, device: str) -> Any:
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, value)


def build(name: str, batch: int, dtype: str, device: str) -> tuple[Any, tuple[Any, ...]]:
    """The seeded model `name` (the suite's, or the zoo's third-party ones) in
    eval mode on `device` at `dtype`, and its inputs of `batch` rows."""
    import torch

    torch_dtype = getattr(torch, DTYPES[dtype])
    if name in THIRD_PARTY or "." in name:
        import zoo_models

        zoo = zoo_models.ZOO[name]
        missing = zoo.missing()
        if missing:
            raise RuntimeError(f"not installed: {missing}")
        model = zoo_models.build(name).eval()
        inputs = zoo_models.make_inputs(name, batch)
    else:
        from suite_models import build as build_suite

        model, inputs = build_suite(name, batch)
        model = model.eval()
    model = model.to(device=device, dtype=torch_dtype)
    return model, _to(_cast(tuple(inputs), torch_dtype), device)


def _static_replay(module: Any, inputs: tuple[Any, ...], device: str) -> tuple[Callable[[], Any], Any]:
    """`module` captured once in a CUDA graph on `inputs` (static) and
    replayed; on the CPU a direct call stands in."""
    import torch

    if not device.startswith("cuda"):
        return (lambda: module(*inputs)), module(*inputs)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):  # first-call work (guards, caches, autotuning) outside the capture
            module(*inputs)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = module(*inputs)
    graph.replay()
    torch.cuda.synchronize()
    return graph.replay, output


def prepare(variant: str, model: Any, inputs: tuple[Any, ...], device: str) -> tuple[Callable[[], Any], Any, Any]:
    """(the call to time, its first output, the optimized module or None)."""
    import torch

    import optimus_ir

    if variant in ("ours", "ours+cudagraphs"):
        ours = optimus_ir.optimize(model, list(inputs), check_speed=False)
        if variant == "ours":
            return (lambda: ours(*inputs)), ours(*inputs), ours
        call, output = _static_replay(ours, inputs, device)
        return call, output, ours
    if variant == "inductor-reduce-overhead":
        compiled = torch.compile(copy.deepcopy(model), mode="reduce-overhead")
        for _ in range(3):  # cudagraph trees record on a later call than the first
            output = compiled(*inputs)
        return (lambda: compiled(*inputs)), output, None
    from suite_variants import COMPILED
    from suite_variants import prepare as prepare_suite

    subject = copy.deepcopy(model) if variant in COMPILED else model
    prepared = prepare_suite(variant, subject, inputs)
    return prepared.call, prepared.first_output, None


def _matches(expected: Any, got: Any, dtype: str) -> str | None:
    import torch
    from torch.utils import _pytree as pytree

    rtol, atol = TOLERANCE[dtype]
    want, have = pytree.tree_leaves(expected), pytree.tree_leaves(got)
    if len(want) != len(have):
        return f"{len(have)} outputs, expected {len(want)}"
    for a, b in zip(want, have, strict=True):
        if isinstance(a, torch.Tensor):
            try:
                torch.testing.assert_close(b.float(), a.float(), rtol=rtol, atol=atol)
            except AssertionError as error:
                return str(error).strip().splitlines()[0]
    return None


def launch_profile(module: Any, inputs: tuple[Any, ...], device: str) -> list[dict[str, Any]]:
    """One eager call of `module` under the profiler, per `optimus::` op (on
    the CPU, where no fused kernel launches, per aten op that allocates):
    calls, host microseconds per call, and per call what runs inside it
    (device copies, synchronisations, allocations, kernel launches)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with torch.no_grad():
        module(*inputs)  # first-call work outside the profile
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        with profile(activities=activities) as prof:
            module(*inputs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
    tops = [e for e in prof.events() if e.name.startswith("optimus::")]
    if not tops:  # no fused kernel ran (the CPU, or the cost model chose torch ops)
        tops = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]
    summary: dict[str, dict[str, Any]] = {}
    for event in tops:
        entry = summary.setdefault(
            event.name, {"op": event.name, "calls": 0, "host_us": 0.0, "copies": 0, "syncs": 0, "allocations": 0, "launches": 0}
        )
        entry["calls"] += 1
        entry["host_us"] += event.cpu_time_total
        pending = list(event.cpu_children)
        while pending:
            child = pending.pop()
            pending.extend(child.cpu_children)
            name = child.name
            entry["copies"] += name in COPY_EVENTS
            entry["syncs"] += name in SYNC_EVENTS
            entry["allocations"] += name in ALLOC_EVENTS
            entry["launches"] += name in LAUNCH_EVENTS
    rows = []
    for entry in summary.values():
        calls = entry["calls"]
        rows.append({
            "op": entry["op"], "calls": calls, "host_us_per_call": entry["host_us"] / calls,
            **{k: entry[k] / calls for k in ("copies", "syncs", "allocations", "launches")},
        })
    rows.sort(key=lambda r: -r["host_us_per_call"] * r["calls"])
    return rows


def measure_row(
    model_name: str, dtype: str, batch: int, variants: Sequence[str], device: str,
    repeats: int, sample_ms: float, profile: bool,
) -> Row:
    """Every variant of one row prepared, checked, then timed interleaved."""
    import torch

    from optimus_ir.examples.timing import measure, measure_cuda

    row = Row(model_name, dtype, batch)
    start = time.perf_counter()
    try:
        model, inputs = build(model_name, batch, dtype, device)
    except Exception as error:  # noqa: BLE001 - reported in the table
        row.errors["build"] = f"{type(error).__name__}: {error}".splitlines()[0]
        return row
    calls: dict[str, Callable[[], Any]] = {}
    with torch.no_grad():
        expected = model(*inputs)
        for variant in variants:
            try:
                call, output, ours = prepare(variant, model, inputs, device)
            except Exception as error:  # noqa: BLE001 - reported in the table
                row.errors[variant] = f"{type(error).__name__}: {error}".splitlines()[0][:200]
                continue
            mismatch = _matches(expected, output, dtype)
            if mismatch is not None:
                row.errors[variant] = f"wrong values: {mismatch}"[:200]
                continue
            calls[variant] = call
            if ours is not None and row.groups_fused is None:
                row.groups_fused = int(ours.optimus_report.groups_fused)
                if profile:
                    row.profile = launch_profile(ours, inputs, device)
        if calls:
            if device.startswith("cuda"):
                samples, _ = measure_cuda(calls, repeats, sample_ms)
            else:
                samples, _ = measure(calls, repeats, sample_ms)
            row.ms = {name: statistics.median(values) for name, values in samples.items()}
    row.seconds = time.perf_counter() - start
    return row


def targets(rows: Sequence[Row]) -> list[str]:
    """The issue's targets as PASS/FAIL lines, where their rows were measured."""
    lines = []
    for row in rows:
        if (row.model, row.dtype, row.batch) == TARGET_ROW:
            ms = row.ms
            if "ours" in ms and "original" in ms:
                speedup = ms["original"] / ms["ours"]
                lines.append(f"{'PASS' if speedup >= 1.5 else 'FAIL'} ours eager {speedup:.2f}x over the eager module (>= 1.5x)")
            if "ours" in ms and "inductor" in ms:
                lines.append(
                    f"{'PASS' if ms['ours'] < ms['inductor'] else 'FAIL'} ours eager {ms['ours']:.3f} ms "
                    f"vs Inductor default {ms['inductor']:.3f} ms (faster)"
                )
            if "ours+cudagraphs" in ms and "inductor-reduce-overhead" in ms:
                a, b = ms["ours+cudagraphs"], ms["inductor-reduce-overhead"]
                lines.append(f"{'PASS' if a <= b else 'FAIL'} ours + CUDA graphs {a:.3f} ms vs Inductor reduce-overhead {b:.3f} ms")
    slower = [
        f"{r.model} {r.dtype} b{r.batch} ({r.ms['ours'] / r.ms['captured']:.2f}x the captured graph's time)"
        for r in rows
        if r.model in SUITE_MODELS and "ours" in r.ms and "captured" in r.ms and r.ms["ours"] > r.ms["captured"]
    ]
    measured = [r for r in rows if r.model in SUITE_MODELS and "ours" in r.ms and "captured" in r.ms]
    if measured:
        lines.append(
            f"{'FAIL' if slower else 'PASS'} no suite model slower than its captured graph"
            + (f": {', '.join(slower)}" if slower else f" ({len(measured)} rows)")
        )
    return lines


def format_rows(rows: Sequence[Row], variants: Sequence[str]) -> str:
    """The table: ms per call per variant, and the speed of ours over the eager module."""
    head = ["model", "dtype", "batch", "groups", *variants, "ours vs original"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row.model, row.dtype, str(row.batch), "" if row.groups_fused is None else str(row.groups_fused)]
        for variant in variants:
            cells.append(f"{row.ms[variant]:.3f}" if variant in row.ms else ("error" if variant in row.errors else ""))
        ratio = row.ms["original"] / row.ms["ours"] if "ours" in row.ms and "original" in row.ms else None
        cells.append("" if ratio is None else f"{ratio:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    for row in rows:
        for variant, error in row.errors.items():
            lines.append(f"  {row.model} {row.dtype} b{row.batch} {variant}: {error}")
    return "\n".join(lines)


def format_profile(row: Row) -> str:
    lines = [f"launch profile, {row.model} {row.dtype} b{row.batch} (per call of each op):"]
    for entry in row.profile[:12]:
        lines.append(
            f"  {entry['op']}: {entry['calls']} call(s), {entry['host_us_per_call']:.1f} us host, "
            f"{entry['copies']:.1f} copies, {entry['syncs']:.1f} syncs, {entry['allocations']:.1f} allocations, "
            f"{entry['launches']:.1f} launches"
        )
    return "\n".join(lines)


def _names(text: str, known: Sequence[str], what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; choose from {', '.join(known)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(SUITE_MODELS + THIRD_PARTY))
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--batches", default="512,4096")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sample-ms", type=float, default=20.0)
    parser.add_argument("--budget-s", type=float, default=480.0, help="start no row after this many seconds")
    parser.add_argument("--profile", action="store_true", help="a launch profile of ours per row")
    parser.add_argument("--smoke", action="store_true", help="CPU, tiny sizes: keeps the script working")
    parser.add_argument("--json", default=str(_ROOT / "build" / "bench" / "gpu.json"))
    args = parser.parse_args(argv)

    import torch

    warnings.filterwarnings("ignore")
    if args.smoke:
        device, models, dtypes, batches = "cpu", list(SMOKE_MODELS), ["fp32"], [8]
        variants = [v for v in _names(args.variants, VARIANTS, "variants") if v in SMOKE_VARIANTS]
        repeats, sample_ms = 2, 1.0
    else:
        if not torch.cuda.is_available():
            print("bench_gpu: no CUDA device here; run it on the device machine (or --smoke on the CPU)")
            return 0
        device = "cuda"
        from suite_models import MODELS

        models = _names(args.models, tuple(MODELS) + THIRD_PARTY, "models")
        dtypes = _names(args.dtypes, tuple(DTYPES), "dtypes")
        batches = [int(b) for b in args.batches.split(",") if b.strip()]
        variants = _names(args.variants, VARIANTS, "variants")
        repeats, sample_ms = args.repeats, args.sample_ms
        print(f"bench_gpu: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    torch.manual_seed(0)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    plan = rows_in_priority(models, dtypes, batches)
    rows: list[Row] = []
    start = time.perf_counter()
    for index, (model, dtype, batch) in enumerate(plan):
        if time.perf_counter() - start > args.budget_s:
            left = ", ".join(f"{m} {d} b{b}" for m, d, b in plan[index:])
            print(f"bench_gpu: budget of {args.budget_s:.0f} s spent; not run: {left}", flush=True)
            break
        print(f"bench_gpu: [{index + 1}/{len(plan)}] {model} {dtype} batch {batch} ...", flush=True)
        row = measure_row(model, dtype, batch, variants, device, repeats, sample_ms, args.profile)
        rows.append(row)
        print(format_rows([row], variants), flush=True)
        if row.profile:
            print(format_profile(row), flush=True)
        out.write_text(json.dumps([asdict(r) for r in rows], indent=1))
        if device.startswith("cuda"):
            torch._dynamo.reset()  # compiled variants of the last row are not needed again
            torch.cuda.empty_cache()
    print("\n" + format_rows(rows, variants))
    for line in targets(rows):
        print(line)
    print(f"bench_gpu: {len(rows)} row(s) in {time.perf_counter() - start:.0f} s; JSON in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
