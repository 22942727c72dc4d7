"""The library API: capture, import, optimize, export.

`optimize(model, example_inputs)` is the whole compiler stage in one call:

1. capture: an nn.Module (or any callable) is captured the way torch.compile
   captures it -- Dynamo, one whole graph, static shapes -- so ordinary Python
   such as a loop over the pieces of a split is fine; a GraphModule is taken
   as it is;
2. import into the `fx` dialect;
3. run the pass pipeline (`DEFAULT_PIPELINE` unless one is given), ending with
   `lower-to-fx` (appended when the pipeline leaves operator ops behind);
4. export a GraphModule that is called like the model (positional and
   keyword inputs) and references the model's own parameters.

`optimize` never changes the model it was given. The returned module is
specialized for the example inputs and guarded (`optimus_ir.guards`): on
every call it checks the shapes, dtypes, devices and types of the tensor
arguments and the values and types of the others, and for other inputs runs
a version optimized for them (a bounded cache; a batch-generic graph runs
at any batch size as it is) or, past the bound, the original model. It is
also specialized for the strides of the example inputs where the layout
reasoning of the passes relied on them: called with tensors of other
strides, it runs the unoptimized captured graph instead (one `.stride()`
comparison per tensor input). Its outputs have the strides the captured
graph returns. A failure inside optimus-ir after the capture returns the
captured graph with an `OptimusFallbackWarning` (`strict=True` raises).
Production runs verify the IR once, after the last pass; `verify_each=True`
(or `OPTIMUS_VERIFY_EACH=1`, as in the tests) verifies after every pass.

The returned module carries an `optimus_report` (`OptimizeReport`): ops per
kind before and after, the passes run with their statistics, time per phase.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.graph import _PyTreeCodeGen
from xdsl.dialects.builtin import ModuleOp

from optimus_ir.cost_model import DEFAULT_MEMORY_BUDGET
from optimus_ir.diagnostics import OptimusFallbackWarning, Severity, collect_diagnostics
from optimus_ir.dialects import fx
from optimus_ir.exporter import CODE_PENDING_ATTRIBUTE, FALLBACK_ATTRIBUTE, copy_graph, export_graph, finish_code
from optimus_ir.importer import ImportedGraph, gc_paused, graph_of, import_graph
from optimus_ir.memory import CallMemory, ResidentBytes, format_bytes, measure_call_memory, resident_tensor_bytes
from optimus_ir.model_state import ABSENT as _ABSENT  # "not given" sentinel
from optimus_ir.model_state import AttributeAssignmentError, CaptureError, ModuleState
from optimus_ir.options import (  # noqa: F401 - CHECK_SPEED_ENV importable from here
    CHECK_SPEED_ENV,
    CostModelChoice,
    InnerCompiler,
    KernelChoice,
    OptimizeOptions,
    environment,
)
from optimus_ir.plugins import load_plugins


@dataclass(frozen=True)
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
        if ratio >= 1:
            return f"speed: {ratio:.2f}x faster than the captured graph ({times})"
        return f"speed: {1 / ratio:.2f}x slower than the captured graph ({times})"

    def describe(self) -> str:
        verdict = "fell back to the pipeline without batch fusion" if self.fell_back else "kept"
        rounds = (
            f" (medians of {len(self.rounds)} interleaved rounds; fused more than "
            f"{SPEED_MARGIN:.0%} slower in {self.slower_rounds} of them)"
            if self.rounds
            else ""
        )
        return (
            f"speed check: fused {self.fused_ms:.3f} ms vs captured {self.captured_ms:.3f} ms "
            f"per call{rounds}: {verdict}"
        )


@dataclass(frozen=True)
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


@dataclass
class OptimizeReport:
    """What `optimize` did, for people and for tests."""

    ops_before: Counter[str] = field(default_factory=Counter)
    ops_after: Counter[str] = field(default_factory=Counter)
    pipeline: str = ""
    phase_seconds: dict[str, float] = field(default_factory=dict)
    statistics: Any = None
    remarks: list[Any] = field(default_factory=list)
    """The passes' remarks (`optimus_ir.diagnostics.Diagnostic`), e.g. why each
    batch-fusion candidate group was or was not fused."""
    side_effect_free: bool = False
    """The graph has no op with side effects (so it may be run to time it)."""
    speed_check: SpeedCheck | None = None
    """The measured per-call time against the captured graph, when
    `optimize(check_speed=True)` measured it."""
    cached_parameter_values: int = 0
    """Values computed from parameters alone that `freeze=True` computed
    once, at optimize time (`optimus_ir.param_cache`); 0 without freeze."""
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
    discarded_remarks: list[Any] = field(default_factory=list)
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
        if self.remarks:
            lines.append(f"remarks: {len(self.remarks)} (OptimizeReport.remarks)")
        if self.cached_parameter_values:
            lines.append(
                f"frozen parameter values: {self.cached_parameter_values} "
                f"({self.frozen_bytes} bytes, {self.parameter_copy_bytes} of them copies of weights)"
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


@dataclass(frozen=True)
class OpCounts:
    """The op counts of one optimized graph, counted one way wherever they
    are printed (`OptimizeReport.format`, the backend's one line per
    graph): the compute ops (`count_compute_ops`) and the view and metadata
    ops (`PLUMBING_KINDS`) of the captured graph and of what the result
    runs per call; apart from them, the ops on parameters alone that do not
    run per call (computed once: `once_by`)."""

    compute_before: int
    compute_after: int
    """Per call."""
    views_before: int
    views_after: int
    """Per call."""
    compute_once: int = 0
    views_once: int = 0
    once_by: str = ""
    compute_grown: tuple[tuple[str, int, int], ...] = ()
    """(kind, before, after per call) of the compute kinds that grew."""
    parameter_compute_per_call: int = 0
    """Compute ops per call on parameters alone (stacks of weights)."""
    groups_chunked: int = 0
    """Groups fused in several parts (`OptimizeReport.groups_chunked`)."""

    def summary(self) -> str:
        """`compute ops 38 -> 9 per call (+9 on parameters alone, ...), view
        and metadata ops 3 -> 18 per call`: the backend's counts."""
        parts = []
        for name, before, after, once in (
            ("compute ops", self.compute_before, self.compute_after, self.compute_once),
            ("view and metadata ops", self.views_before, self.views_after, self.views_once),
        ):
            text = f"{name} {before} -> {after} per call"
            if once:
                text += f" (+{once} on parameters alone, {self.once_by})"
            parts.append(text)
        return ", ".join(parts)

    def why_more(self) -> str | None:
        """Why the result runs more ops than the captured graph (per call,
        in compute or view ops, or all counted), or None where it does not."""
        before = self.compute_before + self.views_before
        after = self.compute_after + self.views_after
        once = self.compute_once + self.views_once
        if self.compute_after <= self.compute_before and after <= before and after + once <= before:
            return None
        reasons = []
        if self.compute_after > self.compute_before:
            grown = ", ".join(f"{kind} {b} -> {a}" for kind, b, a in self.compute_grown)
            causes = []
            if self.parameter_compute_per_call:
                causes.append(
                    f"{self.parameter_compute_per_call} of them on parameters alone (stacks of weights), made on "
                    "every call from the current parameters (freeze=True computes them once)"
                )
            if self.groups_chunked:
                causes.append(
                    f"{self.groups_chunked} group(s) fused in several parts (chunks within the memory "
                    "budget, or parts by source), each part its own op and copies"
                )
            if not causes:
                causes.append("copies (stack, cat) of the fused groups' operands")
            reasons.append(
                f"{self.compute_after - self.compute_before} more compute ops per call ({grown}): " + "; ".join(causes)
            )
        if self.views_after > self.views_before:
            reasons.append(
                f"{self.views_after - self.views_before} more view and metadata ops per call, which compute "
                "nothing (views of the fused ops' stacked operands and results, getitems of their unbinds)"
            )
        if once and after + once > before:
            reasons.append(f"{once} ops on parameters alone, {self.once_by}, not per call")
        return "more ops than captured: " + "; ".join(reasons)


def count_fx_ops(gm: torch.fx.GraphModule) -> Counter[str]:
    """Operations per kind in a GraphModule (placeholders/attrs/output left out)."""
    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        counts[op_kind(node)] += 1
    return counts


def _is_frozen_values(node: Any) -> bool:
    """The frozen guard's `values` call (`param_cache.freeze_parameter_expressions`)."""
    from optimus_ir.param_cache import FROZEN_GUARD_ATTRIBUTE

    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_method"
        and node.target == "values"
        and bool(node.args)
        and isinstance(node.args[0], torch.fx.Node)
        and node.args[0].op == "get_attr"
        and node.args[0].target == FROZEN_GUARD_ATTRIBUTE
    )


def _is_frozen_plumbing(node: torch.fx.Node) -> bool:
    """The frozen values' lookup: the `values` call or a getitem of it."""
    return _is_frozen_values(node) or (
        node.op == "call_function" and bool(node.args) and _is_frozen_values(node.args[0])
    )


def count_per_call_ops(gm: torch.fx.GraphModule) -> Counter[str]:
    """`count_fx_ops` of the ops `gm` runs on every call: the values
    `freeze` computed once (`param_cache.freeze_parameter_expressions`) are
    read like parameters, so their plumbing (the frozen guard's `values`
    call and a getitem per value) is left out, as get_attr is."""
    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output") or _is_frozen_plumbing(node):
            continue
        counts[op_kind(node)] += 1
    return counts


def count_parameter_only_ops(gm: torch.fx.GraphModule, parameter_inputs: Collection[str] = ()) -> Counter[str]:
    """The ops of `count_per_call_ops` that read parameters and buffers
    alone: their inputs are attributes (`get_attr`), the placeholders named
    in `parameter_inputs` (the parameters Dynamo lifts to graph inputs),
    frozen values or such ops, transitively. What a freezing (ours, or
    Inductor's constant folding) computes once instead of per call."""
    constant: set[torch.fx.Node] = set()
    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op == "get_attr" or (node.op == "placeholder" and node.target in parameter_inputs):
            constant.add(node)
            continue
        if node.op not in ("call_function", "call_method"):
            continue
        inputs = node.all_input_nodes
        if not inputs or not all(i in constant for i in inputs):
            continue
        constant.add(node)
        if not _is_frozen_plumbing(node):
            counts[op_kind(node)] += 1
    return counts


def op_kind(node: torch.fx.Node) -> str:
    """A short readable name for what an FX node computes."""
    if node.op == "call_function":
        name = getattr(node.target, "__name__", str(node.target))
        overload = getattr(node.target, "_overloadname", None)
        if overload is not None:  # an ATen OpOverload: aten.split.Tensor -> split
            return str(node.target).split(".")[1] if "." in str(node.target) else name
        return name
    if node.op == "call_method":
        return f".{node.target}"
    return node.op


def _check_assignments(model: torch.nn.Module, captured: Any) -> None:
    """Raise CaptureError for an attribute assignment the captured graph does
    not perform. `self.buf += 1` on a tensor is fine: it writes the buffer in
    place (an op of the graph) and assigns the very same tensor back, which
    Dynamo replays with the graph's output for it (`Captured.output_markers`)."""
    from optimus_ir.dynamo_capture import written_attribute

    assigned: list[str] = []
    for name, old, new in captured.changes:
        node = captured.output_markers.get(id(new))
        if isinstance(old, torch.Tensor) and node is not None:
            target = written_attribute(node)
            if target is not None and _model_tensor(captured.graph_module, target) is old:
                continue
        assigned.append(name)
    if assigned:
        names = ", ".join(f"'{name}'" for name in sorted(set(assigned)))
        raise AttributeAssignmentError(
            f"{type(model).__name__}.forward assigns {names}; the captured graph "
            "cannot do that, so the optimized module would not behave like the model",
            tuple(sorted(set(assigned))),
        )


def _model_tensor(model: torch.nn.Module, target: str) -> Any:
    """The tensor of `model` at qualified name `target`, or None."""
    try:
        return model.get_parameter(target)
    except AttributeError:
        try:
            return model.get_buffer(target)
        except AttributeError:
            return None


def capture(
    model: Callable[..., Any],
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any] | None = None,
) -> torch.fx.GraphModule:
    """Capture `model` with Dynamo as one whole graph with static shapes.

    The model is left exactly as it was (attributes Dynamo's replay rebinds
    are restored); an assignment to a model attribute that the graph cannot
    perform is a CaptureError."""
    if isinstance(model, torch.fx.GraphModule):
        return model
    if not callable(model):
        raise CaptureError(
            f"cannot optimize a {type(model).__name__}: pass an nn.Module, a "
            "torch.fx.GraphModule or a function"
        )
    if not isinstance(example_inputs, tuple | list):
        raise CaptureError(
            f"example_inputs must be a tuple or list of the model's inputs, not a "
            f"{type(example_inputs).__name__} (write (x,) for one input)"
        )
    kwargs = dict(example_kwargs or {})
    function = model.forward if isinstance(model, torch.nn.Module) else model
    try:
        inspect.signature(function).bind(*example_inputs, **kwargs)
    except TypeError as error:
        raise CaptureError(
            f"the example inputs do not fit {type(model).__name__}"
            f"{'.forward' if isinstance(model, torch.nn.Module) else ''}: {error}"
        ) from None
    except ValueError:  # no signature (a builtin): Dynamo will say
        pass
    from optimus_ir.dynamo_capture import capture_graph

    try:
        captured = capture_graph(model, example_inputs, kwargs)
    except Exception as error:  # noqa: BLE001 - Dynamo raises many kinds
        first = (str(error).strip().splitlines() or [""])[0]
        raise CaptureError(
            f"Dynamo could not capture {type(model).__name__} as one graph "
            f"(as torch.compile(fullgraph=True) would): {type(error).__name__}: {first}"
        ) from error
    if isinstance(model, torch.nn.Module):
        _check_assignments(model, captured)
    gm = captured.graph_module
    return gm


def _flat_inputs(
    gm: torch.fx.GraphModule, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> list[Any]:
    """The values of `gm`'s placeholders, in order, for a call `gm(*args, **kwargs)`."""
    from optimus_ir.calling import MODEL_ATTRIBUTE, ModelCallCodeGen

    codegen = gm.graph._codegen  # noqa: SLF001
    if isinstance(codegen, ModelCallCodeGen):
        call = codegen.call
        return call.values(call.bind(*args, **kwargs), gm.__dict__.get(MODEL_ATTRIBUTE))
    if kwargs:
        bound = inspect.signature(gm.forward).bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError(
                f"cannot pass keyword-only inputs {sorted(bound.kwargs)} to this graph"
            )
        args = bound.args
    codegen = gm.graph._codegen  # noqa: SLF001
    if isinstance(codegen, _PyTreeCodeGen) and codegen.pytree_info is not None:
        return list(codegen.process_inputs(*args))
    return list(args)


def _side_effect_free(module: ModuleOp) -> bool:
    """No op of the graph has side effects (writes, random numbers, calls of
    unknown code): running it changes nothing but its outputs."""
    from optimus_ir.traits import is_removable

    return all(
        is_removable(op)
        for op in graph_of(module).block.ops
        if not isinstance(op, fx.PlaceholderOp | fx.OutputOp)
    )


def _has_non_fx_ops(module: ModuleOp) -> bool:
    return any(op.dialect_name() != "fx" for op in graph_of(module).block.ops)


def optimize(
    model: Callable[..., Any] | torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    pipeline: str | None = None,
    *,
    inner: InnerCompiler = "inductor",
    validate: bool = False,
    verify_each: bool | None = None,
    freeze: bool = False,
    check_speed: bool | None = None,
    strict: bool | None = None,
    remarks: bool = False,
    cost_model: CostModelChoice = "calibrated",
    kernels: KernelChoice = "auto",
    memory_budget: str | float | int = DEFAULT_MEMORY_BUDGET,
    options: OptimizeOptions | None = None,
    statistics: Any = None,
    example_kwargs: Mapping[str, Any] | None = None,
) -> torch.fx.GraphModule:
    """Optimize `model` for `example_inputs` (and `example_kwargs`); returns
    an equivalent GraphModule, called like the model.

    The knobs (`pipeline` to `memory_budget`) are the fields of
    `optimus_ir.OptimizeOptions`, every one of them, with its defaults,
    shared with the torch.compile backend and the Inductor hook (docs/options.md);
    pass them as keywords or all at once as `options=OptimizeOptions(...)`,
    not both. `inner` is the backend's alone: set here, it raises TypeError.
    A knob left None is read from the environment once, now
    (`optimus_ir.options`). `statistics` (a `PassStatistics` to add to) is
    not an option but a collector.

    `pipeline` is a `-p` pipeline text (`"raise-fx,split-cat-simplify,lower-to-fx"`);
    None means the default pipeline. With `validate=True`, the IR is exported and
    run on seeded random inputs before and after every pass and a pass that
    changes results raises `ValidationError` naming the pass and the output.
    `verify_each=True` verifies the IR after every pass (also implied by
    `validate`); otherwise once, after the last pass, unless
    `OPTIMUS_VERIFY_EACH=1` (see `optimus_ir.pipeline.default_verify_each`).

    The model is never changed; the result keeps it by reference. Its state
    is the model's, under the model's names: `state_dict()`,
    `load_state_dict()`, `named_parameters()`, `named_buffers()` and
    `parameters()` hold the model's very tensors (`optimus_ir.model_names`),
    so checkpoints move freely between the two. A wrapper (DDP,
    DataParallel, FSDP, a `torch.compile`d module) is a `CaptureError`
    saying what to do instead (optimize the wrapped module, or use
    `torch.compile(..., backend="optimus")`).

    Guards: the result is specialized for the example inputs, and checks on
    every call, cheaply (about a microsecond; `benchmarks/bench_guards.py`),
    everything it was specialized on: the shape, dtype, device and type of
    every tensor argument and the value *and Python type* of every other
    argument (`2`, `2.0` and `True` differ). Called with other inputs, it
    runs a version optimized for them (optimized again with the same
    options, and kept, for up to `guards.MAX_SPECIALIZATIONS` input
    signatures: logged at INFO on `optimus_ir.guards`), and beyond that the
    original model, with one `OptimusGuardWarning`. A graph that does not
    depend on the batch size (proved once, at the first call with another
    one: see `optimus_ir.guards`) runs at any batch size >= 2 without being
    optimized again. `result.optimus_guard` (`guards.InputGuard`) counts the
    re-optimizations. It is also specialized for the strides of the example
    inputs where its rewrites relied on them, and runs the captured graph
    (not optimized) for tensors of other strides (one `.stride()`
    comparison per tensor input).

    Failures: a model Dynamo cannot capture whole raises `CaptureError`, and
    bad arguments (a bad `pipeline` text, inputs that do not fit the model)
    raise as well. A failure inside optimus-ir after the capture (the import,
    a pass, the export) is not the caller's: by default `optimize` returns
    the captured graph, unoptimized (but guarded), with one
    `OptimusFallbackWarning` naming the pass or phase and the error's first
    line (`optimus_report.fallback` says the same); `strict=True` (default:
    `OPTIMUS_STRICT=1`, which the tests set) raises the error instead. With
    `validate=True`, a `ValidationError` always raises: it is what was asked for.

    Parameters and buffers are read from the model's own modules on every
    call, and values the graph computes from them alone (the stacked
    weights of a fused linear) are computed on every call: every change of
    the model's parameters and buffers is followed (optimizers, fused ones
    included, `.data` writes, `load_state_dict`, reassigned parameters,
    `.to()`), and gradients reach the parameters. The cost model charges
    that stacking, so a group is fused only where it pays with it.
    `freeze=True` is the fast path for inference: the parameters are
    constants. Parameter-only values are computed once, now, and stored as
    buffers read without any check; later changes of the parameters are not
    followed (like Inductor's freezing), and a backward that needs the
    gradient of a frozen parameter raises a RuntimeError. The module owns
    those values and keeps no second copy of the weights in them: it reads
    views of them instead, through a stand-in of `model` (which is not
    changed), so once the caller drops `model` each stacked weight is held
    once (`report.frozen_bytes`, `report.parameter_copy_bytes`). See
    `optimus_ir.param_cache`.

    The result is never slower than the captured graph it started from by
    a clear margin: with `check_speed` (default: on; `check_speed=False` or
    `OPTIMUS_CHECK_SPEED=0` turns it off), when batch fusion fused anything
    in a graph without side effects, both are timed on the example inputs
    in `SPEED_ROUNDS` interleaved rounds (about a tenth of a second), and
    only if the fused module is more than `SPEED_MARGIN` (15%) slower in
    every round (`speed_veto`) does the named pipeline `unfused` (the
    default one without batch fusion) run instead; `optimus_report.speed_check`
    says what was measured and decided. The cost model decides; the check
    catches only a large misprediction on the machine at hand, so that load
    from other processes does not change the graph from run to run. When
    the speed check ran, `optimus_report.memory` also holds the tensor
    memory of one call of the result and of the captured graph and what
    each holds between calls (`MemoryCheck`, `optimus_ir.memory`; about
    0.1 s on 64 towers, the first time in a process 0.2 s); otherwise
    `optimus_report.measure_memory(result, model, example_inputs)` measures it.

    The result never has more ops than the captured graph (`count_fx_ops`,
    as `optimus_report.ops_before`/`ops_after` count them): a result with
    more is replaced by the `unfused` pipeline's, or, when that has more
    too, by the captured graph, with a remark saying so. After any such fall
    back the report describes the module returned: its remarks and
    statistics are the rerun's, and what the discarded attempt did is in
    `optimus_report.discarded_remarks`.
    """
    from optimus_ir.guards import install_guard
    from optimus_ir.model_names import refuse_wrapped_model, watch_own_state

    refuse_wrapped_model(model)  # DDP, FSDP, torch.compile: what to do instead
    keywords = dict(
        pipeline=pipeline,
        inner=inner,
        validate=validate,
        verify_each=verify_each,
        freeze=freeze,
        check_speed=check_speed,
        strict=strict,
        remarks=remarks,
        cost_model=cost_model,
        kernels=kernels,
        memory_budget=memory_budget,
    )
    if options is None:
        # a bad pipeline (or option) is the caller's mistake: it raises now
        options = OptimizeOptions(**keywords)
    else:
        given = sorted(k for k, v in keywords.items() if v != _OPTIMIZE_DEFAULTS[k])
        if not isinstance(options, OptimizeOptions):
            raise TypeError(f"optimize: options must be an OptimizeOptions, not {type(options).__name__}")
        if given:
            raise TypeError(
                f"optimize: give options=OptimizeOptions(...) or keyword options, not both "
                f"(got {', '.join(map(repr, given))} too)"
            )
    options.check_entry("optimize")
    load_plugins(strict=options.strict)  # installed plugins (passes, replacements): once per process

    optimize_for = _OptimizeFor(model, options.resolved(), statistics)
    kwargs = dict(example_kwargs or {})
    result = optimize_for(example_inputs, kwargs, defer_code=True)
    report: OptimizeReport = result.optimus_report  # type: ignore[assignment]
    # The guard's check goes into the code, which is generated then, once
    # (`exporter.finish_code`): that time is the export's.
    pending = result.__dict__.get(CODE_PENDING_ATTRIBUTE, False)
    start = time.perf_counter()
    owner = model
    if options.freeze:
        # The stacks become the only copy of the weights they hold: the
        # module (and its guard, which re-optimizes and falls back) reads
        # a stand-in of the model whose stacked weights are views of them.
        from optimus_ir.param_cache import frozen_bytes, hand_over_to_frozen_values

        owner = hand_over_to_frozen_values(result, model)
        if owner is not model:
            from optimus_ir.param_cache import frozen_originals

            optimize_for = dataclasses.replace(optimize_for, model=owner, frozen_originals=frozen_originals(result))
        if report.frozen_bytes:
            report.frozen_bytes, report.parameter_copy_bytes = frozen_bytes(result)
    install_guard(
        result,
        owner,
        example_inputs,
        kwargs,
        optimize_for,
        uncached_graph=result.__dict__.pop(UNCACHED_GRAPH_ATTRIBUTE, None),
    )
    finish_code(result)  # when no guard could be installed
    watch_own_state(result)  # complete now: its code reads the model's tensors alone until changed
    if pending:
        report.phase_seconds["export"] = report.phase_seconds.get("export", 0.0) + time.perf_counter() - start
    return result


@dataclass(frozen=True)
class _OptimizeFor:
    """`optimize` of `model` with fixed options for given inputs, without
    the guard: what the guard calls to re-optimize (a class, not a closure,
    so that the guarded module can still be pickled)."""

    model: Any
    options: OptimizeOptions
    """Resolved (`OptimizeOptions.resolved`): the environment was read once."""
    statistics: Any = None
    frozen_originals: Mapping[int, Any] = field(default_factory=dict)
    """With `freeze` and a stand-in `model`: the original tensors its
    tensors replaced (`param_cache.frozen_originals`), whose `requires_grad`
    the frozen values of every module made from it follow."""

    def __getstate__(self) -> dict[str, Any]:
        # weak references do not pickle; a copy goes by its own tensors' flags
        return {**self.__dict__, "frozen_originals": {}}

    def __call__(
        self, inputs: Sequence[Any], kwargs: Mapping[str, Any], *, defer_code: bool = False
    ) -> torch.fx.GraphModule:
        """The model optimized for `inputs` and `kwargs`; with `defer_code`,
        its code may be pending (`exporter.finish_code`: `optimize` installs
        the guard first, then generates it once)."""
        options = self.options
        result = _optimize_or_fall_back(
            self.model,
            inputs,
            kwargs,
            pipeline=options.pipeline_to_run(),
            validate=options.validate,
            statistics=self.statistics,
            verify_each=options.verify_each,
            freeze=options.freeze,
            check_speed=options.check_speed,
            strict=bool(options.strict),
            defer_code=defer_code,
        )
        if self.frozen_originals:
            from optimus_ir.param_cache import inherit_frozen_originals

            inherit_frozen_originals(result, self.frozen_originals)
        if not defer_code:
            from optimus_ir.model_names import watch_own_state

            finish_code(result)
            watch_own_state(result)  # a specialization of the guard is complete here
        if options.remarks:
            report: OptimizeReport = result.optimus_report  # type: ignore[assignment]
            # what a discarded attempt did, said so: it is not in the module returned
            for remark in report.discarded_remarks:
                print(f"optimus: remark (discarded attempt): {remark.message}", file=sys.stderr)
            for remark in report.remarks:
                print(f"optimus: remark: {remark.message}", file=sys.stderr)
        return result


_OPTIMIZE_DEFAULTS = {
    name: parameter.default
    for name, parameter in inspect.signature(optimize).parameters.items()
    if parameter.default is not inspect.Parameter.empty
}
"""The defaults of `optimize`'s keyword knobs (a knob differing from its
default was given)."""


from optimus_ir.guards import UNCACHED_GRAPH_ATTRIBUTE  # noqa: E402 - where the guard reads it


def _optimize_or_fall_back(
    model: Callable[..., Any] | torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any],
    *,
    pipeline: str | None,
    validate: bool,
    statistics: Any,
    verify_each: bool | None,
    freeze: bool,
    check_speed: bool | None,
    strict: bool,
    defer_code: bool = False,
) -> torch.fx.GraphModule:
    """`optimize` for one input signature, without the guard: capture (a
    CaptureError raises), then `_optimize_captured`; a failure after the
    capture returns the captured graph with one `OptimusFallbackWarning`
    unless `strict` (or it is a ValidationError asked for with `validate`).
    `defer_code`: the result's code may be pending (`exporter.finish_code`)."""
    start = time.perf_counter()
    try:
        gm = capture(model, example_inputs, example_kwargs)
    except AttributeAssignmentError as error:
        runner = _running_the_model(model, example_inputs, example_kwargs, str(error))
        if runner is None:
            raise
        warnings.warn(
            f"optimus: cannot optimize {type(model).__name__}: {error}; returning a module that "
            "runs the model itself, unoptimized, so that the attribute writes still happen "
            "(torch.compile(model, backend='optimus') optimizes it: Dynamo replays the writes)",
            OptimusFallbackWarning,
            stacklevel=4,
        )
        runner.optimus_report.phase_seconds["capture"] = time.perf_counter() - start  # type: ignore[union-attr]
        return runner
    capture_seconds = time.perf_counter() - start
    training = model.training if isinstance(model, torch.nn.Module) else None
    try:
        result = _optimize_captured(
            gm, model, example_inputs, example_kwargs, pipeline, training,
            validate=validate, statistics=statistics, verify_each=verify_each,
            freeze=freeze, check_speed=check_speed, defer_code=defer_code,
        )
    except Exception as error:
        from optimus_ir.validation import ValidationError

        if strict or (validate and isinstance(error, ValidationError)):
            raise
        reason = describe_failure(error)
        warnings.warn(
            f"optimus: cannot optimize {type(model).__name__}: {reason}; returning the captured "
            f"graph unoptimized (strict=True or OPTIMUS_STRICT=1 raises instead)",
            OptimusFallbackWarning,
            stacklevel=4,
        )
        result = _unoptimized(gm, model, training, reason)
    result.optimus_report.phase_seconds["capture"] = capture_seconds  # type: ignore[union-attr]
    return result


def _running_the_model(
    model: Any, example_inputs: Sequence[Any], example_kwargs: Mapping[str, Any], reason: str
) -> torch.fx.GraphModule | None:
    """A GraphModule whose forward takes the parameters of `model.forward`
    and calls `model` itself (one `call_module`): what `optimize` returns for
    a model it cannot capture faithfully, such as one whose forward assigns
    attributes. None when `model.forward` takes variadic arguments (a graph
    cannot pass them on)."""
    if not isinstance(model, torch.nn.Module):
        return None
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return None
    graph = torch.fx.Graph()
    args: list[torch.fx.Node] = []
    kwargs: dict[str, torch.fx.Node] = {}
    for parameter in parameters:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            return None
        if parameter.default is inspect.Parameter.empty:
            node = graph.placeholder(parameter.name)
        else:
            node = graph.placeholder(parameter.name, default_value=parameter.default)
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = node
        else:
            args.append(node)
    graph.output(graph.call_module("model", tuple(args), kwargs))
    from optimus_ir.model_names import share_model_state

    root = torch.nn.Module()
    root.model = model  # by reference: the writes go to the caller's model
    result = torch.fx.GraphModule(root, graph)
    result.training = model.training  # this module only: its submodule is the model
    share_model_state(result, model, "model")  # its state dict is the model's, names and all
    result.optimus_report = OptimizeReport(  # type: ignore[attr-defined]
        pipeline="", fallback=f"the model runs unoptimized: {reason}"
    )
    return result


def _unoptimized(
    gm: torch.fx.GraphModule, model: Any, training: bool | None, reason: str
) -> torch.fx.GraphModule:
    """The captured graph as a module of its own (`gm` may be the caller's
    GraphModule, which is not to be changed), in the model's mode, reading
    the parameters and buffers of `model` (when a module) on every call;
    its code pending (`exporter.finish_code`: whoever returns it generates
    it once)."""
    from optimus_ir.exporter import fast_codegen, graph_module, mode_guard

    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    graph.set_codegen(fast_codegen(gm.graph._codegen, mode_guard(training) if training is not None else ""))  # noqa: SLF001
    result = graph_module(gm, graph, defer_code=True)
    if training is not None:
        result.training = training  # this module only: its submodules are the model's
    if isinstance(model, torch.nn.Module) and model is not gm:
        from optimus_ir.model_names import adopt_model_names
        from optimus_ir.param_cache import read_tensors_from_model

        read_tensors_from_model(result, model)
        adopt_model_names(result, model)
    ops = count_fx_ops(gm)
    result.optimus_report = OptimizeReport(  # type: ignore[attr-defined]
        ops_before=ops, ops_after=Counter(ops), pipeline="", fallback=reason
    )
    _keep_capture_guard(gm, result)
    return result


def describe_failure(error: BaseException) -> str:
    """`pass 'x' failed (Error: first line)`: where inside optimus-ir
    `error` was raised (the pass, else the phase of `_optimize`) and what."""
    from optimus_ir.pipeline import failed_pass

    crashed = failed_pass(error)
    phase = failed_phase(error)
    where = f"pass '{crashed}'" if crashed else _PHASE_NAMES.get(phase or "", phase or "optimus-ir")
    first_line = (str(error).strip().splitlines() or [""])[0]
    return f"{where} failed ({type(error).__name__}: {first_line})"


_PHASE_NAMES = {
    "capture": "the capture",
    "import": "the import",
    "validation setup": "the validation set-up",
    "passes": "the pipeline",
    "export": "the export",
    "freeze parameters": "freezing the parameters",
    "speed check": "the speed check",
}
"""How a failure report names a phase of `_optimize` that failed outside
any one pass."""


def _optimize_captured(
    gm: torch.fx.GraphModule,
    model: Any,
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any],
    pipeline: str | None,
    training: bool | None,
    *,
    validate: bool,
    statistics: Any,
    verify_each: bool | None,
    freeze: bool,
    check_speed: bool | None,
    defer_code: bool = False,
) -> torch.fx.GraphModule:
    """The captured graph `gm` of `model` optimized, checked for speed
    (`optimize`); the result reads `model`'s parameters and buffers, and
    with `defer_code` its code may be pending (`exporter.finish_code`)."""
    options = dict(
        tensors_from=model,
        validate=validate,
        statistics=statistics,
        example_kwargs=example_kwargs,
        verify_each=verify_each,
        guard_strides=True,
        freeze=freeze,
        training=training,
        keep_uncached_graph=True,
        defer_code=defer_code,
    )
    result = _optimize(gm, example_inputs, pipeline, **options)
    if check_speed is None:
        check_speed = environment().check_speed
    report: OptimizeReport = result.optimus_report  # type: ignore[assignment]
    unfused_run = False
    checked = result  # the module the speed check runs
    if check_speed and report.side_effect_free and report.groups_fused:
        finish_code(result)  # it runs now (a second generation, after the guard's check is added)
        start = time.perf_counter()
        with _phase("speed check", {}):
            rounds = [
                (fused, captured)
                for fused, captured in _per_call_rounds([result, gm], example_inputs, dict(example_kwargs or {}))
            ]
        report.phase_seconds["speed check"] = time.perf_counter() - start
        fused_ms = _median(r[0] for r in rounds)
        captured_ms = _median(r[1] for r in rounds)
        vetoed = speed_veto(rounds)
        check = SpeedCheck(fused_ms, captured_ms, fell_back=vetoed, rounds=tuple(rounds))
        report.speed_check = check
        if vetoed:
            result = _rerun_unfused(gm, example_inputs, result, check.describe(), options)
            result.optimus_report.speed_check = check  # type: ignore[union-attr]
            unfused_run = True
    if pipeline is None:
        # an explicit pipeline is run as written (tests and users forcing a
        # fusion, `cost-model=none`); the guarantee is the default pipeline's
        result = _guard_op_count(gm, model, example_inputs, result, training, options, unfused_run=unfused_run)
    final: OptimizeReport = result.optimus_report  # type: ignore[assignment]
    if final.speed_check is not None:
        # Measured with the speed check, under its conditions, on the module
        # returned (its code generated now if pending, as the check does);
        # warm when it is the module the check ran.
        warm = not unfused_run and result is checked
        finish_code(result)
        with _phase("memory check", final.phase_seconds):
            try:
                final.memory = memory_check(result, gm, model, example_inputs, example_kwargs, warm=warm)
            except Exception:  # noqa: BLE001 - a measurement never fails optimize
                final.memory = None
    return result


PLUMBING_KINDS = frozenset(
    "getitem view reshape unsqueeze squeeze flatten unflatten movedim permute transpose t "
    "expand expand_as unfold unbind split split_with_sizes chunk narrow select slice as_strided "
    "detach alias size dim values".split()
)
"""Call kinds (`op_kind`, methods without the dot) that compute nothing:
tuple indexing, views (reshape and flatten are views wherever the layout
allows), metadata, and the lookup of the values `freeze=True` computed
once (`optimus_ir.param_cache`). Every other call reads and writes data:
the *compute* ops of the op-count guarantee and of the benchmarks."""


def is_plumbing(kind: str) -> bool:
    """Whether ops of `kind` (`op_kind`: methods with their dot) compute
    nothing (`PLUMBING_KINDS`)."""
    return kind.lstrip(".") in PLUMBING_KINDS


def count_compute_ops(counts: Counter[str]) -> int:
    """The compute ops of an ops-per-kind count (`count_fx_ops`): all but
    `PLUMBING_KINDS`."""
    return sum(n for kind, n in counts.items() if not is_plumbing(kind))


def count_view_ops(counts: Counter[str]) -> int:
    """The view and metadata ops of an ops-per-kind count: `PLUMBING_KINDS`."""
    return sum(n for kind, n in counts.items() if is_plumbing(kind))


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


def _ops_total(counts: Counter[str]) -> int:
    """The compute ops of an ops-per-kind count (`count_compute_ops`)."""
    return count_compute_ops(counts)


def _per_call_total(report: OptimizeReport) -> int:
    """The ops the module of `report` runs per call (`ops_per_call`, else `ops_after`)."""
    return _ops_total(report.ops_after if report.ops_per_call is None else report.ops_per_call)


def _remark(message: str) -> Any:
    """A remark of `optimize` itself (not of a pass), for `OptimizeReport.remarks`."""
    from optimus_ir.diagnostics import Diagnostic

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


SPEED_CHECK_FALLBACK = "unfused"
"""The named pipeline (`passes/registry.py` PIPELINES) `optimize` runs
instead when the speed check vetoes the fused module or the op-count guard
rejects it: the default pipeline without batch fusion."""

SPEED_MARGIN = 0.15
"""How much slower than the captured graph the fused module must measure,
in every one of the `SPEED_ROUNDS` rounds, before `optimize` falls back.
Well above the timing noise of one round on a shared, loaded machine (a few
per cent, bursts of 10%): a loss that small is the cost model's business,
and a veto on noise made `make demo` return another graph from run to run."""

SPEED_ROUNDS = 7
"""Interleaved timing rounds of the speed check (each about 10 ms per module)."""


def _median(values: Iterator[float] | Sequence[float]) -> float:
    """The median of `values` (`statistics` is a parameter name in this module)."""
    import statistics as stats_module

    return stats_module.median(list(values))


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


def _optimize(
    model: Callable[..., Any] | torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    pipeline: str | None,
    *,
    validate: bool,
    statistics: Any,
    example_kwargs: Mapping[str, Any] | None,
    verify_each: bool | None,
    guard_strides: bool,
    freeze: bool = False,
    cache_parameters: bool = True,
    after_pass: Callable[[Any, ModuleOp], None] | None = None,
    tensors_from: Any = None,
    training: bool | None | object = _ABSENT,
    keep_uncached_graph: bool = False,
    defer_code: bool = False,
) -> torch.fx.GraphModule:
    """`optimize` without its guard and fallback; `guard_strides=False`
    leaves out the call-time stride and mode checks (the torch.compile
    backend: Dynamo guards on strides itself); `training`: the mode of the
    model `model` was captured from (default: `model`'s own);
    `keep_uncached_graph` leaves the graph before the parameters are
    frozen in `UNCACHED_GRAPH_ATTRIBUTE` (for `optimus_ir.guards`: a copy
    where values were frozen, else `guards.OWN_GRAPH`); `defer_code`
    returns the module with its code pending (`exporter.finish_code`
    generates it: the guard's installation does, once);
    `cache_parameters=False` leaves parameter-only values where they are
    even with `freeze`; with `guard_strides`, the result reads parameters
    and buffers from `tensors_from` (default: `model`) when it is a module;
    `after_pass(pass, module)` is called after every pass (the backend logs
    the IR with it). An exception carries the phase it was raised in
    (`failed_phase`) and, from a pass, the pass (`pipeline.failed_pass`)."""
    from optimus_ir.passes.registry import DEFAULT_PIPELINE
    from optimus_ir.pipeline import default_verify_each, parse_pipeline

    kwargs = dict(example_kwargs or {})
    phases: dict[str, float] = {}
    with _phase("capture", phases):
        gm = capture(model, example_inputs, kwargs)
        flat_inputs = _flat_inputs(gm, example_inputs, kwargs)

    with _phase("import", phases):
        program = import_graph(gm, flat_inputs)

    text = DEFAULT_PIPELINE if pipeline is None else pipeline
    if verify_each is None:
        verify_each = validate or default_verify_each()
    hook = None
    if validate:
        from optimus_ir.validation import DifferentialValidator

        with _phase("validation setup", phases):
            # The validator calls the graph with its flat inputs.
            flat_program = ImportedGraph(program.module, program.owner, program.objects, None)
            validator = DifferentialValidator(flat_program, inputs=flat_inputs)
            hook = lambda pass_, module: validator.after_pass(pass_.name, module)  # noqa: E731
    if after_pass is not None:
        validating = hook

        def hook(pass_: Any, module: ModuleOp) -> None:
            if validating is not None:
                validating(pass_, module)
            after_pass(pass_, module)

    # A trailing lower-to-fx runs after the output layouts are fixed (the
    # layout facts are known on operator ops only).
    passes = list(parse_pipeline(text)) if text else []
    if freeze and cache_parameters:  # stacks of parameters are computed once: free per call
        passes = [_with_constant_parameters(p) for p in passes]
    lower_last = bool(passes) and passes[-1].name == "lower-to-fx"
    if lower_last:
        passes.pop()
    rewrites_before = statistics.budget.used if statistics is not None else 0
    with _phase("passes", phases), collect_diagnostics() as diagnostics:
        stats, text, layout_specialized = _run_passes(
            program, passes, text, lower_last, statistics, hook, verify_each, rewrites_before
        )
    remarks = [d for d in diagnostics if d.severity is Severity.REMARK]
    for diagnostic in diagnostics:
        if diagnostic.severity is Severity.WARNING:
            warnings.warn(str(diagnostic), stacklevel=3)

    with _phase("export", phases):
        # The mode is baked into the captured graph; the module refuses the other.
        if training is _ABSENT:
            training = model.training if isinstance(model, torch.nn.Module) else None
        # The code is generated once, last (binding the parameters to the
        # model, freezing and the guard each change it).
        result = export_graph(
            program,
            # Dynamo's guard of the capture checks every input's strides
            # already: the stride check is for graphs captured otherwise.
            fallback=gm if guard_strides and layout_specialized and not _dynamo_guarded(gm) else None,
            training=training if guard_strides else None,  # type: ignore[arg-type]
            defer_code=True,
        )

    # Counted before freezing: the ops the pipeline made (the frozen values'
    # own plumbing is one call and a getitem per value).
    with gc_paused():  # tens of thousands of long-lived objects made: nothing is garbage
        ops_after = count_fx_ops(result)
        cached = 0
        owner = model if tensors_from is None else tensors_from
        if guard_strides and isinstance(owner, torch.nn.Module):
            from optimus_ir.model_names import adopt_model_names
            from optimus_ir.param_cache import read_tensors_from_model

            read_tensors_from_model(result, owner)
            adopt_model_names(result, owner)  # its state dict is the model's
            fallback = result.__dict__.get(FALLBACK_ATTRIBUTE)
            if isinstance(fallback, torch.fx.GraphModule) and fallback is not owner:  # not the caller's graph
                read_tensors_from_model(fallback, owner)
        if keep_uncached_graph:
            # The guard's batch proof runs this graph on fake tensors, before
            # freezing: frozen values would have been computed from the real
            # parameters. Unfrozen, the module's own graph is that graph.
            from optimus_ir.guards import OWN_GRAPH

            result.__dict__[UNCACHED_GRAPH_ATTRIBUTE] = (
                copy_graph(result.graph) if cache_parameters and freeze else OWN_GRAPH
            )
    held = (0, 0)
    if cache_parameters and freeze:
        from optimus_ir.param_cache import freeze_parameter_expressions, frozen_bytes

        with _phase("freeze parameters", phases):
            cached = freeze_parameter_expressions(result)
            held = frozen_bytes(result)
    if not defer_code:
        start = time.perf_counter()
        finish_code(result)  # the export's code generation, deferred to now: its time is the export's
        phases["export"] = phases.get("export", 0.0) + time.perf_counter() - start

    report = OptimizeReport(
        ops_before=count_fx_ops(gm),
        ops_after=ops_after,
        pipeline=text,
        phase_seconds=phases,
        statistics=stats,
        remarks=remarks,
        cached_parameter_values=cached,
        frozen_bytes=held[0],
        parameter_copy_bytes=held[1],
        side_effect_free=_side_effect_free(program.module),
        ops_per_call=count_per_call_ops(result) if cached else None,
        parameter_ops_per_call=count_compute_ops(count_parameter_only_ops(result)),
    )
    result.optimus_report = report  # type: ignore[attr-defined]
    _keep_capture_guard(gm, result)
    return result


def _dynamo_guarded(gm: torch.fx.GraphModule) -> bool:
    """Whether `gm` was captured by `dynamo_capture` (and has Dynamo's guard)."""
    from optimus_ir.dynamo_capture import CAPTURE_GUARD_META

    return gm.meta.get(CAPTURE_GUARD_META) is not None


def _keep_capture_guard(captured: torch.fx.GraphModule, result: torch.fx.GraphModule) -> None:
    """Hand Dynamo's guard of the capture (`dynamo_capture`) on to the module
    made from it, where `install_guard` (or a re-optimizing guard) takes it."""
    from optimus_ir.dynamo_capture import CAPTURE_GUARD_META
    from optimus_ir.guards import CAPTURE_GUARD_ATTRIBUTE

    guard = captured.meta.get(CAPTURE_GUARD_META)
    if guard is not None:
        result.__dict__[CAPTURE_GUARD_ATTRIBUTE] = guard


def _with_constant_parameters(pass_: Any) -> Any:
    """`pass_`, told that parameters are constants when it is batch fusion
    (its cost model then prices stacks of parameters as free)."""
    if getattr(pass_, "name", None) == "batch-fusion" and hasattr(pass_, "constant_parameters"):
        return dataclasses.replace(pass_, constant_parameters=True)
    return pass_


FAILED_PHASE_ATTRIBUTE = "optimus_phase"
"""The attribute an exception raised by `_optimize` carries: the phase
(capture, import, passes, export, ...) it was raised in."""


@contextlib.contextmanager
def _phase(name: str, phases: dict[str, float]) -> Iterator[None]:
    """Time one phase of `_optimize` into `phases[name]`; an exception
    leaving it is marked with the phase (the innermost mark wins)."""
    start = time.perf_counter()
    try:
        yield
    except Exception as error:
        if getattr(error, FAILED_PHASE_ATTRIBUTE, None) is None:
            try:
                setattr(error, FAILED_PHASE_ATTRIBUTE, name)
            except AttributeError:
                pass
        raise
    finally:
        phases[name] = time.perf_counter() - start


def failed_phase(error: BaseException) -> str | None:
    """The phase of `_optimize` that raised `error` (`_phase`), or None."""
    return getattr(error, FAILED_PHASE_ATTRIBUTE, None)


def _run_passes(
    program: ImportedGraph,
    passes: list[Any],
    text: str,
    lower_last: bool,
    statistics: Any,
    hook: Any,
    verify_each: bool,
    rewrites_before: int,
) -> tuple[Any, str, bool]:
    """Run the pipeline's passes on `program`, then lower what is left to fx;
    the statistics, the pipeline text as run, and whether the result relies
    on the example inputs' layout (needs the stride guard)."""
    from optimus_ir.pipeline import run_pipeline

    stats = run_pipeline(
        program.module,
        passes,
        statistics=statistics,
        validate_each=hook,
        verify_each=True if verify_each else False,
    )
    # Layout facts about the inputs matter only where a rewrite used them
    # (every pattern rewrite is charged to the budget; raising and lowering
    # are bit-exact for any strides) or where an output was made contiguous:
    # without either, the module needs no stride check and runs as lean as
    # the captured graph.
    layout_specialized = stats.budget.used > rewrites_before
    layout_specialized |= (
        _match_output_strides(program, stats, hook, verify_each, rewritten=layout_specialized) > 0
    )
    if lower_last or _has_non_fx_ops(program.module):
        run_pipeline(
            program.module,
            "lower-to-fx",
            statistics=stats,
            validate_each=hook,
            verify_each=True if verify_each else False,
        )
        if not lower_last:
            text = f"{text},lower-to-fx" if text else "lower-to-fx"
    if not verify_each:
        from optimus_ir.diagnostics import verify_module

        verify_module(program.module, "after the pipeline")
    return stats, text, layout_specialized


# ---------------------------------------------------------------------------
# Layout at the boundary: input strides checked, output strides kept
# ---------------------------------------------------------------------------


def _match_output_strides(
    program: ImportedGraph, statistics: Any, hook: Any, verify_each: bool, *, rewritten: bool
) -> int:
    """Make every returned tensor have the strides the captured graph
    returns, whatever the layout: the `match-output-strides` pass
    (`passes/output_layout.py`), run by the pass manager with the strides the
    importer recorded (`rewritten`: some rewrite ran); the number of
    restores it added."""
    from optimus_ir.passes.registry import get_pass_class
    from optimus_ir.pipeline import run_pipeline

    if not any(want is not None for want in program.output_strides):
        return 0  # nothing known to match
    match = get_pass_class("match-output-strides").expecting(  # type: ignore[attr-defined]
        program.output_strides, rewritten=rewritten
    )
    run_pipeline(
        program.module,
        [match],
        statistics=statistics,
        validate_each=hook,
        verify_each=True if verify_each else False,
    )
    return statistics.by_pass(match.name)[-1].counters.get("restores added", 0)


__all__ = [
    "AttributeAssignmentError",
    "CaptureError",
    "OptimusFallbackWarning",
    "ImportedGraph",
    "OptimizeOptions",
    "OptimizeReport",
    "SpeedCheck",
    "capture",
    "count_fx_ops",
    "export_graph",
    "fx",
    "import_graph",
    "optimize",
]
