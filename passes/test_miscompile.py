"""`test-miscompile`: a deliberately wrong pass, for testing validation.

Like MLIR's `-test-...` passes, this exists only to exercise the tooling:
`--validate-each` must catch it and `--bisect-rewrites` must find the one
rewrite that breaks the results. Never put it in a real pipeline.

It has two patterns, applied to every `tanh` (fx `torch.tanh` calls and
`torch.tanh` ops alike):

* `tanh-to-tanh` (correct): rebuilds the op unchanged, so that bisection
  has harmless rewrites to step over;
* `tanh-to-sigmoid` (wrong): on the `nth` tanh only (0-based, in program
  order), replaces tanh by sigmoid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from optimus_ir.dialects import fx
from optimus_ir.dialects.torch import SigmoidOp, TanhOp
from optimus_ir.rewriting import PatternPass, RewriteConfig

_REWRITTEN = "test_miscompile_done"


def _is_tanh(op: Operation) -> bool:
    if isinstance(op, TanhOp):
        return True
    return isinstance(op, fx.CallFunctionOp) and op.target.data == "torch.tanh"


@dataclass
class TanhToSigmoid(RewritePattern):
    """The wrong rewrite: the `nth` tanh becomes a sigmoid."""

    nth: int
    seen: dict[Operation, int] = field(default_factory=dict)
    name = "tanh-to-sigmoid"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not _is_tanh(op) or self.seen.get(op) != self.nth:
            return
        if isinstance(op, TanhOp):
            rewriter.replace(op, SigmoidOp(op.operands[0], result_type=op.results[0].type))
        else:
            assert isinstance(op, fx.CallFunctionOp)
            clone = fx.CallFunctionOp(
                "torch.sigmoid", op.args.data, op.kwargs.data, op.operands, op.result.type
            )
            rewriter.replace(op, clone)


@dataclass
class TanhToTanh(RewritePattern):
    """A correct rewrite: every other tanh is rebuilt as it was (once)."""

    nth: int
    seen: dict[Operation, int] = field(default_factory=dict)
    name = "tanh-to-tanh"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not _is_tanh(op) or op.attributes.get(_REWRITTEN) is not None:
            return
        if self.seen.get(op) == self.nth:
            return
        clone = op.clone()
        from xdsl.dialects.builtin import UnitAttr

        clone.attributes[_REWRITTEN] = UnitAttr()
        rewriter.replace(op, clone)


@dataclass(frozen=True)
class TestMiscompilePass(PatternPass):
    """Deliberately miscompile: turn the `nth` tanh into a sigmoid (testing only)."""

    name = "test-miscompile"
    nth: int = 0

    def patterns(self) -> Sequence[RewritePattern]:
        return [TanhToTanh(self.nth), TanhToSigmoid(self.nth)]

    def apply(self, ctx, op) -> None:  # type: ignore[override]
        order: dict[Operation, int] = {}
        for inner in op.walk():
            if _is_tanh(inner):
                order[inner] = len(order)
        patterns = self.patterns()
        for pattern in patterns:
            pattern.seen = order  # type: ignore[attr-defined]
        from optimus_ir.rewriting import GreedyRewriteDriver

        GreedyRewriteDriver(patterns, RewriteConfig(), name=self.name).rewrite(op)
