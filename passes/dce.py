"""`dce`: dead-code elimination that respects the side effects of fx ops."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from optimus_ir.foundation.rewriting import PatternPass, RewriteConfig
from optimus_ir.foundation.traits import is_removable


class EraseDeadOp(RewritePattern):
    """Erase an op whose results are all unused, when its memory-effect
    traits allow (`optimus_ir.foundation.traits.is_removable`: no effect, or only the
    allocation of its result: known-pure fx calls and factories,
    `fx.get_attr`, pure operator ops). Erasing it revisits its operands'
    defining ops."""

    name = "erase-dead-op"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not op.results:
            return
        for result in op.results:
            if result.first_use is not None:
                return
        if not is_removable(op):
            return
        rewriter.erase(op)


@dataclass(frozen=True)
class DeadCodeElimination(PatternPass):
    """Remove ops whose results are unused and that have no side effect.

    Unknown Python callables, `fx.call_module`, in-place, random and `out=`
    calls, and ops with regions stay; `fx.placeholder` and `fx.output` are
    never removed. Runs bottom-up, so a chain of dead ops goes in one sweep.
    """

    name = "dce"

    def patterns(self) -> Sequence[RewritePattern]:
        return [EraseDeadOp()]

    def rewrite_config(self) -> RewriteConfig:
        return RewriteConfig(walk_reverse=True)
