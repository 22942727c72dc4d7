"""`batch-fusion`: N independent same-kind ops become one `batch` op.

The horizontal fusion of Optimus. For every candidate op (a `torch` dialect
op whose declaration names a fusion kind, `OpFacts.fusion`: linear, norm,
unary and binary pointwise, softmax over the last dim; no op is named here
but where its rewrite is its own, the linear and the layer norm) the pass
computes a *grouping key* -- everything that changes what the op computes:
its kind, the shape, dtype and device of every operand, every property
(eps, alpha, bounds, replacement values, approximation modes, ...; scalars by Python type and exact bits, `ScalarKey`: `2`, `2.0` and
`True` differ, so do `0.0` and `-0.0`, and NaN equals NaN), the result's
dtype, and the barrier-free segment of the block it lies in. The search
(`optimus_ir.analysis.independent_sets`) picks, per key, sets of members no
two of which depend on each other, over the whole graph, such that fusing
all the sets at once leaves the graph acyclic. A cost model
(`optimus_ir.cost_model`) then decides per group whether fusing pays on
the device: the ops and launches saved against the bytes any remaining
copy moves. Every group is fused or left alone with a remark saying why
(`optimus-opt --remarks`, `OptimizeReport.remarks`).

The plan is chosen over the whole block (`choose_plan`): linears that read
one input can group on it (`linear-shared-input`) or with the same-shape
linears of other inputs (`linear`, over stacked inputs; the highway
`g[i](x[i]) * gate(t[i](x[i]))` (gate: a pointwise activation): 2-wide groups inside each branch
against 2N-wide groups across them). Each alternative is searched and
priced as a whole plan -- including that consumers of a batched result read
its stack in place -- level by level, and the plan the cost model expects
to gain most is rewritten; nothing is rewritten before the choice.

A fused group becomes `batch.pack` of each member operand that differs
between members, the batch op, and `batch.unpack` of its result; the
conversions between two fused groups cancel (`batch.unpack` -> `batch.pack`
of the same members in the same order is the stack itself), so a batched
linear feeds a batched layer_norm without restacking. Members regroup freely
from one level to the next: towers of input widths 16/32/64 form three
linear groups, while their layer_norms (all of one width) form one.

Safety
    * Ops whose operands or results are in an alias class that anything
      writes in place are not candidates (remark "mutation").
    * Members lie in one barrier-free segment (no op with side effects
      between them): fusing moves a member's computation to the position
      of the group's last member, which must not cross a write or a call
      with unknown effects.
    * Random ops (dropout in training mode) are not candidates.
    * Batched matmuls and normalizations may reorder arithmetic: results
      are equal within the dtype's tolerance, not bit for bit (the
      numerical tests say which tolerance).
"""

from __future__ import annotations

import dataclasses
import heapq
import struct
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.arg_spec import ArgSpec

from optimus_ir.analysis import AliasAnalysis, all_static, is_graph_input, is_join_op, shape
from optimus_ir.analysis.live_bytes import DEFAULT_SYMBOLIC_SIZE, LiveBytes, allocated_bytes, live_bytes
from optimus_ir.analysis.live_bytes import tensor_bytes as _bytes
from optimus_ir.analysis.live_bytes import tensor_elements as _elements
from optimus_ir.analysis.strided_pieces import regular_pieces
from optimus_ir.analysis.independent_sets import SearchResult, block_dag, find_independent_groups
from optimus_ir.analysis.symbolic_dims import Symbol, SymbolicDims
from optimus_ir.cost_model import (
    DEFAULT_MEMORY_BUDGET,
    TARGETS,
    INDUCTOR_EXTERN_STACK_MIN_INPUTS,
    CostModel,
    FusionTarget,
    GroupEstimate,
    MemoryBudget,
    calibrated_cost_model,
    default_cost_model,
    measured_kind,
    parse_memory_budget,
)
from optimus_ir.environment import CostModelChoice
from optimus_ir.diagnostics import OptimusError, emit_remark, location_of
from optimus_ir.dialects import batch as B
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import facts_of
from optimus_ir.passes.canonicalization_patterns.batch import BATCH_PATTERNS
from optimus_ir.passes.canonicalization_patterns import bind_aliases
from optimus_ir.rewriting import GreedyRewriteDriver, RewriteConfig, patch_operands
from optimus_ir.statistics import current_pass_context
from optimus_ir.traits import is_removable
from optimus_ir.types import DYNAMIC, device_of

# ---------------------------------------------------------------------------
# Grouping keys
# ---------------------------------------------------------------------------

_GROUP_KIND_OF_FUSION: dict[str, str] = {
    "linear": "linear",
    "norm": "layer_norm",
    "unary-pointwise": "pointwise",
    "binary-pointwise": "pointwise",
    "softmax": "softmax",
}
"""The group kind of each fusion kind an op declares (`OpFacts.fusion`);
linear further splits into its shared-input and grouped forms."""


def fusion_kind(op: Operation) -> str | None:
    """The group kind (`linear`, `layer_norm`, `pointwise`, `softmax`) of
    `op` by its declared fusion kind, or None (not a candidate; a
    softmax-like op over another than the last dim is none)."""
    facts = facts_of(op)
    if facts is None or facts.fusion is None:
        return None
    kind = _GROUP_KIND_OF_FUSION.get(facts.fusion)
    if kind == "softmax" and not _is_last_dim_softmax(op):
        return None
    return kind


@dataclass(frozen=True)
class GroupKey:
    """What members of one group must agree on: the fusion kind and named
    fields (compared field by field to explain a mismatch)."""

    kind: str
    op_name: str
    fields: tuple[tuple[str, Hashable], ...]

    def differences(self, other: GroupKey) -> list[str]:
        """The fields in which `other` differs, as `name (mine vs other's)`.
        Fields only one of the two keys has (keys of different kinds, whose
        difference `mismatch` puts in words) are left out."""
        theirs = dict(other.fields)
        out = []
        for name, value in self.fields:
            if name == "segment":
                if theirs.get(name) != value:
                    out.append("segment (an op with side effects lies between them)")
                continue
            if name not in theirs:
                continue
            if theirs[name] != value:
                out.append(f"{name} ({_show(value)} vs {_show(theirs[name])})")
        return out

    def mismatch(self, other: GroupKey) -> str:
        """Why an op of this key cannot join a group of key `other`, in
        words: first a difference of kind (an op on its own input against
        linears sharing one: the keys have different fields, not a missing
        value), then the fields that differ (`key differs in ...`)."""
        parts = []
        if self.kind != other.kind:
            parts.append(_kind_mismatch(self, other))
        fields = self.differences(other)
        if fields:
            parts.append(("key also differs in " if parts else "key differs in ") + ", ".join(fields))
        return "; ".join(parts) or "key differs"


def _kind_mismatch(mine: GroupKey, group: GroupKey) -> str:
    """The difference of fusion kind between an op (`mine`) and a group."""
    shared = dict(group.fields).get("input") if group.kind == "linear-shared-input" else None
    if mine.kind == "linear" and group.kind == "linear-shared-input":
        return f"its input is its own tensor, the group's members share one input ({shared})"
    if mine.kind == "linear-shared-input" and group.kind == "linear":
        own = dict(mine.fields).get("input")
        return f"its input ({own}) is shared with other linears, the group's members each have their own input"
    return f"it fuses as {_KIND_WORDS.get(mine.kind, mine.kind)}, the group as {_KIND_WORDS.get(group.kind, group.kind)}"


_KIND_WORDS = {
    "linear": "a linear on its own input",
    "linear-shared-input": "a linear on an input shared with other linears",
    "grouped-linear": "a grouped linear (members of different shapes)",
    "layer_norm": "a layer norm",
    "pointwise": "a pointwise op",
    "softmax": "a softmax-like op",
}
"""How a remark names each fusion kind."""



@dataclass(frozen=True)
class ScalarKey:
    """A scalar property (a clamp bound, a binary op's scalar, alpha, eps,
    ...) as a grouping-key field: its Python type and its exact bits.

    Comparing the Python values would be lossy: `2 == 2.0 == True` (an int,
    a float and a bool scalar promote an integral tensor differently),
    `0.0 == -0.0` (the sign of zero is observable, e.g. through `1 / x`) and
    `nan != nan` (equal NaN bounds would never group)."""

    kind: str
    """`bool`, `int` or `float`: the Python type torch sees."""
    bits: Hashable
    """The value itself for bool and int, the IEEE-754 double's bits for float."""
    shown: str
    """How a remark shows it: `2`, `2.0`, `-0.0`, `nan`, `True` (the
    Python spelling, which tells the three types apart)."""

    def __str__(self) -> str:
        return self.shown


def scalar_key(attr: Attribute) -> Hashable:
    """The exact grouping-key value of a property: a `ScalarKey` for a
    number, the text of a string, the attribute itself otherwise (xDSL
    compares attributes structurally, bit for bit)."""
    if fx.is_bool_literal(attr):
        value = bool(attr.value.data)  # type: ignore[attr-defined]
        return ScalarKey("bool", value, str(value))
    if isinstance(attr, IntAttr):
        return ScalarKey("int", attr.data, str(attr.data))
    if isinstance(attr, FloatAttr):
        value = float(attr.value.data)
        return ScalarKey("float", struct.pack("<d", value), repr(value))
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if value is None:
        return "none"
    return str(value)


def _tensor_fields(
    name: str, ty: Attribute | None, value: SSAValue | None = None, dims: SymbolicDims | None = None
) -> list[tuple[str, Hashable]]:
    """The shape, dtype and device fields of one operand; a `?` dim is
    keyed by its symbol (`dims`), so members agree only on proven-equal
    sizes."""
    if not isinstance(ty, TensorType):
        return [(name, None)]
    sizes: tuple[Hashable, ...] = tuple(ty.get_shape())
    if value is not None and dims is not None and DYNAMIC in sizes:
        sizes = tuple(str(d) if isinstance(d, Symbol) else d for d in dims.dims(value) or sizes)
    return [
        (f"{name} shape", sizes),
        (f"{name} dtype", ty.element_type),
        (f"{name} device", device_of(ty)),
    ]


def candidate_key(
    op: Operation,
    segment: int,
    shared_inputs: set[tuple],
    grouped_linear: bool = False,
    dims: SymbolicDims | None = None,
) -> GroupKey | None:
    """The grouping key of `op`, or None when it is not a fusion candidate
    kind (the caller checks mutation and effects). With `grouped_linear`,
    linears of different shapes share a key (dtype, device, bias, rank).
    `dims` names the symbols of `?` dims in the shape fields."""
    fields: list[tuple[str, Hashable]]
    group_kind = fusion_kind(op)
    if group_kind == "linear":
        bias = op.bias.type if op.bias is not None else None
        shared = (op.input, op.weight.type, bias)
        fields = [*_tensor_fields("weight", op.weight.type), *_tensor_fields("bias", bias)]
        if grouped_linear and shared not in shared_inputs:
            x = op.input.type
            kind = "grouped-linear"
            fields = [
                ("input dtype", x.element_type),  # type: ignore[union-attr]
                ("input device", device_of(x)),  # type: ignore[arg-type]
                ("input rank", x.get_num_dims()),  # type: ignore[union-attr]
                ("bias", bias is not None),
            ]
        elif shared in shared_inputs:
            kind = "linear-shared-input"
            fields.insert(0, ("input", f"%{op.input.name_hint or 'value'}"))
            fields.append(("input value", id(op.input)))
        else:
            kind = "linear"
            fields = [*_tensor_fields("input", op.input.type, op.input, dims), *fields]
    elif group_kind == "layer_norm":
        kind = "layer_norm"
        fields = [
            *_tensor_fields("input", op.input.type, op.input, dims),
            ("normalized_shape", T.ints(op.normalized_shape)),
            ("eps", scalar_key(op.eps)),
            *_tensor_fields("weight", op.weight.type if op.weight is not None else None),
            *_tensor_fields("bias", op.bias.type if op.bias is not None else None),
        ]
    elif group_kind in ("pointwise", "softmax"):
        # softmax-like ops over the last dim stack like pointwise ones: one op
        # over the last dim of the stack computes every member's rows
        kind = group_kind
        fields = []
        for i, operand in enumerate(op.operands):
            fields.extend(_tensor_fields(f"operand {i}", operand.type, operand, dims))
        for name in sorted(op.properties):
            fields.append((name, scalar_key(op.properties[name])))
    else:
        return None
    # The result's dtype is a function of the fields above (type promotion
    # of the operands and scalars); keyed too, so that no rule of promotion
    # missing from them can merge members whose results differ in dtype.
    result = op.results[0].type
    fields.append(("result dtype", result.element_type if isinstance(result, TensorType) else None))
    fields.append(("segment", segment))
    return GroupKey(kind, op.name, tuple(fields))


def _softmax_like(op: Operation) -> bool:
    """A row-wise softmax-like op (fusion kind "softmax" in its facts)."""
    facts = T.facts_of(op)
    return facts is not None and facts.fusion == "softmax"


def _is_last_dim_softmax(op: Operation) -> bool:
    """A softmax-like op over its input's last dim: N members of equal
    shapes stacked along a new dim 0 are one op over the stack's last dim,
    row for row the same computation. Over another dim it is left alone."""
    return _softmax_like(op) and op.over_last_dim()  # type: ignore[attr-defined]


def _remark_softmax_dim(op: Operation) -> None:
    """Why a softmax-like op over a dim other than the last is no candidate."""
    if _softmax_like(op) and not op.over_last_dim():  # type: ignore[attr-defined]
        emit_remark(
            op,
            f"batch-fusion: {_name(op)} not fused: it normalizes dim {op.dim.data}, not the "  # type: ignore[attr-defined]
            "last dim (only softmax over the last dim is fused)",
        )


# ---------------------------------------------------------------------------
# Where member values come from (for the cost estimate)
# ---------------------------------------------------------------------------


@dataclass
class _Provenance:
    """What the pass knows about values produced by fused groups: value ->
    (stack id, index, stack size)."""

    members: dict[SSAValue, tuple[int, int, int]] = field(default_factory=dict)
    next_id: int = 0
    constant_parameters: bool = False
    """Stacks of parameters cost nothing per call (`optimize(freeze=True)`
    computes them once); otherwise they are copies like any other."""

    def record(self, results: Sequence[SSAValue | None]) -> None:
        """`results` are the members of one new stack, in order; a None
        member takes its place but is not recorded (its consumers read a
        copy of it)."""
        stack = self.next_id
        self.next_id += 1
        for i, value in enumerate(results):
            if value is not None:
                self.members[value] = (stack, i, len(results))


def _is_parameter(value: SSAValue) -> bool:
    """A parameter or buffer (an `fx.get_attr`): with constant parameters,
    stacked once at optimize time (`optimus_ir.param_cache`)."""
    owner = value.owner
    return isinstance(owner, fx.GetAttrOp)


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchFusion(ModulePass):
    """Fuse groups of independent same-kind ops (linear, layer_norm,
    pointwise) into `batch` ops, where the cost model says it pays.

    Options:
        min_size / max_size: bounds on a group's size.
        cost_model: "calibrated" (measured once on this machine and cached),
            "default" (documented constants) or "none" (fuse every group the
            search finds); a `Literal` (`optimus_ir.options.CostModelChoice`):
            the pipeline parser refuses other values. OPTIMUS_COST_MODEL=default
            (read in `optimus_ir.options`) overrides "calibrated".
        kinds: comma-separated fusion kinds to consider ("all", or some of
            linear, layer_norm, pointwise, softmax).
        grouped_linear: group linears of different shapes too
            (`batch.grouped_linear`), for a lowering with a grouped GEMM;
            groups whose members turn out equal become `batch.linear`.
        constant_parameters: the stacks of parameters and buffers cost
            nothing per call (`optimize(freeze=True)` computes them once);
            by default they are priced as the copies they are on every call.
        target: what runs the result, "eager" (the exported module) or
            "inductor" (`torch.compile(backend="optimus")` sets it): under
            Inductor pointwise ops fuse vertically anyway, views are free and
            linears are extern calls (`optimus_ir.cost_model.InductorCosts`),
            so groups are priced for that and a group that does not pay there
            is declined with a remark naming the target.
        memory_budget: how many tensor bytes one call of the fused graph may
            hold at once (issue 24): "1.5x" or "+50%" -- a ratio over the
            peak of the block as it was before fusing (`analysis.live_bytes`)
            --, optionally plus an allowance ("1.5x+1MiB", the default,
            `DEFAULT_MEMORY_BUDGET`), bytes ("64MiB", "1GiB", an int), or
            "none" (`cost_model.parse_memory_budget`). The plan's whole
            fused schedule is simulated (`simulate_plan`); while its peak
            exceeds the budget, the fused part holding the most beyond its
            members at that peak is cut in half (chunks, as the cost model
            cuts groups) and at last declined, each such group with a
            remark saying "memory decided". No timing is involved, and the
            budget applies without a cost model too. In Python also a
            `MemoryBudget` already parsed (what `optimize()` hands it:
            `OptimizeOptions.resolve`), taken as it is.
    """

    name = "batch-fusion"

    min_size: int = 2
    max_size: int = 4096
    cost_model: CostModelChoice = "calibrated"
    kinds: str = "all"
    grouped_linear: bool = False
    constant_parameters: bool = False
    target: FusionTarget = "eager"
    memory_budget: str | int | float = DEFAULT_MEMORY_BUDGET

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        budget = self.check_options()
        for graph in list(op.ops):
            if isinstance(graph, fx.GraphOp):
                fuse_block(graph.block, self, self._cost_model(graph.block), budget)
        aliases = AliasAnalysis(op)
        patterns = bind_aliases(BATCH_PATTERNS, aliases)
        GreedyRewriteDriver(
            patterns, RewriteConfig(), name=self.name, listeners=[aliases.listener()]
        ).rewrite(op)

    def check_options(self) -> MemoryBudget | None:
        """Raise `OptimusError` naming every bad option; the memory budget, parsed."""
        problems = []
        if self.min_size < 1 or self.max_size < self.min_size:
            problems.append(f"need 1 <= min-size <= max-size, got {self.min_size} and {self.max_size}")
        unknown = {k.strip() for k in self.kinds.split(",")} - {"all", *_KINDS}
        if unknown:
            problems.append(f"unknown kinds {sorted(unknown)} (known: all, {', '.join(_KINDS)})")
        if self.target not in TARGETS:
            problems.append(f"unknown target {self.target!r} (known: {', '.join(TARGETS)})")
        budget = None
        try:
            budget = self.parsed_memory_budget()
        except ValueError as error:
            problems.append(f"memory-budget: {error}")
        if problems:
            raise OptimusError("batch-fusion: " + "; ".join(problems))
        return budget

    def parsed_memory_budget(self) -> MemoryBudget:
        """`memory_budget` as a `MemoryBudget` (parsed unless it is one)."""
        if isinstance(self.memory_budget, MemoryBudget):
            return self.memory_budget
        return parse_memory_budget(self.memory_budget)

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        """xDSL's spec of the pass; a parsed budget is written as its text."""
        if isinstance(self.memory_budget, MemoryBudget):
            written = dataclasses.replace(self, memory_budget=self.memory_budget.text())
            return written.spec(include_default=include_default)
        return super().spec(include_default=include_default)

    def _cost_model(self, block: Block) -> CostModel | None:
        """The model of the device the graph's tensors live on (the first
        one with a known device; CPU when none says)."""
        if self.cost_model == "none":
            return None
        device = "cpu"
        for op in block.ops:
            ty = op.results[0].type if op.results else None
            if isinstance(ty, TensorType) and device_of(ty) is not None:
                device = device_of(ty)  # type: ignore[assignment]
                break
        kind = "cuda" if device.startswith("cuda") else "cpu"
        if self.cost_model == "default":
            return default_cost_model(kind)
        return calibrated_cost_model(kind)

    def enabled(self, kind: str) -> bool:
        if self.kinds == "all":
            return True
        wanted = {k.strip() for k in self.kinds.split(",")}
        return kind in wanted or (kind in ("linear-shared-input", "grouped-linear") and "linear" in wanted)


def fuse_block(
    block: Block, options: BatchFusion, model: CostModel | None, budget: MemoryBudget | None = None
) -> int:
    """Find, decide and fuse the groups of `block`; the number fused.

    The plan (which candidates group with which, and which groups fuse) is
    chosen over the whole block before anything is rewritten: see
    `choose_plan`. `budget`: the memory budget (default: the options')."""
    context = current_pass_context(options.name)
    ops = list(block.ops)
    aliases = AliasAnalysis(block)
    dims = SymbolicDims(block)
    candidates = _candidate_keys(ops, options, aliases, dims)
    if budget is None:
        budget = options.parsed_memory_budget()
    # the block as captured: what the budget is relative to, and where each
    # member's result is still held in the captured schedule
    memory = _Memory(budget, live_bytes(ops, aliases, dims), dims) if any(candidates.keys) else None

    # the batch symbol of each candidate, read before any group is fused
    # (fusing a producer group replaces the operands of the next level)
    batch_symbols = {op: _batch_symbol(op, dims) for op, key in zip(ops, candidates.keys) if key is not None}
    returned = {op for op, key in zip(ops, candidates.keys) if key is not None and _reaches_output(op, aliases)}
    dag = block_dag(ops)
    plan = choose_plan(ops, dag, candidates, model, options, dims, returned, memory)
    _explain_rejections(ops, plan.keys, plan.search, options)
    for op, text in plan.notes:
        emit_remark(op, text)

    fused = 0
    touched = False
    for decision in plan.decisions:
        key, part, estimate = decision.key, decision.members, decision.estimate
        if decision.verdict == "cse":
            emit_remark(
                part[0],
                f"batch-fusion: {len(part)} {key.op_name}{_names(part)} not fused: "
                "they compute the same value (cse merges them)",
            )
            continue
        if decision.verdict == "memory":
            emit_remark(
                part[0],
                f"batch-fusion: {len(part)} {key.op_name}{_names(part)} not fused: {decision.note}",
            )
            continue
        if decision.verdict == "unprofitable":
            assert estimate is not None
            emit_remark(
                part[0],
                f"batch-fusion: {len(part)} {key.op_name}{_names(part)} not fused: unprofitable: "
                f"{estimate.describe()}",
            )
            continue
        if context.budget.exhausted:
            continue
        _fuse(key.kind, part, {m for m in part if m in returned})
        context.budget.record(options.name, f"fuse-{key.kind}", part[0], None)
        context.record.pattern(f"fuse-{key.kind}").rewrites += 1
        fused += 1
        touched = True
        why = f" ({estimate.describe()})" if estimate is not None else ""
        why += _symbolic_note(batch_symbols.get(part[0]), dims)
        emit_remark(
            part[0],
            f"batch-fusion: fused {len(part)} {key.op_name}{_names(part)} into {_BATCH_OP[key.kind]}{why}",
        )
    if touched:
        restore_dominance(block)
    context.record.bump("groups fused", fused)
    parts_fused: dict[Operation, int] = {}
    for decision in plan.decisions:
        if decision.verdict == "fuse" and decision.group is not None:
            parts_fused[decision.group] = parts_fused.get(decision.group, 0) + 1
    context.record.bump(GROUPS_CHUNKED, sum(1 for parts in parts_fused.values() if parts > 1))
    return fused


GROUPS_CHUNKED = "groups fused in parts"
"""The statistics counter of the search groups fused as several parts, each
its own fused op with its own copies: chunks, where the memory budget cut
the group or smaller fused ops priced better, or parts by the earlier
stacks their members come from (`OptimizeReport.groups_chunked`)."""


def _reaches_output(op: Operation, aliases: AliasAnalysis) -> bool:
    """A result of `op` (or a view of it) is returned by the graph."""
    return any(aliases.reaches_output(r) for r in op.results)


# ---------------------------------------------------------------------------
# Candidates and their alternative keys
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _SharedInputSet:
    """Linears reading one input value (with one weight and bias type): they
    can fuse on that input (`linear-shared-input`) or, each on its own, with
    same-shape linears reading other inputs (`linear`, a stacked input)."""

    members: tuple[int, ...]
    """Indices (into the block's ops) of the set's candidates, increasing."""
    cross_keys: tuple[GroupKey, ...]
    """Each member's key as a plain (or grouped) linear."""


@dataclass(frozen=True)
class _Candidates:
    """The grouping keys of a block's ops (None: no candidate), with the
    shared-input linears' alternative keys."""

    keys: list[GroupKey | None]
    shared_sets: list[_SharedInputSet]
    """In order of first member."""


def _candidate_keys(
    ops: Sequence[Operation], options: BatchFusion, aliases: AliasAnalysis, dims: SymbolicDims
) -> _Candidates:
    """Every op's grouping key (remarks for the candidates excluded), and,
    for the linears that share an input, their key as a plain linear too."""
    # Linears sharing one input (and weight/bias types) may fuse on the shared input.
    shared_count: dict[tuple, int] = {}
    for op in ops:
        if fusion_kind(op) == "linear":
            k = _shared_input_of(op)
            shared_count[k] = shared_count.get(k, 0) + 1
    shared = {k for k, n in shared_count.items() if n >= options.min_size}

    keys: list[GroupKey | None] = []
    sets: dict[tuple, list[tuple[int, GroupKey]]] = {}
    segment = 0
    for index, op in enumerate(ops):
        key = None
        if is_barrier(op):
            segment += 1
        elif not is_removable(op):
            pass  # a read-only call: no candidate, but members may move past it
        else:
            key = candidate_key(op, segment, shared, options.grouped_linear, dims)
            if key is None:
                _remark_runtime_eps(op)
                _remark_softmax_dim(op)
            if key is not None and not options.enabled(key.kind):
                key = None
            if key is not None:
                reason = _exclusion(op, key.kind, aliases)
                if reason is not None:
                    emit_remark(op, f"batch-fusion: {_name(op)} not fused: {reason}")
                    key = None
            if key is not None and key.kind == "linear-shared-input":
                cross = candidate_key(op, segment, set(), options.grouped_linear, dims)
                if cross is not None and _exclusion(op, cross.kind, aliases) is None:
                    sets.setdefault(_shared_input_of(op), []).append((index, cross))
        keys.append(key)
    # dict insertion order: sets in order of their first member (no id order)
    shared_sets = [
        _SharedInputSet(tuple(i for i, _ in entries), tuple(c for _, c in entries))
        for entries in sets.values()
        if len(entries) >= options.min_size
    ]
    return _Candidates(keys, shared_sets)


def _shared_input_of(op: Operation) -> tuple:
    """What linears fusing on a shared input agree on: the input value, the
    weight type and the bias type."""
    return (op.input, op.weight.type, op.bias.type if op.bias is not None else None)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# The plan: chosen over the whole block by the cost model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Decision:
    """One group (or part of a search group) and what to do with it."""

    key: GroupKey
    members: list[Operation]
    """In the order the batch op takes them (`reorder_by_source`)."""
    estimate: GroupEstimate | None
    verdict: str
    """"fuse", "unprofitable", "cse" (the members compute one value) or
    "memory" (declined to stay within the memory budget)."""
    group: Operation | None = None
    """The first member of the search group the part is of (the key of
    `_evaluate`'s `limits`)."""
    memory: PartMemory | None = None
    """What the fused part allocates (fused parts that stack their results)."""
    note: str = ""
    """Why a "memory" verdict, for its remark."""


@dataclass(frozen=True)
class Plan:
    """The groups of a block and their decisions, in the order they fuse
    (producers first), with the gain the cost model expects of them all."""

    keys: list[GroupKey | None]
    search: SearchResult
    decisions: list[_Decision]
    gain_s: float
    """The sum of the fused parts' estimated gains (0 without a model)."""
    notes: list[tuple[Operation, str]] = field(default_factory=list)
    """Remarks on how the plan was chosen (shared-input linears grouped
    across their sets)."""


_MAX_FAMILY_TRIALS = 16
"""Families (see `choose_plan`) tried one by one at most; beyond that only
the two uniform plans are compared, so the choice costs a bounded number of
linear-time evaluations of the block."""


def choose_plan(
    ops: Sequence[Operation],
    dag: list[list[int]],
    candidates: _Candidates,
    model: CostModel | None,
    options: BatchFusion,
    dims: SymbolicDims | None,
    returned: set[Operation],
    memory: _Memory | None = None,
) -> Plan:
    """The fusion plan of a block: the one the cost model expects to gain
    most (`_plan_by_gain`), then cut down to the memory budget
    (`fit_memory`; `memory` None: no budget)."""
    plan = _plan_by_gain(ops, dag, candidates, model, options, dims, returned, memory)
    if memory is None or memory.budget.unlimited:
        return plan
    return fit_memory(plan, ops, dag, model, options, dims, returned, memory)


def _plan_by_gain(
    ops: Sequence[Operation],
    dag: list[list[int]],
    candidates: _Candidates,
    model: CostModel | None,
    options: BatchFusion,
    dims: SymbolicDims | None,
    returned: set[Operation],
    memory: _Memory | None = None,
) -> Plan:
    """The fusion plan of a block, chosen over the whole block by the cost model.

    Linears that read one input can fuse on it (`linear_shared_input`: one
    linear over their concatenated weights, two members of a highway branch
    `g(x) * gate(t(x))`) or each with the same-shape linears of other
    inputs (`batch.linear` over a stack of the inputs: the `g` and `t` of all
    branches). Which pays is a property of the whole graph, not of a group:
    a batched linear's result stays batched for the gate activation and the mul that
    read it (they read the stack in place), while a shared-input pair's
    results are restacked by whoever groups them next. So each choice is
    priced as the plan it makes -- the search over the whole block, every
    group decided producers first with what its operands' groups left
    behind -- and the plan with the higher total gain wins.

    The shared-input sets are chosen per *family*: the sets whose members
    would group together as plain linears (one plain key) at one depth of
    the graph (their first member's longest-path level): level by level.
    Plans compared: all sets on their shared input (the first and
    preferred on ties), all sets across, then from the better of the two
    each family flipped in turn (first-appearance order), kept when the
    total gain grows; at most `_MAX_FAMILY_TRIALS` families are tried one
    by one. Each plan costs one search and one pricing pass, linear in the
    block, and the result depends only on the block (families and sets are
    ordered by position)."""
    base = _evaluate(ops, dag, list(candidates.keys), model, options, dims, returned, memory)
    if model is None or not candidates.shared_sets:
        return base
    level = _levels(dag)
    families: dict[tuple[GroupKey, int], list[_SharedInputSet]] = {}
    for shared_set in candidates.shared_sets:
        family = (shared_set.cross_keys[0], level[shared_set.members[0]])
        families.setdefault(family, []).append(shared_set)
    family_sets = list(families.values())

    def keys_for(across: Sequence[bool]) -> list[GroupKey | None]:
        keys = list(candidates.keys)
        for flip, sets in zip(across, family_sets):
            if flip:
                for shared_set in sets:
                    for i, cross in zip(shared_set.members, shared_set.cross_keys):
                        keys[i] = cross
        return keys

    best, best_across = base, [False] * len(family_sets)
    everything = [True] * len(family_sets)
    plan = _evaluate(ops, dag, keys_for(everything), model, options, dims, returned, memory)
    if _better(plan, best):
        best, best_across = plan, everything
    if 1 < len(family_sets) <= _MAX_FAMILY_TRIALS:
        for f in range(len(family_sets)):
            trial = list(best_across)
            trial[f] = not trial[f]
            plan = _evaluate(ops, dag, keys_for(trial), model, options, dims, returned, memory)
            if _better(plan, best):
                best, best_across = plan, trial
    for flip, sets in zip(best_across, family_sets):
        if flip:
            first = ops[sets[0].members[0]]
            count = sum(len(s.members) for s in sets)
            inputs = "one shared input" if len(sets) == 1 else f"{len(sets)} shared inputs"
            best.notes.append((
                first,
                f"batch-fusion: plan: {count} torch.linear{_names([ops[s.members[0]] for s in sets])} "
                f"reading {inputs} group as plain linears over stacked inputs, not on their shared "
                f"inputs: the whole block's estimated gain ~{best.gain_s * 1e6:.1f} us against "
                f"~{base.gain_s * 1e6:.1f} us",
            ))
    return best


def _better(plan: Plan, than: Plan) -> bool:
    """`plan` gains clearly more than `than` (a relative margin, so that
    rounding in the sums never flips a tie)."""
    return plan.gain_s > than.gain_s + 1e-9 + 1e-6 * abs(than.gain_s)


def _levels(dag: Sequence[Sequence[int]]) -> list[int]:
    """Each node's longest-path depth from the sources of `dag`."""
    level = [0] * len(dag)
    for i, preds in enumerate(dag):
        for p in preds:
            if level[p] >= level[i]:
                level[i] = level[p] + 1
    return level


def _evaluate(
    ops: Sequence[Operation],
    dag: list[list[int]],
    keys: list[GroupKey | None],
    model: CostModel | None,
    options: BatchFusion,
    dims: SymbolicDims | None,
    returned: set[Operation],
    memory: _Memory | None = None,
    limits: Mapping[Operation, tuple[int, str]] | None = None,
) -> Plan:
    """The plan the keys `keys` make: the search's groups, each decided
    producers first (`_choose_parts`), on the unrewritten block. A fused
    part's members' results are recorded as one stack, as the results of its
    `batch.unpack` are when it is rewritten (a returned member's consumers
    read its copy, not the stack), so later groups see where their operands
    lie exactly as the rewrite leaves them. `limits` (from `fit_memory`):
    the most members a part of the search group whose first member is the
    key may have (and the remark of a member declined for it); parts are cut into chunks of at most that many, and
    members left in a chunk below min-size (all of them, for a limit below
    it) are declined for memory. `memory`: the captured block's live bytes
    (each part's `PartMemory` and its estimate's `extra_live_bytes`)."""
    result = find_independent_groups(dag, keys, min_size=options.min_size, max_size=options.max_size)
    provenance = _Provenance(constant_parameters=options.constant_parameters)
    group_of = {ops[i]: g for g, ids in enumerate(result.groups) for i in ids}
    decisions: list[_Decision] = []
    gain = 0.0
    for group_ids in producers_first(result.groups, ops):
        members = [ops[i] for i in group_ids]
        key = keys[group_ids[0]]
        first = members[0]
        assert key is not None
        if all(_slot_source(v, provenance) == "shared" for v in _operand_slots(key.kind, members)):
            decisions.append(_Decision(key, members, None, "cse", first))
            continue
        parts = _choose_parts(model, key, members, provenance, options, group_of, dims)
        limited = limits.get(first) if limits else None
        if limited is not None:
            limit, note = limited
            parts, declined = _within_limit(parts, limit, model, key, provenance, options, group_of, dims)
            for part in declined:
                decisions.append(_Decision(key, part, None, "memory", first, note=note))
        for part, estimate in parts:
            if estimate is not None and not estimate.profitable:
                decisions.append(_Decision(key, part, estimate, "unprofitable", first))
                continue
            part = reorder_by_source(key.kind, part, provenance)
            held = None
            if memory is not None and _stacks_results(key.kind, part):
                held = part_memory(key.kind, part, provenance, dims, returned)
                if estimate is not None:
                    estimate.extra_live_bytes = held.extra_over(part, memory.captured, dims)
            if _stacks_results(key.kind, part):
                provenance.record([None if m in returned else m.results[0] for m in part])
            decisions.append(_Decision(key, part, estimate, "fuse", first, held))
            if estimate is not None:
                gain += estimate.gain_s
    return Plan(keys, result, decisions, gain)


def _within_limit(
    parts: list[tuple[list[Operation], GroupEstimate | None]],
    limit: int,
    model: CostModel | None,
    key: GroupKey,
    provenance: _Provenance,
    options: BatchFusion,
    group_of: dict[Operation, int] | None,
    dims: SymbolicDims | None,
) -> tuple[list[tuple[list[Operation], GroupEstimate | None]], list[list[Operation]]]:
    """`parts` with every part of more than `limit` members cut into the
    fewest chunks of consecutive members (in source order: each reads one
    slice) of at most `limit`, each priced again; and the members declined
    (a chunk below min-size; every part, for a limit below it)."""
    kept: list[tuple[list[Operation], GroupEstimate | None]] = []
    declined: list[list[Operation]] = []
    smallest = max(options.min_size, 2)
    for part, estimate in parts:
        if len(part) <= limit:
            kept.append((part, estimate))
            continue
        if limit < smallest:
            declined.append(part)
            continue
        ordered = reorder_by_source(key.kind, part, provenance)
        count = -(-len(ordered) // limit)
        size = -(-len(ordered) // count)
        for i in range(0, len(ordered), size):
            chunk = ordered[i : i + size]
            if len(chunk) < smallest:
                declined.append(chunk)
                continue
            priced = (
                None if model is None
                else estimate_group(model, key.kind, chunk, provenance, group_of, dims, target=options.target)
            )
            kept.append((chunk, priced))
    return kept, declined


# ---------------------------------------------------------------------------
# Memory: the budget (issue 24)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Memory:
    """The memory budget of one block and the block's live bytes as
    captured (before anything fuses)."""

    budget: MemoryBudget
    captured: LiveBytes
    dims: SymbolicDims | None

    @property
    def limit(self) -> float:
        """The bytes one call of the fused block may hold at once."""
        return self.budget.limit(self.captured.peak)


@dataclass(frozen=True)
class PartMemory:
    """What one fused part allocates when its batch op runs (eager
    lowering, `lower-batch`), beyond views: the inputs of the estimate of
    the fused schedule's live bytes (`simulate_plan`)."""

    stack: int
    """The stacked results: held while any (non-returned) member's result
    is read."""
    copies: int
    """The stacked operand copies, made before the batch op and freed
    after it: every stack but a slice of one earlier stack, a strided view
    of one tensor, a broadcast, and -- under constant parameters -- a stack
    of parameters (computed once and held between calls, not per call)."""
    copied: frozenset[int]
    """The member operand indices those copies are of (their sources are
    last read by the copy, before the batch op runs)."""
    scratch: int
    """Held beside the copies and the result while the batch op runs: a
    batched layer norm's mean and rstd."""
    epilogue: int
    """Held beside the result just after the batch op: a batched layer
    norm's affine step (`* weight`, `+ bias`) writes a new stack while the
    last one lives."""
    returned: int
    """The copies of members returned by the graph (held to the end)."""
    input_copies: int = 0
    """The stacked copies of graph inputs and parameters (per call, unless
    constant): their packs depend on nothing the fusion moves, so they stay
    where the group's last member was and are held from there until the
    batch op runs (which the members' other operands may delay)."""

    def extra_over(self, members: Sequence[Operation], captured: LiveBytes, dims: SymbolicDims | None) -> int:
        """The part's bytes beyond what its members' results held at the
        part's point (its last member) in the captured schedule
        (`GroupEstimate.extra_live_bytes`). Local: the members' operands
        the fused op keeps alive longer, and the ops the fusion moves, are
        what `simulate_plan` adds."""
        point = max(captured.position[m] for m in members)
        held = sum(_bytes(m.results[0], dims) for m in members if captured.held_at(m.results[0], point))
        extra = self.stack + self.copies + self.input_copies + max(self.scratch, self.epilogue) + self.returned
        return extra - held


def part_memory(
    kind: str,
    members: Sequence[Operation],
    provenance: _Provenance,
    dims: SymbolicDims | None,
    returned: set[Operation],
) -> PartMemory:
    """What fusing `members` allocates (`PartMemory`), with their operands'
    sources as `provenance` says before the part is recorded."""
    n = len(members)
    result = _bytes(members[0].results[0], dims)
    copies, input_copies, scratch, epilogue = 0, 0, 0, 0
    copied: set[int] = set()
    first_slot = 1 if kind == "linear-shared-input" else 0
    for slot, values in enumerate(_operand_slots(kind, members), start=first_slot):
        source = _slot_source(values, provenance)
        if source in ("parameters", "pieces"):
            continue  # held between calls, or a view
        if source == "shared" and (
            kind in ("pointwise", "softmax")
            or (provenance.constant_parameters and _is_parameter(values[0]))
        ):
            continue  # broadcast, or one parameter stacked once
        if source == "stack" and not _part_of_a_stack([values], provenance):
            continue  # the earlier stack itself, or a strided slice of it
        if all(is_graph_input(v) for v in values):
            input_copies += _bytes(values[0], dims) * n
            continue
        copies += _bytes(values[0], dims) * n
        copied.add(slot)
    if kind == "layer_norm":
        first = members[0]
        if first.weight is not None or first.bias is not None:  # type: ignore[attr-defined]
            epilogue = n * result
        normalized = 1
        for d in T.ints(first.normalized_shape):  # type: ignore[attr-defined]
            normalized *= max(d, 1)
        rows = _elements(first.operands[0], dims) // normalized
        scratch = 2 * 4 * n * rows  # the fp32 mean and rstd of `native_layer_norm`
    kept = sum(_bytes(m.results[0], dims) for m in members if m in returned)
    return PartMemory(n * result, copies, frozenset(copied), scratch, epilogue, kept, input_copies)


@dataclass(frozen=True)
class Simulated:
    """The live bytes of a plan's fused schedule (`simulate_plan`)."""

    peak: int
    """The most tensor bytes one call holds at once."""
    culprit: _Decision | None
    """The fused part holding the most beyond what its members would hold
    unfused at the peak (None: no part holds more there)."""
    excess: int
    """That part's bytes beyond its members' at the peak."""


def simulate_plan(
    ops: Sequence[Operation],
    decisions: Sequence[_Decision],
    captured: LiveBytes,
    dims: SymbolicDims | None,
    returned: set[Operation],
) -> Simulated:
    """The live bytes of the block as it runs once `decisions` are fused:
    each fused part one op at its last member's position, every op in the
    stable topological order by original position that `restore_dominance`
    gives (the consumers of an earlier member move after the part), each
    op's allocations as `analysis.live_bytes` counts them and each part's
    as `PartMemory` says (its stack freed after the last reader of any
    non-returned member's result, its copies after the batch op, the
    returned members' copies held to the end). O(n log n) in the ops."""
    count = len(ops)
    position = captured.position
    aliases = captured.aliases
    parts = [d for d in decisions if d.verdict == "fuse" and d.memory is not None]
    part_of: dict[Operation, int] = {}
    for k, decision in enumerate(parts):
        for member in decision.members:
            part_of[member] = k

    def node_of(op: Operation) -> int:
        k = part_of.get(op)
        return position[op] if k is None else count + k

    # nodes: the ops, then one per part, then one per part for the packs of
    # its graph inputs and parameters (they stay where its last member was)
    packs = count + len(parts)
    nodes = packs + len(parts)
    part_keys = [max(position[m] for m in d.members) for d in parts]
    key = [*range(count), *part_keys, *part_keys]
    present = [op not in part_of for op in ops] + [True] * (2 * len(parts))
    users: list[list[int]] = [[] for _ in range(nodes)]
    missing = [0] * nodes
    for k in range(len(parts)):
        users[packs + k].append(count + k)
        missing[count + k] += 1
    for op in ops:
        me = node_of(op)
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation) and owner in position:
                source = node_of(owner)
                if source != me:
                    users[source].append(me)
                    missing[me] += 1
    ready = [(key[v], v) for v in range(nodes) if present[v] and missing[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for u in users[v]:
            missing[u] -= 1
            if missing[u] == 0:
                heapq.heappush(ready, (key[u], u))
    if len(order) != sum(present):  # pragma: no cover - the search keeps fused groups acyclic
        return Simulated(captured.peak, None, 0)

    # Three steps per node: a part copies its stacked operands (step 0;
    # their sources are last read there), runs the batch op (1: copies,
    # result and scratch live) and its epilogue (2: the result and one more
    # stack); any other op reads and allocates at step 1, but a join that
    # gathers members of fused parts first (`_gathered_runs`) reads them and
    # copies them at step 0.
    step = [0] * nodes
    for s, v in enumerate(order):
        step[v] = 3 * s
    member_at: dict[SSAValue, tuple[int, int]] = {}
    for k, decision in enumerate(parts):
        for i, member in enumerate(decision.members):
            if member not in returned:  # a returned member's readers read its copy
                member_at[member.results[0]] = (k, i)
    gathers: dict[int, tuple[int, set[int], list[tuple[int, int]]]] = {}
    last: dict[SSAValue, int] = {}
    for v in order:
        if v >= packs:
            continue
        if v < count:
            op = ops[v]
            gathered = _gathered_runs(op, member_at, dims) if member_at and is_join_op(op) else None
            if gathered is not None:
                gathers[v] = gathered
            early = gathered[1] if gathered is not None else ()
            for i, operand in enumerate(op.operands):
                root = aliases.find(operand)
                last[root] = max(last.get(root, 0), step[v] + (0 if i in early else 1))
            continue
        decision = parts[v - count]
        copied = decision.memory.copied  # type: ignore[union-attr]
        for member in decision.members:
            for i, operand in enumerate(member.operands):
                root = aliases.find(operand)
                last[root] = max(last.get(root, 0), step[v] + (0 if i in copied else 1))
    end = 3 * len(order) - 1
    delta = [0] * (end + 2)

    def hold(size: int, start: int, stop: int) -> None:
        if size:
            delta[start] += size
            delta[max(stop, start) + 1] -= size

    stack_end = [0] * len(parts)
    for v in order:
        s = step[v]
        if v >= packs:
            held = parts[v - packs].memory
            hold(held.input_copies, s + 1, step[v - len(parts)] + 1)  # type: ignore[union-attr]
            continue
        if v < count:
            size = allocated_bytes(ops[v], dims)
            free = max((last.get(aliases.find(r), s + 1) for r in ops[v].results), default=s + 1)
            hold(size, s + 1, free)
            if v in gathers:
                hold(gathers[v][0], s, s + 1)
            continue
        decision = parts[v - count]
        held = decision.memory
        assert held is not None
        free = max(
            (last.get(aliases.find(m.results[0]), s + 2) for m in decision.members if m not in returned),
            default=s + 2,
        )
        stack_end[v - count] = max(free, s + 2)
        hold(held.copies, s, s + 1)
        hold(held.scratch, s + 1, s + 1)
        hold(held.stack, s + 1, stack_end[v - count])
        hold(held.epilogue, s + 2, s + 2)
        hold(held.returned, s + 2, end)
    peak, at, running = 0, 0, 0
    for i in range(end + 1):
        running += delta[i]
        if running > peak:
            peak, at = running, i
    # who holds the peak: each part's bytes live there, less what its
    # members' own results would hold there unfused
    peak_key = key[order[at // 3]] if order else 0
    gathered_there: dict[int, int] = {}  # the gathers live at the peak, by the part they copy
    join = order[at // 3] if order else -1
    if join in gathers and at % 3 < 2:
        for k, size in gathers[join][2]:
            gathered_there[k] = gathered_there.get(k, 0) + size
    culprit, excess = None, 0
    for k, decision in enumerate(parts):
        held = decision.memory
        assert held is not None
        s = step[count + k]
        there = {s: held.copies, s + 1: held.copies + held.scratch, s + 2: held.epilogue}.get(at, 0)
        there += gathered_there.get(k, 0)
        there += held.input_copies if step[packs + k] + 1 <= at <= s + 1 else 0
        there += held.stack if s + 1 <= at <= stack_end[k] else 0
        there += held.returned if s + 2 <= at else 0
        for m in decision.members:
            result = m.results[0]
            if position[m] <= peak_key and last.get(aliases.find(result), -1) >= at:
                there -= _bytes(result, dims)
        if there > excess:
            culprit, excess = decision, there
    return Simulated(peak, culprit, excess)


def _gathered_runs(
    join: Operation, member_at: Mapping[SSAValue, tuple[int, int]], dims: SymbolicDims | None
) -> tuple[int, set[int], list[tuple[int, int]]] | None:
    """What a cat or stack of members of fused parts copies before it runs,
    as `lower-batch`'s `CatOfMembers` rewrites it: each run of whole
    periods of interleaved parts (`periodic_run`: member k of part j at
    operand k*m + j) becomes one copy of the run (a stack of the moved
    stacks), unless that run is the join's only input (the copy is then
    the join's result). The bytes copied, the operand indices gathered
    (read by the copy, not the join) and (part, bytes) per run; None when
    nothing is gathered."""
    values = list(join.operands)
    runs: list[tuple[int, int]] = []  # (start, length)
    i = 0
    while i < len(values):
        run = _periodic_run(values, i, member_at)
        if run is None:
            i += 1
            continue
        runs.append((i, run))
        i += run
    if not runs or (len(runs) == 1 and runs[0] == (0, len(values))):
        return None
    copied, indices, by_part = 0, set(), []
    for start, length in runs:
        for index in range(start, start + length):
            size = _bytes(values[index], dims)
            copied += size
            indices.add(index)
            by_part.append((member_at[values[index]][0], size))
    return copied, indices, by_part


def _periodic_run(values: Sequence[SSAValue], start: int, member_at: Mapping[SSAValue, tuple[int, int]]) -> int | None:
    """The length of the run of whole periods of interleaved fused parts
    that begins at `values[start]` (`lower_batch.periodic_run` on the
    plan's parts: each period reads member k of m distinct parts, from
    member 0 on); None when it is shorter than two values."""
    parts: list[int] = []
    for value in values[start:]:
        where = member_at.get(value)
        if where is None or where[1] != 0 or where[0] in parts:
            break
        parts.append(where[0])
    m = len(parts)
    if m == 0:
        return None
    n = 0
    while start + (n + 1) * m <= len(values) and all(
        member_at.get(values[start + n * m + j]) == (parts[j], n) for j in range(m)
    ):
        n += 1
    return n * m if n * m >= 2 else None


_MAX_MEMORY_ROUNDS = 48
"""Parts halved or declined at most, for one block's budget: each round is
one plan evaluation and one simulation (linear-ish in the block)."""


def fit_memory(
    plan: Plan,
    ops: Sequence[Operation],
    dag: list[list[int]],
    model: CostModel | None,
    options: BatchFusion,
    dims: SymbolicDims | None,
    returned: set[Operation],
    memory: _Memory,
) -> Plan:
    """`plan`, cut down until its fused schedule holds at most the budget
    (`simulate_plan`): while the peak is over it, the part holding the most
    beyond its members there is halved (its search group's parts are cut
    into chunks of at most half its size, `_evaluate`'s `limits`) or, below
    two members (min-size), declined, and the plan is evaluated again.
    Stops when nothing fused holds more at the peak than unfused (a budget
    below what the unfused schedule needs there cannot be met by declining).
    Each group decided so gets a remark with "memory decided": the peak it
    would have made, the budget, and the peak after."""
    if not any(d.verdict == "fuse" for d in plan.decisions):
        return plan  # nothing fused: the captured schedule itself
    limit = memory.limit
    limits: dict[Operation, tuple[int, str]] = {}
    trigger: dict[Operation, int] = {}
    budget_text = memory.budget.describe(memory.captured.peak)
    current = plan
    simulated = simulate_plan(ops, current.decisions, memory.captured, dims, returned)
    for _ in range(_MAX_MEMORY_ROUNDS):
        if simulated.peak <= limit or simulated.culprit is None:
            break
        culprit = simulated.culprit
        group = culprit.group
        assert group is not None
        trigger.setdefault(group, simulated.peak)
        size = (len(culprit.members) + 1) // 2  # two chunks of it (a part of 2: declined)
        size = size if size >= max(options.min_size, 2) and size < len(culprit.members) else 0
        note = (
            f"memory decided: fused, the call would hold {_mib(trigger[group])} live at once, {budget_text}"
        )
        limits[group] = (size, note)
        current = _evaluate(ops, dag, current.keys, model, options, dims, returned, memory, limits)
        simulated = simulate_plan(ops, current.decisions, memory.captured, dims, returned)
    if not limits:
        return plan
    current.notes.extend(plan.notes)
    for group, (size, _) in limits.items():
        if size == 0:
            continue  # each declined part has its own remark
        fused = [d for d in current.decisions if d.group is group and d.verdict == "fuse"]
        everything = [m for d in current.decisions if d.group is group for m in d.members]
        key = fused[0].key if fused else None
        if key is None:
            continue
        current.notes.append((
            group,
            f"batch-fusion: {len(everything)} {key.op_name}{_names(everything)} fused in {len(fused)} chunks: "
            f"memory decided: as one group the call would hold {_mib(trigger[group])} live at once, "
            f"{budget_text}; in chunks the plan holds {_mib(simulated.peak)}",
        ))
    after = f"; declined, the plan holds {_mib(simulated.peak)}"
    current.decisions[:] = [
        dataclasses.replace(d, note=d.note + after) if d.verdict == "memory" else d for d in current.decisions
    ]
    return current


def _mib(count: float) -> str:
    """`12.00 MiB`: the remarks' unit for memory."""
    return f"{count / 2**20:.2f} MiB"


def _stacks_results(kind: str, members: Sequence[Operation]) -> bool:
    """Whether `_fuse` leaves the members' results as one stack (every kind
    but a grouped linear of different shapes)."""
    if kind != "grouped-linear":
        return True
    return len({(m.input.type, m.weight.type) for m in members}) == 1  # type: ignore[attr-defined]


def producers_first(groups: Sequence[Sequence[int]], ops: Sequence[Operation]) -> list[Sequence[int]]:
    """`groups` ordered so that a group comes after every group whose members
    produce its members' operands (ties by first member): deciding a group
    then knows where all its fused operands lie."""
    group_of: dict[Operation, int] = {}
    for g, members in enumerate(groups):
        for i in members:
            group_of[ops[i]] = g
    needs: list[set[int]] = [set() for _ in groups]
    for g, members in enumerate(groups):
        for i in members:
            for operand in ops[i].operands:
                producer = group_of.get(operand.owner)  # type: ignore[arg-type]
                if producer is not None and producer != g:
                    needs[g].add(producer)
    users: list[list[int]] = [[] for _ in groups]
    for g, deps in enumerate(needs):
        for d in deps:
            users[d].append(g)
    waiting = [len(deps) for deps in needs]
    ready = [g for g in range(len(groups)) if waiting[g] == 0]
    heapq.heapify(ready)
    order: list[Sequence[int]] = []
    while ready:
        g = heapq.heappop(ready)
        order.append(groups[g])
        for u in users[g]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(groups):
        raise AssertionError("batch-fusion: the groups depend on each other in a cycle (a bug in the search)")
    return order


def _choose_parts(
    model: CostModel | None,
    key: GroupKey,
    members: list[Operation],
    provenance: _Provenance,
    options: BatchFusion,
    group_of: dict[Operation, int] | None = None,
    dims: SymbolicDims | None = None,
) -> list[tuple[list[Operation], GroupEstimate | None]]:
    """The group as the search found it, split by the earlier stacks its
    members come from (when the cost model prefers several copy-free groups
    to one that restacks: regrouping from one level to the next), or cut in
    2, 4, 8, ... chunks of consecutive members (when smaller fused ops run
    faster), whichever the cost model prices best; each part with its
    estimate (None without a cost model)."""
    if model is None:
        return [(members, None)]
    target = options.target
    whole = estimate_group(model, key.kind, members, provenance, group_of, dims, target=target)
    best: list[tuple[list[Operation], GroupEstimate | None]] = [(members, whole)]
    best_gain = whole.gain_s
    parts = split_by_source(key.kind, members, provenance)
    if parts is not None and len(parts) > 1:
        fusable = [p for p in parts if len(p) >= options.min_size]
        estimates = [estimate_group(model, key.kind, p, provenance, group_of, dims, target=target) for p in fusable]
        gain = sum(max(e.gain_s, 0.0) for e in estimates)
        if gain > best_gain:
            best, best_gain = list(zip(fusable, estimates)), gain
    # Chunks: on a CPU a fused op over hundreds of members streams its data
    # from memory while each member's op worked in cache; a few chunks of
    # consecutive members (in source order, so each reads one slice) may beat
    # one group. The kernel curves say.
    ordered = reorder_by_source(key.kind, members, provenance)
    count = 2
    while len(members) // count >= max(options.min_size, 2):
        size = -(-len(members) // count)
        chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
        estimates = [estimate_group(model, key.kind, c, provenance, group_of, dims, target=target) for c in chunks]
        gain = sum(e.gain_s for e in estimates)
        if gain > best_gain * 1.05 and all(len(c) >= options.min_size for c in chunks):
            best, best_gain = list(zip(chunks, estimates)), gain
        count *= 2
    return best


_KINDS = ("linear", "layer_norm", "pointwise", "softmax")
"""The kind names the `kinds` option takes (linear covers the shared-input
and grouped forms)."""

_BATCH_OP = {
    "linear": "batch.linear",
    "grouped-linear": "batch.grouped_linear",
    "linear-shared-input": "batch.linear_shared_input",
    "layer_norm": "batch.layer_norm",
    "pointwise": "batch.pointwise",
    "softmax": "batch.pointwise",
}


def _name(op: Operation) -> str:
    """`torch.linear %linear.3`: the op and its result (the FX node's name)."""
    hint = op.results[0].name_hint if op.results else None
    return f"{op.name} %{hint}" if hint else op.name


def _names(ops: Sequence[Operation]) -> str:
    hints = [f"%{o.results[0].name_hint}" for o in ops[:3] if o.results and o.results[0].name_hint]
    more = ", ..." if len(ops) > 3 else ""
    return f" ({', '.join(hints)}{more})" if hints else ""


def _exclusion(op: Operation, kind: str, aliases: AliasAnalysis) -> str | None:
    """Why `op` (a candidate of fusion kind `kind`) must not be fused, or None."""
    for value in (*op.operands, *op.results):
        reason = _dynamic_exclusion(shape(value), kind)
        if reason is not None:
            return reason
    for value in (*op.operands, *op.results):
        if aliases.is_mutated(value):
            return f"mutation: %{value.name_hint or 'value'} (or a tensor it may alias) is written in place"
    return None


def _dynamic_exclusion(sizes: Sequence[int] | None, kind: str) -> str | None:
    """Why a value of shape `sizes` keeps its op out of fusion kind `kind`,
    or None. A symbolic size is fine only as the leading (batch) dim of a
    value whose other dims are static: the members then stack to
    `[N, ?, ...]` and the batched op computes the same math for any batch
    size (its lowering needs at most one `?` per reshape, written -1).
    Members' batch dims must also be one symbol: the grouping key holds the
    symbols (`SymbolicDims`), so unequal or unproven ones never meet in a
    group. The grouped GEMM form compares member types to find equal
    shapes, which `?` cannot prove: no dynamic shapes there."""
    if sizes is None or all_static(sizes):
        return None
    if kind == "grouped-linear":
        return "dynamic shape (grouped-linear members need static shapes)"
    if any(d == DYNAMIC for d in sizes[1:]):
        return "dynamic shape: a symbolic size other than the leading (batch) dim"
    if len(sizes) < 2 and kind in ("linear", "linear-shared-input", "layer_norm"):
        return "dynamic shape: the symbolic size is the feature dim"
    return None


def _batch_symbol(op: Operation, dims: SymbolicDims) -> Symbol | None:
    """The symbol of a candidate's symbolic batch dim (its first tensor
    operand's leading dim), None when it is static."""
    for value in op.operands:
        found = dims.dims(value)
        if found and isinstance(found[0], Symbol):
            return found[0]
    return None


def _symbolic_note(symbol: Symbol | None, dims: SymbolicDims) -> str:
    """The remark's note on the symbolic batch dim of a fused group: which
    symbol it is and the size the cost model priced it at."""
    if symbol is None:
        return ""
    hint = dims.hint(symbol)
    at = (
        f"its example size {hint}" if hint is not None
        else f"the default size {DEFAULT_SYMBOLIC_SIZE} (no example size known)"
    )
    return f"; symbolic batch dim {symbol}, priced at {at}"


_LAYER_NORM_TARGETS = frozenset(
    {"torch.nn.functional.layer_norm", "torch.layer_norm", "torch.ops.aten.layer_norm.default"}
)


def _remark_runtime_eps(op: Operation) -> None:
    """A remark on a layer norm left as an fx call because its eps is a
    value computed at run time (with `dynamic=True` Dynamo lifts
    `nn.LayerNorm`'s float eps into a tensor input read with `.item()`):
    its members could have different eps, so it is never fused."""
    if not isinstance(op, fx.CallFunctionOp) or op.target.data not in _LAYER_NORM_TARGETS:
        return
    for operand in op.operands[1:]:
        if not isinstance(operand.type, TensorType):
            emit_remark(
                op,
                f"batch-fusion: {_name(op)} not fused: its eps is a runtime value "
                f"(%{operand.name_hint or 'value'}, e.g. Dynamo's .item() of a lifted float "
                "under dynamic=True), so members cannot be shown to agree on it",
            )
            return


def _explain_rejections(
    ops: Sequence[Operation],
    keys: Sequence[GroupKey | None],
    result: SearchResult,
    options: BatchFusion,
) -> None:
    """Remarks for the candidates in no group: the key fields that kept them
    apart from the largest group of the same op (or from the first such
    candidate when that op formed no group), else too small or dependent."""
    reference: dict[str, tuple[GroupKey, str]] = {}
    sizes: dict[str, int] = {}
    for group in result.groups:
        key = keys[group[0]]
        if len(group) > sizes.get(key.op_name, 0):
            sizes[key.op_name] = len(group)
            first = ops[group[0]]
            where = location_of(first)
            reference[key.op_name] = (key, f"the {len(group)}-member group at {where or _name(first)}")
    for index in sorted(result.rejected):
        key = keys[index]
        if key is not None and key.op_name not in reference:
            where = location_of(ops[index])
            reference[key.op_name] = (key, f"{_name(ops[index])}" + (f" at {where}" if where else ""))
    grouped_keys = {keys[g[0]] for g in result.groups}
    for index, reason in sorted(result.rejected.items()):
        op, key = ops[index], keys[index]
        other = reference.get(key.op_name) if key is not None else None
        if other is not None and other[0] != key and key not in grouped_keys:
            emit_remark(op, f"batch-fusion: {_name(op)} not fused with {other[1]}: {key.mismatch(other[0])}")
        elif reason == "cycle":
            emit_remark(op, f"batch-fusion: {_name(op)} not fused: its group, fused together with "
                        "the others, would have made a cycle (split by depth)")
        elif reason == "dependent":
            emit_remark(op, f"batch-fusion: {_name(op)} not fused: it depends on, or is needed by, "
                        "a member of every group it could join")
        else:
            emit_remark(op, f"batch-fusion: {_name(op)} not fused: too small "
                        f"(fewer than min-size {options.min_size} independent members)")


# ---------------------------------------------------------------------------
# Cost estimate inputs
# ---------------------------------------------------------------------------


def _member_kernel(kind: str, op: Operation, dims: SymbolicDims | None = None) -> tuple[str, float]:
    """The measured kernel kind and size of one member op."""
    if kind in ("linear", "linear-shared-input", "grouped-linear"):
        x, w = op.operands[0], op.operands[1]
        k = x.type.get_shape()[-1]  # type: ignore[union-attr]
        return "linear", 2.0 * _elements(x, dims) * _elements(w) / max(k, 1)
    if kind == "layer_norm":  # the kernel's cost goes with the rows it normalizes
        normalized = 1
        for d in T.ints(op.normalized_shape):  # type: ignore[attr-defined]
            normalized *= max(d, 1)
        return "layer_norm", float(_elements(op.operands[0], dims) // normalized)
    facts = facts_of(op)
    tensors = sum(isinstance(v.type, TensorType) for v in op.operands)
    name = measured_kind(facts.cost if facts is not None else "pointwise", tensors)
    return name, float(_elements(op.results[0], dims))


def _operand_slots(kind: str, members: Sequence[Operation]) -> list[list[SSAValue]]:
    first = 1 if kind == "linear-shared-input" else 0
    return [[m.operands[i] for m in members] for i in range(first, len(members[0].operands))]


def _slot_source(values: Sequence[SSAValue], provenance: _Provenance) -> str:
    """How a stacked operand's members lie: "shared", "parameters",
    "stack" (one earlier stack), "stacks" (several), "pieces" (one strided
    view of a tensor) or "copy"."""
    if all(v is values[0] for v in values):
        return "shared"
    if provenance.constant_parameters and all(_is_parameter(v) for v in values):
        return "parameters"
    sources = [provenance.members.get(v) for v in values]
    if all(s is not None for s in sources):
        return "stack" if len({s[0] for s in sources}) == 1 else "stacks"  # type: ignore[index]
    if regular_pieces(values) is not None:
        return "pieces"
    return "copy"


def _results_feed_one_group(members: Sequence[Operation], group_of: dict[Operation, int] | None) -> bool:
    """Every use of every member's result is by a member of one other group
    (which reads the stack directly once fused: the unpack cancels)."""
    if not group_of:
        return False
    target = None
    for member in members:
        for result in member.results:
            for use in result.uses:
                g = group_of.get(use.operation)
                if g is None or (target is not None and g != target):
                    return False
                target = g
    return target is not None


def estimate_group(
    model: CostModel, kind: str, members: Sequence[Operation], provenance: _Provenance,
    group_of: dict[Operation, int] | None = None,
    dims: SymbolicDims | None = None,
    *,
    target: FusionTarget = "eager",
) -> GroupEstimate:
    """What fusing `members` is expected to save on the model's device
    (`group_of`: the search's group of each candidate, to see whether the
    results feed another group directly; `dims`: the example sizes of
    symbolic dims; `target`: what runs the result, see
    `estimate_group_inductor`)."""
    if target == "inductor":
        return estimate_group_inductor(model, kind, members, provenance, dims)
    n = len(members)
    member_kind, size = _member_kernel(kind, members[0], dims)
    estimate = GroupEstimate(members_s=n * model.kernel_seconds(member_kind, size), fused_s=0.0)
    if kind == "grouped-linear":  # the generic lowering: one linear per member
        estimate.fused_s = sum(model.kernel_seconds(*_member_kernel(kind, m, dims)) for m in members)
        return estimate
    slots = _operand_slots(kind, members)
    sources = [_slot_source(values, provenance) for values in slots]

    def live_views(count: int, slot: int) -> int:
        """`count` views of operand `slot`, unless it is absent or parameters
        (the exported module computes their views once, with the stack)."""
        if slot >= len(sources) or sources[slot] == "parameters":
            return 0
        return count

    if kind == "linear":
        estimate.fused_s = model.kernel_seconds("bmm", n * size)
        estimate.views += live_views(1, 1) + live_views(1, 2)  # weight transpose, bias unsqueeze
    elif kind == "linear-shared-input":
        estimate.fused_s = model.kernel_seconds("linear", n * size)
        estimate.views += 2 + live_views(1, 0)  # unflatten, movedim; weight flatten
    elif kind == "layer_norm":
        estimate.fused_s = model.kernel_seconds("layer_norm", n * size)
        first = members[0]
        affine = sum(v is not None for v in (first.weight, first.bias))  # type: ignore[attr-defined]
        estimate.fused_s += affine * model.kernel_seconds("binary", float(n * _elements(first.operands[0], dims)))
        estimate.views += sum(live_views(1, i) for i in range(1, 1 + affine))
    else:
        estimate.fused_s = model.kernel_seconds(member_kind, n * size)
    for values, source in zip(slots, sources):
        if source == "parameters":
            continue  # stacked once, at optimize time
        if source == "shared" and (
            kind in ("pointwise", "softmax")
            or (provenance.constant_parameters and _is_parameter(values[0]))
        ):
            continue  # broadcast, or one parameter stacked once
        # (else a shared operand of a linear or layer_norm is stacked N times: a copy)
        if source in ("stack", "pieces"):
            estimate.views += 1 if source == "stack" else 3
            continue
        copied = _bytes(values[0], dims) * n
        estimate.bytes_copied += copied
        estimate.copies_s += model.kernel_seconds("stack", copied)
    if not _results_feed_one_group(members, group_of):
        estimate.views += 1  # the unpack (cancelled when one group reads them all)
    estimate.views_s = estimate.views * model.view_overhead_s
    return estimate


def estimate_group_inductor(
    model: CostModel, kind: str, members: Sequence[Operation], provenance: _Provenance,
    dims: SymbolicDims | None = None,
) -> GroupEstimate:
    """What fusing `members` saves when Inductor compiles the result
    (`optimus_ir.cost_model.InductorCosts`): linears are extern calls at
    their eager price, a layer norm is a generated kernel (priced by the
    eager curve, its affine epilogue fused in), a pointwise op costs its
    data only (fused into a
    neighbouring kernel either way), views are free, and every stack of
    values that do not already lie in one tensor is a copy per call (a stack
    of few graph inputs a slow generated concatenation on top). So a group
    pays under Inductor when it replaces extern calls or kernel launches by
    fewer than the copies it adds; a pointwise group only when it copies
    nothing (then it keeps a fused chain stacked)."""
    costs = model.inductor
    n = len(members)
    member_kind, size = _member_kernel(kind, members[0], dims)
    estimate = GroupEstimate(members_s=0.0, fused_s=0.0, target="inductor")
    if kind in ("linear", "linear-shared-input", "grouped-linear"):
        estimate.members_s = sum(model.kernel_seconds(*_member_kernel(kind, m, dims)) for m in members)
        if kind == "grouped-linear":  # the generic lowering: one linear per member
            estimate.fused_s = estimate.members_s
            return estimate
        estimate.fused_s = model.kernel_seconds("bmm" if kind == "linear" else "linear", n * size)
    elif kind == "layer_norm":
        # Inductor's layer-norm kernel measured about half the eager op's
        # time, members and fused op alike: the eager curve prices both
        # (the ratio is what decides); the affine epilogue of the fused op
        # is fused into its kernel (its data only).
        estimate.members_s = n * model.kernel_seconds(member_kind, size)
        first = members[0]
        affine = sum(v is not None for v in (first.weight, first.bias))  # type: ignore[attr-defined]
        elements = float(n * _elements(first.operands[0], dims))
        estimate.fused_s = model.kernel_seconds(member_kind, n * size) + affine * model.data_seconds("binary", elements)
    else:
        estimate.members_s = n * (costs.fused_op_s + model.data_seconds(member_kind, size))
        estimate.fused_s = costs.fused_op_s + model.data_seconds(member_kind, n * size)
    slots = _operand_slots(kind, members)
    for values in slots:
        source = _slot_source(values, provenance)
        if source in ("parameters", "stack", "pieces"):
            continue  # folded (freeze), or views of one tensor: free under Inductor
        if source == "shared" and kind in ("pointwise", "softmax"):
            continue  # broadcast
        copied = _bytes(values[0], dims) * n
        estimate.bytes_copied += copied
        # a copy kernel as eagerly (computed values, or an extern torch.stack
        # of many graph inputs: `inductor_handoff`), and where Inductor
        # concatenates few graph inputs itself, its slow generated loop
        estimate.copies_s += model.kernel_seconds("stack", copied)
        if all(isinstance(v.owner, fx.PlaceholderOp) for v in values):
            wide = n >= INDUCTOR_EXTERN_STACK_MIN_INPUTS
            estimate.copies_s += costs.extern_stack_s if wide else n * costs.input_cat_s
    if kind not in ("linear", "linear-shared-input", "grouped-linear", "layer_norm") and _part_of_a_stack(
        slots, provenance
    ):
        # A pointwise group over an irregular part of one fused result (one
        # activation of several cycled over towers of mixed widths): its
        # results come out as a stack of their own, which the consumers
        # gather back with the other parts -- a copy. Left alone, Inductor
        # writes each member's result straight into the consumers'
        # concatenation (recsys-activations-64: 0.95x of Inductor alone with
        # every pointwise group fused, 1.11x with none; regular parts, every
        # other tower, do pay: recsys-uniform-64 1.56x with them, 1.31x without).
        copied = _bytes(members[0].results[0], dims) * n
        estimate.bytes_copied += copied
        estimate.copies_s += model.kernel_seconds("stack", copied)
    return estimate


def _part_of_a_stack(slots: Sequence[Sequence[SSAValue]], provenance: _Provenance) -> bool:
    """Some operand of the group is an irregular part of one earlier stack:
    its members all from one fused group, fewer than that group's members,
    at positions that are no strided slice of it (a gather, not a view)."""
    for values in slots:
        if _slot_source(values, provenance) != "stack":
            continue
        positions = sorted(provenance.members[v][1] for v in values)
        size = provenance.members[values[0]][2]
        steps = {b - a for a, b in zip(positions, positions[1:])}
        if len(values) < size and len(steps) > 1:
            return True
    return False


def reorder_by_source(
    kind: str, members: Sequence[Operation], provenance: _Provenance
) -> list[Operation]:
    """`members` in the order their first stacked operand lies in earlier
    stacks (stack by stack, member by member): a member's position in a
    batch op is free, and in this order that operand is a few contiguous
    slices of the stacks (one cat) instead of an interleaving (an unbind and
    a stack), and the results come out grouped like their sources."""
    for values in _operand_slots(kind, members):
        if _slot_source(values, provenance) in ("shared", "parameters"):
            continue
        known = [provenance.members.get(v) for v in values]
        if not any(known):
            continue

        def position(i: int) -> tuple[int, int, int]:
            where = known[i]
            return (0, where[0], where[1]) if where is not None else (1, i, 0)

        order = sorted(range(len(members)), key=position)
        return [members[i] for i in order]
    return list(members)


def split_by_source(
    kind: str, members: Sequence[Operation], provenance: _Provenance
) -> list[list[Operation]] | None:
    """The members partitioned by the earlier stack their first stacked
    operand comes from, when it comes from several (each part then reads its
    stack without a copy); None otherwise."""
    for values in _operand_slots(kind, members):
        if _slot_source(values, provenance) != "stacks":
            continue
        parts: dict[int, list[Operation]] = {}
        for member, value in zip(members, values):
            parts.setdefault(provenance.members[value][0], []).append(member)
        return list(parts.values())
    return None


# ---------------------------------------------------------------------------
# Rewriting
# ---------------------------------------------------------------------------


def _stack(values: Sequence[SSAValue], before: Operation) -> SSAValue:
    pack = B.PackOp(values)
    Rewriter.insert_op(pack, InsertPoint.before(before))
    pack.result.name_hint = (values[0].name_hint or "member") + "_stacked"
    return pack.result


def _fuse(
    kind: str, members: Sequence[Operation], returned: set[Operation] = frozenset()  # type: ignore[assignment]
) -> list[SSAValue]:
    """Replace `members` by packs, one batch op and an unpack, inserted
    before the last member; the unpack's results. The results of the
    members in `returned` (returned by the graph, or views of such) become
    copies of the unpacked views: the members of one stack share storage,
    and distinct outputs must stay distinct tensors."""
    anchor = members[-1]

    def operand(values: list[SSAValue | None]) -> SSAValue | None:
        if values[0] is None:
            return None
        return _stack(values, anchor)  # type: ignore[arg-type]

    if kind == "grouped-linear" and len({(m.input.type, m.weight.type) for m in members}) == 1:  # type: ignore[attr-defined]
        kind = "linear"  # equal shapes after all: one bmm
    if kind == "grouped-linear":
        has_bias = members[0].bias is not None  # type: ignore[attr-defined]
        grouped = B.GroupedLinearOp(
            [m.input for m in members],  # type: ignore[attr-defined]
            [m.weight for m in members],  # type: ignore[attr-defined]
            [m.bias for m in members] if has_bias else None,  # type: ignore[attr-defined]
        )
        Rewriter.insert_op(grouped, InsertPoint.before(anchor))
        for member, result in zip(members, grouped.outputs):
            result.name_hint = member.results[0].name_hint
        _replace_uses({m.results[0]: r for m, r in zip(members, grouped.outputs)})
        for member in members:
            Rewriter.erase_op(member)
        return []  # members are not stacked: nothing for later groups to read in place
    if kind == "linear":
        x = operand([m.input for m in members])  # type: ignore[attr-defined]
        w = operand([m.weight for m in members])  # type: ignore[attr-defined]
        b = operand([m.bias for m in members])  # type: ignore[attr-defined]
        new: Operation = B.LinearOp(x, w, b)  # type: ignore[arg-type]
    elif kind == "linear-shared-input":
        w = operand([m.weight for m in members])  # type: ignore[attr-defined]
        b = operand([m.bias for m in members])  # type: ignore[attr-defined]
        new = B.LinearSharedInputOp(members[0].input, w, b)  # type: ignore[attr-defined,arg-type]
    elif kind == "layer_norm":
        first = members[0]
        x = operand([m.input for m in members])  # type: ignore[attr-defined]
        w = operand([m.weight for m in members])  # type: ignore[attr-defined]
        b = operand([m.bias for m in members])  # type: ignore[attr-defined]
        new = B.LayerNormOp(x, T.ints(first.normalized_shape), w, b, eps=first.eps)  # type: ignore[attr-defined,arg-type]
    else:
        first = members[0]
        values: list[SSAValue] = []
        stacked: list[bool] = []
        for i in range(len(first.operands)):
            column = [m.operands[i] for m in members]
            if all(v is column[0] for v in column):
                values.append(column[0])
                stacked.append(False)
            else:
                values.append(_stack(column, anchor))
                stacked.append(True)
        assert any(stacked), "members computing one value are not fused"
        new = B.PointwiseOp(first.name, values, stacked, dict(first.properties))
    Rewriter.insert_op(new, InsertPoint.before(anchor))
    new.results[0].name_hint = (members[0].results[0].name_hint or "fused") + "_batch"
    unpack = B.UnpackOp(new.results[0])
    Rewriter.insert_op(unpack, InsertPoint.before(anchor))
    subst: dict[SSAValue, SSAValue] = {}
    for member, result in zip(members, unpack.outputs):
        result.name_hint = member.results[0].name_hint
        value: SSAValue = result
        if member in returned:
            value = _fresh_copy(result, anchor, member.results[0].name_hint)
        subst[member.results[0]] = value
    _replace_uses(subst)
    for member in members:
        Rewriter.erase_op(member)
    return list(unpack.outputs)


def _fresh_copy(value: SSAValue, anchor: Operation, name: str | None) -> SSAValue:
    """A copy of `value` in fresh storage, inserted before `anchor`:
    `cat([value])`; a rank-0 value (a piece of an unbind of a 1-d tensor),
    which cat cannot take, is copied with one dim added and taken off again."""
    rank0 = len(shape(value)) == 0
    ops: list[Operation] = []
    source = value
    if rank0:
        ops.append(T.UnsqueezeOp(value, 0))
        source = ops[-1].results[0]
    ops.append(T.CatOp([source], 0))
    if rank0:
        ops.append(T.SqueezeOp(ops[-1].results[0], [0]))
    for op in ops:
        Rewriter.insert_op(op, InsertPoint.before(anchor))
    ops[-1].results[0].name_hint = name
    return ops[-1].results[0]


def _replace_uses(subst: dict[SSAValue, SSAValue]) -> None:
    """Every use of a key of `subst` uses its value instead, each user's
    operands set once (a cat of the N members is patched in one step, not
    N times: per-use replacement rebuilds its operand tuple each time)."""
    users: dict[Operation, None] = {}
    for old in subst:
        for use in old.uses:
            users[use.operation] = None
    for user in users:
        patch_operands(user, subst)


_READ_ONLY_METHODS = frozenset({"item"})
"""Tensor methods `effects` calls impure (they leave the tensor world: a
host sync, a Python number) that write nothing: fused members may move
past them, and they may move (after their operands, never across a write).
With `dynamic=True` Dynamo reads every `nn.LayerNorm`'s eps with `.item()`
between the towers; as barriers they would cut every group apart."""


def is_barrier(op: Operation) -> bool:
    """An op nothing may move across: one with effects (`is_removable` is
    false), but for the read-only methods of `_READ_ONLY_METHODS`."""
    if is_removable(op):
        return False
    return not (
        isinstance(op, fx.CallMethodOp)
        and op.target.data in _READ_ONLY_METHODS
        and not op.kwargs.data
    )


def restore_dominance(block: Block) -> None:
    """Reorder `block` so that every op comes after the ops it uses, moving
    as little as possible: a stable topological sort (by original position)
    of each barrier-free segment. Ops with side effects never move, and no
    op crosses one (fused members all lie in one segment)."""
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    start = 0
    while start < len(ops):
        end = start
        while end < len(ops) and not is_barrier(ops[end]):
            end += 1
        if end > start:
            _sort_segment(block, ops[start:end], position)
        start = end + 1


def _sort_segment(block: Block, segment: list[Operation], position: dict[Operation, int]) -> None:
    inside = set(segment)
    missing: dict[Operation, int] = {}
    users: dict[Operation, list[Operation]] = {}
    out_of_order = False
    for op in segment:
        deps = set()
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation) and owner in inside:
                deps.add(owner)
                if position[owner] > position[op]:
                    out_of_order = True
        missing[op] = len(deps)
        for dep in deps:
            users.setdefault(dep, []).append(op)
    if not out_of_order:
        return
    ready = [(position[op], op) for op in segment if missing[op] == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for user in users.get(op, ()):
            missing[user] -= 1
            if missing[user] == 0:
                heapq.heappush(ready, (position[user], user))
    if len(order) != len(segment):
        raise AssertionError("batch-fusion: fused groups formed a cycle (a bug in the search)")
    anchor = segment[-1].next_op
    for op in order:
        op.detach()
        if anchor is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, anchor)


__all__ = [
    "BatchFusion",
    "GroupKey",
    "ScalarKey",
    "Plan",
    "candidate_key",
    "choose_plan",
    "fuse_block",
    "restore_dominance",
    "scalar_key",
]
