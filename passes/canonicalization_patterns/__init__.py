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
    from xdsl.pattern_rewriter import RewritePattern

    from optimus_ir.analysis import AliasAnalysis


def bind_aliases(patterns: Sequence[RewritePattern], aliases: AliasAnalysis) -> list[RewritePattern]:
    """`patterns` with those that ask alias facts (an `aliases` attribute)
    made anew on `aliases`, the one analysis of the pass run."""
    return [type(p)(aliases) if hasattr(p, "aliases") else p for p in patterns]  # type: ignore[call-arg]


__all__ = ["bind_aliases"]
