"""Canonicalization patterns of the torch dialect: local folds of one op.

Each op that has local folds carries a `LazyCanonicalizationPatterns` trait
naming one of the tuples below (`dialects/torch/`); the `canonicalize`
pass runs the patterns of the ops present, and `split-cat-simplify` runs
them too, among its patterns that look across several ops. Every pattern
here is rooted at the op it folds:

* `erase-dead-plumbing` (split, unbind, cat, stack, the view ops): an op none
  of whose results is used goes;
* `single-input-join` (cat, stack): a join of one tensor is that tensor (or
  an unsqueeze of it), where aliasing allows;
* `split-whole` (split): a split into one piece is its input;
* `merge-dead-split-pieces` (split): neighbouring dead pieces become one
  section, a single live piece a slice;
* `fold-view-chain` (reshape, view, flatten, unflatten, squeeze, unsqueeze,
  permute, transpose, movedim): a view that does nothing goes, two adjacent
  views that fold into at most one become that one;
* `fold-identity-dropout` (dropout): a dropout in eval mode, or with
  `p = 0`, is its input.

The fx call ops add their identities in `canonicalization_patterns.fx`
(`.contiguous()` of a contiguous value, `clone` of a temporary, a cast to
the value's own dtype and device).

The batch dialect adds its own module beside this one (a batch op with one
member becomes the plain op).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from optimus_ir.analysis import (
    AliasAnalysis,
    all_static,
    can_forward_as_alias,
    forwarding_returns_another_object,
    same_layout,
    shape,
)
from optimus_ir.dialects import torch as t
from optimus_ir.passes.canonicalization_patterns.split_cat_common import (
    is_full_range,
    offsets,
    results_unused,
    same_type,
    sections_of,
    slice_like,
    tensor_type,
)
from optimus_ir.passes.canonicalization_patterns.view_programs import (
    ALWAYS_VIEW_OPS,
    VIEW_LIKE_OPS,
    emit,
    one_use,
    reshape_chain_may_change,
    simplify,
    view_step,
)
from optimus_ir.foundation.traits import is_view_like

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# patterns
# ---------------------------------------------------------------------------


class EraseDeadPlumbing(RewritePattern):
    """A split/unbind/cat/stack or view op none of whose results is used is
    erased (so that the single-use conditions of the other patterns hold as
    soon as possible; `dce` would remove it later anyway)."""

    name = "erase-dead-plumbing"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (is_view_like(op) or isinstance(op, t.CatOp | t.StackOp)) and op.results and results_unused(op):
            rewriter.erase(op)


class SingleInputJoin(RewritePattern):
    """A join of one tensor is a copy of it:

    * `cat([x], d)` -> `x`;
    * `stack([x], d)` -> `unsqueeze(x, d)` (a view of all of `x`).

    The fresh result becomes `x` (or a view of all of it), so only where
    `can_forward_as_alias` allows (with `whole=True`: nothing in either alias
    class is written in place, the layout matches or no user cares, and a
    returned result must not become a graph input, a view, or share storage
    with another output). A graph input that is only read keeps being read;
    one that is returned, or anything mutated, keeps its copy."""

    name = "single-input-join"

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        # the running pass's analysis (`split-cat-simplify`): without one
        # every attempt walks both alias classes, all K pieces of a K-way split
        self.aliases = aliases

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.CatOp | t.StackOp) or len(op.inputs) != 1:
            return
        source = op.inputs[0]
        if isinstance(op, t.CatOp):
            if not same_type(op.result, source):
                return
            if can_forward_as_alias(op.result, source, whole=True, aliases=self.aliases):
                rewriter.replace(op, [], [source])
            return
        source_type = tensor_type(source)
        if source_type is None:
            return
        dim = op.dim.data
        if not 0 <= dim <= len(source_type.get_shape()):
            return
        if t.infer_unsqueeze_type(source_type, dim) != op.result.type:
            return
        unsqueeze = t.UnsqueezeOp(source, dim, result_type=op.result.type)
        # the unsqueeze views all of `source`: `whole`, with its own layout
        ok = can_forward_as_alias(
            op.result,
            source,
            whole=True,
            contiguous=same_layout(op.result, unsqueeze.result),
            aliases=self.aliases,
        )
        if not ok:
            unsqueeze.erase()  # detached: drop its use of `source`
            return
        rewriter.replace(op, [unsqueeze])


class SplitWhole(RewritePattern):
    """`split(x, [n], d)` (one section), or a split whose one non-empty piece
    is all of `x` (`[0, n, 0]`): that piece is `x` itself (same storage, so
    no alias-class check), unless the piece is returned and `x` is an input
    or returned too (`forwarding_returns_another_object`: the graph would
    return the caller's tensor object, or one object twice)."""

    name = "split-whole"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.SplitOp):
            return
        # the one non-empty section, found without reading all of a wide split
        index: int | None = 0 if len(op.results) == 1 else None
        if index is None:
            for i, section in enumerate(op.sections.data):
                if section.data != 0:
                    if index is not None:
                        return  # two non-empty pieces
                    index = i
            if index is None:
                return
        piece = op.results[index]
        if piece.first_use is None or not same_type(piece, op.input):
            return
        if forwarding_returns_another_object(piece, op.input):
            return
        if len(op.results) == 1:
            rewriter.replace(op, [], [op.input])
        else:
            rewriter.replace_all_uses_with(piece, op.input)


class MergeDeadSplitPieces(RewritePattern):
    """Unused neighbouring pieces of a split are merged into one section (a
    split must keep covering the whole dim); a split left with a single used
    piece becomes a `slice` of the input. Live pieces keep viewing the same
    storage.

    All runs of dead pieces are merged in one rewrite, and the pattern is
    `deferred` (tried when no other pattern has work left): pieces of a wide
    split usually die one by one as other rewrites remove their users, and
    rebuilding the K-result split after each death made the pass quadratic."""

    name = "merge-dead-split-pieces"
    deferred = True

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.SplitOp):
            return
        results = op.results
        live = [r.first_use is not None for r in results]
        if not any(live):
            return  # erase-dead-plumbing
        sections = sections_of(op)
        dim = op.dim.data
        if live.count(True) == 1 and len(results) > 1:
            index = live.index(True)
            starts = offsets(sections)
            start, end = starts[index], starts[index + 1]
            if not is_full_range(op.input, dim, start, end):
                new = slice_like(rewriter, op.input, dim, start, end, results[index])
                rewriter.replace(op, [], [None] * index + [new] + [None] * (len(results) - index - 1))
                return
        merged_sections: list[int] = []
        groups: list[list[int]] = []
        for i, (size, used) in enumerate(zip(sections, live)):
            if not used and groups and not live[groups[-1][0]]:
                merged_sections[-1] += size
                groups[-1].append(i)
            else:
                merged_sections.append(size)
                groups.append([i])
        if len(groups) == len(results):
            return
        types = [results[g[0]].type if live[g[0]] else None for g in groups]
        shape_ref = t.infer_split_types(op.input.type, merged_sections, dim)
        types = [ty if ty is not None else ref for ty, ref in zip(types, shape_ref)]
        new_op = t.SplitOp(op.input, merged_sections, dim, result_types=types)
        new_results: list[SSAValue | None] = [None] * len(results)
        for g, r in zip(groups, new_op.results):
            if live[g[0]]:
                new_results[g[0]] = r
        rewriter.replace(op, [new_op], new_results)


class FoldViewChain(RewritePattern):
    """A view-like op that does nothing (reshape/view to the input shape,
    identity permute, ...) is dropped; two adjacent view-like ops that fold
    into at most one become that one (inverse permutes/transposes vanish,
    reshape of reshape is one reshape, unflatten then flatten of the same
    dims is the input).

    A chain of guaranteed views (view, unflatten, squeeze, unsqueeze,
    permute, transpose, movedim) stays a guaranteed view. A chain with a
    `reshape` or `flatten` (which copy when a view is impossible) is folded
    only when nothing aliasing the source is written to and no user depends
    on strides. Needs static shapes.

    A returned view is not folded into its source when that would return
    the caller's tensor object or one object twice
    (`forwarding_returns_another_object`): `x.view(x.shape)` is a new tensor
    in eager. A returned chain that folds to nothing becomes one
    `torch.view` to the source's shape then."""

    name = "fold-view-chain"

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        # as in SingleInputJoin: the pass's analysis, or a walk per attempt
        self.aliases = aliases

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, VIEW_LIKE_OPS):
            return
        outer = view_step(op)
        source = op.operands[0]
        start = shape(source)
        if outer is None or not all_static(start):
            return
        inner_op = source.owner
        if (
            isinstance(inner_op, VIEW_LIKE_OPS)
            and isinstance(source, OpResult)
            and (inner := view_step(inner_op)) is not None
            and all_static(shape(inner_op.operands[0]))
        ):
            base = inner_op.operands[0]
            base_shape = shape(base)
            steps = simplify(base_shape, [inner, outer])
            budget = 2 if one_use(source) else 1
            if len(steps) < budget and self._fold(op, [inner_op, op], base, base_shape, steps, rewriter):
                return
        if not simplify(start, [outer]) and not forwarding_returns_another_object(
            op.results[0], source
        ):
            rewriter.replace(op, [], [source])

    def _fold(
        self,
        op: Operation,
        chain: Sequence[Operation],
        base: SSAValue,
        base_shape: tuple[int, ...],
        steps: Sequence[tuple[str, tuple[int, ...]]],
        rewriter: PatternRewriter,
    ) -> bool:
        always_view = all(isinstance(o, ALWAYS_VIEW_OPS) for o in chain)
        if not always_view and reshape_chain_may_change(op.results[0], base, self.aliases):
            return False
        new_ops = emit(base, base_shape, steps, always_view)
        result = new_ops[-1].results[0] if new_ops else base
        if result.type != op.results[0].type:
            return False
        if not new_ops and forwarding_returns_another_object(op.results[0], base):
            # a chain of guaranteed views (the only kind that may fold away
            # when returned) is a new tensor object: keep one, the cheapest
            new_ops = [t.ViewOp(base, base_shape, result_type=op.results[0].type)]
            result = new_ops[0].results[0]
        rewriter.replace(op, new_ops, [result])
        return True


class FoldIdentityDropout(RewritePattern):
    """`dropout(x, p, train)` with `train = false`, or with `p = 0`, is `x`.

    torch returns its input itself then (`at::dropout`: `if (p == 0 ||
    !train || numel == 0) return input`; the fused CUDA kernel is taken only
    for `0 < p < 1`), the very tensor object, in any dtype. So the fold is
    exact whatever else happens to `x`: a write to the result was a write to
    `x` in eager too, and returning both `x` and the dropout returned one
    object twice there as well. A dropout in training with `p > 0` draws
    random numbers and stays."""

    name = "fold-identity-dropout"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.DropoutOp):
            return
        if t.flag(op.train) and op.p.value.data != 0.0:
            return
        if op.result.type != op.input.type:
            return  # never for a verified op; a type mismatch is not ours to fix
        rewriter.replace(op, [], [op.input])


_ERASE_DEAD_PLUMBING = EraseDeadPlumbing()

SPLIT_PATTERNS: tuple[RewritePattern, ...] = (
    _ERASE_DEAD_PLUMBING,
    SplitWhole(),
    MergeDeadSplitPieces(),
)
"""The canonicalization patterns of `torch.split`, in order."""

JOIN_PATTERNS: tuple[RewritePattern, ...] = (_ERASE_DEAD_PLUMBING, SingleInputJoin())
"""The canonicalization patterns of `torch.cat` and `torch.stack`."""

VIEW_CHAIN_PATTERNS: tuple[RewritePattern, ...] = (_ERASE_DEAD_PLUMBING, FoldViewChain())
"""The canonicalization patterns of the reshape- and permute-like view ops."""

PLUMBING_PATTERNS: tuple[RewritePattern, ...] = (_ERASE_DEAD_PLUMBING,)
"""The canonicalization patterns of unbind, slice, select and detach."""

DROPOUT_PATTERNS: tuple[RewritePattern, ...] = (FoldIdentityDropout(),)
"""The canonicalization patterns of `torch.dropout`."""

__all__ = [
    "DROPOUT_PATTERNS",
    "JOIN_PATTERNS",
    "PLUMBING_PATTERNS",
    "SPLIT_PATTERNS",
    "VIEW_CHAIN_PATTERNS",
    "EraseDeadPlumbing",
    "FoldIdentityDropout",
    "FoldViewChain",
    "MergeDeadSplitPieces",
    "SingleInputJoin",
    "SplitWhole",
]
