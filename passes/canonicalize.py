"""`canonicalize`: run the local folds the ops declare.

As in MLIR and xDSL, an op lists its canonicalization patterns through a
`HasCanonicalizationPatternsTrait` (ours import them lazily:
`optimus_ir.foundation.traits.LazyCanonicalizationPatterns`), each pattern rooted at
that op. The pass collects the patterns of the op kinds present in the
module and runs them with the project's bounded greedy driver (budget,
statistics and limits as every other pattern pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import RewritePattern

from optimus_ir.passes.canonicalization_patterns import rewrite_with_aliases
from optimus_ir.foundation.rewriting import PatternPass
from optimus_ir.foundation.traits import canonicalization_patterns


def collect_canonicalization_patterns(root: Operation) -> list[RewritePattern]:
    """The canonicalization patterns of every op kind nested in `root`, each
    once, in the order the op kinds first appear (a pattern shared by
    several kinds keeps its first place; every kind lists its patterns in
    its own order, which the merge preserves)."""
    seen_kinds: set[type[Operation]] = set()
    seen_patterns: set[int] = set()
    patterns: list[RewritePattern] = []
    for op in root.walk():
        kind = type(op)
        if kind in seen_kinds:
            continue
        seen_kinds.add(kind)
        for pattern in canonicalization_patterns(kind):
            if id(pattern) not in seen_patterns:
                seen_patterns.add(id(pattern))
                patterns.append(pattern)
    return patterns


@dataclass(frozen=True)
class Canonicalize(PatternPass):
    """Fold ops locally with the canonicalization patterns they declare.

    For the torch dialect: dead split/unbind/cat/stack/view ops go, a join of
    one tensor becomes that tensor (or an unsqueeze of it), a split into one
    piece its input, neighbouring dead split pieces one section (a single
    live piece a slice), and chains of view ops that fold into at most one
    op that op (see `optimus_ir.passes.canonicalization_patterns.torch`).
    Rewrites that change aliasing are guarded exactly as in
    `split-cat-simplify`, which runs the same plumbing patterns among its
    own. The identities a captured graph carries go too: a dropout in eval
    mode or with `p = 0`, and on fx calls a `.contiguous()` of a contiguous
    value, a cast to the value's own dtype and device, a `clone` of a
    temporary nothing writes (`canonicalization_patterns.fx`).
    Unlike MLIR's canonicalizer it does not erase other dead ops: that is
    `dce`'s job, which knows the effects of fx calls."""

    name = "canonicalize"

    def patterns(self) -> Sequence[RewritePattern]:
        raise NotImplementedError("the patterns depend on the module: see apply")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = collect_canonicalization_patterns(op)
        if not patterns:
            return
        rewrite_with_aliases(op, patterns, self.rewrite_config(), self.name)


__all__ = ["Canonicalize", "collect_canonicalization_patterns"]
