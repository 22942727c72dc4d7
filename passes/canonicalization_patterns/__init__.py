"""The patterns layer (rank 3.5): rewrite patterns and the helpers passes
share (`split_cat_common`, `view_programs`).

Canonicalization patterns, one module per dialect (`torch`, `batch`),
registered by name in the pass registry (`CANONICALIZATION_PATTERNS`),
named by the ops' `LazyCanonicalizationPatterns` traits and run by the
`canonicalize` pass (and by `split-cat-simplify`, `batch-fusion` and
`lower-batch` among their own patterns: `bind_aliases` gives them the pass
run's alias analysis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.ir import Operation
    from xdsl.pattern_rewriter import RewritePattern

    from optimus_ir.analysis import AliasAnalysis
    from optimus_ir.foundation.rewriting import RewriteConfig


def bind_aliases(patterns: Sequence[RewritePattern], aliases: AliasAnalysis) -> list[RewritePattern]:
    """`patterns` with those that ask alias facts (an `aliases` attribute)
    made anew on `aliases`, the one analysis of the pass run."""
    return [type(p)(aliases) if hasattr(p, "aliases") else p for p in patterns]  # type: ignore[call-arg]


def rewrite_with_aliases(
    root: Operation, patterns: Sequence[RewritePattern], config: RewriteConfig, name: str
) -> None:
    """Run `patterns` on `root` with the bounded greedy driver, those that
    ask alias facts bound (`bind_aliases`) to one `AliasAnalysis` of
    `root`, which the driver's listener keeps up to date: walking an alias
    class per match instead is O(K) on a split into K pieces."""
    from optimus_ir.analysis import AliasAnalysis
    from optimus_ir.foundation.rewriting import GreedyRewriteDriver

    aliases = AliasAnalysis(root)
    GreedyRewriteDriver(
        bind_aliases(patterns, aliases), config, name=name, listeners=[aliases.listener()]
    ).rewrite(root)


__all__ = ["bind_aliases", "rewrite_with_aliases"]
