"""Which symbolic (`?`) dims are provably the same size.

Two `?` dims of the IR's types are not known equal: `tensor<?x16xf32>` says
nothing about which size. Batch fusion must know its members' batch dims are
one size before it stacks them, so this analysis gives every `?` dim of a
tensor value a *symbol*, equal symbols meaning equal sizes at run time:

* seeds: a graph input (`fx.placeholder`) whose `?` dims were named at
  import (`symbols ["s77", ""]`, Dynamo's SymInt expressions: Dynamo gives
  sizes it knows equal one symbol and guards on it) has those symbols; any
  other `?` dim of a placeholder, and every `?` dim of an op the rules below
  do not know, gets a fresh symbol equal only to itself (one dim of one
  value is its own size);
* propagation through the operator ops (and the batch ops batch-fusion
  creates, so the next level of a fused graph keeps its symbols) whose result sizes are operand sizes:
  pointwise ops (right-aligned broadcasting; a `?` result dim takes the
  symbol the `?` operand dims agree on, fresh when they disagree: with one
  of them 1 the result could be the other), layer_norm, linear (leading
  dims of the input), split/slice/unbind/select/unsqueeze/squeeze/
  transpose/permute/movedim (the dims they keep), cat/stack (the kept dims
  of their first input: the op requires all inputs to agree).

Nothing else is assumed, so a symbol equality is a proof; the analysis may
only miss equalities (then nothing fuses), never invent one.

`hint(symbol)` is the example's size for an imported symbol (the SymInt's
hint), for the cost model; None for fresh symbols.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, OpResult, SSAValue

from optimus_ir.dialects import batch as B
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.foundation.types import DYNAMIC


@dataclass(frozen=True)
class Symbol:
    """The identity of one symbolic size: `name` is the imported symbol
    (`"s77"`) or a fresh `?N` one."""

    name: str

    def __str__(self) -> str:
        return self.name


Dim = int | Symbol
"""A static size, or the symbol of a `?` size."""


class SymbolicDims:
    """Symbols of the `?` dims of the values of one block, computed on
    demand (memoized; each value's dims once) from the ops' operands."""

    def __init__(self, block: Block | None = None) -> None:
        self._dims: dict[SSAValue, tuple[Dim, ...]] = {}
        self._hints: dict[Symbol, int] = {}
        self._fresh = 0
        if block is not None:
            for op in block.ops:
                if isinstance(op, fx.PlaceholderOp):
                    self._seed(op)

    # -- queries --------------------------------------------------------

    def dims(self, value: SSAValue) -> tuple[Dim, ...] | None:
        """The dims of a tensor value (ints and symbols), None for a non-tensor."""
        if not isinstance(value.type, TensorType):
            return None
        known = self._dims.get(value)
        if known is not None:
            return known
        # iterative over the producers not yet known (deep chains must not
        # recurse once per op)
        stack = [value]
        while stack:
            top = stack[-1]
            if top in self._dims:
                stack.pop()
                continue
            owner = top.owner
            pending = [
                o
                for o in (owner.operands if isinstance(owner, Operation) else ())
                if isinstance(o.type, TensorType) and o not in self._dims
            ]
            if pending and _propagates(owner):
                stack.extend(pending)
                continue
            stack.pop()
            self._dims[top] = self._compute(top)
        return self._dims[value]

    def hint(self, dim: Dim) -> int | None:
        """The example's size of a dim: itself when static, the recorded
        hint of an imported symbol, else None."""
        if isinstance(dim, int):
            return dim
        return self._hints.get(dim)

    def size_hints(self, value: SSAValue, default: int) -> tuple[int, ...]:
        """The dims of `value` with every `?` replaced by its hint, or by
        `default` where there is none."""
        dims = self.dims(value) or ()
        out = []
        for d in dims:
            h = self.hint(d)
            out.append(default if h is None or h < 0 else h)
        return tuple(out)

    # -- computing ------------------------------------------------------

    def fresh(self) -> Symbol:
        """A symbol equal only to itself."""
        self._fresh += 1
        return Symbol(f"?{self._fresh}")

    def _seed(self, op: fx.PlaceholderOp) -> None:
        ty = op.result.type
        if not isinstance(ty, TensorType):
            return
        names = op.dim_symbols()
        hints = op.dim_hints()
        dims: list[Dim] = []
        for i, size in enumerate(ty.get_shape()):
            if size != DYNAMIC:
                dims.append(size)
                continue
            name = names[i] if names is not None else None
            symbol = Symbol(name) if name else self.fresh()
            if name and hints is not None and hints[i] >= 0:
                self._hints[symbol] = hints[i]
            dims.append(symbol)
        self._dims[op.result] = tuple(dims)

    def _compute(self, value: SSAValue) -> tuple[Dim, ...]:
        """The dims of `value` from its owner's operands (all known now)."""
        shape = value.type.get_shape()  # type: ignore[union-attr]
        derived = _derive(self, value) if isinstance(value, OpResult) else None
        out: list[Dim] = []
        for i, size in enumerate(shape):
            if size != DYNAMIC:
                out.append(size)
            elif derived is not None and i < len(derived) and isinstance(derived[i], Symbol):
                out.append(derived[i])
            else:
                out.append(self.fresh())
        return tuple(out)


def _propagates(op: Operation | None) -> bool:
    """Whether `op` has a rule (its operands' dims are needed first)."""
    return isinstance(op, _RULE_OPS) or _same_shape_fx_call(op)


_FX_SAME_SHAPE_TARGETS = frozenset(
    {"torch.nn.functional.layer_norm", "torch.layer_norm", "torch.ops.aten.layer_norm.default"}
)
"""fx call targets left unraised in practice whose result has the shape of
their first operand: a layer norm whose eps is a runtime value (Dynamo's
`.item()` of a lifted float under `dynamic=True`) stays an fx call."""


def _same_shape_fx_call(op: Operation | None) -> bool:
    return (
        isinstance(op, fx.CallFunctionOp)
        and op.target.data in _FX_SAME_SHAPE_TARGETS
        and len(op.operands) > 0
        and isinstance(op.operands[0].type, TensorType)
        and op.results[0].type == op.operands[0].type
    )


def _known(analysis: SymbolicDims, value: SSAValue) -> tuple[Dim, ...]:
    return analysis._dims[value]  # noqa: SLF001 - operands are computed first


def _derive(analysis: SymbolicDims, value: OpResult) -> Sequence[Dim | None] | None:
    """The candidate dims of `value` from its owner's rule (None: no rule);
    `_compute` keeps only the symbols at `?` positions."""
    op = value.op
    if isinstance(op, T.UnaryPointwiseOp | T.LayerNormOp | T.SoftmaxLikeOp) or _same_shape_fx_call(op):
        return _known(analysis, op.operands[0])
    if isinstance(op, T.BinaryPointwiseOp | T.WhereOp | T.MaskedFillOp):
        operands = [o for o in op.operands if isinstance(o.type, TensorType)]
        return _broadcast(analysis, [_known(analysis, o) for o in operands], len(value.type.get_shape()))  # type: ignore[union-attr]
    if isinstance(op, T.LinearOp):
        x = _known(analysis, op.input)
        return (*x[:-1], None)
    if isinstance(op, T.SplitOp | T.SliceOp | T.UnfoldOp):
        x = list(_known(analysis, op.input))
        x[op.dim.data] = None  # type: ignore[call-overload]
        return x
    if isinstance(op, T.UnbindOp | T.UnbindCopyOp | T.SelectOp):
        x = list(_known(analysis, op.input))
        del x[op.dim.data]
        return x
    if isinstance(op, T.UnsqueezeOp):
        x = list(_known(analysis, op.input))
        x.insert(op.dim.data, 1)
        return x
    if isinstance(op, T.SqueezeOp):
        drop = set(T.ints(op.dims))
        return [d for i, d in enumerate(_known(analysis, op.input)) if i not in drop]
    if isinstance(op, T.TransposeOp):
        x = list(_known(analysis, op.input))
        a, b = op.dim0.data, op.dim1.data
        x[a], x[b] = x[b], x[a]
        return x
    if isinstance(op, T.PermuteOp):
        x = _known(analysis, op.input)
        return [x[d] for d in T.ints(op.dims)]
    if isinstance(op, T.MovedimOp):
        x = _known(analysis, op.input)
        rank = len(x)
        source, destination = T.ints(op.source), T.ints(op.destination)
        out: list[Dim | None] = [None] * rank
        for s, d in zip(source, destination):
            out[d] = x[s]
        rest = iter(x[i] for i in range(rank) if i not in set(source))
        for i in range(rank):
            if i not in set(destination):
                out[i] = next(rest)
        return out
    if isinstance(op, B.PackOp):
        return (None, *_known(analysis, op.members[0]))
    if isinstance(op, B.UnpackOp):
        return _known(analysis, op.input)[1:]
    if isinstance(op, B.LayerNormOp):
        return _known(analysis, op.input)
    if isinstance(op, B.LinearOp):
        return (*_known(analysis, op.input)[:-1], None)
    if isinstance(op, B.LinearSharedInputOp):
        return (None, *_known(analysis, op.input)[:-1], None)
    if isinstance(op, B.PointwiseOp):
        rank = len(value.type.get_shape())  # type: ignore[union-attr]
        shapes = [
            _known(analysis, v)
            for v, stacked in zip(op.inputs, op.stacked_flags)
            if isinstance(v.type, TensorType) and (not stacked or len(v.type.get_shape()) == rank)
        ]
        return _broadcast(analysis, shapes, rank)
    if isinstance(op, T.CatOp):
        x = list(_known(analysis, op.inputs[0]))
        x[op.dim.data] = None  # type: ignore[call-overload]
        return x
    if isinstance(op, T.StackOp):
        x: list[Dim | None] = list(_known(analysis, op.inputs[0]))
        x.insert(op.dim.data, None)
        return x
    return None


def _broadcast(analysis: SymbolicDims, shapes: Sequence[tuple[Dim, ...]], rank: int) -> list[Dim | None]:
    """Right-aligned broadcasting: at each position the symbol that every
    operand with a `?` there agrees on (None when they disagree or none has
    one)."""
    out: list[Dim | None] = []
    for i in range(rank):
        offset = rank - i
        symbols = {s[-offset] for s in shapes if len(s) >= offset and isinstance(s[-offset], Symbol)}
        out.append(symbols.pop() if len(symbols) == 1 else None)
    return out


_RULE_OPS = (
    T.UnaryPointwiseOp,
    T.LayerNormOp,
    T.BinaryPointwiseOp,
    T.SoftmaxLikeOp,
    T.WhereOp,
    T.MaskedFillOp,
    T.LinearOp,
    T.SplitOp,
    T.SliceOp,
    T.UnfoldOp,
    T.UnbindOp,
    T.UnbindCopyOp,
    T.SelectOp,
    T.UnsqueezeOp,
    T.SqueezeOp,
    T.TransposeOp,
    T.PermuteOp,
    T.MovedimOp,
    T.CatOp,
    T.StackOp,
    B.PackOp,
    B.UnpackOp,
    B.LayerNormOp,
    B.LinearOp,
    B.LinearSharedInputOp,
    B.PointwiseOp,
)


__all__ = ["Dim", "Symbol", "SymbolicDims"]
