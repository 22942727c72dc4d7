"""The cost model of horizontal (batch) fusion: does fusing a group pay here?

`batch-fusion` asks it once per candidate group. The pass counts what the
group costs as the exported module runs it, before fusion (N member ops) and
after (the batched op plus the pack/unpack/reshape ops its lowering emits),
the bytes the remaining copies write, and the arithmetic the two versions do;
`CostModel.estimate` turns the counts into seconds:

    model = calibrated_cost_model("cpu")
    estimate = model.estimate(ops_before=16, ops_after=3, bytes_copied=256 << 10)
    if estimate.profitable: ...
    remark(estimate.describe())  # "saves 13 ops (~41.6 us), copies 256 KiB (~21.0 us): gain ~20.6 us"

The constants are measured, not guessed: `calibrated_cost_model` runs a small
microbenchmark (well under a second) the first time it is asked on a machine
and caches the result as JSON in `$OPTIMUS_CACHE_DIR` or
`~/.cache/optimus-ir/`, one file per device, torch version, processor and torch
thread count. What it measures, each as the fastest of repeats after a warm-up
(load from other processes only adds time) and then the median over three
rounds of the whole set, on the current torch
thread count (which the cache key records):

* `op_overhead_s`: the cost of one tiny op (relu / add on 16 elements) called
  from the `forward` of a generated `torch.fx.GraphModule`, the form of the
  modules `optimize()` exports: a module of K chained ops minus an empty one,
  divided by K. Python, dispatcher, allocation and (on a GPU) the launch.
* `view_overhead_s`: the same for view ops (view / transpose).
* `copy_bytes_per_s`: bytes written per second by a copy kernel, net of its
  op overhead: `torch.stack` of 64 tensors of 4 KiB and `.contiguous()` of a
  transposed 1 MiB tensor; the slower of the two, so a copy is never
  underestimated.
* `flops_per_s`: fp32 `mm` (256^3) and `bmm` (32 x 128x64x64) rate, net of the
  op overhead; the slower of the two.

`OPTIMUS_COST_MODEL=default` makes `calibrated_cost_model` return
`default_cost_model` (documented constants, no measurement): tests use it for
determinism. `cost_model_from_options` builds a model from explicit numbers
(pass options in lit tests). A corrupt or stale cache file is measured again
and rewritten, never an error; an unwritable cache directory makes the
measurement happen in memory once per process, with one warning.

Run `python -m optimus_ir.analysis.cost_model [--recalibrate] [--device cpu]` to see the
constants and the cache file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import hashlib
import json
import math
import os
import platform
import re
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import attrs
import torch
import torch.fx
from attrs.validators import ge, in_

# The environment is read in `optimus_ir.options` (`environment()`):
# OPTIMUS_COST_MODEL=default makes `calibrated_cost_model` return
# `default_cost_model` (no measurement, no cache; unset or `calibrated`:
# measure once and cache); OPTIMUS_CACHE_DIR is the directory of the
# calibration cache (`~/.cache/optimus-ir` when unset).
from optimus_ir.foundation.environment import CACHE_DIR_ENV, COST_MODEL_ENV, environment

CACHE_SCHEMA = 7  # 5: the fastest of repeats (load-robust), 7 repeats; 6: the best round, more rounds while noisy, the spread kept; 7: fresh allocations
"""Version of the cache file's content; a file of another version is stale."""

SOURCES = ("calibrated", "cached", "default", "options")

_CONSTANTS = ("op_overhead_s", "view_overhead_s", "copy_bytes_per_s", "flops_per_s")


class _Gain:
    """What an estimate answers from its expected gain (`gain_s`, seconds
    saved per call, negative for a loss)."""

    __slots__ = ()

    @property
    def gain_s(self) -> float:
        """Expected time saved per call."""
        raise NotImplementedError

    @property
    def profitable(self) -> bool:
        """Whether fusing is expected to make the module faster."""
        return self.gain_s > 0


@attrs.frozen
class FusionEstimate(_Gain):
    """What fusing one group is expected to save and to cost, in seconds per
    call of the exported module, with the counts it was computed from (for
    `describe`)."""

    saved_s: float
    cost_s: float
    ops_saved: int = 0
    """Op calls removed (negative: added), views not included."""
    ops_s: float = 0.0
    views_saved: int = 0
    views_s: float = 0.0
    bytes_copied: int = attrs.field(default=0, validator=ge(0))
    copy_s: float = 0.0
    extra_flops: int = 0
    """Arithmetic added by the fused version (negative: removed)."""
    flops_s: float = 0.0

    @property
    def gain_s(self) -> float:
        """Expected time saved per call: `saved_s - cost_s`."""
        return self.saved_s - self.cost_s

    def describe(self) -> str:
        """One line for remarks, e.g.
        `saves 12 ops (~38.4 us), copies 256 KiB (~21.0 us): gain ~17.4 us`."""
        parts = [_count_clause(self.ops_saved, "op", self.ops_s)]
        if self.views_saved:
            parts.append(_count_clause(self.views_saved, "view", self.views_s))
        if self.bytes_copied:
            parts.append(f"copies {format_bytes(self.bytes_copied)} (~{_us(self.copy_s)})")
        else:
            parts.append("copies nothing")
        if self.extra_flops:
            verb = "adds" if self.extra_flops > 0 else "saves"
            parts.append(f"{verb} {format_flops(abs(self.extra_flops))} (~{_us(self.flops_s)})")
        return f"{', '.join(parts)}: gain ~{_us(self.gain_s)}"


FusionTarget = Literal["eager", "inductor"]
"""What runs the fused graph, and so how a group is priced
(`batch-fusion{target=...}`): `eager` (the exported module's ops are called
one by one: `optimize()`, the backend with `inner="eager"`) or `inductor`
(Inductor compiles the graph: `torch.compile(backend="optimus")`; see
`InductorCosts`)."""

TARGETS: tuple[str, ...] = ("eager", "inductor")


@dataclass(frozen=True)
class InductorCosts:
    """What Inductor changes in the price of a group, per device type.

    Under Inductor a pointwise op is fused vertically into the kernel of
    its producer or consumer (no call of its own: `fused_op_s` is the cost
    of one more loop body in a fused kernel, a tie-breaker); a layer norm
    (with its affine epilogue and the pointwise ops after it) is one
    generated kernel (`kernel_call_s` per call, plus its data); a linear,
    mm or bmm is an extern call, priced like the eager op (the measured
    curves); views are folded into the kernels' indexing (free); a stack of
    computed values is a real copy (an extern matmul cannot write into the
    stack); a stack of graph inputs (the weights: Dynamo lifts parameters to
    inputs) is a copy on every call, and below
    `optimus_ir.inductor_handoff.OPAQUE_STACK_MIN_INPUTS` inputs Inductor
    generates it as a pointwise concatenation that costs `input_cat_s` per
    input on top of the bytes.

    Documented defaults, not measured at compile time (the emitted graph
    must not depend on a noisy timing): CPU from the microbenchmarks of
    issue 23 on the reference machine (2-core Xeon, one torch thread,
    torch 2.13, Inductor's C++ kernels and Python wrapper): a standalone
    generated pointwise kernel 1.0 us per call, a layer norm kernel
    5.9 us per member against 11.4 us eagerly, a stack of 2..21 weight
    inputs ~1.1 us per input under Inductor against ~0.2 us eagerly, the
    extern stack of 22 inputs 8.1 us against torch.stack's 4.1 us.
    CUDA: not measured (assumed: a Triton launch from Inductor's Python
    wrapper ~5 us, concatenations one kernel whatever the inputs)."""

    kernel_call_s: float
    """One generated kernel called from Inductor's wrapper."""
    fused_op_s: float
    """One op fused into a neighbouring generated kernel."""
    input_cat_s: float
    """Per input of a stack of graph inputs Inductor generates itself."""
    extern_stack_s: float
    """What the extern stack of many graph inputs (`optimus.stack_inference`,
    a Python kernel) costs beyond `torch.stack`."""


INDUCTOR_EXTERN_STACK_MIN_INPUTS = 9
"""Stacks of at least this many graph inputs reach Inductor as one extern
`torch.stack` (`optimus_ir.inductor_handoff`); one more than Inductor's
`max_pointwise_cat_inputs` default (8), up to which Inductor generates one
pointwise concatenation kernel itself."""

INDUCTOR_COSTS: dict[str, InductorCosts] = {
    "cpu": InductorCosts(kernel_call_s=1.0e-6, fused_op_s=0.05e-6, input_cat_s=1.0e-6, extern_stack_s=4.0e-6),
    "cuda": InductorCosts(kernel_call_s=5.0e-6, fused_op_s=0.05e-6, input_cat_s=0.1e-6, extern_stack_s=4.0e-6),
}
"""`InductorCosts` per device type (see its docstring for the source)."""


@attrs.frozen
class GroupEstimate(_Gain):
    """What fusing one group is expected to cost, from the kernel curves
    (`CostModel.kernel_seconds`): the members' time against the fused op's,
    the copies and views it adds (seconds per call). `describe()` is the
    text of batch-fusion's remark; under the Inductor target it starts with
    `target inductor:`."""

    members_s: float
    fused_s: float
    copies_s: float = 0.0
    bytes_copied: int = attrs.field(default=0, validator=ge(0))
    views: int = attrs.field(default=0, validator=ge(0))
    views_s: float = 0.0
    target: str = attrs.field(default="eager", validator=in_(TARGETS))
    """The `FusionTarget` the group was priced for."""
    checked_members: int = attrs.field(default=0, validator=ge(0))
    """Members of shared parameter stacks checked one by one on every call
    (`parameter_stacks="shared"` under torch.compile), priced in `checks_s`."""
    checked_stacks: int = attrs.field(default=0, validator=ge(0))
    """Shared parameter stacks whose flag is tested on every call (an
    optimized module's), priced in `checks_s`."""
    checks_s: float = 0.0
    extra_live_bytes: int = 0
    """What the fused group holds at once, at its batch op, beyond what its
    members held at that point of the captured schedule: its stacked
    results, the stacked operand copies and the lowering's temporaries,
    less the members' results the captured schedule still held there
    (`batch_fusion.memory.part_memory`; the memory budget, `MemoryBudget`, is
    checked against the whole fused schedule's peak, not this sum)."""

    @property
    def after_s(self) -> float:
        """The fused version's time per call: the fused op, its copies,
        views and checks of shared stacks."""
        return self.fused_s + self.copies_s + self.views_s + self.checks_s

    @property
    def gain_s(self) -> float:
        """Expected time saved per call: `members_s - after_s`."""
        return self.members_s - self.after_s

    def describe(self) -> str:
        copies = (
            f", copies {self.bytes_copied / 1024:.0f} KiB (~{self.copies_s * 1e6:.1f} us)"
            if self.bytes_copied else ", copies nothing"
        )
        head = "" if self.target == "eager" else f"target {self.target}: "
        checked = [
            f"{count} shared {what}"
            for count, what in ((self.checked_members, "members"), (self.checked_stacks, "stacks"))
            if count
        ]
        checks = f", checks {' and '.join(checked)} (~{self.checks_s * 1e6:.1f} us)" if checked else ""
        return (
            f"{head}members ~{self.members_s * 1e6:.1f} us, fused ~{self.fused_s * 1e6:.1f} us"
            f"{copies}, {self.views} views (~{self.views_s * 1e6:.1f} us){checks}: gain ~{self.gain_s * 1e6:.1f} us"
        )


from optimus_ir.analysis.memory_budget import (  # noqa: E402,F401 - re-exported: the budget's home before
    DEFAULT_MEMORY_BUDGET,
    MemoryBudget,
    parse_memory_budget,
)


@dataclass(frozen=True)
class CostModel:
    """Per-device constants that price the ops, copies and arithmetic of a
    fused group against its members (see the module docstring for how each is
    measured)."""

    device: str
    """Device type: `cpu`, `cuda`."""
    op_overhead_s: float
    """Fixed cost of one torch op call from an exported FX module (Python +
    dispatcher + allocation + launch)."""
    view_overhead_s: float
    """The same for a view op (view, reshape as a view, permute, slice,
    unbind, movedim)."""
    copy_bytes_per_s: float
    """Bytes written per second by a copy kernel (stack/cat/contiguous) on
    tensors of a few hundred KB, net of the op's fixed cost."""
    flops_per_s: float
    """Sustained rate of mid-sized fp32 mm/bmm (for estimates of reordered or
    padded arithmetic)."""
    source: str
    """Where the constants come from: `calibrated` (measured now), `cached`
    (measured earlier on this machine), `default` or `options`."""
    kernels: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()
    """Measured whole-call times of the op kinds batch fusion trades against
    each other, per kind a curve of (size, seconds) points (size: elements,
    bytes for `stack`, FLOPs for `linear`/`bmm`); see `KERNEL_KINDS`. Empty
    for the default and options models, which then price every op at
    `op_overhead_s` plus its arithmetic or bytes."""

    calibrated_at: str = ""
    """When the constants were measured (ISO 8601, local time with its
    offset), for `calibrated` and `cached` models; "" for the others."""
    fresh_allocation_bytes: int = 0
    """The size from which an allocation gets fresh pages from the operating
    system on every call (glibc's allocator maps blocks of 32 MiB and more
    and unmaps them when freed, so every call page-faults them in again);
    0: no such size was seen (a caching allocator)."""
    fresh_page_s_per_byte: float = 0.0
    """What the fresh pages of such an allocation cost per byte (the page
    faults and the zeroing the operating system does); see
    `fresh_pages_seconds`."""
    spread: float = 1.0
    """How much the calibration's rounds disagreed: the largest ratio, over
    the measurements, of a measurement's median round to its best round
    (1.0: perfectly steady; `SPREAD_LIMIT` and above: measured on a busy
    machine, after `MAX_ROUNDS` rounds)."""

    def kernel_seconds(self, kind: str, size: float) -> float:
        """The time of one call of a `kind` op of `size`: interpolated
        log-log on the measured curve (proportional beyond its largest point,
        constant below its smallest); without a curve, the op overhead plus
        the bytes (4 per element) or FLOPs at the model's rates."""
        size = max(float(size), 1.0)
        curve = dict(self.kernels).get(kind)
        if not curve:
            if kind in ("linear", "bmm"):
                return self.op_overhead_s + size / self.flops_per_s
            per_element = 1.0 if kind == "stack" else 4.0
            return self.op_overhead_s + size * per_element / self.copy_bytes_per_s
        if size <= curve[0][0]:
            return curve[0][1]
        for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
            if size <= x1:
                t = (math.log(size) - math.log(x0)) / (math.log(x1) - math.log(x0))
                return math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))
        x_last, y_last = curve[-1]
        return y_last * size / x_last

    def fresh_pages_seconds(self, nbytes: float) -> float:
        """What one allocation of `nbytes` pays for fresh pages each time it
        is made: nothing below `fresh_allocation_bytes`. On the 2-core CI
        machine a training step of the 64-tower model at batch 512 with
        32 MiB fused results page-faulted 4,371 times per step, 37 ms
        against 28 ms with the same groups cut in halves of 16 MiB (no
        faults); batch fusion prices it, so such groups are cut in chunks."""
        if self.fresh_allocation_bytes <= 0 or nbytes < self.fresh_allocation_bytes:
            return 0.0
        return float(nbytes) * self.fresh_page_s_per_byte

    def data_seconds(self, kind: str, size: float) -> float:
        """The part of a `kind` op's time that grows with its `size`, linear
        in it (what the op costs where its call is fused into another
        kernel, under Inductor): the slope of the measured curve between its
        smallest and largest point (without a curve: the bytes or FLOPs at
        the model's rates). Linear, so N members cost what one op of N times
        their size does: the curves' cache effects are left to the eager
        pricing."""
        size = max(float(size), 1.0)
        curve = dict(self.kernels).get(kind)
        if not curve or len(curve) < 2:
            if kind in ("linear", "bmm"):
                return size / self.flops_per_s
            return size * (1.0 if kind == "stack" else 4.0) / self.copy_bytes_per_s
        (x0, y0), (x1, y1) = curve[0], curve[-1]
        return size * max(y1 - y0, 0.0) / (x1 - x0)

    @property
    def inductor(self) -> InductorCosts:
        """The Inductor-target costs of this model's device type."""
        return INDUCTOR_COSTS[self.device]

    def __post_init__(self) -> None:
        for kind, curve in self.kernels:
            if not curve or any(not (x > 0 and y > 0) for x, y in curve):
                raise ValueError(f"cost model kernel curve {kind!r} needs positive points, got {curve!r}")
        for name in _CONSTANTS:
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"cost model {name} must be a positive finite number, got {value!r}")
        if not (self.fresh_allocation_bytes >= 0 and math.isfinite(self.fresh_page_s_per_byte) and self.fresh_page_s_per_byte >= 0):
            raise ValueError(
                "cost model fresh_allocation_bytes and fresh_page_s_per_byte must be non-negative, got "
                f"{self.fresh_allocation_bytes!r} and {self.fresh_page_s_per_byte!r}"
            )
        if self.source not in SOURCES:
            raise ValueError(f"cost model source must be one of {SOURCES}, got {self.source!r}")

    def estimate(
        self,
        *,
        ops_before: int,
        ops_after: int,
        views_before: int = 0,
        views_after: int = 0,
        bytes_copied: int = 0,
        extra_flops: int = 0,
    ) -> FusionEstimate:
        """Price a fusion: `ops_*` count the non-view op calls of the group
        before and after fusion (members; batched op plus its pack/unpack
        ops), `views_*` the view ops, `bytes_copied` the bytes written by the
        copies the fused version adds (stacks of inputs that are not one
        strided view, reshapes that copy), `extra_flops` the arithmetic it
        does beyond the members' (negative when it does less).

        Whatever goes down is saved, whatever goes up is cost."""
        for name, count in (
            ("ops_before", ops_before),
            ("ops_after", ops_after),
            ("views_before", views_before),
            ("views_after", views_after),
            ("bytes_copied", bytes_copied),
        ):
            if count < 0:
                raise ValueError(f"estimate: {name} must not be negative, got {count}")
        ops_saved = ops_before - ops_after
        views_saved = views_before - views_after
        ops_s = abs(ops_saved) * self.op_overhead_s
        views_s = abs(views_saved) * self.view_overhead_s
        copy_s = bytes_copied / self.copy_bytes_per_s
        flops_s = abs(extra_flops) / self.flops_per_s
        saved = cost = 0.0
        for delta, seconds in ((ops_saved, ops_s), (views_saved, views_s), (-extra_flops, flops_s)):
            if delta > 0:
                saved += seconds
            else:
                cost += seconds
        cost += copy_s
        return FusionEstimate(
            saved_s=saved,
            cost_s=cost,
            ops_saved=ops_saved,
            ops_s=ops_s,
            views_saved=views_saved,
            views_s=views_s,
            bytes_copied=bytes_copied,
            copy_s=copy_s,
            extra_flops=extra_flops,
            flops_s=flops_s,
        )

    def describe(self) -> str:
        """The constants in readable units, one line; for a measured model,
        when it was measured and how steady the measurement was."""
        constants = (
            f"{self.device} ({self.source}): op {_us(self.op_overhead_s)}, view {_us(self.view_overhead_s)}, "
            f"copy {self.copy_bytes_per_s / 1e9:.2f} GB/s, mm {self.flops_per_s / 1e9:.1f} GFLOP/s"
        )
        if not self.calibrated_at:
            return constants
        steadiness = "" if self.spread < SPREAD_LIMIT else f" (noisy: above {SPREAD_LIMIT:.2f}x)"
        return f"{constants}; calibrated {self.calibrated_at}{_age(self.calibrated_at)}, spread {self.spread:.2f}x{steadiness}"


# --- formatting --------------------------------------------------------------------------


def _age(stamp: str) -> str:
    """" (5 h ago)" for an ISO 8601 time stamp; "" where it does not parse."""
    try:
        then = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return ""
    seconds = (datetime.datetime.now(then.tzinfo) - then).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f" ({seconds / size:.0f} {unit} ago)"
    return " (just now)"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def _count_clause(delta: int, noun: str, seconds: float) -> str:
    verb = "saves" if delta >= 0 else "adds"
    count = abs(delta)
    return f"{verb} {count} {noun}{'' if count == 1 else 's'} (~{_us(seconds)})"


def _scaled(value: float, base: float, units: Sequence[str]) -> str:
    unit = units[0]
    for unit in units[:-1]:
        if value < base:
            break
        value /= base
    else:
        unit = units[-1]
    return f"{int(value)} {unit}" if value == int(value) else f"{value:.1f} {unit}"


def format_bytes(count: int) -> str:
    """`256 KiB`, `1.5 MiB`, `100 B` (binary units, one decimal unless exact)."""
    return _scaled(float(count), 1024.0, ("B", "KiB", "MiB", "GiB", "TiB"))


def format_flops(count: int) -> str:
    """`1.5 MFLOP` (decimal units, one decimal unless exact)."""
    return _scaled(float(count), 1000.0, ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"))


# --- defaults and options ----------------------------------------------------------------

# CPU: the medians of 16 `python -m optimus_ir.analysis.cost_model --recalibrate
# --threads 1` runs on the project's reference machine (a 2-core Intel Xeon VM
# with AVX-512 shared with other work, torch 2.13 CPU build), rounded; single
# runs ranged over 1.4-6.3 us per op, 0.9-4.7 GB/s, 63-139 GFLOP/s. CUDA: not measured (no GPU
# was at hand); assumed typical of a recent data-centre GPU driven from eager
# PyTorch, launch-bound (a few microseconds per kernel, copies of a few
# hundred KB limited by kernel latency rather than bandwidth, fp32 matmuls
# without TF32). Only tests, hand-written IR, `OPTIMUS_COST_MODEL=default`
# and a CUDA request on a machine without a GPU use them.
_DEFAULTS: dict[str, dict[str, float]] = {
    "cpu": {
        "op_overhead_s": 2.7e-6,
        "view_overhead_s": 2.2e-6,
        "copy_bytes_per_s": 3.3e9,
        "flops_per_s": 1.0e11,
    },
    "cuda": {
        "op_overhead_s": 8.0e-6,
        "view_overhead_s": 3.0e-6,
        "copy_bytes_per_s": 1.0e11,
        "flops_per_s": 1.0e13,
    },
}


def device_type(device: str | torch.device) -> str:
    """`cpu`, `cuda` from any spelling torch accepts (`cuda:1`); other device
    types are a `ValueError` (no constants for them)."""
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"cost model: not a device: {device!r}") from error
    if kind not in _DEFAULTS:
        raise ValueError(f"cost model: no constants for device type {kind!r} (known: {', '.join(_DEFAULTS)})")
    return kind


_FRESH_DEFAULTS: dict[str, tuple[int, float]] = {
    "cpu": (32 * 2**20, 0.5e-9),
    "cuda": (0, 0.0),
}
"""(fresh_allocation_bytes, fresh_page_s_per_byte) of the default models:
on CPU glibc's largest mmap threshold (32 MiB: blocks that big are always
mapped afresh) and about 0.5 ns a byte (2 us a 4 KiB page fault, measured
on the 2-core CI machine, 2026-12-07); CUDA's caching allocator keeps its
blocks."""


def default_cost_model(device: str = "cpu") -> CostModel:
    """The documented constants of `device`, without measuring anything (tests,
    hand-written IR, `OPTIMUS_COST_MODEL=default`, a CUDA request without a GPU)."""
    kind = device_type(device)
    fresh_bytes, fresh_s = _FRESH_DEFAULTS[kind]
    return CostModel(
        device=kind, source="default", fresh_allocation_bytes=fresh_bytes, fresh_page_s_per_byte=fresh_s,
        **_DEFAULTS[kind],
    )


def cost_model_from_options(
    op_overhead_us: float,
    copy_gb_per_s: float,
    *,
    view_overhead_us: float | None = None,
    gflops_per_s: float | None = None,
    device: str = "cpu",
) -> CostModel:
    """A model from explicit numbers (pass options): microseconds per op and
    per view (default: the device default's view/op ratio times
    `op_overhead_us`), copy bandwidth in GB/s (10^9 bytes written per second)
    and matmul rate in GFLOP/s (default: the device default)."""
    kind = device_type(device)
    defaults = _DEFAULTS[kind]
    if view_overhead_us is None:
        view_overhead_us = op_overhead_us * defaults["view_overhead_s"] / defaults["op_overhead_s"]
    flops = defaults["flops_per_s"] if gflops_per_s is None else gflops_per_s * 1e9
    return CostModel(
        device=kind,
        op_overhead_s=op_overhead_us * 1e-6,
        view_overhead_s=view_overhead_us * 1e-6,
        copy_bytes_per_s=copy_gb_per_s * 1e9,
        flops_per_s=flops,
        source="options",
    )


# --- the microbenchmark ------------------------------------------------------------------

_CHAIN = 64
"""Ops per generated module; large enough that the module call's own cost is
small beside it, small enough that the whole calibration stays fast."""
_REPEATS = 7
"""Timed repeats of each measurement per round."""
_BUDGET_S = 0.04
"""A kernel measurement stops repeating after this long (three repeats at
least): with several threads on a loaded machine one 256^3 mm took 15 ms,
and the calibration must stay short."""
_ROUNDS = 3
"""The whole set of measurements runs this many times, one after the other,
and each constant is the median over the rounds: a burst of load from other
processes then spoils one round of every constant instead of all repeats of
one constant."""
_WARMUP = 3


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_seconds(fn: Callable[[], Any], device: torch.device, *, calls: int) -> float:
    """The fastest of `_REPEATS` repeats of the mean time of one of `calls`
    back-to-back calls, after a warm-up (the first calls pay for allocator and code-cache
    misses that an inference loop does not). The fastest, not the median:
    load from other processes only ever adds time, so the minimum is the
    estimate a loaded machine disturbs least (a median under load moved the
    constants by 4x and flipped batch fusion's decisions)."""
    start = time.perf_counter()
    fn()
    _sync(device)
    if (time.perf_counter() - start) * calls > _BUDGET_S / 3:
        calls = 1  # a slow kernel: one call per repeat is long enough to time
    for _ in range(_WARMUP - 1):
        fn()
    _sync(device)
    samples: list[float] = []
    deadline = time.perf_counter() + _BUDGET_S
    for _ in range(_REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        _sync(device)
        end = time.perf_counter()
        samples.append((end - start) / calls)
        if len(samples) >= 3 and end > deadline:
            break
    return min(samples)


NodeBuilder = Callable[[torch.fx.Graph, torch.fx.Node, torch.fx.Node], torch.fx.Node]


def _chain_module(ops: Sequence[NodeBuilder], count: int) -> torch.fx.GraphModule:
    """A GraphModule whose forward applies `count` ops, cycling through `ops`
    (each builds one node from the previous value and the input)."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    value = x
    for i in range(count):
        value = ops[i % len(ops)](graph, value, x)
    graph.output(value)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


_TINY_OPS: tuple[NodeBuilder, ...] = (
    lambda g, v, x: g.call_function(torch.relu, (v,)),
    lambda g, v, x: g.call_function(torch.add, (v, x)),
)
# A cycle that ends where it started (16 elements, contiguous), so the chain
# can repeat it: view, two transposes (a permutation and its inverse), view.
_VIEW_OPS: tuple[NodeBuilder, ...] = (
    lambda g, v, x: g.call_method("view", (v, 4, 4)),
    lambda g, v, x: g.call_function(torch.transpose, (v, 0, 1)),
    lambda g, v, x: g.call_function(torch.transpose, (v, 0, 1)),
    lambda g, v, x: g.call_method("view", (v, 16)),
)


def _per_op_seconds(ops: Sequence[NodeBuilder], x: torch.Tensor, device: torch.device) -> float:
    """Seconds per op of a generated module: the median over repeats of
    (K chained ops - empty module) / K, the two timed back to back in each
    repeat so that load from other processes hits both alike."""
    chain = _chain_module(ops, _CHAIN)
    empty = _chain_module(ops, 0)
    calls = 20
    for _ in range(_WARMUP):
        chain(x)
        empty(x)
    _sync(device)
    diffs, fulls = [], []
    for _ in range(_REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            chain(x)
        _sync(device)
        middle = time.perf_counter()
        for _ in range(calls):
            empty(x)
        _sync(device)
        end = time.perf_counter()
        fulls.append((middle - start) / calls)
        diffs.append(((middle - start) - (end - middle)) / calls)
    # The fastest repeat of each (load only adds time): the difference of
    # the minima, which a loaded machine disturbs least.
    full = min(fulls)
    empties = [full_s - diff for full_s, diff in zip(fulls, diffs)]
    # Noise on a shared machine can make the difference tiny or negative; a
    # tenth of the full per-op time is a floor that keeps the constant sane.
    return max(full - min(empties), 0.1 * full) / _CHAIN


def _net(seconds: float, overhead: float) -> float:
    """Kernel time without the op's fixed cost (at least half the measurement)."""
    return max(seconds - overhead, 0.5 * seconds)


KERNEL_KINDS: dict[str, str] = {
    "linear": "F.linear of [R, 32] by [32, 32] (+bias); size = FLOPs",
    "bmm": "torch.baddbmm of 16 members [R/16, 32] by [32, 32]; size = FLOPs",
    "layer_norm": "F.layer_norm over the last 32 of [R, 32] with affine; size = rows normalized (R)",
    "pointwise": "torch.relu (the ops of cost class pointwise); size = elements",
    "binary": "torch.mul of [16, R/16, 32] by a broadcast [16, 1, 32] (cost class binary); size = elements",
    "transcendental": "torch.exp (cost class transcendental); size = elements",
    "stack": "torch.stack of 16 pieces; size = bytes written",
}
"""The op kinds whose call time `measure_kernels` records, and how."""

MEASURED_KIND_OF_COST_CLASS: dict[str, str] = {
    "free": "pointwise",
    "pointwise": "pointwise",
    "transcendental": "transcendental",
    "binary": "binary",
    "reduction": "pointwise",
    "linear": "linear",
    "layer_norm": "layer_norm",
    "softmax": "transcendental",
    "copy": "stack",
}
"""The measured kernel (`KERNEL_KINDS`) that prices an op of each cost class
its declaration names (`OpFacts.cost` in `dialects/torch/facts.py`): a
reduction reads its input once like a cheap pointwise op, a row-wise softmax
computes an exponential per element."""


def measured_kind(cost_class: str, tensor_operands: int = 1) -> str:
    """The measured kernel kind of an op of `cost_class` with that many
    tensor operands: a binary op with a scalar operand reads one tensor, and
    is priced as a cheap unary pointwise op."""
    kind = MEASURED_KIND_OF_COST_CLASS.get(cost_class, "pointwise")
    if kind == "binary" and tensor_operands < 2:
        return "pointwise"
    return kind

_KERNEL_ROWS = (64, 512, 4096, 32768, 131072)
"""Rows of width 32: from a few KB (cache-resident, overhead-bound) to 16 MB
(well beyond the caches: a fused op over hundreds of members streams from
memory while each member's op worked in cache)."""


def _fastest_seconds(
    fn: Callable[[], Any], device: torch.device, *, calls: int, repeats: int = _REPEATS, warmup: int = _WARMUP
) -> float:
    """The fastest of `repeats` repeats of the mean time of `calls` calls
    (after `warmup` calls): load from other processes only ever adds time, so
    the minimum is the kernel's own cost (the curves compare kernels with
    each other)."""
    for _ in range(warmup):
        fn()
    _sync(device)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        _sync(device)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def measure_kernels(device: str = "cpu") -> dict[str, list[tuple[float, float]]]:
    """Time one call of each of `KERNEL_KINDS` at five sizes (rows 64 to
    131072 of width 32), the fastest of repeats: the curves
    `CostModel.kernel_seconds` interpolates."""
    dev = torch.device(device)
    nn_f = torch.nn.functional
    curves: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KERNEL_KINDS}
    with torch.no_grad():
        w = torch.randn(32, 32, device=dev)
        b = torch.randn(32, device=dev)
        ws = torch.randn(16, 32, 32, device=dev)
        bs = torch.randn(16, 1, 32, device=dev)
        for rows in _KERNEL_ROWS:
            calls = max(1, 4096 // rows)
            x = torch.randn(rows, 32, device=dev)
            flops = 2.0 * rows * 32 * 32
            curves["linear"].append((flops, _fastest_seconds(lambda: nn_f.linear(x, w, b), dev, calls=calls)))
            xs = x.view(16, rows // 16, 32)
            curves["bmm"].append((flops, _fastest_seconds(lambda: torch.baddbmm(bs, xs, ws), dev, calls=calls)))
            elements = float(rows * 32)
            curves["layer_norm"].append(
                (float(rows), _fastest_seconds(lambda: nn_f.layer_norm(x, [32], b, b), dev, calls=calls))
            )
            curves["binary"].append((elements, _fastest_seconds(lambda: torch.mul(xs, bs), dev, calls=calls)))
            curves["pointwise"].append((elements, _fastest_seconds(lambda: torch.relu(x), dev, calls=calls)))
            curves["transcendental"].append((elements, _fastest_seconds(lambda: torch.exp(x), dev, calls=calls)))
            pieces = list(xs)
            curves["stack"].append((elements * 4, _fastest_seconds(lambda: torch.stack(pieces), dev, calls=calls)))
    for kind, curve in curves.items():  # monotone: noise must not make a bigger op cheaper
        for i in range(1, len(curve)):
            curve[i] = (curve[i][0], max(curve[i][1], curve[i - 1][1]))
    return curves


_FRESH_PROBE_MIB = (4, 8, 16, 32, 64)
"""Allocation sizes (MiB) probed for fresh pages, up to twice glibc's
largest mmap threshold."""

_FRESH_MIN_S_PER_BYTE = 0.05e-9
"""Below this extra cost a byte (a 4 KiB page in 0.2 us) an allocation is
not counted as fresh: the noise of two fills."""


_FRESH_REPEATS = 4
"""Timed calls per probe (after two untimed): each is tens of
milliseconds at the largest sizes."""


def _fresh_extra_per_byte(dev: torch.device) -> dict[int, float]:
    """One pass over `_FRESH_PROBE_MIB`, largest first (as in a warm process,
    the allocator's thresholds have seen the big blocks before the small
    ones): bytes -> the extra time a byte of a new allocation's fill over a
    kept tensor's."""
    extra: dict[int, float] = {}
    for mib in reversed(_FRESH_PROBE_MIB):
        count = mib * 2**20 // 4
        kept = torch.empty(count, device=dev)
        reused = _fastest_seconds(lambda: kept.fill_(1.0), dev, calls=1, repeats=_FRESH_REPEATS, warmup=2)
        del kept
        fresh = _fastest_seconds(
            lambda: torch.empty(count, device=dev).fill_(1.0), dev, calls=1, repeats=_FRESH_REPEATS, warmup=2
        )
        extra[count * 4] = max(fresh - reused, 0.0) / (count * 4)
    return extra


def measure_fresh_allocations(device: str = "cpu") -> tuple[int, float]:
    """(fresh_allocation_bytes, fresh_page_s_per_byte) of `device`: for each
    of `_FRESH_PROBE_MIB`, the fastest `torch.empty(n).fill_(1)` (a new
    allocation each time, freed before the next) against the fastest fill of
    one kept tensor, in two passes. A size is fresh where its extra time a
    byte reaches half the largest size's in both passes (glibc maps some
    sizes below its threshold afresh in one process and not in the next:
    16 MiB here); fresh pages begin at the smallest size from which every
    size is fresh, and cost the largest size's extra a byte. (0, 0.0) where
    the largest size pays nothing (a caching allocator: CUDA, or a CPU
    allocator that keeps its blocks)."""
    dev = torch.device(device)
    if dev.type != "cpu":
        return 0, 0.0
    with torch.no_grad():
        passes = [_fresh_extra_per_byte(dev), _fresh_extra_per_byte(dev)]
    sizes = sorted(passes[0])
    largest = min(p[sizes[-1]] for p in passes)
    if largest < _FRESH_MIN_S_PER_BYTE:
        return 0, 0.0
    threshold = sizes[-1]
    for nbytes in reversed(sizes):  # the smallest size from which every size pays
        if any(p[nbytes] < largest / 2 for p in passes):
            break
        threshold = nbytes
    return threshold, largest


def _measure_round(dev: torch.device) -> dict[str, float]:
    """One round of every measurement (see `measure`)."""
    # no_grad, as inference runs: no autograd bookkeeping in any op.
    with torch.no_grad():
        tiny = torch.randn(16, device=dev)
        op = _per_op_seconds(_TINY_OPS, tiny, dev)
        view = _per_op_seconds(_VIEW_OPS, tiny, dev)

        pieces = [torch.randn(1024, device=dev) for _ in range(64)]  # 64 x 4 KiB
        stack_s = _median_seconds(lambda: torch.stack(pieces), dev, calls=10)
        transposed = torch.randn(512, 512, device=dev).t()  # 1 MiB, column-major
        contiguous_s = _median_seconds(lambda: transposed.contiguous(), dev, calls=5)

        a, b = torch.randn(256, 256, device=dev), torch.randn(256, 256, device=dev)
        mm_s = _median_seconds(lambda: torch.mm(a, b), dev, calls=3)
        p, q = torch.randn(32, 128, 64, device=dev), torch.randn(32, 64, 64, device=dev)
        bmm_s = _median_seconds(lambda: torch.bmm(p, q), dev, calls=3)
    return {
        "op_overhead_s": op,
        "view_overhead_s": view,
        "stack_bytes_per_s": 64 * 1024 * 4 / _net(stack_s, op),
        "contiguous_bytes_per_s": 512 * 512 * 4 / _net(contiguous_s, op),
        "mm_flops_per_s": 2 * 256**3 / _net(mm_s, op),
        "bmm_flops_per_s": 2 * 32 * 128 * 64 * 64 / _net(bmm_s, op),
    }


SPREAD_LIMIT = 1.25
"""Calibration rounds that disagree by more than this (a measurement's
median round over its best) were disturbed by other work: more rounds run,
up to `MAX_ROUNDS`, and the spread is kept with the figures."""
MAX_ROUNDS = 9
"""The most rounds one calibration runs."""

_SECONDS = ("op_overhead_s", "view_overhead_s")
"""Round results that are times (best: the smallest); the others are rates
(best: the largest)."""


def _best_and_spread(rounds: Sequence[dict[str, float]]) -> tuple[dict[str, float], float]:
    """Each measurement's best round (load only ever adds time: the least
    disturbed one), and the largest median-over-best ratio."""
    best: dict[str, float] = {}
    spread = 1.0
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        times = values if name in _SECONDS else [1.0 / v for v in values]
        best_time = min(times)
        spread = max(spread, statistics.median(times) / best_time)
        best[name] = best_time if name in _SECONDS else 1.0 / best_time
    return best, spread


def measure(device: str = "cpu") -> dict[str, float]:
    """Run the calibration microbenchmark on `device` (a type torch can
    allocate on) with the current torch thread count and return the four
    constants plus what they were derived from (all in seconds, bytes/s,
    FLOP/s), how steady the rounds were (`spread`, `rounds`) and how long it
    took. Each measurement is its best round; `_ROUNDS` rounds run, and more
    (up to `MAX_ROUNDS`) while they disagree by `SPREAD_LIMIT` or more. A
    fraction of a second on a quiet CPU."""
    dev = torch.device(device)
    started = time.perf_counter()
    rounds = [_measure_round(dev) for _ in range(_ROUNDS)]
    result, spread = _best_and_spread(rounds)
    while spread >= SPREAD_LIMIT and len(rounds) < MAX_ROUNDS:
        rounds.append(_measure_round(dev))
        result, spread = _best_and_spread(rounds)
    result["copy_bytes_per_s"] = min(result["stack_bytes_per_s"], result["contiguous_bytes_per_s"])
    result["flops_per_s"] = min(result["mm_flops_per_s"], result["bmm_flops_per_s"])
    result["spread"] = spread
    result["rounds"] = float(len(rounds))
    result["seconds"] = time.perf_counter() - started
    return result


# --- the cache ---------------------------------------------------------------------------


@functools.cache
def _processor_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def calibration_key(device: str = "cpu") -> dict[str, Any]:
    """What the constants depend on: device type (and GPU name), torch
    version, processor, torch thread count, cache schema."""
    kind = device_type(device)
    key: dict[str, Any] = {
        "schema": CACHE_SCHEMA,
        "device": kind,
        "torch": torch.__version__,
        "cpu": _processor_name(),
        "threads": torch.get_num_threads(),
    }
    if kind == "cuda" and torch.cuda.is_available():
        key["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return key


def cache_directory(override: str | os.PathLike[str] | None = None) -> Path:
    """`override`, else `$OPTIMUS_CACHE_DIR`, else `~/.cache/optimus-ir`."""
    if override is not None:
        return Path(override)
    env = environment().cache_dir
    if env:
        return Path(env)
    return Path.home() / ".cache" / "optimus-ir"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", text).strip("_")


def cache_path(device: str = "cpu", cache_dir_override: str | os.PathLike[str] | None = None) -> Path:
    """The cache file of `device` on this machine: the readable parts of the
    key in the name, the processor (and GPU) name as a short hash."""
    return _cache_file(calibration_key(device), cache_dir_override)


def _cache_file(key: dict[str, Any], directory: str | os.PathLike[str] | None) -> Path:
    machine = hashlib.sha1(f"{key['cpu']}|{key.get('gpu', '')}".encode()).hexdigest()[:10]
    torch_version = _slug(key["torch"])
    name = f"cost-model-v{key['schema']}-{key['device']}-torch{torch_version}-{key['threads']}t-{machine}.json"
    return cache_directory(directory) / name


def _read_cache(path: Path, key: dict[str, Any], device: str) -> CostModel | None:
    """The cached model, or None when the file is missing, unreadable,
    corrupt, or measured under another key."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        constants = data["constants"]
        kernels = _kernels_tuple(data["kernels"])
        fresh_bytes, fresh_s = data["fresh_allocations"]
        return CostModel(
            device=device, source="cached", kernels=kernels,
            calibrated_at=str(data.get("created", "")),
            spread=float(data.get("measurements", {}).get("spread", 1.0)),
            fresh_allocation_bytes=int(fresh_bytes), fresh_page_s_per_byte=float(fresh_s),
            **{name: float(constants[name]) for name in _CONSTANTS},
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _kernels_tuple(kernels: Any) -> tuple[tuple[str, tuple[tuple[float, float], ...]], ...]:
    return tuple(
        (str(kind), tuple((float(x), float(y)) for x, y in points))
        for kind, points in sorted(dict(kernels).items())
    )


def _write_cache(path: Path, key: dict[str, Any], measured: dict[str, Any]) -> None:
    """Write atomically (a rename), so a concurrent reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "key": key,
        "constants": {name: measured[name] for name in _CONSTANTS},
        "kernels": measured.get("kernels", {}),
        "fresh_allocations": list(measured.get("fresh_allocations", (0, 0.0))),
        "measurements": {
            name: value
            for name, value in measured.items()
            if name not in (*_CONSTANTS, "kernels", "created", "fresh_allocations")
        },
        "created": measured.get("created") or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(payload, out, indent=2, sort_keys=True)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_WARNED_MODES: set[str] = set()
_IN_MEMORY: dict[Path, CostModel] = {}
"""Models measured where the cache could not be written: measured once per
process and path, warned about once."""


def calibrated_cost_model(
    device: str = "cpu",
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    recalibrate: bool = False,
) -> CostModel:
    """The measured constants of `device` on this machine: read from the cache
    (`source="cached"`), or measured now and cached (`source="calibrated"`;
    always when `recalibrate`). `OPTIMUS_COST_MODEL=default`, or a CUDA
    device without a GPU, gives `default_cost_model(device)`. Never raises
    for a cache problem: a corrupt or stale file is measured again, an
    unwritable directory is warned about once and the measurement kept in
    memory."""
    kind = device_type(device)
    mode = environment().cost_model
    if mode == "default":
        return default_cost_model(kind)
    if mode not in ("", "calibrated") and mode not in _WARNED_MODES:
        _WARNED_MODES.add(mode)
        warnings.warn(f"{COST_MODEL_ENV}={mode!r} is not 'default' or 'calibrated'; calibrating", stacklevel=2)
    if kind == "cuda" and not torch.cuda.is_available():
        return default_cost_model(kind)
    key = calibration_key(device)
    path = _cache_file(key, cache_dir)
    if not recalibrate:
        if path in _IN_MEMORY:
            return _IN_MEMORY[path]
        cached = _read_cache(path, key, kind)
        if cached is not None:
            return cached
    measured: dict[str, Any] = dict(measure(device))
    measured["kernels"] = measure_kernels(device)
    fresh_bytes, fresh_s = measured["fresh_allocations"] = measure_fresh_allocations(device)
    measured["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    model = CostModel(
        device=kind, source="calibrated", kernels=_kernels_tuple(measured["kernels"]),
        calibrated_at=measured["created"], spread=float(measured.get("spread", 1.0)),
        fresh_allocation_bytes=fresh_bytes, fresh_page_s_per_byte=fresh_s,
        **{name: measured[name] for name in _CONSTANTS},
    )
    try:
        _write_cache(path, key, measured)
        _IN_MEMORY.pop(path, None)
    except OSError as error:
        if path not in _IN_MEMORY:
            warnings.warn(
                f"cost model: cannot write the calibration cache {path} ({error}); "
                "using constants measured in memory for this process",
                RuntimeWarning,
                stacklevel=2,
            )
        _IN_MEMORY[path] = model
    return model


# --- CLI ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m optimus_ir.analysis.cost_model [--recalibrate] [--device cpu]
    [--threads N] [--cache-dir DIR]`: print the constants and the cache file."""
    parser = argparse.ArgumentParser(prog="python -m optimus_ir.analysis.cost_model", description=main.__doc__)
    parser.add_argument("--device", default="cpu", help="device to calibrate (cpu, cuda, cuda:1)")
    parser.add_argument("--recalibrate", action="store_true", help="measure again and rewrite the cache")
    parser.add_argument(
        "--cache-dir", default=None, help=f"cache directory (default: ${CACHE_DIR_ENV} or ~/.cache/optimus-ir)"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch thread count to calibrate for (default: the current one)"
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    model = calibrated_cost_model(args.device, cache_dir=args.cache_dir, recalibrate=args.recalibrate)
    elapsed = time.perf_counter() - started
    key = calibration_key(args.device)
    print(f"device            {model.device}")
    print(f"source            {model.source}")
    print(f"op_overhead_s     {model.op_overhead_s:.3e}  ({_us(model.op_overhead_s)})")
    print(f"view_overhead_s   {model.view_overhead_s:.3e}  ({_us(model.view_overhead_s)})")
    print(f"copy_bytes_per_s  {model.copy_bytes_per_s:.3e}  ({model.copy_bytes_per_s / 1e9:.2f} GB/s)")
    print(f"flops_per_s       {model.flops_per_s:.3e}  ({model.flops_per_s / 1e9:.1f} GFLOP/s)")
    if model.fresh_allocation_bytes:
        print(
            f"fresh pages       from {format_bytes(model.fresh_allocation_bytes)} on, "
            f"{model.fresh_page_s_per_byte * 4096 * 1e6:.2f} us a 4 KiB page"
        )
    else:
        print("fresh pages       none seen (the allocator keeps its blocks)")
    if model.calibrated_at:
        print(f"calibrated        {model.calibrated_at}{_age(model.calibrated_at)}")
        print(f"spread            {model.spread:.3f}x (rounds' median over best; {SPREAD_LIMIT}x and above: noisy)")
    print(f"torch threads     {key['threads']}")
    print(f"processor         {key['cpu']}")
    if model.source in ("calibrated", "cached"):
        path = cache_path(args.device, args.cache_dir)
        print(f"cache file        {path}")
        if path.exists():
            measurements = json.loads(path.read_text(encoding="utf-8")).get("measurements", {})
            for name, value in sorted(measurements.items()):
                print(f"  {name:<22} {value:.3e}")
    else:
        print("cache file        (none: default constants)")
    print(f"took              {elapsed:.3f} s")
    return 0


# ---------------------------------------------------------------------------
# Lowering forms per target (issue 23): which torch ops `lower-batch` emits
# ---------------------------------------------------------------------------

from enum import Enum  # noqa: E402 -- this section's own import, kept with it


class LoweringForm(str, Enum):
    """How `lower-batch` lowers a batch op: `batched` (one op over the
    stacked members: baddbmm/bmm, one layer norm over the stack) or
    `per_member` (the member op once per member, on its slice of the stack,
    with its own parameters: no stack of them)."""

    BATCHED = "batched"
    PER_MEMBER = "per member"


INDUCTOR_PER_MEMBER_LAYER_NORM_MAX = 8
"""Under Inductor, a batched layer norm of at most this many members whose
affine parameters are stacks of graph inputs (Dynamo lifts parameters to
inputs; not frozen) is lowered per member. Measured with
`benchmarks/bench_inductor_forms.py` (Inductor, CPU, one thread, fp32, 64
rows x 64 per member; docs/architecture/lowering-and-kernels.md "Lowering forms per target"):
per member, `F.layer_norm` ran at 0.89-0.93x of the batched form's time
at N = 4 and 8 (no stack of the weights on every call: Inductor generates
a stack of few inputs as a slow concatenation, `InductorCosts.input_cat_s`)
for about the same compile time (+0.1..1.5 s); from N = 16 on the
steady-state gain was noise-sized (0.88-0.98x over two runs) while the
compile time grew with N (N = 16: 6.3 s against 2.7 s, N = 64: 27-30 s
against 6 s), so wider groups stay batched. Under freezing the stacks are
constants and the batched form was faster at every N (1.09-1.42x)."""


@dataclass(frozen=True)
class LoweringChoice:
    """The form `lower-batch` gives one batch op for its target, and why
    (`remark()` is the text of the remark the lowering emits for it)."""

    form: LoweringForm
    target: FusionTarget
    op: str
    """What is lowered, in words: `layer norm`, `linear`."""
    members: int
    how: str
    """The ops the form is, in words: `baddbmm`, `F.layer_norm each`."""
    reason: str

    def remark(self) -> str:
        """`target inductor: layer norm of 4 members lowered per member (...): why`."""
        return (
            f"target {self.target}: {self.op} of {self.members} members lowered "
            f"{self.form.value} ({self.how}): {self.reason}"
        )


def layer_norm_lowering(target: FusionTarget, members: int, parameter_inputs: bool) -> LoweringChoice:
    """The form of a `batch.layer_norm` of `members` members for `target`:
    per member under Inductor when its affine parameters are stacks of
    graph inputs (`parameter_inputs`) and the group is small
    (`INDUCTOR_PER_MEMBER_LAYER_NORM_MAX`), else batched."""
    batched = "layer norm over the stack, stacked affine"
    if target != "inductor":
        return LoweringChoice(LoweringForm.BATCHED, target, "layer norm", members, batched, "one call for the group")
    if not parameter_inputs:
        return LoweringChoice(
            LoweringForm.BATCHED, target, "layer norm", members, batched,
            "its affine parameters are constants or absent (no per-call stack): one generated kernel",
        )
    if members <= INDUCTOR_PER_MEMBER_LAYER_NORM_MAX:
        return LoweringChoice(
            LoweringForm.PER_MEMBER, target, "layer norm", members, "F.layer_norm each",
            f"at most {INDUCTOR_PER_MEMBER_LAYER_NORM_MAX} members with parameters that are graph inputs: "
            "Inductor runs them in ~0.9x the time of a stack of the parameters on every call and one kernel",
        )
    return LoweringChoice(
        LoweringForm.BATCHED, target, "layer norm", members, batched,
        f"more than {INDUCTOR_PER_MEMBER_LAYER_NORM_MAX} members: one kernel compiles in a fraction of "
        "the time of one per member (64 members: ~6 s against ~27 s) and runs within ~10% of them",
    )


def linear_lowering(target: FusionTarget, members: int, how: str) -> LoweringChoice:
    """The form of a batched linear of `members` members for `target`
    (`how`: the ops of its batched form): batched for every target. Under
    Inductor the members' addmm (mm) calls measured 1.05-1.23x (1.05-1.08x)
    of one extern baddbmm (bmm) at N = 4..64
    (`benchmarks/bench_inductor_forms.py`), and `torch._grouped_mm` does not
    trace on fp32 CPU tensors (its meta function wants bf16)."""
    reason = (
        "one extern call for the group, faster than one addmm per member (1.05-1.23x)"
        if target == "inductor" else "one call for the group"
    )
    return LoweringChoice(LoweringForm.BATCHED, target, "linear", members, how, reason)


if __name__ == "__main__":
    raise SystemExit(main())
