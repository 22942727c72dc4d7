"""What the benchmark suite's child processes measure (`benchmarks/suite.py
--child ...`): one variant's first call, ops and memory in a fresh process
(`child_first_call`), every variant of a model timed interleaved in one
process (`child_steady`), our pipeline's time on generated graphs of growing
size (`child_scaling`), and the memory figures they take (peak resident
set, peak live tensor bytes of a call, tensor bytes held).
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from suite_results import Cell
from suite_variants import (
    COMPILED,
    WITH_OUR_BACKEND,
    _compiled_frames,
    build_on,
    compare,
    group_summaries,
    op_counts,
    prepare,
)

PROGRESS = "progress: "
"""A child's stderr line with this prefix is shown while it runs (the rest is
kept for the error message)."""
MEMORY_CALLS = 5


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


if __name__ == "__main__":
    # A module of the benchmark suite, not a benchmark: run as a script it
    # only answers --help (every script of benchmarks/ does).
    import argparse

    argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Run benchmarks/suite.py instead."
    ).parse_args()
