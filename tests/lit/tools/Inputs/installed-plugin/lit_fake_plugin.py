"""An installed plugin, as a fake distribution (lit_fake_plugin-0.1.dist-info
declares two entry points of group `optimus_ir.plugins`): this module,
whose import registers `installed-fold-double-neg`, and `broken_setup`, a
plugin function that fails (optimus-opt warns and goes on).
Used by tests/lit/tools/installed-plugin.mlir through PYTHONPATH."""

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
    """`neg(neg(x))` -> `x`, with a remark."""

    name = "installed-fold"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, NegOp) and isinstance(inner := op.operands[0].owner, NegOp):
            emit_remark(op, "installed plugin folded neg(neg(x))")
            rewriter.replace(op, [], [inner.operands[0]])


@optimus_ir.register_pass
@dataclass(frozen=True)
class InstalledFoldDoubleNeg(PatternPass):
    """`neg(neg(x))` -> `x`, from an installed plugin."""

    name = "installed-fold-double-neg"

    def patterns(self) -> Sequence[RewritePattern]:
        return [FoldDoubleNeg()]


def broken_setup() -> None:
    """A plugin function that fails."""
    raise RuntimeError("this plugin is broken on purpose")
