"""Candidate keys and grouping of `batch-fusion`.

For every candidate op (a `torch` dialect op whose declaration names a
fusion kind, `OpFacts.fusion`) the *grouping key*: everything that changes
what the op computes -- its kind, the shape, dtype and device of every
operand, every property (scalars by Python type and exact bits,
`ScalarKey`), the result's dtype, and the barrier-free segment of the block
it lies in. Also what keeps an op out (mutation, dynamic shapes, a runtime
eps, a softmax over another dim) and the remarks that explain why a
candidate joined no group.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Sequence
from typing import Protocol

import attrs
from xdsl.dialects.builtin import FloatAttr, IntAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from optimus_ir.analysis import AliasAnalysis, all_static, shape
from optimus_ir.analysis.independent_sets import SearchResult
from optimus_ir.analysis.symbolic_dims import Symbol, SymbolicDims
from optimus_ir.analysis.cost_model import FusionTarget
from optimus_ir.foundation.diagnostics import emit_remark, location_of
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import facts_of
from optimus_ir.foundation.traits import is_removable
from optimus_ir.foundation.types import DYNAMIC, device_of


class FusionSettings(Protocol):
    """The options of `batch-fusion` that grouping, planning and pricing
    read (the fields of the pass, `BatchFusion`)."""

    name: str
    min_size: int
    max_size: int
    grouped_linear: bool
    constant_parameters: bool
    checked_parameters: bool
    target: FusionTarget
    chains: bool

    def enabled(self, kind: str) -> bool:
        """Whether groups of fusion kind `kind` are considered."""
        ...


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


@attrs.frozen
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


@attrs.frozen
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
            f"batch-fusion: {member_name(op)} not fused: it normalizes dim {op.dim.data}, not the "  # type: ignore[attr-defined]
            "last dim (only softmax over the last dim is fused)",
        )


@attrs.frozen
class SharedInputSet:
    """Linears reading one input value (with one weight and bias type): they
    can fuse on that input (`linear-shared-input`) or, each on its own, with
    same-shape linears reading other inputs (`linear`, a stacked input)."""

    members: tuple[int, ...]
    """Indices (into the block's ops) of the set's candidates, increasing."""
    cross_keys: tuple[GroupKey, ...]
    """Each member's key as a plain (or grouped) linear."""


@attrs.frozen
class Candidates:
    """The grouping keys of a block's ops (None: no candidate), with the
    shared-input linears' alternative keys."""

    keys: list[GroupKey | None]
    shared_sets: list[SharedInputSet]
    """In order of first member."""


def candidate_keys(
    ops: Sequence[Operation], options: FusionSettings, aliases: AliasAnalysis, dims: SymbolicDims
) -> Candidates:
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
                    emit_remark(op, f"batch-fusion: {member_name(op)} not fused: {reason}")
                    key = None
            if key is not None and key.kind == "linear-shared-input":
                cross = candidate_key(op, segment, set(), options.grouped_linear, dims)
                if cross is not None and _exclusion(op, cross.kind, aliases) is None:
                    sets.setdefault(_shared_input_of(op), []).append((index, cross))
        keys.append(key)
    # dict insertion order: sets in order of their first member (no id order)
    shared_sets = [
        SharedInputSet(tuple(i for i, _ in entries), tuple(c for _, c in entries))
        for entries in sets.values()
        if len(entries) >= options.min_size
    ]
    return Candidates(keys, shared_sets)


def _shared_input_of(op: Operation) -> tuple:
    """What linears fusing on a shared input agree on: the input value, the
    weight type and the bias type."""
    return (op.input, op.weight.type, op.bias.type if op.bias is not None else None)  # type: ignore[attr-defined]


KINDS = ("linear", "layer_norm", "pointwise", "softmax")
"""The kind names the `kinds` option takes (linear covers the shared-input
and grouped forms)."""


def member_name(op: Operation) -> str:
    """`torch.linear %linear.3`: the op and its result (the FX node's name)."""
    hint = op.results[0].name_hint if op.results else None
    return f"{op.name} %{hint}" if hint else op.name


def member_names(ops: Sequence[Operation]) -> str:
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
                f"batch-fusion: {member_name(op)} not fused: its eps is a runtime value "
                f"(%{operand.name_hint or 'value'}, e.g. Dynamo's .item() of a lifted float "
                "under dynamic=True), so members cannot be shown to agree on it",
            )
            return


def explain_rejections(
    ops: Sequence[Operation],
    keys: Sequence[GroupKey | None],
    result: SearchResult,
    options: FusionSettings,
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
            reference[key.op_name] = (key, f"the {len(group)}-member group at {where or member_name(first)}")
    for index in sorted(result.rejected):
        key = keys[index]
        if key is not None and key.op_name not in reference:
            where = location_of(ops[index])
            reference[key.op_name] = (key, f"{member_name(ops[index])}" + (f" at {where}" if where else ""))
    grouped_keys = {keys[g[0]] for g in result.groups}
    for index, reason in sorted(result.rejected.items()):
        op, key = ops[index], keys[index]
        other = reference.get(key.op_name) if key is not None else None
        if other is not None and other[0] != key and key not in grouped_keys:
            emit_remark(op, f"batch-fusion: {member_name(op)} not fused with {other[1]}: {key.mismatch(other[0])}")
        elif reason == "cycle":
            emit_remark(op, f"batch-fusion: {member_name(op)} not fused: its group, fused together with "
                        "the others, would have made a cycle (split by depth)")
        elif reason == "dependent":
            emit_remark(op, f"batch-fusion: {member_name(op)} not fused: it depends on, or is needed by, "
                        "a member of every group it could join")
        else:
            emit_remark(op, f"batch-fusion: {member_name(op)} not fused: too small "
                        f"(fewer than min-size {options.min_size} independent members)")


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
