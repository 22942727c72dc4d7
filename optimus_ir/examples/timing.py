"""Interleaved per-call timing shared by the benchmark scripts.

`measure` runs every callable `inner` times back to back per sample, round
robin over the callables with the order rotated each repeat (so that load
from other processes hits all alike), after a warm-up, with the garbage
collector off; `inner` makes one sample of the slowest callable last about
`sample_ms`. Times are per call in milliseconds, of the given clock
(`time.thread_time_ns` for this thread's CPU time, `time.perf_counter_ns`
for elapsed time). `measure_cuda` and `median_us_each` interleave their
samples the same way: `round_robin`. What timing alone hides, the fresh
pages a call faults (the same graph runs several ms slower in one process
than in the next by the C allocator's state), is counted by
`optimus_ir.api.allocator.page_faults_per_call`.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from optimus_ir.translate.importer import gc_paused

CLOCKS: dict[str, Callable[[], int]] = {
    "cpu": time.thread_time_ns,
    "wall": time.perf_counter_ns,
}


def per_call_ms(call: Callable[[], Any], inner: int, clock: Callable[[], int]) -> float:
    """Milliseconds per call of `inner` back-to-back calls."""
    start = clock()
    for _ in range(inner):
        call()
    return (clock() - start) / inner / 1e6


def quantile(values: Sequence[float], q: float) -> float:
    """The `q` quantile of `values`, linearly interpolated."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def round_robin(
    names: Sequence[str], rounds: int, sample: Callable[[str], float], *, pause_gc: bool = True
) -> dict[str, list[float]]:
    """`rounds` samples ``sample(name)`` of every name, round robin with the
    order rotated each round (so that load from other processes hits all
    alike); with `pause_gc`, after a collection and with the garbage
    collector off, so that no sample pays for one."""
    order = list(names)
    samples: dict[str, list[float]] = {name: [] for name in order}
    if pause_gc:
        gc.collect()
    with gc_paused() if pause_gc else contextlib.nullcontext():
        for index in range(rounds):
            shift = index % len(order)
            for name in order[shift:] + order[:shift]:
                samples[name].append(sample(name))
    return samples


def measure(
    calls: dict[str, Callable[[], Any]],
    repeats: int,
    sample_ms: float,
    clock: Callable[[], int] = time.thread_time_ns,
    warmup: int = 3,
) -> tuple[dict[str, list[float]], int]:
    """Interleaved per-call times (ms) of every callable, and the inner count."""
    with torch.no_grad():
        for call in calls.values():  # first-call caches, the allocator
            for _ in range(warmup):
                call()
        slowest = max(per_call_ms(call, 2, clock) for call in calls.values())
        inner = max(1, round(sample_ms / max(slowest, 1e-6)))
        samples = round_robin(list(calls), repeats, lambda name: per_call_ms(calls[name], inner, clock))
    return samples, inner


def measure_cuda(
    calls: dict[str, Callable[[], Any]],
    repeats: int,
    sample_ms: float,
    warmup: int = 10,
) -> tuple[dict[str, list[float]], int]:
    """`measure` on a CUDA device: each sample is `inner` back-to-back calls
    between two CUDA events (the device's time, launches included), after a
    synchronize, round robin over the callables with the order rotated."""

    def sample(call: Callable[[], Any], inner: int) -> float:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / inner

    with torch.no_grad():
        for call in calls.values():
            for _ in range(warmup):
                call()
        slowest = max(sample(call, 2) for call in calls.values())
        inner = max(1, round(sample_ms / max(slowest, 1e-6)))
        samples = round_robin(list(calls), repeats, lambda name: sample(calls[name], inner), pause_gc=False)
    return samples, inner


def median_us_each(calls: dict[str, Callable[[], Any]], rounds: int, sample_ms: float) -> dict[str, float]:
    """Median per-call microseconds (this thread's CPU time) of each callable,
    interleaved as `measure` does, but with an inner count of its own for
    each callable (a sample of each lasts about `sample_ms`): for timing a
    check of a microsecond next to the call of milliseconds it guards."""
    import statistics

    inner: dict[str, int] = {}
    with torch.no_grad():
        for name, call in calls.items():
            call()
            start = time.thread_time_ns()
            count = 0
            while time.thread_time_ns() - start < sample_ms * 1e5 or count < 3:  # a tenth of a sample
                call()
                count += 1
            per_call = (time.thread_time_ns() - start) / count
            inner[name] = max(1, int(sample_ms * 1e6 / max(per_call, 1.0)))
        samples = round_robin(
            list(calls), rounds, lambda name: per_call_ms(calls[name], inner[name], time.thread_time_ns) * 1e3
        )
    return {name: statistics.median(values) for name, values in samples.items()}
