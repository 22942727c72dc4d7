"""Shared helpers of the split/cat simplification patterns.

Used by `split_cat_simplify` (core patterns), `split_cat_views` (view-chain
patterns) and the torch canonicalization patterns. Everything here is *local*: it follows `value.uses` and defining
ops from the values a pattern looks at, never scans the whole block.

What is specific to the split/cat family lives here: shapes, pieces of
split/unbind, runs of consecutive pieces, section offsets, users. The
aliasing, mutation and layout reasoning is the core analysis layer
(`optimus_ir.analysis`), which the passes import directly.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from optimus_ir.analysis import (
    AliasAnalysis,
    alias_class,
    can_replace_by_copy,
    class_is_mutated,
    shape,
)
from optimus_ir.foundation.diagnostics import emit_remark
from optimus_ir.dialects import torch as t
from optimus_ir.foundation.types import DYNAMIC

# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------


def tensor_type(value: SSAValue) -> TensorType | None:
    """The value's tensor type, or None when it is not a tensor."""
    ty = value.type
    return ty if isinstance(ty, TensorType) else None


def static_size(value: SSAValue, dim: int) -> int | None:
    """The static size of `dim` of `value`, or None (dynamic, not a tensor,
    dim out of range)."""
    sizes = shape(value)
    if sizes is None or not 0 <= dim < len(sizes) or sizes[dim] == DYNAMIC:
        return None
    return sizes[dim]


def static_sizes(values: Sequence[SSAValue], dim: int) -> list[int] | None:
    """The static size of `dim` of each of `values` (the inputs of a cat
    or stack), or None when one of them is not static."""
    sizes: list[int] = []
    for value in values:
        size = static_size(value, dim)
        if size is None:
            return None
        sizes.append(size)
    return sizes


def same_type(a: SSAValue, b: SSAValue) -> bool:
    """The two values have identical types (shape, dtype, device): one may
    replace the other without changing any user's view of the IR."""
    return a.type == b.type


def offsets(sections: Sequence[int]) -> list[int]:
    """Start offsets of the sections, plus the total at the end:
    `[2, 3, 4] -> [0, 2, 5, 9]`."""
    out = [0]
    for s in sections:
        out.append(out[-1] + s)
    return out


# ---------------------------------------------------------------------------
# Pieces of split / unbind
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """A value that is result `index` of a split or unbind op."""

    op: t.SplitOp | t.UnbindOp
    index: int

    @property
    def source(self) -> SSAValue:
        """The tensor that was split."""
        return self.op.input

    @property
    def dim(self) -> int:
        return self.op.dim.data


_Producer = TypeVar("_Producer", bound="t.CatOp | t.StackOp | t.SelectOp")


def made_on_same_dim(op: t.SplitOp | t.UnbindOp | t.UnsqueezeOp, kind: type[_Producer]) -> _Producer | None:
    """The op of class `kind` (a cat, a stack, a select) that makes `op`'s
    input along `op`'s own dim, or None: what `split(cat(xs, d), d)`,
    `unbind(stack(xs, d), d)` and `unsqueeze(select(x, d, i), d)` fold."""
    producer = op.input.owner
    if isinstance(producer, kind) and producer.dim.data == op.dim.data:
        return producer
    return None


def piece_of(value: SSAValue) -> Piece | None:
    """The (split or unbind op, result index) that defines `value`, or None."""
    if isinstance(value, OpResult) and isinstance(value.op, t.SplitOp | t.UnbindOp):
        return Piece(value.op, value.index)
    return None


def split_piece_of(value: SSAValue) -> Piece | None:
    """Like `piece_of`, for split results only."""
    piece = piece_of(value)
    return piece if piece is not None and isinstance(piece.op, t.SplitOp) else None


def sections_of(op: t.SplitOp) -> list[int]:
    """The explicit sections of a split."""
    return list(t.ints(op.sections))


@dataclass(frozen=True)
class Run:
    """Operands `operands[first:last]` of a join are results
    `start .. start + (last - first) - 1` of one split/unbind `op`, in order."""

    op: t.SplitOp | t.UnbindOp
    first: int
    last: int
    start: int

    @property
    def length(self) -> int:
        return self.last - self.first

    @property
    def stop(self) -> int:
        """One past the last piece index."""
        return self.start + self.length

    def covers_all(self) -> bool:
        """The run is every piece of its op, in order."""
        return self.start == 0 and self.length == len(self.op.results)


def consecutive_runs(values: Sequence[SSAValue]) -> list[Run | None]:
    """Group `values` into maximal runs of consecutive pieces of one
    split/unbind (piece i followed by piece i + 1 of the same op). Returns one
    entry per maximal group, in order: a `Run` for a group of pieces (length
    1 or more), None for a value that is not a piece."""
    runs: list[Run | None] = []
    i = 0
    n = len(values)
    while i < n:
        piece = piece_of(values[i])
        if piece is None:
            runs.append(None)
            i += 1
            continue
        j = i + 1
        while j < n:
            nxt = piece_of(values[j])
            if nxt is None or nxt.op is not piece.op or nxt.index != piece.index + (j - i):
                break
            j += 1
        runs.append(Run(piece.op, i, j, piece.index))
        i = j
    return runs


# ---------------------------------------------------------------------------
# Users
# ---------------------------------------------------------------------------


def users(value: SSAValue) -> Iterator[Operation]:
    """The ops using `value` (an op using it twice appears twice)."""
    for use in value.uses:
        yield use.operation


def has_uses(value: SSAValue) -> bool:
    return value.first_use is not None


def users_are_only(
    value: SSAValue, accept: type[Operation] | tuple[type[Operation], ...] | Callable[[Operation], bool]
) -> bool:
    """Every user of `value` is accepted: an instance of the given op
    class(es), or satisfies the predicate. True for an unused value."""
    if isinstance(accept, type | tuple):
        classes = accept
        return all(isinstance(op, classes) for op in users(value))
    return all(accept(op) for op in users(value))


def only_user(value: SSAValue) -> Operation | None:
    """The single op using `value` (possibly several times), or None."""
    found: Operation | None = None
    for use in value.uses:
        if found is None:
            found = use.operation
        elif use.operation is not found:
            return None
    return found


def results_unused(op: Operation) -> bool:
    """No result of `op` has a use."""
    return all(r.first_use is None for r in op.results)


def slice_like(
    rewriter: PatternRewriter, source: SSAValue, dim: int, start: int, end: int, like: SSAValue
) -> SSAValue:
    """Insert `slice(source, dim, start, end)` typed like `like` (which it
    provably equals) and return its result."""
    op = t.SliceOp(source, dim, start, end, 1, result_type=like.type)
    rewriter.insert(op)
    return op.result


def is_full_range(source: SSAValue, dim: int, start: int, end: int) -> bool:
    """`[start, end)` provably covers all of `source`'s `dim`."""
    size = static_size(source, dim)
    return start == 0 and size is not None and end >= size


__all__ = [
    "RemarkOnce",
    "copy_instead",
    "is_full_range",
    "slice_like",
    "Piece",
    "Run",
    "consecutive_runs",
    "has_uses",
    "made_on_same_dim",
    "offsets",
    "only_user",
    "piece_of",
    "results_unused",
    "same_type",
    "sections_of",
    "split_piece_of",
    "static_size",
    "static_sizes",
    "tensor_type",
    "users",
    "users_are_only",
]


# ---------------------------------------------------------------------------
# One copy where a view may not stand for a join
# ---------------------------------------------------------------------------


def copy_instead(
    join: Operation, view: SSAValue, source: SSAValue, aliases: AliasAnalysis | None
) -> Operation | None:
    """One copy of a view chain's result, `cat([view], 0)` (not inserted), to
    stand for the fresh `join` where the view itself may not (it is returned
    and would alias `source`, or a user depends on strides). Made where the
    join was, it reads the same storage at the same point and is fresh like
    the join. Only when the copy keeps the join's type and contiguous layout
    (`can_replace_by_copy`), and not where the join or `source` is written in
    place (that plumbing stays as it is)."""
    fresh = join.results[0]
    if aliases is not None:
        if aliases.is_mutated(fresh) or aliases.is_mutated(source):
            return None
    elif class_is_mutated(alias_class(fresh)) or class_is_mutated(alias_class(source)):
        return None
    if not can_replace_by_copy(fresh, view):
        return None
    return t.CatOp([view], 0, result_type=fresh.type)


class RemarkOnce:
    """Emits a pattern's "left alone" remark about an op once: the greedy
    driver tries an op again whenever something else in the graph changed,
    and the reason is the same each time. Ops are held weakly."""

    def __init__(self) -> None:
        self._seen: weakref.WeakSet[Operation] = weakref.WeakSet()

    def __call__(self, op: Operation, message: str) -> None:
        if op in self._seen:
            return
        self._seen.add(op)
        emit_remark(op, message)
