"""`slices-to-split`: sibling slices of one tensor become the pieces of one split.

`lower-batch` hands each consumer group its rows of a fused result as a
slice (`torch.slice %ln dim 0 start 22 end 43`: the relu towers' rows of a
layer norm over all 64 towers), and models written with indexing
(`x[:, 0:16]`, `x[:, 16:48]`) do the same by hand. The values are views
either way, but under autograd each slice's backward allocates a zero
gradient of the whole source, writes its rows, and the engine adds those
full-size gradients together: k slices cost k zero fills and k - 1 sums of
the source's size. One split's backward concatenates its pieces'
gradients once (zeros only where no piece is used). Measured on the
64-tower model at batch 512 with every group fused: the backward of three
such sources went from 13.6 to 13.3 ms, and the whole training step gained
3-12% over three processes (docs/architecture/benchmarks.md,
"Sibling slices"). Without gradients one split makes all the views in one call.

    %a = torch.slice %x dim 0 start 0 end 22
    %b = torch.slice %x dim 0 start 22 end 43
  becomes (%x of 64 rows; 43..63 a gap piece nobody reads)
    %a, %b, %gap = torch.split %x sections [22, 21, 21] dim 0

Each piece is the same view as the slice it stands for (same storage
offset, sizes and strides), so no aliasing changes; the split is made
right after `%x` is defined, so the pattern leaves alone a source whose
alias class is written in place (a view made before a write and read
after it would cross the write). Left alone too: slices with a step,
overlapping slices (a split's pieces are disjoint), a dim whose size is
not static, siblings in another block, a lone slice (nothing to share),
and selects: a select would become its piece and a squeeze, one op more
than it is, so the graph's op count could grow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from optimus_ir.analysis import AliasAnalysis
from optimus_ir.dialects import torch as t
from optimus_ir.foundation.rewriting import PatternPass
from optimus_ir.passes.canonicalization_patterns import rewrite_with_aliases
from optimus_ir.passes.canonicalization_patterns.split_cat_common import static_size
from optimus_ir.passes.split_cat_simplify import AliasAwarePattern

def _rows(op: Operation, source: SSAValue, dim: int, size: int) -> tuple[int, int] | None:
    """`[start, end)` of `dim` that `op` views of `source`, when it is a
    step-1 slice of `source` on `dim` with bounds inside `[0, size)`; else
    None."""
    if not isinstance(op, t.SliceOp) or op.input != source or op.dim.data != dim:
        return None
    start, end = op.start.data, op.end.data
    if op.step.data != 1 or not 0 <= start < end <= size:
        return None
    return start, end


def _sections(ranges: Sequence[tuple[int, int]], size: int) -> tuple[list[int], dict[tuple[int, int], int]] | None:
    """The sections of a split of `size` rows with a piece for each of the
    distinct, disjoint `ranges` (gaps between them are pieces of their
    own), and each range's piece index; None when two ranges overlap."""
    sections: list[int] = []
    piece_of: dict[tuple[int, int], int] = {}
    at = 0
    for start, end in sorted(set(ranges)):
        if start < at:
            return None
        if start > at:
            sections.append(start - at)
        piece_of[(start, end)] = len(sections)
        sections.append(end - start)
        at = end
    if at < size:
        sections.append(size - at)
    return sections, piece_of


class SiblingSlicesToSplit(AliasAwarePattern):
    """Two or more step-1 slices of one tensor on one dim, with disjoint
    rows: one `torch.split` of the tensor made where it is defined; each
    slice becomes its piece. The views are the same; autograd's backward
    of them becomes one concatenation instead of a zero-filled source per
    slice and their sum."""

    name = "sibling-slices-to-split"

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        super().__init__(aliases)
        # (source, dim) pairs whose slices were examined: each is examined
        # once, so K refused slices of one tensor are not K scans of its K
        # uses. A rewrite leaves no sibling slices behind, and nothing this
        # pattern does adds a slice, so a refusal stands for the run (at
        # worst a later rewrite elsewhere is missed, never a wrong one).
        self._examined: set[tuple[SSAValue, int]] = set()

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, t.SliceOp):
            return
        source, dim = op.input, op.dim.data
        size = static_size(source, dim)
        if size is None or _rows(op, source, dim, size) is None or (source, dim) in self._examined:
            return
        self._examined.add((source, dim))
        block = op.parent_block()
        siblings: list[tuple[t.SliceOp, tuple[int, int]]] = []
        for use in source.uses:
            user = use.operation
            rows = _rows(user, source, dim, size)
            if rows is not None and user.parent_block() is block:
                siblings.append((user, rows))  # type: ignore[arg-type]
        if len({rows for _, rows in siblings}) < 2:
            return
        found = _sections([rows for _, rows in siblings], size)
        if found is None or self.mutated(source):
            return
        sections, piece_of = found
        types: list[Attribute] = list(t.infer_split_types(source.type, sections, dim))
        for sibling, rows in siblings:
            types[piece_of[rows]] = sibling.result.type
        split = t.SplitOp(source, sections, dim, result_types=types)
        if isinstance(source, OpResult) and source.owner.parent_block() is block:
            where = InsertPoint.after(source.owner)
        else:
            where = InsertPoint.at_start(block)  # type: ignore[arg-type]
        rewriter.insert(split, where)
        for sibling, rows in siblings:
            piece = split.results[piece_of[rows]]
            if not piece.name_hint:
                piece.name_hint = sibling.result.name_hint
            rewriter.replace(sibling, [], [piece])


@dataclass(frozen=True)
class SlicesToSplit(PatternPass):
    """Sibling slices of one tensor on one dim become the
    pieces of one split (`SiblingSlicesToSplit`): the same views, and a
    backward that concatenates their gradients once instead of summing a
    zero-filled gradient of the whole tensor per slice. Sources written in
    place are left alone."""

    name = "slices-to-split"

    def patterns(self) -> Sequence[RewritePattern]:
        """The pass's one pattern (without an analysis it walks alias classes)."""
        return [SiblingSlicesToSplit()]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_with_aliases(op, self.patterns(), self.rewrite_config(), self.name)


__all__ = ["SiblingSlicesToSplit", "SlicesToSplit"]
