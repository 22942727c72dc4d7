"""What `optimize` did, for people and for tests: `OptimizeReport` (ops per
kind before and after, the passes run with their statistics, time per
phase, remarks, what freeze computed once) and its records: the measured
speed (`SpeedCheck`) and memory (`MemoryCheck`) against the captured graph."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import torch

from optimus_ir.api.capturing import capture
from optimus_ir.api.op_counts import OpCounts, count_compute_ops, count_view_ops, is_plumbing
from optimus_ir.memory import CallMemory, ResidentBytes, format_bytes, measure_call_memory, resident_tensor_bytes

SPEED_MARGIN = 0.15
"""How much slower than the captured graph the fused module must measure,
in every one of the `SPEED_ROUNDS` rounds, before `optimize` falls back.
Well above the timing noise of one round on a shared, loaded machine (a few
per cent, bursts of 10%): a loss that small is the cost model's business,
and a veto on noise made `make demo` return another graph from run to run."""

FRESH_PAGES_NOTE_FAULTS = 256
"""The page faults per call (1 MiB of 4 KiB pages) by which the fused module
must out-fault the captured graph before the speed line says so: about
0.1 ms on the 2-core CI machine, where fresh pages cost ~0.45 ms a MiB."""

@attrs.frozen
class SpeedCheck:
    """`optimize`'s final check: the module it made (with batch fusion)
    against the graph Dynamo captured, on the example inputs, in
    `SPEED_ROUNDS` interleaved rounds (milliseconds per call: the medians
    over the rounds, and each round's pair). `fell_back`: the fused module
    was slower by more than `SPEED_MARGIN` in every round (`speed_veto`),
    and the one returned was made without batch fusion."""

    fused_ms: float
    captured_ms: float
    fell_back: bool
    rounds: tuple[tuple[float, float], ...] = ()
    """(fused ms, captured ms) per call in each round, in order."""
    fused_faults: float | None = None
    """Page faults per call of the fused module, counted after the rounds
    (`optimus_ir.api.allocator.page_faults_per_call`): the fresh pages its
    allocations had mapped. None where not counted."""
    captured_faults: float | None = None
    """The same of the captured graph."""

    def fresh_pages_note(self) -> str | None:
        """When the fused module faulted at least `FRESH_PAGES_NOTE_FAULTS`
        more fresh pages per call than the captured graph: what that costs
        it and what keeps the pages (the C allocator gave back what the last
        call freed: `optimus_ir.api.allocator`); otherwise None."""
        if self.fused_faults is None or self.captured_faults is None:
            return None
        if self.fused_faults - self.captured_faults < FRESH_PAGES_NOTE_FAULTS:
            return None
        return (
            f"it faulted {self.fused_faults:.0f} fresh pages per call (the captured graph "
            f"{self.captured_faults:.0f}): the C allocator returned the memory the last call freed; "
            "optimus_ir.retain_freed_memory() keeps it (process-wide)"
        )

    @property
    def slower_rounds(self) -> int:
        """Rounds in which the fused module was slower by more than the margin."""
        return sum(fused > captured * (1 + SPEED_MARGIN) for fused, captured in self.rounds)

    def headline(self) -> str:
        """The first line of the report: how much faster (or slower) than the
        captured graph the module measured, per call (medians); after a fall
        back, that the module measured was not the one returned."""
        ratio = self.captured_ms / self.fused_ms if self.fused_ms > 0 else float("inf")
        times = f"{self.captured_ms:.3f} -> {self.fused_ms:.3f} ms per call"
        if self.fell_back:
            return (
                f"speed: the batch-fused module ran {1 / ratio:.2f}x the captured graph's time "
                f"({times}), so the module returned was made without batch fusion (not timed)"
            )
        note = self.fresh_pages_note()
        tail = f"; {note}" if note else ""
        if ratio >= 1:
            return f"speed: {ratio:.2f}x faster than the captured graph ({times}){tail}"
        return f"speed: {1 / ratio:.2f}x slower than the captured graph ({times}){tail}"

    def describe(self) -> str:
        verdict = "fell back to the pipeline without batch fusion" if self.fell_back else "kept"
        rounds = (
            f" (medians of {len(self.rounds)} interleaved rounds; fused more than "
            f"{SPEED_MARGIN:.0%} slower in {self.slower_rounds} of them)"
            if self.rounds
            else ""
        )
        faults = (
            f"; page faults per call: fused {self.fused_faults:.0f}, captured {self.captured_faults:.0f}"
            if self.fused_faults is not None and self.captured_faults is not None
            else ""
        )
        return (
            f"speed check: fused {self.fused_ms:.3f} ms vs captured {self.captured_ms:.3f} ms "
            f"per call{rounds}: {verdict}{faults}"
        )

@attrs.frozen
class MemoryCheck:
    """Tensor memory of the module `optimize` returned against the graph
    Dynamo captured (`optimus_ir.memory`): one call of each on the example
    inputs under `no_grad` (the peak of the tensor bytes live during it,
    above what was live before), and the tensor bytes each holds between
    calls, split into the model's parameters and buffers and the rest (the
    weight stacks `freeze=True` computed once, for instance)."""

    optimized: CallMemory
    """One call of the module returned."""
    captured: CallMemory
    """One call of the captured graph."""
    optimized_resident: ResidentBytes
    """What the module returned holds between calls."""
    captured_resident: ResidentBytes
    """What the captured graph holds between calls."""

    def describe(self) -> str:
        ours, theirs = self.optimized, self.captured
        ratio = f" ({ours.peak_bytes / theirs.peak_bytes:.2f}x)" if theirs.peak_bytes else ""
        return (
            f"memory per call ({ours.method}): peak live {format_bytes(ours.peak_bytes)} vs captured "
            f"{format_bytes(theirs.peak_bytes)}{ratio}, outputs {format_bytes(ours.held_bytes)}\n"
            f"memory held between calls: {self.optimized_resident.describe()}; captured "
            f"{self.captured_resident.describe()}"
        )

MEMORY_METHOD = "dispatch"
"""How `optimize` measures the memory of a call (`optimus_ir.memory`): the
dispatch-mode tracker sees every op of an eager graph and needs no
profiler start (tens of milliseconds)."""

def memory_check(
    module: Callable[..., Any],
    captured: Callable[..., Any],
    model: Any,
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any] | None = None,
    method: str = MEMORY_METHOD,
    *,
    warm: bool = False,
) -> MemoryCheck:
    """`MemoryCheck` of `module` against `captured`, under `no_grad`; unless
    `warm` (both ran already: the speed check's calls), each is called
    once first, unmeasured, so that first-call work is not counted. The
    parameters are `model`'s (when a module). Measuring changes no result:
    the calls' outputs are dropped."""
    kwargs = dict(example_kwargs or {})
    owner = model if isinstance(model, torch.nn.Module) else None
    with torch.no_grad():
        calls = []
        for subject in (module, captured):
            if not warm:
                subject(*example_inputs, **kwargs)
            calls.append(measure_call_memory(lambda s=subject: s(*example_inputs, **kwargs), method=method))
    return MemoryCheck(
        calls[0], calls[1], resident_tensor_bytes(module, owner), resident_tensor_bytes(captured, owner)
    )

@attrs.define
class OptimizeReport:
    """What `optimize` did, for people and for tests."""

    ops_before: Counter[str] = attrs.field(factory=Counter)
    ops_after: Counter[str] = attrs.field(factory=Counter)
    pipeline: str = ""
    phase_seconds: dict[str, float] = attrs.field(factory=dict)
    statistics: Any = None
    remarks: list[Any] = attrs.field(factory=list)
    """The passes' remarks (`optimus_ir.foundation.diagnostics.Diagnostic`), e.g. why each
    batch-fusion candidate group was or was not fused."""
    inplace_before: Any = None
    """In-place calls of the captured graph (`op_counts.InPlaceCount`; None
    where not counted): `relu(inplace=True)`, `+=`, `add_`."""
    inplace_after: Any = None
    """In-place calls of the result, `reinplace`'s grad-guarded forms
    (`grad_guarded`: in place when gradients are not recorded) included."""
    side_effect_free: bool = False
    """The graph has no op with side effects (so it may be run to time it)."""
    speed_check: SpeedCheck | None = None
    """The measured per-call time against the captured graph, when
    `optimize(check_speed=True)` measured it."""
    cached_parameter_values: int = 0
    """Values computed from parameters alone that `freeze=True` computed
    once, at optimize time (`optimus_ir.api.param_cache`); 0 without freeze."""
    cost_model: str = ""
    """The cost model batch fusion priced the groups with
    (`CostModel.describe`: its constants, and for a calibration its time
    and spread); "" without batch fusion."""
    shared_parameter_stacks: int = 0
    """Stacks of fused groups' parameters that the parameters live in
    (`parameter_stacks="shared"`: read without a copy per call,
    `optimus_ir.api.shared_stacks`); 0 otherwise."""
    frozen_bytes: int = 0
    """Bytes of storage those values take (the stacked weights), held by
    the module; 0 without freeze (the default keeps nothing computed from
    the parameters: stacks are made on every call)."""
    parameter_copy_bytes: int = 0
    """Bytes the module holds of the weights those values were computed
    from beyond one copy (the values and what it holds for their sources,
    less what the sources took): what it keeps of the weights twice. `optimize(freeze=True)`
    makes each stacked weight a view of its stack wherever the module reads
    it (`param_cache.hand_over_to_frozen_values`), so this counts only
    weights frozen in converted or computed form (or stacked twice); 0
    without freeze."""
    fallback: str | None = None
    """Why the module is the captured graph, unoptimized (a failure inside
    optimus-ir: the pass or phase and the error; or the op-count guard), or None."""
    ops_per_call: Counter[str] | None = None
    """Ops per kind the returned module runs on every call, when that is not
    `ops_after`: with `freeze`, the ops on parameters alone ran once, at
    optimize time, and their values are read like parameters
    (`count_per_call_ops`). None: `ops_after`."""
    computed_once_by: str = "computed once, at optimize time, by freeze"
    """Who computed the ops of `ops_after` that are not in `ops_per_call`
    (the ops on parameters alone): `optimize(freeze=True)`, or, for a
    graph of the backend handed to Inductor with freezing on, Inductor's
    constant folding."""
    parameter_ops_per_call: int = 0
    """Compute ops of `ops_per_call` on parameters and buffers alone
    (`count_parameter_only_ops`: the stacks of a fused linear's weights,
    made on every call without `freeze`)."""
    discarded_remarks: list[Any] = attrs.field(factory=list)
    """The remarks of a result `optimize` made and then discarded (the speed
    check vetoed it, or it had more ops than the captured graph): what that
    attempt fused is *not* in the module returned, so it is kept apart from
    `remarks`, which describe the returned module only."""
    memory: MemoryCheck | None = None
    """Tensor memory of one call and held between calls, against the
    captured graph: measured when the speed check ran (it is run under the
    same conditions), or by `measure_memory`; None otherwise."""

    def measure_memory(
        self,
        module: Callable[..., Any],
        model: Any,
        example_inputs: Sequence[Any],
        example_kwargs: Mapping[str, Any] | None = None,
        method: str = MEMORY_METHOD,
    ) -> MemoryCheck:
        """Measure `memory` now (when the speed check did not): `module` (what
        `optimize(model, example_inputs)` returned) against `model` captured
        again, one call each on the inputs (`memory_check`); sets and
        returns `memory`."""
        captured = capture(model, example_inputs, dict(example_kwargs or {}))
        self.memory = memory_check(module, captured, model, example_inputs, example_kwargs, method)
        return self.memory

    @property
    def declined_for_parameter_copies(self) -> tuple[int, int]:
        """Parts batch fusion declined that would pay with their parameter
        stacks free per call, and what they would save (ns per call)."""
        from optimus_ir.passes.batch_fusion.fusion_pass import DECLINED_FOR_COPIES, DECLINED_FOR_COPIES_GAIN_NS

        if self.statistics is None:
            return 0, 0
        records = self.statistics.by_pass("batch-fusion")
        return (
            sum(r.counters.get(DECLINED_FOR_COPIES, 0) for r in records),
            sum(r.counters.get(DECLINED_FOR_COPIES_GAIN_NS, 0) for r in records),
        )

    @property
    def groups_fused(self) -> int:
        """Groups batch fusion fused in the module returned (0 after a fall back)."""
        if self.statistics is None:
            return 0
        return sum(r.counters.get("groups fused", 0) for r in self.statistics.by_pass("batch-fusion"))

    @property
    def groups_chunked(self) -> int:
        """Groups batch fusion fused in several parts (`batch_fusion.GROUPS_CHUNKED`:
        chunks within the memory budget, or parts by source)."""
        from optimus_ir.passes.batch_fusion import GROUPS_CHUNKED

        if self.statistics is None:
            return 0
        return sum(r.counters.get(GROUPS_CHUNKED, 0) for r in self.statistics.by_pass("batch-fusion"))

    @property
    def per_call(self) -> Counter[str]:
        """Ops per kind the module runs on every call (`ops_per_call`, else `ops_after`)."""
        return self.ops_after if self.ops_per_call is None else self.ops_per_call

    @property
    def computed_once(self) -> Counter[str]:
        """Ops per kind of the optimized graph that do not run per call: on
        parameters alone, computed once (`computed_once_by`); empty without freezing."""
        return self.ops_after - self.per_call

    def op_counts(self) -> OpCounts:
        """The counts every line about this module's ops uses (`format`,
        the backend's `GraphOutcome.describe`)."""
        once = self.computed_once
        return OpCounts(
            compute_before=count_compute_ops(self.ops_before),
            compute_after=count_compute_ops(self.per_call),
            views_before=count_view_ops(self.ops_before),
            views_after=count_view_ops(self.per_call),
            compute_once=count_compute_ops(once),
            views_once=count_view_ops(once),
            once_by=self.computed_once_by,
            compute_grown=tuple(
                (kind, self.ops_before[kind], self.per_call[kind])
                for kind in sorted(self.per_call)
                if not is_plumbing(kind) and self.per_call[kind] > self.ops_before[kind]
            ),
            parameter_compute_per_call=self.parameter_ops_per_call,
            groups_chunked=self.groups_chunked,
        )

    def written_in_place_text(self) -> str:
        """The memory the export's in-place writes save per call, from the
        passes' counters: `reinplace`'s calls (their results are their
        operands' storage) and `write-into-join`'s pieces (computed in
        their join's result); "" where neither rewrote anything."""
        if self.statistics is None:
            return ""

        def counted(pass_name: str, counter: str) -> int:
            return sum(r.counters.get(counter, 0) for r in self.statistics.by_pass(pass_name))

        parts = []
        calls = counted("reinplace", "calls made in place")
        if calls:
            parts.append(
                f"{calls} call(s) write their dead operand in place "
                f"({_mib_text(counted('reinplace', 'bytes not allocated'))} not allocated)"
            )
        joins = counted("write-into-join", "joins written in place")
        if joins:
            parts.append(
                f"{counted('write-into-join', 'pieces written in their slots')} piece(s) of {joins} join(s) "
                f"computed in their slots ({_mib_text(counted('write-into-join', 'bytes not allocated'))} "
                "not allocated apart from the join)"
            )
        return ("written in place, without autograd, per call: " + "; ".join(parts)) if parts else ""

    def format(self) -> str:
        """The report for people: first the measured speed (when the speed
        check ran), the compute ops and the view/metadata ops before -> after
        (`PLUMBING_KINDS`, the classification of the op-count guard and the
        benchmarks: every call that is not a view, a getitem or metadata
        computes, copies such as cat and stack included), with the kinds that
        changed most. Every count is of the ops the module runs per call;
        the ops on parameters alone that ran once (freeze) are stated apart,
        and where the module runs more ops than the captured graph, a line
        says why (`OpCounts.why_more`). Then the pipeline, the ops per kind
        (before, per call, once), and the rest."""
        lines = []
        if self.speed_check is not None:
            lines.append(self.speed_check.headline())
        counts = self.op_counts()
        per_call, once = self.per_call, self.computed_once
        for name, keep in (("compute ops", lambda k: not is_plumbing(k)), ("view and metadata ops", is_plumbing)):
            before = Counter({k: n for k, n in self.ops_before.items() if keep(k)})
            after = Counter({k: n for k, n in per_call.items() if keep(k)})
            once_here = Counter({k: n for k, n in once.items() if keep(k)})
            line = f"{name} " + _count_change(before, after, suffix=" per call")
            if once_here:
                line += f"; {_once_text(sum(once_here.values()), self.computed_once_by)} (" + ", ".join(
                    f"{kind} {n}" for kind, n in sorted(once_here.items(), key=lambda item: (-item[1], item[0]))
                ) + ")"
            lines.append(line)
        why = counts.why_more()
        if why is not None:
            lines.append(why)
        lines.append(f"pipeline: {self.pipeline}")
        kinds = sorted(set(self.ops_before) | set(self.ops_after))
        width = max((len(k) for k in kinds), default=4)
        once_column = "  once" if once else ""
        lines.append(f"{'op kind':<{width}}  before  per call{once_column}")
        for kind in kinds:
            row = f"{kind:<{width}}  {self.ops_before[kind]:>6}  {per_call[kind]:>8}"
            lines.append(row + (f"  {once[kind]:>4}" if once else ""))
        total = f"{'total':<{width}}  {sum(self.ops_before.values()):>6}  {sum(per_call.values()):>8}"
        lines.append(total + (f"  {sum(once.values()):>4}" if once else ""))
        if self.inplace_before is not None and self.inplace_after is not None:
            if self.inplace_before.total or self.inplace_after.total:
                guarded = self.inplace_after.grad_guarded
                lines.append(
                    f"in-place ops: {self.inplace_before.total} -> {self.inplace_after.total}"
                    + (f" ({guarded} of them in place without autograd, out of place with it)" if guarded else "")
                )
        written = self.written_in_place_text()
        if written:
            lines.append(written)
        if self.remarks:
            lines.append(f"remarks: {len(self.remarks)} (OptimizeReport.remarks)")
        if self.cached_parameter_values:
            lines.append(
                f"frozen parameter values: {self.cached_parameter_values} "
                f"({self.frozen_bytes} bytes, {self.parameter_copy_bytes} of them copies of weights)"
            )
        if self.cost_model:
            lines.append(f"cost model: {self.cost_model}")
        declined, gain_ns = self.declined_for_parameter_copies
        if declined:
            lines.append(
                f"batch fusion: {declined} group(s) declined only for copying their parameters per call: "
                f"parameter_stacks='shared' (or freeze=True, for inference) would fuse them, "
                f"estimated gain ~{gain_ns / 1e3:.1f} us per call (see the remarks)"
            )
        if self.shared_parameter_stacks:
            lines.append(
                f"shared parameter stacks: {self.shared_parameter_stacks} "
                "(the fused groups' parameters live in them; read without a copy)"
            )
        if self.statistics is not None:
            chunked = f", {self.groups_chunked} of them in several parts" if self.groups_chunked else ""
            lines.append(f"batch fusion: {self.groups_fused} group(s) fused{chunked}")
        if self.fallback is not None:
            lines.append(f"not optimized: {self.fallback}")
        if self.speed_check is not None:
            lines.append(self.speed_check.describe())
        if self.memory is not None:
            lines.append(self.memory.describe())
        lines.append(
            "time: "
            + ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in self.phase_seconds.items())
        )
        return "\n".join(lines)

def _once_text(ops: int, by: str) -> str:
    """`9 more on parameters alone, computed once ...`: the ops not run per call."""
    return f"{ops} more on parameters alone, {by}"

def _count_change(before: Counter[str], after: Counter[str], shown: int = 5, suffix: str = "") -> str:
    """`total before -> total after` (and `suffix`) of two ops-per-kind
    counts, with the `shown` kinds whose count changed most in parentheses
    (`linear 16 -> 2`)."""
    changed = sorted(
        (kind for kind in set(before) | set(after) if before[kind] != after[kind]),
        key=lambda kind: (-abs(before[kind] - after[kind]), kind),
    )
    text = f"{sum(before.values())} -> {sum(after.values())}{suffix}"
    if changed:
        parts = [f"{kind} {before[kind]} -> {after[kind]}" for kind in changed[:shown]]
        if len(changed) > shown:
            parts.append(f"{len(changed) - shown} more kinds")
        text += " (" + ", ".join(parts) + ")"
    return text


def _mib_text(size: int) -> str:
    return f"{size / 2**20:.2f} MiB" if size >= 2**20 else f"{size / 2**10:.1f} KiB"
