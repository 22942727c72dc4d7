"""View-chain patterns of `split-cat-simplify`: split/unbind -> join as views.

PyTorch's `SplitCatSimplifier` (torch/_inductor/fx_passes/split_cat.py) turns
the pieces of a split or unbind that are joined again (cat or stack, possibly
on another dim, possibly mixed with other tensors) into an
`unflatten -> movedim -> flatten` chain of the split input. The patterns here
do the same job on the operator dialect; the core patterns (same-dim
split -> cat, merging splits, ...) live in `split_cat_simplify.py`, which runs
`VIEW_PATTERNS` after its own.

All of them describe the replacement as a small *view program* on a static
shape -- a list of `reshape` and `permute` steps (`view_programs`) -- simplify it (`simplify`)
and emit the shortest op sequence for it (`emit`):

* reshape to the current shape, identity permutes: dropped;
* adjacent reshapes: the last wins; adjacent permutes: composed;
* a permute that keeps the non-size-1 dims in order: a reshape;
* a permute over size-1 dims: tried as squeeze, permute, unsqueeze (kept only
  when the whole program gets shorter).

Reshape steps are emitted as `torch.unflatten` / `torch.squeeze` /
`torch.unsqueeze` / `torch.view` when they only split dims or move size-1
dims (always a view, whatever the strides), else as `torch.flatten` /
`torch.reshape`; permute steps as `torch.movedim` (one dim moved) or
`torch.permute`.

Patterns (`VIEW_PATTERNS`, in order):

* `split-stack-to-view`: runs of consecutive, equally sized pieces of one
  split/unbind in a `stack` become a view of the split input; other stack
  inputs are kept (unsqueezed, and the stack becomes a cat).
* `split-cat-to-view`: the same for a `cat` on another dim than the split
  (and for any unbind -> cat); same-dim split -> cat is a core pattern.
* `split-reshape-join-to-view`: pieces each reshaped to one common shape
  (`view`, `reshape`, `squeeze`, `flatten`, ...) and joined: a permute and
  reshape of the split input.
* `fold-view-chain`: two adjacent view-like ops (reshape, view, flatten,
  unflatten, squeeze, unsqueeze, permute, transpose, movedim) that fold into
  at most one, and single view-like ops that do nothing.

Safety. A rewrite needs static shapes for what it reshapes. Replacing a
whole cat/stack (a fresh tensor) by a view of the split input is checked with
`split_cat_common.can_forward_as_alias`; a join that keeps a cat is fresh
anyway. Folding a chain that may copy (`reshape`, `flatten`) into a
different chain changes *when* a copy happens, so it needs the source not
to be mutated and no stride-sensitive user (`view_programs.reshape_chain_may_change`);
chains of guaranteed views stay guaranteed views (emitted as `torch.view`
and friends) and need no check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from optimus_ir.analysis import (
    AliasAnalysis,
    all_static,
    can_forward_as_alias,
    same_layout,
    shape,
)
from optimus_ir.dialects import torch as t
from optimus_ir.passes.canonicalization_patterns.split_cat_common import (
    Piece,
    RemarkOnce,
    copy_instead,
    offsets,
    piece_of,
    sections_of,
)

# fold-view-chain is a canonicalization pattern of the view ops; both it and
# the patterns here build on the view programs of `view_programs`.
from optimus_ir.passes.canonicalization_patterns.torch import FoldViewChain
from optimus_ir.passes.canonicalization_patterns.view_programs import (
    RESHAPE_LIKE_OPS,
    Shape,
    Step,
    apply_step,
    emit,
    movedim_dims,
    one_use,
    simplify,
)

# ---------------------------------------------------------------------------
# split/unbind -> join
# ---------------------------------------------------------------------------


@dataclass
class _Run:
    """Join operands `first..first+length-1` are pieces `start..` of `op`,
    each wrapped (when `wrap` is set) in one reshape-like op to shape `wrap`."""

    op: t.SplitOp | t.UnbindOp
    first: int
    start: int
    length: int
    wrap: Shape | None

    @property
    def stop(self) -> int:
        return self.start + self.length

    def covers_all(self) -> bool:
        return self.start == 0 and self.length == len(self.op.results)


@dataclass(frozen=True)
class _Input:
    """A join operand seen as a (possibly wrapped) piece."""

    piece: Piece
    wrap: Shape | None
    wrapper: Operation | None


def _as_input(value: SSAValue, wrapped: bool) -> _Input | None:
    """`value` as a piece of a split/unbind, or (`wrapped`) as a reshape-like
    op of one, used only here."""
    if not wrapped:
        piece = piece_of(value)
        return None if piece is None else _Input(piece, None, None)
    owner = value.owner
    if not isinstance(owner, RESHAPE_LIKE_OPS) or not one_use(value):
        return None
    piece = piece_of(owner.operands[0])
    out = shape(value)
    if piece is None or not all_static(out):
        return None
    return _Input(piece, out, owner)


def _section(op: t.SplitOp | t.UnbindOp, index: int) -> int:
    """The size of piece `index` (O(1): asked once per join operand)."""
    return op.sections.data[index].data if isinstance(op, t.SplitOp) else 1


def _find_runs(join: t.CatOp | t.StackOp, wrapped: bool) -> list[_Run | SSAValue]:
    """The join's operands grouped: maximal runs of consecutive, equally sized
    pieces of one split/unbind (same wrap shape), or single other values."""
    items: list[_Run | SSAValue] = []
    current: _Run | None = None
    for i, value in enumerate(join.inputs):
        info = _as_input(value, wrapped)
        if info is not None and current is not None:
            if (
                info.piece.op is current.op
                and info.piece.index == current.stop
                and info.wrap == current.wrap
                and _section(current.op, info.piece.index) == _section(current.op, current.start)
            ):
                current.length += 1
                continue
        if info is None:
            current = None
            items.append(value)
            continue
        current = _Run(info.piece.op, i, info.piece.index, 1, info.wrap)
        items.append(current)
    return items


def _run_program(run: _Run, base_shape: Shape, join: Operation) -> list[Step]:
    """The view program turning the run's slice of the split input (shape
    `base_shape`) into what the run contributes to the join."""
    op = run.op
    d = op.dim.data
    k = run.length
    steps: list[Step] = []
    if isinstance(op, t.SplitOp):
        s = _section(op, run.start)
        unflat = (*base_shape[:d], k, s, *base_shape[d + 1 :])
        steps.append(("reshape", unflat))
        steps.append(("permute", movedim_dims(len(unflat), d, 0)))
        piece = (*base_shape[:d], s, *base_shape[d + 1 :])
    else:
        steps.append(("permute", movedim_dims(len(base_shape), d, 0)))
        piece = (*base_shape[:d], *base_shape[d + 1 :])
    if run.wrap is not None:
        piece = run.wrap
        steps.append(("reshape", (k, *piece)))
    c = join.dim.data
    steps.append(("permute", movedim_dims(len(piece) + 1, 0, c)))
    if isinstance(join, t.CatOp):
        out = list(apply_step((k, *piece), steps[-1]))
        out[c : c + 2] = [out[c] * out[c + 1]]
        steps.append(("reshape", tuple(out)))
    return steps


class _SplitJoinToView(RewritePattern):
    """Shared rewrite of the split/unbind -> join patterns; subclasses say
    which joins and runs they take.

    A run (two or more pieces) is taken when its pieces are used by nothing
    else (the split then shrinks or goes), or when it is all the pieces and
    all their users are joins (`_dies_eventually`). Its *base* is the split
    input when the run is all its pieces; else one section of a coarser
    split (private runs of a split); else a slice (private runs of an unbind). Adjacent chosen runs of one split with equal section sizes are
    concatenated on the split dim first and share one view chain."""

    join_types: tuple[type[Operation], ...] = (t.CatOp, t.StackOp)
    wrapped: bool = False

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        self.aliases = aliases
        self.remark = RemarkOnce()

    def accepts(self, join: t.CatOp | t.StackOp, run: _Run) -> bool:
        return True

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, self.join_types):
            return
        join: t.CatOp | t.StackOp = op  # type: ignore[assignment]
        chosen_runs = self._choose_runs(join)
        if chosen_runs is None:
            return
        items, runs, private, new_splits = chosen_runs
        chosen = {id(r) for r in runs}
        pending: list[Operation] = []
        values: list[SSAValue] = []
        to_stack: list[SSAValue] = []
        is_stack = isinstance(join, t.StackOp)
        c = join.dim.data

        def flush() -> None:
            if not to_stack:
                return
            if len(to_stack) == 1:
                new: Operation = t.UnsqueezeOp(to_stack[0], c)
            else:
                new = t.StackOp(list(to_stack), c)
            pending.append(new)
            values.append(new.results[0])
            to_stack.clear()

        def base_of(run: _Run) -> SSAValue:
            x = run.op.input
            if run.covers_all():
                return x
            if id(run) in private and isinstance(run.op, t.SplitOp):
                new_split, index_of = new_splits[run.op]
                return new_split.results[index_of[run.start]]
            if isinstance(run.op, t.SplitOp):
                starts = offsets(sections_of(run.op))
                lo, hi = starts[run.start], starts[run.stop]
            else:
                lo, hi = run.start, run.stop
            sl = t.SliceOp(x, run.op.dim.data, lo, hi)
            pending.append(sl)
            return sl.results[0]

        whole = False
        bases_all_input = False
        groups = _adjacent_groups(items, chosen, list(join.inputs))
        for group in groups:
            if isinstance(group, SSAValue):
                (to_stack if is_stack else values).append(group)
                continue
            flush()
            bases = [base_of(run) for run in group]
            bases_all_input = len(bases) == 1 and bases[0] is group[0].op.input
            d = group[0].op.dim.data
            if len(bases) == 1:
                base = bases[0]
            else:
                cat = t.CatOp(bases, d)
                pending.append(cat)
                base = cat.results[0]
            merged_run = _Run(group[0].op, group[0].first, group[0].start, sum(r.length for r in group), group[0].wrap)
            base_shape = shape(base)
            steps = simplify(base_shape, _run_program(merged_run, base_shape, join))
            chain = emit(base, base_shape, steps, always_view=False)
            pending.extend(chain)
            values.append(chain[-1].results[0] if chain else base)
            whole = not chain and base is group[0].op.input
        flush()
        if len(values) == 1:
            result = values[0]
            layout_kept = same_layout(join.results[0], result)
            # A chain over all of the split input (one group, no slice or
            # merged section) leaves no other view of that storage: returned,
            # it is as good as the input itself (`whole`).
            all_of_input = len(groups) == 1 and bases_all_input
            if not can_forward_as_alias(
                join.results[0],
                runs[0].op.input,
                whole=whole or all_of_input,
                contiguous=layout_kept,
                aliases=self.aliases,
            ):
                copy = copy_instead(join, result, runs[0].op.input, self.aliases)
                if copy is None:
                    _abandon(pending, new_splits)
                    self.remark(
                        join,
                        f"{self.name}: {join.name} left alone: its result would alias "
                        "its split input and a copy would not keep its layout "
                        "(or the tensors are written in place)",
                    )
                    return
                pending.append(copy)
                result = copy.results[0]
        else:
            new_join = t.CatOp(values, c)
            pending.append(new_join)
            result = new_join.results[0]
        if result.type != join.results[0].type or not _fewer_ops(
            join, runs, private, new_splits, len(pending)
        ):
            # a device or dtype the views would not keep; or no gain
            _abandon(pending, new_splits)
            return
        self._commit(rewriter, join, runs, private, new_splits, pending, result)

    def _choose_runs(
        self, join: t.CatOp | t.StackOp
    ) -> tuple[list[_Run | SSAValue], list[_Run], set[int], dict[t.SplitOp, tuple[t.SplitOp, dict[int, int]]]] | None:
        """The join's inputs as runs and single values, the runs taken (of
        two or more pieces, static, accepted, private or dying eventually),
        the ids of the private ones, and the coarser splits that private
        partial runs of a split become sections of; None when no run is taken."""
        items = _find_runs(join, self.wrapped)
        runs = [
            item
            for item in items
            if isinstance(item, _Run)
            and item.length >= 2
            and all_static(shape(item.op.input))
            and self.accepts(join, item)
        ]
        if not runs:
            return None
        private = {id(r) for r in runs if self._private(r)}
        runs = [r for r in runs if id(r) in private or _dies_eventually(r)]
        if not runs:
            return None
        # Private partial runs of a split become sections of one coarser split.
        new_splits: dict[t.SplitOp, tuple[t.SplitOp, dict[int, int]]] = {}
        for run in runs:
            if (
                isinstance(run.op, t.SplitOp)
                and id(run) in private
                and not run.covers_all()
                and run.op not in new_splits
            ):
                merged = [r for r in runs if r.op is run.op and id(r) in private]
                new_splits[run.op] = _merged_split(run.op, merged)
        return items, runs, private, new_splits

    def _commit(
        self,
        rewriter: PatternRewriter,
        join: t.CatOp | t.StackOp,
        runs: list[_Run],
        private: set[int],
        new_splits: dict[t.SplitOp, tuple[t.SplitOp, dict[int, int]]],
        pending: list[Operation],
        result: SSAValue,
    ) -> None:
        """Replace the join by the `pending` ops computing `result`; erase
        the wrappers of the runs' pieces and the splits left unused, and
        replace the splits that became coarser ones."""
        for old, (new_split, _) in new_splits.items():
            rewriter.insert(new_split, InsertPoint.before(old))
        join_inputs = list(join.inputs)  # indexing the operand range is O(n) per access
        wrappers = [
            join_inputs[r.first + i].owner
            for r in runs
            if r.wrap is not None
            for i in range(r.length)
        ]
        rewriter.replace(join, pending, [result])
        for wrapper in wrappers:
            rewriter.erase(wrapper)  # type: ignore[arg-type]
        sources = {id(r.op): r.op for r in runs}
        for old in sources.values():
            if isinstance(old, t.SplitOp) and old in new_splits:
                new_split, index_of = new_splits[old]
                merged_starts = {r.start for r in runs if r.op is old and id(r) in private}
                mapping: list[SSAValue | None] = [None] * len(old.results)
                for i, j in index_of.items():
                    if i not in merged_starts:
                        mapping[i] = new_split.results[j]
                rewriter.replace(old, [], mapping)
            elif all(r.first_use is None for r in old.results):
                rewriter.erase(old)

    @staticmethod
    def _private(run: _Run) -> bool:
        """Every piece of the run is used once, by the join (or its wrapper)."""
        return all(one_use(run.op.results[i]) for i in range(run.start, run.stop))


def _abandon(
    pending: Sequence[Operation],
    new_splits: dict[t.SplitOp, tuple[t.SplitOp, dict[int, int]]],
) -> None:
    """Forget ops built for a rewrite that is not made: a detached op still
    counts as a use of its operands (a value it reads would never look dead,
    and erasing that value later fails)."""
    for op in [*pending, *(split for split, _ in new_splits.values())]:
        op.drop_all_references()


def _fewer_ops(
    join: Operation,
    runs: Sequence[_Run],
    private: set[int],
    new_splits: dict[t.SplitOp, tuple[t.SplitOp, dict[int, int]]],
    added: int,
) -> bool:
    """The rewrite leaves fewer FX nodes than it removes, counting one node
    per op and one `getitem` per used piece of a split/unbind (a split whose
    pieces several joins share is charged to them in equal parts)."""
    before: float = 1  # the join
    after = added
    taken: dict[int, int] = {}  # source op -> pieces that die with the join
    merged: dict[int, int] = {}  # source op -> runs merged into one section
    sources: dict[int, Operation] = {}
    for run in runs:
        sources[id(run.op)] = run.op
        if run.wrap is not None:
            before += run.length  # the wrappers
        if id(run) in private:
            taken[id(run.op)] = taken.get(id(run.op), 0) + run.length
            if run.op in new_splits:
                merged[id(run.op)] = merged.get(id(run.op), 0) + 1
    shared = {id(r.op) for r in runs if id(r) not in private}
    for key, op in sources.items():
        live = sum(1 for r in op.results if r.first_use is not None)
        if key in shared:
            # Every join using the pieces takes its share of the split and
            # its getitems, which go when the last of them is rewritten.
            joins = {id(u.operation) for r in op.results for u in r.uses}
            before += (1 + live) / max(len(joins), 1)
            continue
        before += 1 + live
        left = live - taken.get(key, 0) + merged.get(key, 0)
        after += left + (1 if left else 0)
    return after < before


def _dies_eventually(run: _Run) -> bool:
    """A run whose pieces have other users is worth rewriting only when it is
    every piece of its split/unbind and every user of the pieces is a join
    (or a reshape feeding one): the other joins get rewritten too and the
    split goes. Otherwise the rewrite would only add a slice and views."""
    if not run.covers_all():
        return False
    for piece in run.op.results:
        for use in piece.uses:
            user = use.operation
            if isinstance(user, t.CatOp | t.StackOp):
                continue
            if isinstance(user, RESHAPE_LIKE_OPS) and all(
                isinstance(u.operation, t.CatOp | t.StackOp) for u in user.results[0].uses
            ):
                continue
            return False
    return True


def _adjacent_groups(
    items: Sequence[_Run | SSAValue], chosen: set[int], inputs: Sequence[SSAValue]
) -> list[SSAValue | list[_Run]]:
    """The join operands in order: other values one by one, chosen runs in
    groups of adjacent runs of one split/unbind with equal section sizes
    (and wrap shapes); a run not chosen gives its operands back as values."""
    out: list[SSAValue | list[_Run]] = []
    for item in items:
        if isinstance(item, _Run) and id(item) in chosen:
            prev = out[-1] if out and isinstance(out[-1], list) else None
            if (
                prev is not None
                and prev[-1].op is item.op
                and prev[-1].wrap == item.wrap
                and _section(item.op, item.start) == _section(prev[-1].op, prev[-1].start)
            ):
                prev.append(item)
            else:
                out.append([item])
        elif isinstance(item, _Run):
            out.extend(inputs[item.first : item.first + item.length])
        else:
            out.append(item)
    return out


def _merged_split(op: t.SplitOp, runs: Sequence[_Run]) -> tuple[t.SplitOp, dict[int, int]]:
    """A split like `op` with each run's pieces merged into one section, and
    for each old piece index that starts a section, the new result index."""
    sections = sections_of(op)
    starts = {r.start: r.stop for r in runs}
    new_sections: list[int] = []
    index_of: dict[int, int] = {}
    i = 0
    while i < len(sections):
        stop = starts.get(i, i + 1)
        index_of[i] = len(new_sections)
        new_sections.append(sum(sections[i:stop]))
        i = stop
    return t.SplitOp(op.input, new_sections, op.dim.data), index_of


class SplitStackToView(_SplitJoinToView):
    """`stack` of consecutive, equally sized pieces of a split or unbind ->
    a view of the split input.

    `x: [B, N*D]`, `stack(split(x, D, dim=1), dim=0)` is
    `x.unflatten(1, (N, D)).movedim(1, 0)`; `stack(unbind(x, 1), dim=0)` is
    `x.movedim(1, 0)`. Runs of pieces amid other inputs become views of a
    merged split section (or a slice of the unbound tensor); the other inputs
    stay, unsqueezed (consecutive ones stacked), and the stack becomes a cat.
    """

    name = "split-stack-to-view"
    join_types = (t.StackOp,)


class SplitCatToView(_SplitJoinToView):
    """`cat` on dim `c` of consecutive, equally sized pieces of a split on
    another dim `d` (or of an unbind on any dim) -> a view chain of the split
    input: `unflatten(d, (n, s)) -> movedim(d, c) -> flatten(c, c + 1)`.

    `x: [B, N*D]`, `cat(split(x, D, dim=1), dim=0)` is
    `x.unflatten(1, (N, D)).movedim(1, 0).flatten(0, 1)`. Other cat inputs stay
    in place. A split -> cat on the same dim is left to the core patterns."""

    name = "split-cat-to-view"
    join_types = (t.CatOp,)

    def accepts(self, join: t.CatOp | t.StackOp, run: _Run) -> bool:
        return isinstance(run.op, t.UnbindOp) or run.op.dim.data != join.dim.data


class SplitReshapeJoinToView(_SplitJoinToView):
    """Pieces of a split/unbind each reshaped to one common shape `S`
    (`view`, `reshape`, `flatten`, `squeeze`, ...; each used once), then
    stacked or concatenated -> a permute and reshape of the split input:
    `x.unflatten(d, (n, s)).movedim(d, 0).reshape(n, *S).movedim(0, c)`
    (`.flatten(c, c + 1)` for a cat), simplified.

    `stack([p.squeeze(1) for p in split(x, 1, dim=1)], dim=1)` is `x`
    (the stack must not reach the output or be mutated: see
    `can_forward_as_alias`)."""

    name = "split-reshape-join-to-view"
    wrapped = True


# ---------------------------------------------------------------------------
# View chains
# ---------------------------------------------------------------------------


def view_patterns(aliases: AliasAnalysis | None = None) -> list[RewritePattern]:
    """The view-chain patterns, in the order `split-cat-simplify` runs them;
    the split -> join ones ask `aliases` (when given) for alias facts."""
    return [
        SplitStackToView(aliases),
        SplitCatToView(aliases),
        SplitReshapeJoinToView(aliases),
        FoldViewChain(),
    ]


VIEW_PATTERNS: list[RewritePattern] = view_patterns()
"""The view-chain patterns without an analysis (they walk alias classes)."""

__all__ = [
    "VIEW_PATTERNS",
    "view_patterns",
    "FoldViewChain",
    "SplitCatToView",
    "SplitReshapeJoinToView",
    "SplitStackToView",
]
