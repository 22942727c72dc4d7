"""Canonicalization patterns of the batch dialect: layout conversions that cancel.

Rooted at `batch.pack` and `batch.unpack` (`dialects/batch.py` attaches them
with `LazyCanonicalizationPatterns`); `canonicalize` and `batch-fusion` run
them:

* `pack-of-unpacked-members`: a pack of members `i0, i0+s, i0+2s, ...` of
  one unpacked stack is the stack itself (all of it, in order) or a strided
  slice of it -- no copy, so a batched op feeds the next one directly, and
  a regrouping that takes every third member is a view;
* `unpack-of-pack`: the members of a pack are the packed values themselves.

Both replace a fresh tensor (a pack) by a view of another value, or views
of a fresh tensor (an unpack's results) by other values; they apply only
where nothing in the alias classes involved is written in place and no
replaced value reaches the graph's output (which must stay a distinct
tensor with its own layout).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from optimus_ir.analysis import AliasAnalysis
from optimus_ir.dialects import batch as B
from optimus_ir.dialects import torch as T
from optimus_ir.foundation.rewriting import RootedPattern


class _AliasAware(RootedPattern):
    """A pattern that may use a shared `AliasAnalysis` (else walks)."""

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        self.aliases = aliases

    def _analysis(self, op: Operation) -> AliasAnalysis:
        if self.aliases is None:
            root = op
            while root.parent_op() is not None:
                root = root.parent_op()  # type: ignore[assignment]
            return AliasAnalysis(root)
        return self.aliases

    def safe(self, op: Operation, replaced: Sequence[SSAValue], sources: Sequence[SSAValue]) -> bool:
        """Nothing in the classes of `replaced` and `sources` is written, and
        no replaced value (or a view of it) is returned: the graph's outputs
        keep their identity."""
        aliases = self._analysis(op)
        if any(aliases.is_mutated(v) for v in (*replaced, *sources)):
            return False
        return not any(aliases.reaches_output(v) for v in replaced)


def unpacked_members(values: list[SSAValue]) -> tuple[B.UnpackOp, int, int] | None:
    """(unpack, first index, step) when `values` are results
    `first, first+step, ...` of one `batch.unpack` (step >= 1)."""
    owners = {v.owner for v in values}
    if len(owners) != 1:
        return None
    unpack = values[0].owner
    if not isinstance(unpack, B.UnpackOp) or not all(isinstance(v, OpResult) for v in values):
        return None
    indices = [v.index for v in values]  # type: ignore[attr-defined]
    first = indices[0]
    step = indices[1] - first if len(indices) > 1 else 1
    if step < 1 or any(i != first + k * step for k, i in enumerate(indices)):
        return None
    return unpack, first, step


class PackOfUnpackedMembers(_AliasAware):
    """`pack(unpack(s)[i0::step][:n])` -> `s` (all members in order) or
    `torch.slice(s, 0, i0, i0 + (n-1)*step + 1, step)`."""

    name = "pack-of-unpacked-members"
    roots = (B.PackOp,)

    def rewrite(self, op: B.PackOp, rewriter: PatternRewriter, /) -> None:
        found = unpacked_members(list(op.members))
        if found is None:
            return
        unpack, first, step = found
        source = unpack.input
        if not self.safe(op, [op.result], [source]):
            return
        n = len(op.members)
        if first == 0 and step == 1 and n == unpack.member_count:
            rewriter.replace(op, [], [source])
            return
        end = first + (n - 1) * step + 1
        rewriter.replace(op, [T.SliceOp(source, 0, first, end, step, result_type=op.result.type)])


class UnpackOfPack(_AliasAware):
    """`unpack(pack(a, b, ...))` -> `a, b, ...`."""

    name = "unpack-of-pack"
    roots = (B.UnpackOp,)

    def rewrite(self, op: B.UnpackOp, rewriter: PatternRewriter, /) -> None:
        pack = op.input.owner
        if not isinstance(pack, B.PackOp):
            return
        if not self.safe(op, list(op.outputs), list(pack.members)):
            return
        rewriter.replace(op, [], list(pack.members))


class EraseDeadConversion(RootedPattern):
    """A pack or unpack none of whose results is used goes."""

    name = "erase-dead-conversion"
    roots = (B.PackOp, B.UnpackOp)

    def rewrite(self, op: B.PackOp | B.UnpackOp, rewriter: PatternRewriter, /) -> None:
        if all(not r.uses for r in op.results):
            rewriter.erase(op)


BATCH_PATTERNS: tuple[RewritePattern, ...] = (
    EraseDeadConversion(),
    UnpackOfPack(),
    PackOfUnpackedMembers(),
)
"""The canonicalization patterns of `batch.pack` and `batch.unpack`, in order."""

__all__ = [
    "BATCH_PATTERNS",
    "EraseDeadConversion",
    "PackOfUnpackedMembers",
    "UnpackOfPack",
    "unpacked_members",
]
