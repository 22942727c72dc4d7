"""A pass plugin written the way a user outside the project writes one: two
pattern passes registered with the public `@optimus_ir.register_pass`.

* `fold-double-neg` (correct): `torch.neg(torch.neg(x))` -> `x`, with a
  remark at each fold;
* `test-drop-neg` (deliberately wrong, for testing validation and
  bisection with a user pass): folds double negations like the pass above
  (pattern `fold-double-neg`), and drops a single `torch.neg` (pattern
  `drop-neg`: `neg(x)` -> `x`, a miscompile).

Both work on the torch operator dialect (after `raise-fx`). The lit tests
load this file with `--load-pass-plugin` (`tests/lit/tools/user-pass-plugin.mlir`);
the pytest tests import it (`from plugins import user_passes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

import optimus_ir
from optimus_ir.foundation.diagnostics import emit_remark
from optimus_ir.dialects.torch import NegOp
from optimus_ir.foundation.rewriting import PatternPass


class FoldDoubleNeg(RewritePattern):
    """`neg(neg(x))` -> `x`, with a remark at the outer neg."""

    name = "fold-double-neg"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, NegOp):
            return
        inner = op.operands[0].owner
        if not isinstance(inner, NegOp):
            return
        emit_remark(op, "fold-double-neg: neg(neg(x)) folded to x")
        rewriter.replace(op, [], [inner.operands[0]])


class DropNeg(RewritePattern):
    """The wrong rewrite: a single `neg(x)` (neither operand nor user a
    neg) -> `x`."""

    name = "drop-neg"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, NegOp) or isinstance(op.operands[0].owner, NegOp):
            return
        if any(isinstance(use.operation, NegOp) for use in op.results[0].uses):
            return  # half of a double negation: fold-double-neg's
        rewriter.replace(op, [], [op.operands[0]])


@optimus_ir.register_pass
@dataclass(frozen=True)
class FoldDoubleNegPass(PatternPass):
    """Fold double negations (a user's pass, correct)."""

    name = "fold-double-neg"

    def patterns(self) -> Sequence[RewritePattern]:
        return [FoldDoubleNeg()]


@optimus_ir.register_pass
@dataclass(frozen=True)
class TestDropNegPass(PatternPass):
    """Fold double negations and drop single ones (a user's pass,
    deliberately wrong: testing only)."""

    name = "test-drop-neg"

    def patterns(self) -> Sequence[RewritePattern]:
        return [FoldDoubleNeg(), DropNeg()]
