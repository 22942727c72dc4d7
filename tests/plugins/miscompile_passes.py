"""A pass plugin of test-only passes: `test-miscompile`, a deliberately
wrong pass, for testing validation (and `test-fail`, a pass that crashes,
for testing fallbacks; `test-alias-miscompile`, one that breaks aliasing).

They are not in the production registry: importing this module registers
them (the `@optimus_ir.register_pass` class decorator). `optimus-opt
--load-pass-plugin=tests/plugins/miscompile_passes.py` loads it (the lit
tests: `%{test_passes}`); the pytest tests that use them import it
(`from plugins import miscompile_passes`).

Like MLIR's `-test-...` passes, this exists only to exercise the tooling:
`--validate-each` must catch it and `--bisect-rewrites` must find the one
rewrite that breaks the results. Never put it in a real pipeline.

It has two patterns, applied to every `tanh` (fx `torch.tanh` calls and
`torch.tanh` ops alike):

* `tanh-to-tanh` (correct): rebuilds the op unchanged, so that bisection
  has harmless rewrites to step over;
* `tanh-to-sigmoid` (wrong): on the `nth` tanh only (0-based, in program
  order), replaces tanh by sigmoid.

`test-alias-miscompile` (`TestAliasMiscompilePass`) keeps every value but
changes what aliases what (a returned view copied, two outputs merged into
one tensor, a write dropped): the alias-structure check of validation must
catch it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from optimus_ir.dialects import fx
from optimus_ir.dialects.torch import SigmoidOp, TanhOp
from optimus_ir import register_pass
from optimus_ir.foundation.rewriting import PatternPass, RewriteConfig

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


@register_pass
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
        from optimus_ir.foundation.rewriting import GreedyRewriteDriver

        GreedyRewriteDriver(patterns, RewriteConfig(), name=self.name).rewrite(op)


AliasMiscompileMode = Literal["copy-output", "merge-outputs", "drop-write"]
"""What `test-alias-miscompile` breaks."""

ALIAS_MISCOMPILE_MODES: tuple[str, ...] = get_args(AliasMiscompileMode)


@register_pass
@dataclass(frozen=True)
class TestAliasMiscompilePass(ModulePass):
    """Deliberately change aliasing while keeping the returned values
    (testing only: differential validation must catch it by the alias
    structure, `optimus_ir.pipeline.validation.alias_structure`):

    * `copy-output`: output #0 is returned as a copy (`.clone()`), so a
      returned view of an input no longer writes through to it;
    * `merge-outputs`: output #1 becomes output #0 (the same tensor object
      twice) where the two have one type;
    * `drop-write`: the first in-place method call (`add_`, ...) becomes its
      out-of-place form: the write is dropped."""

    name = "test-alias-miscompile"
    mode: AliasMiscompileMode = "copy-output"

    def apply(self, ctx, op: ModuleOp) -> None:  # type: ignore[override]
        graph = next(o for o in op.ops if isinstance(o, fx.GraphOp))  # the module's fx.graph
        output = graph.output()
        if self.mode == "copy-output" and output.operands:
            value = output.operands[0]
            copy = fx.CallMethodOp("clone", [fx.ref(0)], {}, [value], value.type)
            Rewriter.insert_op(copy, InsertPoint.before(output))
            output.operands[0] = copy.results[0]
        elif self.mode == "merge-outputs" and len(output.operands) > 1:
            first, second = output.operands[0], output.operands[1]
            if first.type == second.type:
                output.operands[1] = first
        elif self.mode == "drop-write":
            for inner in graph.block.ops:
                if isinstance(inner, fx.CallMethodOp) and _is_in_place_name(inner.target.data):
                    name = inner.target.data[:-1]
                    new = fx.CallMethodOp(
                        name, inner.args.data, inner.kwargs.data, inner.operands, inner.result.type
                    )
                    Rewriter.replace_op(inner, new)
                    break


def _is_in_place_name(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_")


class TestPassFailure(RuntimeError):
    """What `test-fail` raises: a stand-in for a bug inside a pass."""


@register_pass
@dataclass(frozen=True)
class TestFailPass(ModulePass):
    """Deliberately crash (testing only): raise `TestPassFailure` with
    `message`. The callers that must survive a broken pass (the
    torch.compile backend and the Inductor hook fall back to the
    unoptimized graph, naming the pass; strict mode raises) are tested
    with it, as `optimus-opt` reports it with the pass's name."""

    name = "test-fail"
    message: str = "deliberate failure"

    def apply(self, ctx, op: ModuleOp) -> None:  # type: ignore[override]
        raise TestPassFailure(self.message)
