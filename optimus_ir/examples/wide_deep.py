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

import torch
from torch import nn

__all__ = ["WideAndDeep", "make_wide_deep_model"]


class WideAndDeep(nn.Module):
    """A wide linear on cross features plus a deep MLP on embeddings.

    ``forward(wide_x, dense, ids_0, ..., ids_{F-1})`` returns the click
    probability ``[B, 1]``.

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
        # Creation order fixes the seeded parameters: wide, tables,
        # projections, deep MLP.
        self.wide = nn.Linear(wide_features, 1)
        self.embeddings = nn.ModuleList(
            nn.Embedding(rows, embedding_dim) for _ in range(sparse_features)
        )
        self.projections = nn.ModuleList(
            nn.Sequential(nn.Linear(embedding_dim, embedding_dim), nn.ReLU())
            for _ in range(sparse_features)
        )
        layers: list[nn.Module] = []
        n_in = sparse_features * embedding_dim + dense_features
        for n_out in widths:
            layers += [nn.Linear(n_in, n_out), nn.ReLU()]
            n_in = n_out
        layers.append(nn.Linear(n_in, 1))
        self.deep = nn.Sequential(*layers)

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


def make_wide_deep_model(
    batch: int = 64,
    seed: int = 0,
    *,
    sparse_features: int = 16,
    rows: int = 1000,
    embedding_dim: int = 16,
    dense_features: int = 32,
    wide_features: int = 256,
    deep: Sequence[int] = (256, 128, 64),
) -> tuple[WideAndDeep, tuple[torch.Tensor, ...]]:
    """Build a seeded `WideAndDeep` in eval mode and example inputs.

    The global RNG state is saved and restored around the construction, so
    calling this does not change the random numbers the caller draws next.

    Args:
        batch: batch size of the example inputs.
        seed: seeds the parameters and the inputs: two calls with the same
            arguments give identical models and inputs.
        sparse_features: number of categorical features (one table each).
        rows: rows of every embedding table.
        embedding_dim: embedding width (and each projection's width).
        dense_features: width of the dense input.
        wide_features: width of the wide (multi-hot cross-feature) input.
        deep: hidden widths of the deep MLP (a final ``Linear(., 1)`` follows).

    Returns:
        ``(model, (wide_x, dense, ids_0, ..., ids_{F-1}))``: ``wide_x``
        ``[batch, wide_features]`` float32 of 0/1 (about 5% ones),
        ``dense`` ``[batch, dense_features]`` float32, each ``ids_f``
        ``[batch]`` int64 in ``[0, rows)``.
    """
    with torch.random.fork_rng(devices=()):  # the caller's random numbers stay as they were
        torch.manual_seed(seed)
        model = WideAndDeep(
            sparse_features, rows, embedding_dim, dense_features, wide_features, deep
        ).eval()
        wide_x = (torch.rand(batch, wide_features) < 0.05).to(torch.float32)
        dense = torch.randn(batch, dense_features)
        ids = tuple(
            torch.randint(0, rows, (batch,), dtype=torch.int64) for _ in range(sparse_features)
        )
    return model, (wide_x, dense, *ids)
