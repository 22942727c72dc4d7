"""View programs: a chain of view-like ops as `reshape` / `permute` steps.

Shared by the `fold-view-chain` canonicalization pattern
(`canonicalization_patterns/torch.py`) and the view-chain patterns of
`split-cat-simplify` (`split_cat_views.py`), which describe the replacement
of some plumbing as a small view program on a static shape, simplify it
(`simplify`) and emit the shortest op sequence for it (`emit`); see
`split_cat_views` for the rules. Its own module so that neither pattern
module imports the other (no import cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.ir import Operation, SSAValue

from optimus_ir.analysis import (
    AliasAnalysis,
    all_static,
    may_be_mutated,
    reaches_output,
    shape,
    stride_sensitive,
    view_closure,
)
from optimus_ir.dialects import torch as t

Shape = tuple[int, ...]
Step = tuple[str, tuple[int, ...]]
"""A view-program step: ("reshape", new shape) or ("permute", dims)."""

RESHAPE_LIKE_OPS: tuple[type[Operation], ...] = (
    t.ReshapeOp,
    t.ViewOp,
    t.FlattenOp,
    t.UnflattenOp,
    t.SqueezeOp,
    t.UnsqueezeOp,
)
"""Ops that only change the shape (row-major element order is kept)."""

PERMUTE_LIKE_OPS: tuple[type[Operation], ...] = (t.PermuteOp, t.TransposeOp, t.MovedimOp)
"""Ops that only reorder dims."""

VIEW_LIKE_OPS = RESHAPE_LIKE_OPS + PERMUTE_LIKE_OPS

ALWAYS_VIEW_OPS: tuple[type[Operation], ...] = (
    t.ViewOp,
    t.UnflattenOp,
    t.SqueezeOp,
    t.UnsqueezeOp,
    *PERMUTE_LIKE_OPS,
)
"""View-like ops whose result is a view of the input for any strides
(`reshape` and `flatten` copy when a view is impossible)."""


# ---------------------------------------------------------------------------
# View programs
# ---------------------------------------------------------------------------


def apply_step(cur: Shape, step: Step) -> Shape:
    """The shape after one step."""
    kind, arg = step
    if kind == "reshape":
        return arg
    return tuple(cur[d] for d in arg)


def movedim_dims(rank: int, source: int, destination: int) -> tuple[int, ...]:
    """The permute dims of `movedim(source, destination)` on a tensor of `rank`."""
    order = [d for d in range(rank) if d != source]
    order.insert(destination, source)
    return tuple(order)


def _permute_keeps_order(cur: Shape, dims: Sequence[int]) -> bool:
    """The permute moves only size-1 dims: it is a reshape."""
    moved = [d for d in dims if cur[d] != 1]
    return moved == sorted(moved)


def _simplify_once(start: Shape, steps: list[Step], squeeze_permutes: bool) -> list[Step] | None:
    """One simplification of the program, or None when none applies."""
    cur = start
    for i, (kind, arg) in enumerate(steps):
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        if kind == "reshape":
            if arg == cur:
                return steps[:i] + steps[i + 1 :]
            if nxt is not None and nxt[0] == "reshape":
                return steps[:i] + steps[i + 1 :]
        else:
            if tuple(arg) == tuple(range(len(arg))):
                return steps[:i] + steps[i + 1 :]
            if _permute_keeps_order(cur, arg):
                return [*steps[:i], ("reshape", apply_step(cur, (kind, arg))), *steps[i + 1 :]]
            if nxt is not None and nxt[0] == "permute":
                composed = tuple(arg[q] for q in nxt[1])
                return [*steps[:i], ("permute", composed), *steps[i + 2 :]]
            if nxt is not None and nxt[0] == "reshape":
                after = steps[i + 2] if i + 2 < len(steps) else None
                before = steps[i - 1] if i > 0 else None
                if (after is not None and after[0] == "permute") or (
                    before is not None and before[0] == "reshape"
                ):
                    swapped = _split_before_permute(cur, arg, nxt[1])
                    if swapped is not None:
                        return [*steps[:i], *swapped, *steps[i + 2 :]]
            if squeeze_permutes and 1 in cur:
                kept = [d for d in range(len(cur)) if cur[d] != 1]
                rank_of = {d: j for j, d in enumerate(kept)}
                inner = tuple(rank_of[d] for d in arg if cur[d] != 1)
                squeezed = tuple(cur[d] for d in kept)
                out = apply_step(cur, (kind, arg))
                return [
                    *steps[:i],
                    ("reshape", squeezed),
                    ("permute", inner),
                    ("reshape", out),
                    *steps[i + 1 :],
                ]
        cur = apply_step(cur, (kind, arg))
    return None


def _split_groups(src: Shape, dst: Shape) -> list[tuple[int, ...]] | None:
    """How `dst` splits each dim of `src` (consecutive groups whose product
    is the dim; a size-1 dim keeps one size-1 dim), or None when `dst` is not
    made by only splitting dims of `src`."""
    groups: list[tuple[int, ...]] = []
    j = 0
    for size in src:
        if size == 1:
            if j >= len(dst) or dst[j] != 1:
                return None
            groups.append((1,))
            j += 1
            continue
        group: list[int] = []
        acc = 1
        while acc < size and j < len(dst):
            acc *= dst[j]
            group.append(dst[j])
            j += 1
        if acc != size:
            return None
        groups.append(tuple(group))
    return groups if j == len(dst) else None


def _split_before_permute(cur: Shape, dims: Sequence[int], new: Shape) -> list[Step] | None:
    """`permute(dims)` then a reshape to `new` that only splits dims, as a
    reshape splitting the matching dims of `cur` first, then a permute."""
    permuted = tuple(cur[d] for d in dims)
    if len(new) <= len(permuted):
        return None
    groups = _split_groups(permuted, new)
    if groups is None:
        return None
    group_of = {d: groups[i] for i, d in enumerate(dims)}
    first: dict[int, int] = {}
    pre: list[int] = []
    for e in range(len(cur)):
        first[e] = len(pre)
        pre.extend(group_of[e])
    perm: list[int] = []
    for i, d in enumerate(dims):
        perm.extend(range(first[d], first[d] + len(groups[i])))
    return [("reshape", tuple(pre)), ("permute", tuple(perm))]


def _run_simplifier(start: Shape, steps: Sequence[Step], squeeze_permutes: bool) -> list[Step]:
    program = list(steps)
    for _ in range(8 * len(program) + 8):
        nxt = _simplify_once(start, program, squeeze_permutes)
        if nxt is None:
            return program
        program = nxt
    return program


def simplify(start: Shape, steps: Sequence[Step]) -> list[Step]:
    """The shortest equivalent program the rules find (see the module
    docstring); `start` is the static input shape."""
    plain = _run_simplifier(start, steps, squeeze_permutes=False)
    squeezed = _run_simplifier(start, plain, squeeze_permutes=True)
    return squeezed if len(squeezed) < len(plain) else plain


def end_shape(start: Shape, steps: Sequence[Step]) -> Shape:
    """The shape a program produces."""
    cur = start
    for step in steps:
        cur = apply_step(cur, step)
    return cur


def _squeezed_dims(longer: Shape, shorter: Shape) -> list[int] | None:
    """Dims of `longer` whose removal (all of size 1) gives `shorter`."""
    removed: list[int] = []
    j = 0
    for i, size in enumerate(longer):
        if j < len(shorter) and size == shorter[j]:
            j += 1
        elif size == 1:
            removed.append(i)
        else:
            return None
    return removed if j == len(shorter) else None


def _only_splits_dims(cur: Shape, new: Shape) -> bool:
    """Every non-1 dim of `cur` becomes a run of consecutive non-1 dims of
    `new` (size-1 dims come and go freely): a view for any strides."""
    a = [s for s in cur if s != 1]
    b = [s for s in new if s != 1]
    j = 0
    for size in a:
        acc = 1
        while acc < size and j < len(b):
            acc *= b[j]
            j += 1
        if acc != size:
            return False
    return j == len(b)


def _reshape_op(value: SSAValue, cur: Shape, new: Shape, always_view: bool) -> Operation:
    """The most specific op reshaping `value` (shape `cur`) to `new`."""
    if len(new) < len(cur):
        dims = _squeezed_dims(cur, new)
        if dims:
            return t.SqueezeOp(value, dims)
    if len(new) == len(cur) + 1:
        dims = _squeezed_dims(new, cur)
        if dims is not None and len(dims) == 1:
            return t.UnsqueezeOp(value, dims[0])
    if len(new) > len(cur):
        for a in range(len(cur)):
            b = a + len(new) - len(cur) + 1
            if new[:a] == cur[:a] and new[b:] == cur[a + 1 :] and prod(new[a:b]) == cur[a]:
                return t.UnflattenOp(value, a, list(new[a:b]))
    if always_view or _only_splits_dims(cur, new):
        return t.ViewOp(value, list(new))
    if len(new) < len(cur):
        for a in range(len(new)):
            b = a + len(cur) - len(new) + 1
            if cur[:a] == new[:a] and cur[b:] == new[a + 1 :] and prod(cur[a:b]) == new[a]:
                return t.FlattenOp(value, a, b - 1)
    return t.ReshapeOp(value, list(new))


def _permute_op(value: SSAValue, dims: Sequence[int]) -> Operation:
    rank = len(dims)
    for source in range(rank):
        for destination in range(rank):
            if source != destination and movedim_dims(rank, source, destination) == tuple(dims):
                return t.MovedimOp(value, [source], [destination])
    return t.PermuteOp(value, list(dims))


def emit(value: SSAValue, start: Shape, steps: Sequence[Step], always_view: bool) -> list[Operation]:
    """Ops computing the program on `value` (shape `start`), not inserted.
    With `always_view`, reshapes are emitted as guaranteed views (the
    caller knows they are valid: they replace a chain of views)."""
    ops: list[Operation] = []
    cur = start
    for step in steps:
        if step[0] == "reshape":
            op = _reshape_op(value, cur, step[1], always_view)
        else:
            op = _permute_op(value, step[1])
        ops.append(op)
        value = op.results[0]
        cur = apply_step(cur, step)
    return ops


def view_step(op: Operation) -> Step | None:
    """The view-program step of a view-like op (None when its result shape
    is not static)."""
    if isinstance(op, t.PermuteOp):
        return ("permute", t.ints(op.dims))
    if isinstance(op, t.TransposeOp):
        rank = len(op.input.type.get_shape())
        dims = list(range(rank))
        a, b = op.dim0.data, op.dim1.data
        dims[a], dims[b] = dims[b], dims[a]
        return ("permute", tuple(dims))
    if isinstance(op, t.MovedimOp):
        rank = len(op.input.type.get_shape())
        return ("permute", tuple(t.movedim_permutation(rank, t.ints(op.source), t.ints(op.destination))))
    if isinstance(op, RESHAPE_LIKE_OPS):
        out = shape(op.results[0])
        return ("reshape", out) if all_static(out) else None
    return None


def reshape_chain_may_change(
    result: SSAValue, source: SSAValue, aliases: AliasAnalysis | None = None
) -> bool:
    """Recomputing `result` from `source` through another chain of ops that
    may copy (reshape, flatten) changes when a copy is made, so whether
    `result` aliases `source` and its strides: observable when anything
    aliasing `source` may be written to (asked of `aliases` when given,
    instead of walking the class), a user of `result` (or of its views)
    depends on strides, or `result` (or a view of it) is returned: the
    caller would get a view of an input, or of another output, where the
    graph returned a copy (`x.t().reshape(24).reshape(6, 4)` is a fresh
    tensor; folded to `x.t()` it would write through to `x`)."""
    mutated = aliases.is_mutated(source) if aliases is not None else may_be_mutated(source)
    if mutated:
        return True
    closure = view_closure(result)
    return stride_sensitive(closure) or reaches_output(closure)


def one_use(value: SSAValue) -> bool:
    """Whether `value` has exactly one use (stops counting at two)."""
    count = 0
    for _ in value.uses:
        count += 1
        if count > 1:
            return False
    return count == 1


__all__ = [
    "ALWAYS_VIEW_OPS",
    "PERMUTE_LIKE_OPS",
    "RESHAPE_LIKE_OPS",
    "Shape",
    "Step",
    "VIEW_LIKE_OPS",
    "apply_step",
    "emit",
    "end_shape",
    "movedim_dims",
    "one_use",
    "reshape_chain_may_change",
    "simplify",
    "view_step",
]
