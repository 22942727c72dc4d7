"""`lower-to-fx`: turn every `torch`-dialect op back into `fx.call_function` ops.

Each operator becomes one call of a canonical torch target (a qualified name
that resolves by import path, as the importer spells it), chosen to compute
exactly the values of every spelling `raise-fx` accepts, bit for bit:

    torch.linear      -> torch._C._nn.linear           (F.linear)
    torch.layer_norm  -> torch.nn.functional.layer_norm; without affine
                         parameters optimus_ir.kernels.norms.layer_norm (F.layer_norm
                         with a weight of ones on CPU fp32: its faster
                         kernel path, the same values)
    torch.split       -> torch.split_with_sizes(x, [sections], dim) + getitems
                         (the ATen binding itself: torch.functional.split is
                         two Python frames more per call, the same views)
    torch.unbind      -> torch.unbind(x, dim) + getitems
    torch.view        -> torch.Tensor.view(x, [shape])
    torch.slice       -> operator.getitem(x, (:, ..., start:end:step))
    select/slice chain -> one operator.getitem(x, (i, :, a:b:c, ...)) where
                         no link is read by anything but the next
    torch.dropout     -> torch.nn.functional.dropout(x, p=, training=)
    scalar-first ops  -> the Python operator (`2.0 / x` is one over x times 2.0
                         in torch, not `div(2.0, x)`), rsub for reversed sub
    everything else   -> its declared `FACTS.lowers_to` (`declared_lowering`):
                         torch.<name>(...), F.<name>(...), with the
                         properties that differ from their defaults as
                         torch keyword arguments

Multi-result ops become a call returning a tuple and one `operator.getitem`
per used result. Properties equal to torch's defaults are not passed.
"""

from __future__ import annotations

from optimus_ir.foundation.statistics import current_pass_context

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    ModuleOp,
    StringAttr,
    TupleType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.foundation.rewriting import patch_operands
from optimus_ir.kernels.norms import LAYER_NORM_TARGET, STACKED_LAYER_NORM_ATTR, STACKED_LAYER_NORM_TARGET
from optimus_ir.dialects.literals import LiteralError, encode_literal


class LoweringError(ValueError):
    """A torch-dialect op with no fx form (the message names the op)."""


_GETITEM = "_operator.getitem"


class _Call:
    """Builds one fx.call_function from Python-valued args and kwargs."""

    __slots__ = ("operands", "index")

    def __init__(self) -> None:
        self.operands: list[SSAValue] = []
        self.index: dict[SSAValue, int] = {}

    def lit(self, value: Any) -> Attribute:
        try:
            return encode_literal(value, self.ref)
        except LiteralError as error:
            raise LoweringError(str(error)) from None

    def ref(self, value: Any) -> Attribute | None:
        if not isinstance(value, SSAValue):
            return None
        i = self.index.get(value)
        if i is None:
            i = self.index[value] = len(self.operands)
            self.operands.append(value)
        return fx.ref(i)


def call(
    target: str, args: Sequence[Any], kwargs: dict[str, Any], result_type: Attribute
) -> fx.CallFunctionOp:
    """An fx.call_function of `target`; SSA values in args become refs."""
    c = _Call()
    arg_attrs = [c.lit(a) for a in args]
    kwarg_attrs = {k: c.lit(v) for k, v in kwargs.items()}
    target_attr = _TARGETS.get(target)
    if target_attr is None:
        target_attr = _TARGETS[target] = StringAttr(target)
    return fx.CallFunctionOp(target_attr, arg_attrs, kwarg_attrs, c.operands, result_type)


_TARGETS: dict[str, StringAttr] = {}
"""The shared StringAttr of each target (a fixed, small set)."""


# ---------------------------------------------------------------------------
# Per-op lowerings: op -> list of new ops (the last one's result replaces the
# op's single result), or for multi-result ops (ops, results)
# ---------------------------------------------------------------------------

Lowering = Callable[[Any], "list[Operation] | tuple[list[Operation], list[SSAValue]]"]
LOWERINGS: dict[type[Operation], Lowering] = {}


def lowers(*classes: type[Operation]) -> Callable[[Lowering], Lowering]:
    def register(fn: Lowering) -> Lowering:
        for cls in classes:
            LOWERINGS[cls] = fn
        return fn

    return register


def _is_one(attr: Attribute) -> bool:
    """A beta/alpha equal to torch's default 1."""
    value = T.number_value(attr)
    return type(value) is not bool and value == 1


def _ints(attr: ArrayAttr) -> list[int]:
    return list(T.ints(attr))


@lowers(T.AddmmOp, T.BaddbmmOp)
def _addmm(op):
    kwargs = {k: getattr(op, k) for k in ("beta", "alpha") if not _is_one(getattr(op, k))}
    target = "torch.addmm" if isinstance(op, T.AddmmOp) else "torch.baddbmm"
    return [call(target, list(op.operands), kwargs, op.result.type)]



def _tuple_call(op, target: str, args: list[Any]):
    results = list(op.results)
    whole = call(target, args, {}, TupleType(tuple(r.type for r in results)))
    ops: list[Operation] = [whole]
    values: list[SSAValue | None] = []
    for i, res in enumerate(results):
        if res.first_use is None:
            values.append(None)
            continue
        get = call(_GETITEM, [whole.result, i], {}, res.type)
        ops.append(get)
        values.append(get.result)
    return ops, values


@lowers(T.SplitOp)
def _split(op):
    return _tuple_call(op, "torch.split_with_sizes", [op.input, _ints(op.sections), op.dim])


@lowers(T.UnbindOp)
def _unbind(op):
    return _tuple_call(op, "torch.unbind", [op.input, op.dim])


@lowers(T.UnbindCopyOp)
def _unbind_copy(op):
    return _tuple_call(op, "torch.unbind_copy", [op.input, op.dim])


@lowers(T.CatOp, T.StackOp)
def _join(op):
    target = "torch.cat" if isinstance(op, T.CatOp) else "torch.stack"
    return [call(target, [list(op.inputs), op.dim], {}, op.result.type)]


@lowers(T.SqueezeOp)
def _squeeze(op):
    dims = _ints(op.dims)
    dim: Any = dims[0] if len(dims) == 1 else tuple(dims)
    return [call("torch.squeeze", [op.input, dim], {}, op.result.type)]










@lowers(T.SliceOp)
def _slice(op):
    full = slice(None, None, None)
    index = (full,) * op.dim.data + (slice(op.start.data, op.end.data, op.step.data),)
    return [call(_GETITEM, [op.input, index], {}, op.result.type)]




@lowers(T.NanToNumOp)
def _nan_to_num(op):
    kwargs = {k: getattr(op, k) for k in ("nan", "posinf", "neginf") if getattr(op, k) is not None}
    return [call("torch.nan_to_num", [op.input], kwargs, op.result.type)]


@lowers(T.ClampOp)
def _clamp(op):
    kwargs = {k: getattr(op, k) for k in ("min", "max") if getattr(op, k) is not None}
    return [call("torch.clamp", [op.input], kwargs, op.result.type)]


@lowers(T.DropoutOp)
def _dropout(op):
    kwargs = {"p": op.p, "training": T.flag(op.train)}
    return [call("torch.nn.functional.dropout", [op.input], kwargs, op.result.type)]


_FORWARD = {T.AddOp: "torch.add", T.SubOp: "torch.sub", T.MulOp: "torch.mul", T.DivOp: "torch.div"}
_REVERSE = {T.AddOp: "_operator.add", T.MulOp: "_operator.mul", T.DivOp: "_operator.truediv"}


@lowers(T.AddOp, T.SubOp, T.MulOp, T.DivOp)
def _binary(op):
    kind = type(op)
    out = op.result.type
    kwargs: dict[str, Any] = {}
    alpha = getattr(op, "alpha", None)
    if alpha is not None and not _is_one(alpha):
        kwargs["alpha"] = alpha
    mode = op.rounding_mode.data if kind is T.DivOp else "none"
    if not T.flag(op.reverse):
        if mode != "none":
            kwargs["rounding_mode"] = mode
        other = op.rhs if op.rhs is not None else op.scalar
        return [call(_FORWARD[kind], [op.lhs, other], kwargs, out)]
    scalar = op.scalar
    if kind is T.SubOp:  # rsub(x, s, alpha) == s - alpha * x
        return [call("torch.rsub", [op.lhs, scalar], kwargs, out)]
    if kind is T.AddOp and kwargs:  # s + alpha * x
        scaled = call("torch.mul", [op.lhs, alpha], {}, out)
        return [scaled, call("torch.add", [scaled.result, scalar], {}, out)]
    if kind is T.DivOp and mode == "floor":
        return [call("_operator.floordiv", [scalar, op.lhs], {}, out)]
    if kind is T.DivOp and mode == "trunc":
        raise LoweringError(f"'{op.name}' with a reversed scalar and trunc rounding has no fx form")
    return [call(_REVERSE[kind], [scalar, op.lhs], {}, out)]


@lowers(T.SumOp, T.MeanOp)
def _reduce(op):
    target = "torch.sum" if isinstance(op, T.SumOp) else "torch.mean"
    dims = _ints(op.dims)
    keepdim = T.flag(op.keepdim)
    kwargs = {} if op.dtype is None else {"dtype": fx.DTypeAttr(op.dtype)}
    if not dims and not keepdim:
        return [call(target, [op.input], kwargs, op.result.type)]
    if not dims:
        dims = list(range(len(op.input.type.get_shape())))
    return [call(target, [op.input, dims, keepdim], kwargs, op.result.type)]


@lowers(T.SoftmaxOp, T.LogSoftmaxOp)
def _softmax(op):
    target = "torch.softmax" if isinstance(op, T.SoftmaxOp) else "torch.log_softmax"
    kwargs = {} if op.dtype is None else {"dtype": fx.DTypeAttr(op.dtype)}
    return [call(target, [op.input, op.dim], kwargs, op.result.type)]


@lowers(T.WhereOp)
def _where(op):
    other = op.other if op.other is not None else op.scalar
    return [call("torch.where", [op.condition, op.input, other], {}, op.result.type)]



# ---------------------------------------------------------------------------
# Positional calls: one call of a torch target, the arguments in order
# ---------------------------------------------------------------------------


def call_lowering(target: str, arguments: Callable[[Any], list[Any]]) -> Lowering:
    """The lowering to one call of `target` with `arguments(op)` as its
    positional arguments (no keyword arguments)."""

    def lower(op):
        return [call(target, arguments(op), {}, op.result.type)]

    return lower


_POSITIONAL_CALLS: tuple[tuple[type[Operation], str, Callable[[Any], list[Any]]], ...] = (
    (T.UnsqueezeOp, "torch.unsqueeze", lambda op: [op.input, op.dim]),
    (T.ReshapeOp, "torch.reshape", lambda op: [op.input, _ints(op.shape)]),
    (T.ViewOp, "torch.Tensor.view", lambda op: [op.input, _ints(op.shape)]),
    (T.FlattenOp, "torch.flatten", lambda op: [op.input, op.start_dim, op.end_dim]),
    (T.UnflattenOp, "torch.unflatten", lambda op: [op.input, op.dim, _ints(op.sizes)]),
    (T.PermuteOp, "torch.permute", lambda op: [op.input, _ints(op.dims)]),
    (T.TransposeOp, "torch.transpose", lambda op: [op.input, op.dim0, op.dim1]),
    (T.MovedimOp, "torch.movedim", lambda op: [op.input, _ints(op.source), _ints(op.destination)]),
    (T.UnfoldOp, "torch.Tensor.unfold", lambda op: [op.input, op.dim.data, op.size.data, op.step.data]),
    (T.SelectOp, "torch.select", lambda op: [op.input, op.dim, op.index]),
    (T.MaskedFillOp, "torch.masked_fill", lambda op: [op.input, op.mask, op.value]),
)
"""The ops whose lowering is one call of a target with positional
arguments: (op class, target, the arguments of an op)."""

for _cls, _target, _arguments in _POSITIONAL_CALLS:
    LOWERINGS[_cls] = call_lowering(_target, _arguments)

@lowers(T.LayerNormOp)
def _layer_norm(op):
    plain = op.weight is None and op.bias is None
    if plain and STACKED_LAYER_NORM_ATTR in op.attributes:
        target = STACKED_LAYER_NORM_TARGET
    else:
        target = LAYER_NORM_TARGET if plain else "torch.nn.functional.layer_norm"
    return [call(target, [op.input, _ints(op.normalized_shape), op.weight, op.bias, op.eps], {}, op.result.type)]


# ---------------------------------------------------------------------------
# Declared lowerings: every other op with `FACTS.lowers_to`
# ---------------------------------------------------------------------------


def declared_lowering(cls: type[Operation]) -> Lowering:
    """The lowering of an op from its facts: one call of `FACTS.lowers_to`
    with the operands positionally, then each property that differs from
    its default as a keyword argument under its torch name
    (`spellings.arguments`); a property without a default is always passed."""
    facts = T.facts_of(cls)
    assert facts is not None and facts.lowers_to is not None
    target = facts.lowers_to
    definitions = cls.get_irdl_definition().properties  # type: ignore[attr-defined]
    names = {a.property_name: a.name for a in facts.spellings.arguments if a.name != "inplace"}
    undeclared = set(definitions) - set(names)
    if undeclared:  # it would be lowered without them: a wrong value
        raise TypeError(
            f"'{cls.name}' has properties {sorted(undeclared)} that no declared argument "
            "names: it needs a lowering of its own"
        )
    fields = [(prop, torch_name, definitions[prop].default_value) for prop, torch_name in names.items()]

    def lower(op):
        kwargs = {}
        for prop, torch_name, default in fields:
            value = op.properties.get(prop)
            if value is not None and value != default:
                kwargs[torch_name] = value
        return [call(target, list(op.operands), kwargs, op.result.type)]

    return lower


def _register_declared() -> None:
    """A declared lowering for every torch op with `lowers_to` and no
    lowering of its own above."""
    for cls in T.TORCH.operations:
        facts = T.facts_of(cls)
        if facts is not None and facts.lowers_to is not None and cls not in LOWERINGS:
            LOWERINGS[cls] = declared_lowering(cls)


_register_declared()


# ---------------------------------------------------------------------------
# Index chains: select/slice views of one tensor, one getitem
# ---------------------------------------------------------------------------

_INDEXING = (T.SliceOp, T.SelectOp)


@dataclass
class _IndexChain:
    """A run of select/slice views of `base` not lowered yet: `entries[d]`
    is what indexes `base`'s dim d (None: all of it), `live` the dims of
    `base` the chain's result still has, in order. Its getitem goes where
    the chain's first op was: the view of `base` taken then, whatever
    happens to `base` later (no one else sees the views in between)."""

    base: SSAValue
    entries: list[int | slice | None]
    live: list[int]
    anchor: Operation

    @staticmethod
    def start(op: T.SliceOp | T.SelectOp) -> _IndexChain:
        """The empty chain on `op`'s input, placed where `op` is."""
        rank = len(op.input.type.get_shape())
        return _IndexChain(op.input, [None] * rank, list(range(rank)), op)

    def extended(self, op: T.SliceOp | T.SelectOp) -> _IndexChain | None:
        """This chain followed by `op`, or None where one getitem cannot
        say both (a second slice of a dim already sliced)."""
        dim = self.live[op.dim.data]
        if self.entries[dim] is not None:
            return None
        entries = list(self.entries)
        live = list(self.live)
        if isinstance(op, T.SelectOp):
            entries[dim] = op.index.data
            live.remove(dim)
        else:
            entries[dim] = slice(op.start.data, op.end.data, op.step.data)
        return _IndexChain(self.base, entries, live, self.anchor)

    def lowered(self, result_type: Attribute) -> fx.CallFunctionOp:
        """The one `operator.getitem` that reads the chain's view."""
        entries = list(self.entries)
        while entries and entries[-1] is None:
            entries.pop()
        full = slice(None, None, None)
        index = tuple(full if e is None else e for e in entries)
        return call(_GETITEM, [self.base, index], {}, result_type)


def _feeds_only_an_index(op: Operation) -> bool:
    """`op`'s view is read by nothing but one more select/slice: the two
    can be one getitem (no one else sees, returns or writes the view)."""
    use = op.results[0].get_unique_use()
    return use is not None and isinstance(use.operation, _INDEXING)


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


def lower_block(block: Block) -> int:
    """Lower every torch-dialect op of `block`; returns how many.

    The lowered values reach their users through a substitution map applied
    to each op's operands once, when the walk reaches it (users come after
    their operands in the block); the torch ops are erased at the end, last
    first, once nothing reads them.
    """
    lowered = 0
    subst: dict[SSAValue, SSAValue] = {}
    dead: list[Operation] = []
    chains: dict[SSAValue, _IndexChain] = {}
    for op in list(block.ops):
        if subst:
            patch_operands(op, subst)
        if isinstance(op, _INDEXING) and _lower_index_chain(op, block, chains, subst):
            dead.append(op)
            lowered += 1
            continue
        lower = LOWERINGS.get(type(op))
        if lower is None:
            if op.dialect_name() == "torch":
                raise LoweringError(f"'{op.name}' has no lowering to fx")
            continue
        produced = lower(op)
        if isinstance(produced, tuple):
            new_ops, values = produced
        else:
            new_ops, values = produced, [produced[-1].results[0]]
        for new in new_ops:
            new.location = op.location
        block.insert_ops_before(new_ops, op)
        for old, new_value in zip(op.results, values):
            if new_value is None:
                continue
            if old.name_hint and new_value.name_hint is None:
                new_value.name_hint = old.name_hint
            subst[old] = new_value
        dead.append(op)
        lowered += 1
    for op in reversed(dead):
        block.erase_op(op)
    return lowered


def _lower_index_chain(
    op: T.SliceOp | T.SelectOp,
    block: Block,
    chains: dict[SSAValue, _IndexChain],
    subst: dict[SSAValue, SSAValue],
) -> bool:
    """Lower `op` as part of a select/slice chain: put off while its view
    only feeds one more select/slice (`chains`), or emit the whole chain as
    one getitem. False where `op` is a chain of one: lowered as usual.

    raise-fx splits `x[0, ..., -1]` into one select per index; without this
    the exported graph would have an op more for each."""
    prior = chains.pop(op.input, None)
    chain = None if prior is None else prior.extended(op)
    if prior is not None and chain is None:  # the chain so far: one getitem first
        head = prior.lowered(op.input.type)
        head.location = op.input.owner.location
        head.result.name_hint = op.input.name_hint
        block.insert_op_before(head, prior.anchor)
        subst[op.input] = head.result
        patch_operands(op, subst)
    if _feeds_only_an_index(op):
        chains[op.result] = chain or _IndexChain.start(op).extended(op)
        return True
    if chain is None:
        return False
    getitem = chain.lowered(op.result.type)
    getitem.location = op.location
    getitem.result.name_hint = op.result.name_hint
    block.insert_op_before(getitem, chain.anchor)
    subst[op.result] = getitem.result
    return True


@dataclass(frozen=True)
class LowerToFxPass(ModulePass):
    """Lower every `torch`-dialect op to `fx.call_function` ops of canonical,
    importable torch targets that compute bit-identical values; multi-result
    ops become one call and an `operator.getitem` per used result."""

    name = "lower-to-fx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        record = current_pass_context(self.name).record
        for graph in list(op.ops):  # graphs are top-level; their blocks change
            if isinstance(graph, fx.GraphOp):
                record.bump("ops lowered", lower_block(graph.block))
