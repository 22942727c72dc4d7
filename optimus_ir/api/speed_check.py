"""The two guarantees `optimize` checks on the module it made, against the
graph it captured: the speed check (never slower by a clear margin:
`speed_veto` on interleaved timing rounds, `_per_call_rounds`) and the
op-count guard (never more compute ops per call); either falls back to the
pipeline without batch fusion (`SPEED_CHECK_FALLBACK`), the op-count guard
at last to the captured graph. Also the memory measured with the speed check."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
import torch.fx

from optimus_ir.api.allocator import page_faults_per_call
from optimus_ir.api.fallback import _unoptimized
from optimus_ir.api.op_counts import count_compute_ops
from optimus_ir.api.optimizing import _optimize, _phase
from optimus_ir.api.report import SPEED_MARGIN, OptimizeReport, SpeedCheck, memory_check
from optimus_ir.foundation.diagnostics import Severity
from optimus_ir.translate.exporter import finish_code

SPEED_CHECK_FALLBACK = "unfused"
"""The named pipeline (`passes/registry.py` PIPELINES) `optimize` runs
instead when the speed check vetoes the fused module or the op-count guard
rejects it: the default pipeline without batch fusion."""

SPEED_ROUNDS = 7
"""Interleaved timing rounds of the speed check (each about 10 ms per module)."""

FAULT_CALLS = 3
"""Calls of each module over which the speed check counts page faults per
call, after its rounds (explained in the report, never a verdict)."""


def check_speed_of(
    result: torch.fx.GraphModule,
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any],
    options: Mapping[str, Any],
) -> torch.fx.GraphModule:
    """The speed check of `result` (made with batch fusion) against the
    captured graph `gm`, when batch fusion fused anything in a graph without
    side effects: `SPEED_ROUNDS` interleaved rounds on the example inputs
    (`_per_call_rounds`), the verdict `speed_veto`; vetoed, the module of the
    pipeline `SPEED_CHECK_FALLBACK` (`_optimize` with `options`) instead.
    The module to return, its report's `speed_check` set."""
    report: OptimizeReport = result.optimus_report  # type: ignore[attr-defined]
    if not (report.side_effect_free and report.groups_fused):
        return result
    finish_code(result)  # it runs now (a second generation, after the guard's check is added)
    start = time.perf_counter()
    kwargs = dict(example_kwargs or {})
    with _phase("speed check", {}):
        rounds = [(fused, captured) for fused, captured in _per_call_rounds([result, gm], example_inputs, kwargs)]
        with torch.no_grad():
            fused_faults = page_faults_per_call(lambda: result(*example_inputs, **kwargs), FAULT_CALLS)
            captured_faults = page_faults_per_call(lambda: gm(*example_inputs, **kwargs), FAULT_CALLS)
    report.phase_seconds["speed check"] = time.perf_counter() - start
    vetoed = speed_veto(rounds)
    check = SpeedCheck(
        _median(r[0] for r in rounds), _median(r[1] for r in rounds), fell_back=vetoed, rounds=tuple(rounds),
        fused_faults=fused_faults, captured_faults=captured_faults,
    )
    report.speed_check = check
    if not vetoed:
        return result
    rerun = _rerun_unfused(gm, example_inputs, result, check.describe(), options)
    rerun.optimus_report.speed_check = check  # type: ignore[attr-defined]
    return rerun


def measure_memory_with_speed(
    result: torch.fx.GraphModule,
    gm: torch.fx.GraphModule,
    model: Any,
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any],
    *,
    warm: bool,
) -> None:
    """When the speed check ran: the report's `memory` of `result` against
    `gm`, measured under its conditions (its code generated now if pending,
    as the check does; `warm`: it is the module the check ran). A
    measurement never fails `optimize`."""
    final: OptimizeReport = result.optimus_report  # type: ignore[attr-defined]
    if final.speed_check is None:
        return
    finish_code(result)
    with _phase("memory check", final.phase_seconds):
        try:
            final.memory = memory_check(result, gm, model, example_inputs, example_kwargs, warm=warm)
        except Exception:  # noqa: BLE001 - a measurement never fails optimize
            final.memory = None


def speed_veto(rounds: Sequence[tuple[float, float]], margin: float = SPEED_MARGIN) -> bool:
    """The speed check's verdict on (fused ms, captured ms) per round: fall
    back only on a large, consistent loss, the fused module slower by more
    than `margin` in *every* round (so its fastest round, too, loses to the
    captured graph's fastest by that margin). Load from other processes
    slows whichever module runs at the time: it can inflate a few rounds
    either way, but not make the fused module lose every round by a wide
    margin, so a loaded machine does not flip the decision."""
    return bool(rounds) and all(fused > captured * (1 + margin) for fused, captured in rounds)

def _per_call_rounds(
    modules: Sequence[Callable[..., Any]],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    rounds: int = SPEED_ROUNDS,
) -> list[list[float]]:
    """Milliseconds per call of each module on `args`, per round: in each
    of `rounds` rounds every module runs calls lasting about 10 ms, the order
    of the modules reversed every other round (so that neither always runs
    first), after a warm-up, under `no_grad`, the garbage collector off."""
    import gc

    with torch.no_grad():
        for module in modules:
            for _ in range(2):
                module(*args, **kwargs)
        slowest = 1e-6
        for module in modules:
            start = time.perf_counter()
            module(*args, **kwargs)
            slowest = max(slowest, time.perf_counter() - start)
        inner = max(1, min(200, int(0.01 / slowest)))
        result: list[list[float]] = []
        enabled = gc.isenabled()
        gc.disable()
        try:
            for index in range(rounds):
                times = [0.0] * len(modules)
                order = list(range(len(modules)))
                if index % 2:
                    order.reverse()
                for i in order:
                    start = time.perf_counter()
                    for _ in range(inner):
                        modules[i](*args, **kwargs)
                    times[i] = (time.perf_counter() - start) / inner * 1e3
                result.append(times)
        finally:
            if enabled:
                gc.enable()
    return result

def _median(values: Iterator[float] | Sequence[float]) -> float:
    """The median of `values` (`statistics` is a parameter name in this module)."""
    import statistics as stats_module

    return stats_module.median(list(values))

def _ops_total(counts: Counter[str]) -> int:
    """The compute ops of an ops-per-kind count (`count_compute_ops`)."""
    return count_compute_ops(counts)

def _per_call_total(report: OptimizeReport) -> int:
    """The ops the module of `report` runs per call (`ops_per_call`, else `ops_after`)."""
    return _ops_total(report.ops_after if report.ops_per_call is None else report.ops_per_call)

def _remark(message: str) -> Any:
    """A remark of `optimize` itself (not of a pass), for `OptimizeReport.remarks`."""
    from optimus_ir.foundation.diagnostics import Diagnostic

    return Diagnostic(Severity.REMARK, f"optimize: {message}")

def _rerun_unfused(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    rejected: torch.fx.GraphModule,
    why: str,
    options: Mapping[str, Any],
) -> torch.fx.GraphModule:
    """The captured graph `gm` through the pipeline `SPEED_CHECK_FALLBACK`
    (the default one without batch fusion), in place of `rejected`: its
    report describes the module returned (its remarks and statistics are
    the rerun's, `why` comes first); what `rejected` did goes to
    `discarded_remarks`, and its phases are kept (the time was spent)."""
    before: OptimizeReport = rejected.optimus_report  # type: ignore[assignment]
    plain = _optimize(gm, example_inputs, SPEED_CHECK_FALLBACK, **options)
    again: OptimizeReport = plain.optimus_report  # type: ignore[assignment]
    again.discarded_remarks = before.discarded_remarks + before.remarks
    again.remarks = [_remark(f"{why}; the pipeline '{SPEED_CHECK_FALLBACK}' ran instead")] + again.remarks
    again.speed_check = before.speed_check
    # the time of everything done: the rejected attempt, the check, the rerun
    again.phase_seconds = {
        **before.phase_seconds,
        **{f"{name} without batch fusion": s for name, s in again.phase_seconds.items() if s > 0},
    }
    return plain

def _guard_op_count(
    gm: torch.fx.GraphModule,
    model: Any,
    example_inputs: Sequence[Any],
    result: torch.fx.GraphModule,
    training: bool | None,
    options: Mapping[str, Any],
    *,
    unfused_run: bool,
) -> torch.fx.GraphModule:
    """The op-count guarantee of the default pipeline: no module `optimize` returns runs more
    compute ops per call (`count_compute_ops`: getitems and views, which the cost model prices
    as nearly free, apart; with
    `freeze`, the ops on parameters alone ran once: `ops_per_call`) than the
    graph it captured. A result with more is replaced by the pipeline
    `SPEED_CHECK_FALLBACK`'s (unless that is what `result` already is), and
    when that has more too, by the captured graph itself; each time with a
    remark saying so and a report of the module returned."""
    report: OptimizeReport = result.optimus_report  # type: ignore[assignment]
    before = _ops_total(report.ops_before)
    after = _per_call_total(report)
    if after <= before:
        return result
    why = (
        f"op-count guard: the optimized graph has {after} compute ops, more than the "
        f"{before} captured"
    )
    if not unfused_run:
        plain = _rerun_unfused(gm, example_inputs, result, why, options)
        again: OptimizeReport = plain.optimus_report  # type: ignore[assignment]
        if _per_call_total(again) <= before:
            return plain
        report, after = again, _per_call_total(again)
        why += f", and the pipeline '{SPEED_CHECK_FALLBACK}' {after}"
    captured = _unoptimized(gm, model, training, f"{why}: the captured graph is returned")
    final: OptimizeReport = captured.optimus_report  # type: ignore[assignment]
    final.remarks = [_remark(final.fallback or why)]
    final.discarded_remarks = report.discarded_remarks + report.remarks
    final.speed_check = report.speed_check
    final.phase_seconds = dict(report.phase_seconds)
    return captured
