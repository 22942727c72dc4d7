"""`fold-idempotent-activations`: `f(f(x))` is `f(x)` for an idempotent `f`.

A model that ends a block with `nn.ReLU()` and applies `F.relu` again in the
next one computes the same activation twice. This pass keeps the inner call
and drops the outer one. It is bit-exact: for these ops `f(f(x)) == f(x)`
element for element, NaNs included.

It runs on the torch (operator) dialect, so in a pipeline it goes after
`raise-fx` (the default pipeline with it: `maximize-value-semantics,
raise-fx,fold-idempotent-activations,...`, or just name it after
`raise-fx` in `-p`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

import optimus_ir
from optimus_ir.foundation.diagnostics import emit_remark
from optimus_ir.dialects.torch import AbsOp, ReluOp
from optimus_ir.foundation.rewriting import PatternPass

IDEMPOTENT_OPS: tuple[type[Operation], ...] = (ReluOp, AbsOp)
"""Unary ops with `f(f(x)) == f(x)` for every input, NaN and inf included."""


class FoldIdempotentActivation(RewritePattern):
    """`f(f(x))` -> `f(x)` where `f` is in `IDEMPOTENT_OPS`.

    Only when the inner result is read by the outer op alone: if it were
    read elsewhere too, for example returned beside the outer result, both
    outputs would become one tensor, and a write to one would show in the
    other (distinct outputs stay distinct tensors).
    """

    name = "fold-idempotent-activation"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, IDEMPOTENT_OPS):
            return
        inner = op.operands[0].owner
        if type(inner) is not type(op):
            return
        if not inner.results[0].has_one_use():
            emit_remark(op, f"{self.name}: not folded: the inner {inner.name} is also read elsewhere")
            return
        emit_remark(op, f"{self.name}: {op.name}({op.name}(x)) folded to {op.name}(x)")
        rewriter.replace(op, [], [inner.results[0]])


@optimus_ir.register_pass
@dataclass(frozen=True)
class FoldIdempotentActivationsPass(PatternPass):
    """Drop the second of two consecutive identical idempotent activations
    (`relu(relu(x))`, `abs(abs(x))`)."""

    name = "fold-idempotent-activations"

    def patterns(self) -> Sequence[RewritePattern]:
        return [FoldIdempotentActivation()]
