"""`split-cat-simplify`: remove split/cat/stack/unbind plumbing.

The operator-dialect counterpart of Inductor's `split_cat` FX passes
(`torch/_inductor/fx_passes/split_cat.py`), as small named patterns run by
the bounded greedy driver. raise-fx gives one canonical op per spelling
(torch.split / Tensor.split / chunk / aten.split / aten.split_with_sizes are
all `torch.split` with explicit sections and a non-negative dim), so each
pattern covers the torch-level and the ATen-level form.

Safety rules (see `split_cat_common`):

* rewrites that keep every value a view of the same storage it viewed before
  (split of a split, dead pieces, squeeze of size-1 pieces) need no aliasing
  check;
* rewrites that replace a fresh tensor (a cat/stack result, or a piece of
  one) by (a view of) another tensor are done only when
  `can_forward_as_alias` proves the new aliasing unobservable: nothing
  involved is written in place, no user depends on strides, and the value
  does not become a graph output aliasing an input;
* types never change: a replacement must have the replaced value's type
  (a new op takes the old, possibly more refined, type as its result type
  only where the values are provably equal).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from optimus_ir.analysis import (
    AliasAnalysis,
    alias_class,
    all_static,
    can_forward_as_alias,
    can_replace_by_copy,
    class_is_mutated,
    contiguous_part,
    fresh_reaches_output,
    known_contiguous,
    layout_insensitive,
    reaches_output,
    same_layout,
    shape,
    strides_of,
    view_closure,
)
from optimus_ir.dialects import torch as t
from optimus_ir.passes.canonicalization_patterns.split_cat_common import (
    RemarkOnce,
    Run,
    consecutive_runs,
    copy_instead,
    is_full_range,
    made_on_same_dim,
    offsets,
    only_user,
    same_type,
    sections_of,
    slice_like,
    split_piece_of,
    static_size,
    static_sizes,
    tensor_type,
    users,
)
from optimus_ir.passes.canonicalization_patterns.torch import (  # the local folds of the ops
    EraseDeadPlumbing,
    FoldViewChain,
    MergeDeadSplitPieces,
    SingleInputJoin,
    SplitWhole,
)
from optimus_ir.passes.split_cat_pointwise import PointwiseOfCat
from optimus_ir.passes.split_cat_views import view_patterns
from optimus_ir.passes.canonicalization_patterns.view_programs import Step, apply_step, emit, movedim_dims, simplify
from optimus_ir.foundation.rewriting import GreedyRewriteDriver, PatternPass


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


class AliasAwarePattern(RewritePattern):
    """A pattern that asks the running pass's `AliasAnalysis` (computed once
    per pass run, kept up to date by the driver's listener) instead of
    walking alias classes on every match. Without one (the pattern used on
    its own) it walks, with the same or a less cautious answer."""

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        self.aliases = aliases
        self.remark = RemarkOnce()

    def forwardable(
        self, fresh: SSAValue, source: SSAValue, *, whole: bool = False, contiguous: bool = False
    ) -> bool:
        """`can_forward_as_alias`, with the pass's analysis."""
        return can_forward_as_alias(
            fresh, source, whole=whole, contiguous=contiguous, aliases=self.aliases
        )

    def mutated(self, value: SSAValue) -> bool:
        """Something aliasing `value` may be written in place."""
        if self.aliases is not None:
            return self.aliases.is_mutated(value)
        return class_is_mutated(alias_class(value))

    def returned(self, value: SSAValue) -> bool:
        """`value` or one of its views is a graph output."""
        return fresh_reaches_output(value, self.aliases)


def _copy_of_whole(
    pattern: AliasAwarePattern, op: t.CatOp | t.StackOp, source: SSAValue, rewriter: PatternRewriter
) -> bool:
    """The join `op` equals all of `source` but may not become it (e.g. it is
    returned and would alias an input): replace it by one copy of `source`,
    `cat([source], d)`, made where the join was (so it reads the same
    storage at the same point), when that keeps the layout. Only where the
    obstacle is the output: a value written in place keeps its plumbing."""
    if not pattern.returned(op.result) or pattern.mutated(op.result) or pattern.mutated(source):
        return False
    if not can_replace_by_copy(op.result, source):
        return False
    dim = op.dim.data if isinstance(op, t.CatOp) else 0
    rewriter.replace(op, [t.CatOp([source], dim, result_type=op.result.type)])
    return True


def _drop(ops: Sequence[Operation]) -> None:
    """Forget ops built for a rewrite that is not made (a detached op still
    counts as a use of its operands)."""
    for op in ops:
        op.drop_all_references()


def _forward_pieces(
    rewriter: PatternRewriter,
    join: SSAValue,
    pieces: Sequence[SSAValue],
    inputs: Sequence[SSAValue],
    pattern: AliasAwarePattern,
) -> bool:
    """Replace each used piece of `join` (a fresh cat/stack result split or
    unbound again at the same boundaries) by the join's matching input, where
    that is safe. Returns whether anything changed."""
    if pattern.mutated(join):
        return False
    changed = False
    for piece, value in zip(pieces, inputs):
        if piece.first_use is None or not same_type(piece, value):
            continue
        # the piece (a view of the fresh join) and the input must be laid out
        # alike (checked by can_forward_as_alias), or no user may care
        if not pattern.forwardable(piece, value, whole=True):
            continue
        rewriter.replace_all_uses_with(piece, value)
        changed = True
    return changed


# ---------------------------------------------------------------------------
# patterns
# ---------------------------------------------------------------------------

class SplitOfSplit(RewritePattern):
    """`split(split(x, S, d)[i], T, d)` where piece i has no other user: one
    `split(x, S[:i] + T + S[i+1:], d)`. The whole tree of such nested splits
    under the topmost one is flattened into one split at once (merging two
    levels at a time would rebuild a split of n pieces n times). The pieces
    stay views of the same parts of `x`."""

    name = "split-of-split"

    @staticmethod
    def _parent(op: t.SplitOp) -> t.SplitOp | None:
        """The split whose piece `op` splits again on the same dim, when
        `op` is that piece's only user."""
        outer_piece = split_piece_of(op.input)
        if outer_piece is None:
            return None
        outer = outer_piece.op
        assert isinstance(outer, t.SplitOp)
        if outer.dim.data != op.dim.data or only_user(op.input) is not op:
            return None
        return outer

    @staticmethod
    def _child(piece: SSAValue, dim: int) -> t.SplitOp | None:
        user = only_user(piece)
        if isinstance(user, t.SplitOp) and user.dim.data == dim:
            return user
        return None

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.SplitOp):
            return
        top = self._parent(op)
        if top is None:
            return
        while (up := self._parent(top)) is not None:
            top = up
        dim = top.dim.data
        # pre-order walk of the tree: leaves in order, nested splits found
        leaves: list[tuple[SSAValue, int]] = []
        nested: list[t.SplitOp] = []
        pending = [iter(zip(top.results, sections_of(top)))]
        while pending:
            item = next(pending[-1], None)
            if item is None:
                pending.pop()
                continue
            piece, size = item
            child = self._child(piece, dim)
            if child is not None:
                nested.append(child)
                pending.append(iter(zip(child.results, sections_of(child))))
            else:
                leaves.append((piece, size))
        merged = t.SplitOp(
            top.input, [size for _, size in leaves], dim, result_types=[p.type for p, _ in leaves]
        )
        rewriter.insert(merged, InsertPoint.before(top))
        for (piece, _), new in zip(leaves, merged.results):
            rewriter.replace_all_uses_with(piece, new)
            if not new.name_hint:
                new.name_hint = piece.name_hint
        for inner in reversed(nested):
            rewriter.erase(inner)
        rewriter.erase(top)


class SplitSqueezeToUnbind(RewritePattern):
    """`split(x, [1] * n, d)` whose every piece is only squeezed on `d`
    (`squeeze(dims=[d])`): `unbind(x, d)`, the squeezes become its results."""

    name = "split-squeeze-to-unbind"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.SplitOp):
            return
        dim = op.dim.data
        if any(s.data != 1 for s in op.sections.data):  # no list: called at every visit
            return
        size = static_size(op.input, dim)
        if size is not None and size != len(op.results):
            return
        squeezes: list[list[t.SqueezeOp]] = []
        found = False
        for piece in op.results:
            ops: list[t.SqueezeOp] = []
            for user in users(piece):
                if not isinstance(user, t.SqueezeOp) or list(t.ints(user.dims)) != [dim]:
                    return
                ops.append(user)
                found = True
            squeezes.append(ops)
        if not found:
            return
        types = t.infer_unbind_types(op.input.type, dim, len(op.results))
        for i, ops in enumerate(squeezes):
            if ops:
                types[i] = ops[0].result.type
                if any(s.result.type != types[i] for s in ops):
                    return
        unbind = t.UnbindOp(op.input, dim, result_types=types)
        rewriter.insert(unbind)
        for ops, r in zip(squeezes, unbind.results):
            for squeeze in ops:
                rewriter.replace(squeeze, [], [r])
        rewriter.erase(op)


class CatOfSplitPieces(AliasAwarePattern):
    """A cat on the split dim of consecutive pieces of one split:

    * all pieces in order, nothing else: the split's input;
    * one consecutive run, nothing else: a slice of the input;
    * runs of two or more consecutive pieces among other inputs: each run
      becomes one piece of a coarser split of the input (fewer cat inputs).

    The first two make the fresh cat result a view: done only when
    `can_forward_as_alias` allows. Other users of the pieces keep working
    (the original split stays while it has users)."""

    name = "cat-of-split-pieces"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.CatOp):
            return
        dim = op.dim.data
        runs = consecutive_runs(list(op.inputs))
        if len(runs) == 1:
            run = runs[0]
            if run is not None and self._single_run(op, run, dim, rewriter):
                return
        mergeable = [
            r
            for r in runs
            if r is not None
            and r.length >= 2
            and isinstance(r.op, t.SplitOp)
            and r.op.dim.data == dim
        ]
        if not mergeable:
            return
        # One coarser split per source split, with each run merged.
        by_split: dict[t.SplitOp, list[Run]] = {}
        for r in mergeable:
            by_split.setdefault(r.op, []).append(r)  # type: ignore[arg-type]
        replacement: dict[int, SSAValue] = {}  # first operand index -> merged piece
        dropped: set[int] = set()
        for split, split_runs in by_split.items():
            sections = sections_of(split)
            merged_sections: list[int] = []
            index_of_run: dict[int, int] = {}
            starts = {r.start: r for r in split_runs}
            i = 0
            while i < len(sections):
                r = starts.get(i)
                if r is not None and all(
                    not (other.start < r.stop and r.start < other.stop) or other is r
                    for other in split_runs
                ):
                    index_of_run[id(r)] = len(merged_sections)
                    merged_sections.append(sum(sections[r.start : r.stop]))
                    i = r.stop
                else:
                    merged_sections.append(sections[i])
                    i += 1
            if not index_of_run:
                continue
            coarse = t.SplitOp(split.input, merged_sections, dim)
            rewriter.insert(coarse)
            for r in split_runs:
                k = index_of_run.get(id(r))
                if k is None:
                    continue
                replacement[r.first] = coarse.results[k]
                dropped.update(range(r.first + 1, r.last))
        if not replacement:
            return
        inputs = list(op.inputs)
        new_inputs = [
            replacement.get(i, v) for i, v in enumerate(inputs) if i not in dropped
        ]
        new_cat = t.CatOp(new_inputs, dim, result_type=op.result.type)
        rewriter.replace(op, [new_cat])

    def _offsets(self, split: t.SplitOp) -> list[int]:
        """`offsets(sections_of(split))`, computed once per split op (split
        properties never change; a rewrite makes a new op): K cats of runs
        of one K-piece split would otherwise be quadratic."""
        cache: dict[t.SplitOp, list[int]] = self.__dict__.setdefault("_offset_cache", {})
        found = cache.get(split)
        if found is None:
            found = cache[split] = offsets(sections_of(split))
        return found

    def _single_run(self, op: t.CatOp, run: Run, dim: int, rewriter: PatternRewriter) -> bool:
        split = run.op
        if not isinstance(split, t.SplitOp) or split.dim.data != dim:
            return False
        source = split.input
        if run.covers_all():
            if not same_type(op.result, source):
                return False
            if not self.forwardable(op.result, source, whole=True):
                return _copy_of_whole(self, op, source, rewriter)
            rewriter.replace(op, [], [source])
            return True
        if run.length == 1:
            return False  # cat of one piece: a copy of a view; leave it
        starts = self._offsets(split)
        start, end = starts[run.start], starts[run.stop]
        if not self.forwardable(op.result, source, contiguous=contiguous_part(source, dim)):
            return False
        new = slice_like(rewriter, source, dim, start, end, op.result)
        rewriter.replace(op, [], [new])
        return True


class SplitOfCat(AliasAwarePattern):
    """`split(cat(xs, d), S, d)`: each piece is computed from the cat's inputs
    instead of the fresh copy.

    * A piece that is exactly one input `xs[i]` is that input (the cat's own
      boundaries: `S == [size(x, d) for x in xs]`). Forwarded piece by piece
      wherever aliasing allows, whatever the other pieces are.
    * Coarser: a piece that covers several whole inputs is
      `cat(xs[i:j], d)` (a smaller copy, made where the big cat was).
    * Finer: pieces that fall inside one input are pieces of
      `split(xs[i], ..., d)` (one split per input; views of the input).

    The last two are done together and only when every used piece gets a
    replacement (no piece straddles a cat boundary: that would need a slice
    *and* a cat), new copies are made only when the big cat goes away (its
    only user is this split), and the node count (ops plus the getitems FX
    needs for split results) strictly drops. Ties are left alone: e.g.
    `split(cat(a, b), [2, 2, 2, 2])` with `a`, `b` of size 4 would trade a cat
    and a split for two splits.

    Safety: nothing aliasing the cat may be written in place; a piece that
    becomes a view of an input needs `can_forward_as_alias` (layouts compared
    by strides); a piece that becomes a smaller cat must be laid out like it
    (contiguous) or have only layout-insensitive users, keeps the dtype
    without promotion (every input of the smaller cat has the piece's dtype)
    and is returned only when laid out alike."""

    name = "split-of-cat"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.SplitOp) or (cat := made_on_same_dim(op, t.CatOp)) is None:
            return
        dim = op.dim.data
        inputs = list(cat.inputs)
        sizes = static_sizes(inputs, dim)
        if sizes is None:
            return
        sections = sections_of(op)
        if sizes == sections:
            _forward_pieces(rewriter, cat.result, list(op.results), inputs, self)
            return
        if self.mutated(cat.result):
            return
        rank = len(shape(cat.result) or ())
        if any(len(shape(v) or ()) != rank for v in inputs):
            return  # legacy empty 1-D inputs: leave
        if self._regroup(op, cat, inputs, sizes, sections, dim, rewriter):
            return
        # Fallback: forward the pieces that are exactly one input.
        cat_starts = offsets(sizes)
        starts = offsets(sections)
        exact: list[tuple[SSAValue, SSAValue]] = []
        for j, piece in enumerate(op.results):
            lo, hi = starts[j], starts[j + 1]
            i = self._exact_input(cat_starts, sizes, lo, hi)
            if i is not None:
                exact.append((piece, inputs[i]))
        if exact:
            _forward_pieces(
                rewriter, cat.result, [p for p, _ in exact], [v for _, v in exact], self
            )

    @staticmethod
    def _exact_input(cat_starts: list[int], sizes: list[int], lo: int, hi: int) -> int | None:
        """The index of the non-empty input spanning exactly `[lo, hi)`."""
        if hi <= lo:
            return None
        for i, size in enumerate(sizes):
            if size and cat_starts[i] == lo and cat_starts[i + 1] == hi:
                return i
        return None

    def _regroup(
        self,
        op: t.SplitOp,
        cat: t.CatOp,
        inputs: list[SSAValue],
        sizes: list[int],
        sections: list[int],
        dim: int,
        rewriter: PatternRewriter,
    ) -> bool:
        """The coarser / finer rewrite of the whole split (see the class
        docstring). Returns whether it was done."""
        cat_starts = offsets(sizes)
        bounds = set(cat_starts)
        starts = offsets(sections)
        cat_dies = only_user(cat.result) is op
        forward: dict[int, int] = {}  # piece -> input
        subcat: dict[int, list[int]] = {}  # piece -> inputs
        within: dict[int, tuple[int, int, int]] = {}  # piece -> (input, lo, hi)
        for j, piece in enumerate(op.results):
            if piece.first_use is None:
                continue
            lo, hi = starts[j], starts[j + 1]
            if hi <= lo:
                return False  # an empty used piece: leave
            exact = self._exact_input(cat_starts, sizes, lo, hi)
            if exact is not None:
                forward[j] = exact
                continue
            if lo in bounds and hi in bounds:
                subcat[j] = [
                    i for i, s in enumerate(sizes) if s and lo <= cat_starts[i] and cat_starts[i + 1] <= hi
                ]
                continue
            owner = next(
                (i for i, s in enumerate(sizes) if s and cat_starts[i] <= lo and hi <= cat_starts[i + 1]),
                None,
            )
            if owner is None:
                return False  # straddles a cat boundary
            within[j] = (owner, lo, hi)
        if not subcat and not within:
            return False
        if subcat and not cat_dies:
            return False  # a smaller copy next to the big one: not a win
        # node count: ops plus the getitems of used split results
        used = sum(1 for r in op.results if r.first_use is not None)
        before = 1 + used + (1 if cat_dies else 0)
        per_input: dict[int, list[int]] = {}
        for j, (i, _, _) in within.items():
            per_input.setdefault(i, []).append(j)
        after = len(subcat) + sum(1 + (len(js) if len(js) >= 2 else 0) for js in per_input.values())
        if after >= before:
            return False
        # safety of every replacement, before changing anything
        for j, i in forward.items():
            piece = op.results[j]
            if not same_type(piece, inputs[i]) or not self.forwardable(
                piece, inputs[i], whole=True
            ):
                return False
        for j, group in subcat.items():
            piece = op.results[j]
            piece_type = tensor_type(piece)
            if piece_type is None or any(
                (ty := tensor_type(inputs[i])) is None or ty.element_type != piece_type.element_type
                for i in group
            ):
                return False
            # a cat result is contiguous below rank 4, else when its inputs are
            new_contiguous = len(piece_type.get_shape()) < 4 or all(
                known_contiguous(inputs[i]) for i in group
            )
            alike = new_contiguous and known_contiguous(piece)
            if not alike and (
                not layout_insensitive(piece) or reaches_output(view_closure(piece))
            ):
                return False
        for j, (i, _, _) in within.items():
            piece = op.results[j]
            if not self.forwardable(
                piece, inputs[i], contiguous=_layout_as_part(piece, inputs[i])
            ):
                return False
        # rewrite: new ops where the cat was (its inputs are defined there;
        # a smaller copy reads them at the same point as the big one)
        at = InsertPoint.before(cat)
        replacement: dict[int, SSAValue] = {j: inputs[i] for j, i in forward.items()}
        for j, group in subcat.items():
            new_cat = t.CatOp([inputs[i] for i in group], dim, result_type=op.results[j].type)
            rewriter.insert(new_cat, at)
            replacement[j] = new_cat.result
        for i, js in per_input.items():
            # cut the input at every split boundary inside it
            cuts = sorted(
                {cat_starts[i], cat_starts[i + 1]}
                | {b for b in starts if cat_starts[i] < b < cat_starts[i + 1]}
            )
            new_sections = [b - a for a, b in zip(cuts, cuts[1:])]
            ref = tensor_type(inputs[i])
            assert ref is not None
            types = t.infer_split_types(ref, new_sections, dim)
            index = {a: k for k, a in enumerate(cuts[:-1])}
            for j in js:
                types[index[within[j][1]]] = op.results[j].type
            new_split = t.SplitOp(inputs[i], new_sections, dim, result_types=types)
            rewriter.insert(new_split, at)
            for j in js:
                replacement[j] = new_split.results[index[within[j][1]]]
        for j, value in replacement.items():
            rewriter.replace_all_uses_with(op.results[j], value)
        rewriter.erase(op)
        return True


def _layout_as_part(piece: SSAValue, source: SSAValue) -> bool:
    """A split piece of `source` shaped like `piece` (a split keeps the
    strides of what it splits) is provably laid out like `piece`."""
    sizes = shape(piece)
    a, b = strides_of(piece), strides_of(source)
    if sizes is None or a is None or b is None or len(a) != len(b):
        return False
    if any(s == 0 for s in sizes):
        return True
    return all(x == y for x, y, n in zip(a, b, sizes) if n != 1)


class UnbindOfStack(AliasAwarePattern):
    """`unbind(stack(xs, d), d)`: result i is `xs[i]`, forwarded where
    aliasing allows (used results only; partial uses stay correct)."""

    name = "unbind-of-stack"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.UnbindOp) or (stack := made_on_same_dim(op, t.StackOp)) is None:
            return
        if len(stack.inputs) != len(op.results):
            return
        _forward_pieces(rewriter, stack.result, list(op.results), list(stack.inputs), self)


class StackOfUnbind(AliasAwarePattern):
    """`stack(unbind(x, d)[i:j], d)` (consecutive results in order): all of
    them is `x`, a part is `slice(x, d, i, j)` -- a view, so only where
    aliasing allows. (Upstream #121228: a stack of part of an unbind must
    keep its own shape.)"""

    name = "stack-of-unbind"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.StackOp):
            return
        runs = consecutive_runs(list(op.inputs))
        if len(runs) != 1 or runs[0] is None:
            return
        run = runs[0]
        unbind = run.op
        if not isinstance(unbind, t.UnbindOp) or unbind.dim.data != op.dim.data:
            return
        dim = op.dim.data
        source = unbind.input
        if run.covers_all():
            if not same_type(op.result, source):
                return
            if not self.forwardable(op.result, source, whole=True):
                _copy_of_whole(self, op, source, rewriter)
                return
            rewriter.replace(op, [], [source])
            return
        if not self.forwardable(op.result, source, contiguous=contiguous_part(source, dim)):
            return
        new = slice_like(rewriter, source, dim, run.start, run.stop, op.result)
        rewriter.replace(op, [], [new])


_View = TypeVar("_View", t.SliceOp, t.SelectOp)


def _views_of_one_tensor(owners: Sequence[object], kind: type[_View]) -> list[_View] | None:
    """`owners` (the ops that make a join's inputs) when every one is a
    `kind` view (slice or select) of the same tensor along the same dim;
    None otherwise."""
    first = owners[0]
    if not isinstance(first, kind):
        return None
    views: list[_View] = []
    for owner in owners:
        if not isinstance(owner, kind) or owner.input != first.input or owner.dim.data != first.dim.data:
            return None
        views.append(owner)
    return views


class JoinOfSlices(AliasAwarePattern):
    """A cat or stack whose inputs are all step-1 slices (or, for stack,
    selects) of one tensor, in order and touching:

    * `cat(x[a:b], x[b:c], ..., d)` on the slice dim: `x[a:z]` (or `x`);
    * `stack(select(x, d, i), select(x, d, i+1), ..., d)`: `x[i:i+n]` (or `x`);
    * `stack(x[a:a+k], x[a+k:a+2k], ..., s)` with equal static k: `unflatten(
      x[a:a+nk], d, [n, k])`, then `movedim(d, s)` when `s != d`;
    * `cat`/`stack` on another dim `c` of `select(x, d, i)`, ...,
      `select(x, d, i+n-1)` (PyTorch's select -> cat, 2 ops there):
      `x[i:i+n]` moved to `c` (and flattened into `c` for a cat), as a view,
      or one copy of it where a view may not stand for the join.

    The fresh result becomes a view: only where aliasing allows."""

    name = "join-of-slices"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.CatOp | t.StackOp) or len(op.inputs) < 2:
            return
        owners = [v.owner for v in op.inputs]
        slices = _views_of_one_tensor(owners, t.SliceOp)
        if slices is not None:
            self._join_slices(op, slices, rewriter)
            return
        selects = _views_of_one_tensor(owners, t.SelectOp)
        if selects is not None:
            self._join_selects(op, selects, rewriter)

    def _join_slices(self, op: t.CatOp | t.StackOp, slices: list[t.SliceOp], rewriter: PatternRewriter) -> None:
        """Slices that are step-1 and touching, in order: a cat on their
        dim is one range of the source (`_to_range`), a stack of them is
        `_stack_slices`."""
        source, dim = slices[0].input, slices[0].dim.data
        for s in slices:
            if s.step.data != 1 or s.start.data < 0 or s.end.data < s.start.data:
                return
        if any(a.end.data != b.start.data for a, b in zip(slices, slices[1:])):
            return
        if isinstance(op, t.StackOp):
            self._stack_slices(op, slices, source, dim, rewriter)
        elif op.dim.data == dim:
            self._to_range(op, source, dim, slices[0].start.data, slices[-1].end.data, rewriter)

    def _join_selects(self, op: t.CatOp | t.StackOp, selects: list[t.SelectOp], rewriter: PatternRewriter) -> None:
        """Selects of consecutive non-negative indices: a stack on their
        dim is one range of the source (`_to_range`), a cat or stack on
        another dim is `_selects_moved`."""
        source, dim = selects[0].input, selects[0].dim.data
        index = selects[0].index.data
        if index < 0 or any(s.index.data != index + k for k, s in enumerate(selects)):
            return
        if isinstance(op, t.StackOp) and op.dim.data == dim:
            self._to_range(op, source, dim, index, index + len(selects), rewriter)
        else:
            self._selects_moved(op, selects, source, dim, rewriter)

    def _to_range(
        self,
        op: t.CatOp | t.StackOp,
        source: SSAValue,
        dim: int,
        start: int,
        end: int,
        rewriter: PatternRewriter,
    ) -> None:
        if is_full_range(source, dim, start, end) and same_type(op.result, source):
            if self.forwardable(op.result, source, whole=True):
                rewriter.replace(op, [], [source])
            else:
                _copy_of_whole(self, op, source, rewriter)
            return
        if not self.forwardable(op.result, source, contiguous=contiguous_part(source, dim)):
            return
        new = slice_like(rewriter, source, dim, start, end, op.result)
        rewriter.replace(op, [], [new])

    def _selects_moved(
        self,
        op: t.CatOp | t.StackOp,
        selects: Sequence[t.SelectOp],
        source: SSAValue,
        dim: int,
        rewriter: PatternRewriter,
    ) -> None:
        """`cat`/`stack` on another dim `c` of `select(x, d, i)`, ...,
        `select(x, d, i+n-1)`: `x[i:i+n]` on `d` (or `x`), `movedim(d, c)`,
        and for a cat `flatten(c, c + 1)` -- simplified (`x: [B, N, D]`,
        `cat([x[:, 0], ..., x[:, N-1]], 1)` is `x.flatten(1, 2)`). The view
        stands for the join where aliasing allows; else (returned, would
        alias the input) one copy of it does, when that pays."""
        sizes = shape(source)
        if sizes is None or not all_static(sizes):
            return
        n = len(selects)
        start = selects[0].index.data
        if start + n > sizes[dim]:
            return
        new_ops: list[Operation] = []
        base = source
        if not is_full_range(source, dim, start, start + n):
            sl = t.SliceOp(source, dim, start, start + n, 1)
            new_ops.append(sl)
            base = sl.result
        base_shape = (*sizes[:dim], n, *sizes[dim + 1 :])
        c = op.dim.data
        steps: list[Step] = [("permute", movedim_dims(len(base_shape), dim, c))]
        if isinstance(op, t.CatOp):
            out = list(apply_step(base_shape, steps[0]))
            out[c : c + 2] = [out[c] * out[c + 1]]
            steps.append(("reshape", tuple(out)))
        new_ops += emit(base, base_shape, simplify(base_shape, steps), always_view=False)
        view = new_ops[-1].results[0] if new_ops else base
        if view.type != op.result.type:  # a dtype or device the views would not keep
            _drop(new_ops)
            return
        if not self.forwardable(
            op.result,
            source,
            whole=base is source,  # a view of all of `source`
            contiguous=same_layout(op.result, view),
        ):
            copy = copy_instead(op, view, source, self.aliases)
            if copy is None:
                _drop(new_ops)
                self.remark(
                    op,
                    f"{self.name}: {op.name} of selects left alone: a view would alias "
                    "their source and a copy would not keep the layout (or a tensor "
                    "involved is written in place)",
                )
                return
            new_ops.append(copy)
        # Pays: the join goes, and each select that only fed it.
        kept = sum(1 for s in selects if only_user(s.result) is not op)
        if len(new_ops) + kept >= 1 + n:
            _drop(new_ops)
            return
        rewriter.replace(op, new_ops)
        for s in selects:
            if s.result.first_use is None:
                rewriter.erase(s)

    def _stack_slices(
        self,
        op: t.StackOp,
        slices: Sequence[t.SliceOp],
        source: SSAValue,
        dim: int,
        rewriter: PatternRewriter,
    ) -> None:
        size = static_size(source, dim)
        if size is None:
            return
        k = slices[0].end.data - slices[0].start.data
        if any(s.end.data - s.start.data != k or s.end.data > size for s in slices):
            return
        if any(static_size(s.result, dim) != k for s in slices):
            return
        start, end = slices[0].start.data, slices[-1].end.data
        n = len(slices)
        stack_dim = op.dim.data
        same_layout = stack_dim == dim and contiguous_part(source, dim)
        if not self.forwardable(op.result, source, contiguous=same_layout):
            return
        new_ops: list[Operation] = []
        value = source
        if not is_full_range(source, dim, start, end):
            sl = t.SliceOp(source, dim, start, end, 1)
            new_ops.append(sl)
            value = sl.result
        if stack_dim == dim:
            unflat = t.UnflattenOp(value, dim, [n, k], result_type=op.result.type)
            new_ops.append(unflat)
        else:
            unflat = t.UnflattenOp(value, dim, [n, k])
            moved = t.MovedimOp(unflat.result, [dim], [stack_dim], result_type=op.result.type)
            new_ops += [unflat, moved]
        rewriter.replace(op, new_ops)


class UnsqueezeOfSelect(RewritePattern):
    """`unsqueeze(select(x, d, i), d)` -> `slice(x, d, i, i + 1)`: the same
    elements of the same storage with the same shape (a size-1 dim's stride
    does not matter), in one view instead of two; `torch.cat([x[:, i].
    unsqueeze(1) for i in ...], 1)` then is a join of slices. Only when the
    select has no other user (else nothing is saved) and `i` is
    non-negative."""

    name = "unsqueeze-of-select"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.UnsqueezeOp) or (select := made_on_same_dim(op, t.SelectOp)) is None:
            return
        index = select.index.data
        if index < 0 or only_user(select.result) is not op:
            return
        rewriter.replace(
            op, [t.SliceOp(select.input, op.dim.data, index, index + 1, 1, result_type=op.result.type)]
        )
        rewriter.erase(select)


class CatOfCat(AliasAwarePattern):
    """`cat([a, cat([b, c], d), e], d)` -> `cat([a, b, c, e], d)`: an inner
    cat on the same dim whose only user is the outer cat is flattened into
    it (recursively, all at once), so splitting a concatenation into
    smaller ones never leaves more cats than it found.

    Exact: the outer cat copies the same elements in the same order. Left
    alone: an inner cat with other users (flattening would add a copy), on
    another dim, that converts dtypes (an input of another element type:
    the inner conversion rounds), of another rank (legacy empty 1-D
    inputs), or whose inputs may be written in place (the outer cat reads
    them later than the inner one did)."""

    name = "cat-of-cat"

    def _flattenable(self, inner: Operation | None, user: t.CatOp, dim: int, rank: int) -> bool:
        if not isinstance(inner, t.CatOp) or inner.dim.data != dim:
            return False
        if only_user(inner.result) is not user:
            return False
        inner_type = tensor_type(inner.result)
        if inner_type is None or len(inner_type.get_shape()) != rank:
            return False
        for v in inner.inputs:
            ty = tensor_type(v)
            if ty is None or ty.element_type != inner_type.element_type:
                return False
            if len(ty.get_shape()) != rank or self.mutated(v):
                return False
        return True

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.CatOp):
            return
        dim = op.dim.data
        rank = len(shape(op.result) or ())
        if not any(self._flattenable(v.owner, op, dim, rank) for v in op.inputs):
            return
        inputs: list[SSAValue] = []
        flattened: list[t.CatOp] = []
        pending = [(iter(op.inputs), op)]
        while pending:
            it, user = pending[-1]
            value = next(it, None)
            if value is None:
                pending.pop()
                continue
            inner = value.owner
            if self._flattenable(inner, user, dim, rank):
                assert isinstance(inner, t.CatOp)
                flattened.append(inner)
                pending.append((iter(inner.inputs), inner))
            else:
                inputs.append(value)
        rewriter.replace(op, [t.CatOp(inputs, dim, result_type=op.result.type)])
        for inner in flattened:  # outermost first: each is unused once its user is gone
            rewriter.erase(inner)


CORE_PATTERNS: tuple[type[RewritePattern], ...] = (
    EraseDeadPlumbing,
    SingleInputJoin,
    SplitWhole,
    SplitOfSplit,
    SplitOfCat,  # before dead pieces are merged (which may cut a boundary)
    MergeDeadSplitPieces,
    SplitSqueezeToUnbind,
    CatOfSplitPieces,
    UnbindOfStack,
    StackOfUnbind,
    UnsqueezeOfSelect,
    JoinOfSlices,
    CatOfCat,
)
"""The pass's own patterns, in the order they are tried at each op."""


@dataclass(frozen=True)
class SplitCatSimplify(PatternPass):
    """Remove split/cat/stack/unbind plumbing on the operator dialect.

    Core patterns: dead plumbing, a join of one tensor, a split into one
    piece, split of a split, cat -> split (the inputs at the cat's own
    boundaries; smaller cats / splits of the inputs at coarser or finer
    ones), dead pieces merged, size-1 split + squeeze -> unbind, cat of
    consecutive split pieces (the input, a slice, or a coarser split),
    stack -> unbind at the same boundaries, unbind -> stack, cat/stack of
    ordered slices or selects -> a view (or one copy of it where it is
    returned), unsqueeze of a select on its dim -> a slice; a pointwise op of a cat read back at the cat's boundaries ->
    the op on each input (`split_cat_pointwise`); then the view-chain
    patterns of `split_cat_views` (when present). Rewrites that change aliasing are
    guarded against in-place writes, stride-dependent users and outputs
    that would alias inputs (`split_cat_common.can_forward_as_alias`)."""

    name = "split-cat-simplify"

    def patterns(self, aliases: AliasAnalysis | None = None) -> Sequence[RewritePattern]:
        """The patterns, asking `aliases` (when given) for alias facts."""
        core = [
            cls(aliases) if issubclass(cls, AliasAwarePattern | SingleInputJoin) else cls()
            for cls in CORE_PATTERNS
        ]
        views = [
            FoldViewChain(aliases) if isinstance(p, FoldViewChain) else p
            for p in view_patterns(aliases)
        ]
        return [*core, PointwiseOfCat(aliases), *views]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # One alias analysis per run, kept up to date by the driver's
        # listener: patterns query it instead of walking classes per match.
        aliases = AliasAnalysis(op)
        GreedyRewriteDriver(
            self.patterns(aliases),
            self.rewrite_config(),
            name=self.name,
            listeners=[aliases.listener()],
        ).rewrite(op)


__all__ = [
    "CORE_PATTERNS",
    "AliasAwarePattern",
    "CatOfCat",
    "CatOfSplitPieces",
    "UnsqueezeOfSelect",
    "EraseDeadPlumbing",
    "JoinOfSlices",
    "MergeDeadSplitPieces",
    "SplitCatSimplify",
    "SplitOfCat",
    "SingleInputJoin",
    "SplitOfSplit",
    "SplitSqueezeToUnbind",
    "SplitWhole",
    "StackOfUnbind",
    "UnbindOfStack",
]
