"""A Wide & Deep recommendation model (Cheng et al., 2016), seeded.

The *wide* part is a linear model on sparse cross features (multi-hot,
given as a float vector): it memorizes feature co-occurrences. The *deep*
part embeds every categorical feature in its own table, passes each
embedding through a small per-feature projection, concatenates them with
the dense features and runs an MLP. The two logits are added::

    wide_x: [B, wide_features]     ids_f: [B] (f = 0 .. F-1)        dense: [B, dense_features]
      |                              |
      |                            Embedding_f(rows, D)   F independent tables
      |                              |
      |                            Linear_f(D, D) -> ReLU F parallel projections
      |                              |
      |                            cat(proj_0 .. proj_{F-1}, dense, dim=1)
      |                              |
    Linear(wide_features, 1)       deep MLP (linear -> relu)* -> Linear(1)
      |                              |
      +------------ add -------------+
                     |
                  sigmoid   [B, 1]

What Optimus-style fusion should do with it: the F projections are a
group of same-shape linears (one batched matmul) followed by a group of
ReLUs (one pointwise op on the stacked values), and the concat reads the
batched result. The embedding lookups themselves are not a batch-fusion
candidate in optimus-ir (Meta's Optimus leaves them to TorchRec's fused
embedding kernels), and the deep MLP and the wide linear are sequential or
of different shapes, so they stay as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from optimus_ir.examples.builders import mlp, seeded_example

__all__ = ["WideAndDeep", "make_wide_deep_model"]


class WideAndDeep(nn.Module):
    """A wide linear on cross features plus a deep MLP on embeddings.

    ``forward(wide_x, dense, ids_0, ..., ids_{F-1})`` returns the click
    probability ``[B, 1]``; `example_inputs` draws such arguments.

    Args:
        sparse_features: number of categorical features (one table each).
        rows: rows of every embedding table.
        embedding_dim: embedding width (and each projection's width).
        dense_features: width of the dense input.
        wide_features: width of the wide (multi-hot cross-feature) input.
        deep: hidden widths of the deep MLP (a final ``Linear(., 1)`` follows).

    Attributes:
        wide: ``nn.Linear(wide_features, 1)`` on the wide (multi-hot) input.
        embeddings: one ``nn.Embedding(rows, embedding_dim)`` per sparse feature.
        projections: one ``Linear(embedding_dim, embedding_dim) -> ReLU`` per
            sparse feature.
        deep: ``Linear(F * embedding_dim + dense_features, deep[0]) -> ReLU
            -> ... -> Linear(deep[-1], 1)``.
    """

    def __init__(
        self,
        sparse_features: int = 16,
        rows: int = 1000,
        embedding_dim: int = 16,
        dense_features: int = 32,
        wide_features: int = 256,
        deep: Sequence[int] = (256, 128, 64),
    ) -> None:
        super().__init__()
        widths = tuple(int(w) for w in deep)
        if sparse_features < 1:
            raise ValueError(f"sparse_features must be at least 1, got {sparse_features}")
        if not widths:
            raise ValueError("the deep MLP needs at least one hidden width")
        self.sparse_features = sparse_features
        self.dense_features = dense_features
        # Creation order fixes the seeded parameters: wide, tables,
        # projections, deep MLP.
        self.wide = nn.Linear(wide_features, 1)
        self.embeddings = nn.ModuleList(
            nn.Embedding(rows, embedding_dim) for _ in range(sparse_features)
        )
        self.projections = nn.ModuleList(
            mlp((embedding_dim, embedding_dim), last_activation=True) for _ in range(sparse_features)
        )
        self.deep = mlp(
            (sparse_features * embedding_dim + dense_features, *widths, 1), last_activation=False
        )

    def forward(self, wide_x: torch.Tensor, dense: torch.Tensor, *ids: torch.Tensor) -> torch.Tensor:
        """`wide_x` ``[B, wide_features]`` and `dense` ``[B, dense_features]``
        float, then one ``[B]`` int64 id tensor per sparse feature."""
        if len(ids) != self.sparse_features:
            raise ValueError(f"expected {self.sparse_features} id tensors, got {len(ids)}")
        projected = [
            project(table(feature_ids))
            for feature_ids, table, project in zip(ids, self.embeddings, self.projections)
        ]
        deep_logit = self.deep(torch.cat([*projected, dense], dim=1))
        return torch.sigmoid(self.wide(wide_x) + deep_logit)

    def example_inputs(self, batch: int) -> tuple[torch.Tensor, ...]:
        """Random arguments of `forward` (from the global RNG), ``(wide_x,
        dense, ids_0, ..., ids_{F-1})``: ``wide_x`` ``[batch,
        wide_features]`` float32 of 0/1 (about 5% ones), ``dense`` ``[batch,
        dense_features]`` float32, each ``ids_f`` ``[batch]`` int64 in
        ``[0, rows)``."""
        wide_x = (torch.rand(batch, self.wide.in_features) < 0.05).to(torch.float32)
        dense = torch.randn(batch, self.dense_features)
        ids = tuple(
            torch.randint(0, table.num_embeddings, (batch,), dtype=torch.int64)
            for table in self.embeddings
        )
        return (wide_x, dense, *ids)


def make_wide_deep_model(
    batch: int = 64, seed: int = 0, **sizes: Any
) -> tuple[WideAndDeep, tuple[torch.Tensor, ...]]:
    """Build a seeded `WideAndDeep` in eval mode and its
    `WideAndDeep.example_inputs` (`seeded_example`: the caller's random
    numbers stay as they were).

    Args:
        batch: batch size of the example inputs.
        seed: seeds the parameters, then the inputs: two calls with the
            same arguments give identical models and inputs.
        **sizes: keyword arguments of `WideAndDeep` (``sparse_features``,
            ``rows``, ``embedding_dim``, ``dense_features``,
            ``wide_features``, ``deep``).

    Returns:
        ``(model, (wide_x, dense, ids_0, ..., ids_{F-1}))``.
    """
    return seeded_example(seed, lambda: WideAndDeep(**sizes), lambda model: model.example_inputs(batch))
