"""A DLRM-style click-through-rate model (Naumov et al., 2019), seeded.

The Deep Learning Recommendation Model reads one dense feature vector and
``num_tables`` sparse (categorical) features. Each sparse feature is a bag of
row ids into its own embedding table, pooled by sum; the dense features go
through a bottom MLP whose last width is the embedding width, so all
``num_tables + 1`` vectors can interact by pairwise dot products::

    dense: [B, dense_features]      indices_t, offsets_t   (t = 0 .. T-1)
      |                                  |
    bottom MLP (linear -> relu)*       EmbeddingBag_t(rows, D, mode="sum")
      |  [B, D]                          |  [B, D] each, T independent tables
      +-----------------+----------------+
                        |
                      stack(dim=1)              Z: [B, T+1, D]
                        |
                      bmm(Z, Z^T)               [B, T+1, T+1]
                        |
                      [:, li, lj]               strictly-lower triangle (buffers)
                        |                       [B, (T+1)T/2]
      cat(bottom output, pairs, dim=1)
                        |
                      top MLP (linear -> relu)* -> linear -> sigmoid   [B, 1]

The sparse inputs use the layout of the reference DLRM and of TorchRec's
jagged tensors: per table a flat int64 ``indices`` tensor and an
``offsets`` tensor that starts each bag (here every bag holds ``bag_size``
ids). ``torch._dynamo.export`` captures it as one graph with one
``embedding_bag`` call per table.

What Optimus-style fusion can do with it: the T embedding-bag lookups are
the wide, parallel part (Meta's Optimus leaves them to TorchRec's fused
embedding kernels); the MLPs are sequential chains of one linear each, so
there is no horizontal group among them. optimus-ir does not batch
``embedding_bag`` (it is not a batch-fusion candidate), so the optimized
graph keeps the op count of the captured one: the model is here as the
realistic case where the win must come from elsewhere, and as a check that
the pipeline leaves such a graph correct.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from optimus_ir.examples.builders import mlp, seeded_example

__all__ = ["DLRM", "make_dlrm_model"]


class DLRM(nn.Module):
    """Embedding bags + bottom MLP, pairwise dot interaction, top MLP.

    ``forward(dense, indices_0, offsets_0, ..., indices_{T-1}, offsets_{T-1})``
    returns the click probability ``[B, 1]``; `example_inputs` draws such
    arguments.

    Args:
        num_tables: number of sparse features, each with its own table.
        rows: rows of every embedding table.
        embedding_dim: embedding width (and the bottom MLP's output width).
        dense_features: width of the dense input (13 in Criteo).
        bottom: widths of the bottom MLP's linears; the last is embedding_dim.
        top: widths of the top MLP's linears; the last is the output (1).

    Attributes:
        embeddings: one ``nn.EmbeddingBag(rows, embedding_dim, mode="sum")``
            per sparse feature.
        bottom: the dense MLP ``dense_features -> bottom[0] -> ... ->
            bottom[-1]`` (ReLU after every linear; ``bottom[-1]`` must be
            ``embedding_dim``).
        top: the MLP on ``[bottom output, pairwise dots]``: ReLU after every
            linear but the last, then the model applies a sigmoid.
        tril_rows, tril_cols: buffers, the row and column of each pair
            ``(i, j), i > j`` of the ``T + 1`` interacting vectors.
    """

    tril_rows: torch.Tensor
    tril_cols: torch.Tensor

    def __init__(
        self,
        num_tables: int = 8,
        rows: int = 1000,
        embedding_dim: int = 16,
        dense_features: int = 13,
        bottom: Sequence[int] = (64, 16),
        top: Sequence[int] = (64, 32, 1),
    ) -> None:
        super().__init__()
        bottom, top = tuple(bottom), tuple(top)
        if num_tables < 1:
            raise ValueError(f"num_tables must be at least 1, got {num_tables}")
        if not bottom or bottom[-1] != embedding_dim:
            raise ValueError(
                f"the bottom MLP's last width must be embedding_dim={embedding_dim}, got {bottom!r}"
            )
        if not top:
            raise ValueError("the top MLP needs at least one layer")
        self.num_tables = num_tables
        self.embedding_dim = embedding_dim
        self.dense_features = dense_features
        # Creation order fixes the seeded parameters: tables, bottom, top.
        self.embeddings = nn.ModuleList(
            nn.EmbeddingBag(rows, embedding_dim, mode="sum") for _ in range(num_tables)
        )
        self.bottom = mlp((dense_features, *bottom), last_activation=True)
        vectors = num_tables + 1
        pairs = vectors * (vectors - 1) // 2
        self.top = mlp((embedding_dim + pairs, *top), last_activation=False)
        tril = torch.tril_indices(vectors, vectors, offset=-1)
        self.register_buffer("tril_rows", tril[0].clone())
        self.register_buffer("tril_cols", tril[1].clone())

    def interact(self, dense: torch.Tensor, pooled: Sequence[torch.Tensor]) -> torch.Tensor:
        """The dot product of every pair of the ``T + 1`` vectors, ``[B, (T+1)T/2]``."""
        z = torch.stack([dense, *pooled], dim=1)  # [B, T+1, D]
        dots = torch.bmm(z, z.transpose(1, 2))  # [B, T+1, T+1]
        return dots[:, self.tril_rows, self.tril_cols]

    def forward(self, dense: torch.Tensor, *sparse: torch.Tensor) -> torch.Tensor:
        """`dense` ``[B, dense_features]`` float, then per table its flat
        ``indices`` and its ``offsets`` ``[B]`` (int64)."""
        if len(sparse) != 2 * self.num_tables:
            raise ValueError(
                f"expected an (indices, offsets) pair for each of {self.num_tables} tables, "
                f"got {len(sparse)} tensors"
            )
        x = self.bottom(dense)
        pooled = [
            table(sparse[2 * t], sparse[2 * t + 1]) for t, table in enumerate(self.embeddings)
        ]
        features = torch.cat([x, self.interact(x, pooled)], dim=1)
        return torch.sigmoid(self.top(features))

    def example_inputs(self, batch: int, bag_size: int) -> tuple[torch.Tensor, ...]:
        """Random arguments of `forward` (from the global RNG), ``(dense,
        indices_0, offsets_0, ..., indices_{T-1}, offsets_{T-1})``:
        ``dense`` ``[batch, dense_features]`` float32, each ``indices_t``
        ``[batch * bag_size]`` int64 in ``[0, rows)``, each ``offsets_t``
        ``[batch]`` int64 (``0, bag_size, 2 * bag_size, ...``)."""
        dense = torch.randn(batch, self.dense_features)
        offsets = torch.arange(batch, dtype=torch.int64) * bag_size
        sparse: list[torch.Tensor] = []
        for table in self.embeddings:
            sparse.append(torch.randint(0, table.num_embeddings, (batch * bag_size,), dtype=torch.int64))
            sparse.append(offsets.clone())
        return (dense, *sparse)


def make_dlrm_model(
    batch: int = 64, seed: int = 0, *, bag_size: int = 4, **sizes: Any
) -> tuple[DLRM, tuple[torch.Tensor, ...]]:
    """Build a seeded `DLRM` in eval mode and its `DLRM.example_inputs`
    (`seeded_example`: the caller's random numbers stay as they were).

    Args:
        batch: batch size of the example inputs.
        seed: seeds the parameters, then the inputs: two calls with the
            same arguments give identical models and inputs.
        bag_size: ids per bag (each sample's multi-hot sparse feature).
        **sizes: keyword arguments of `DLRM` (``num_tables``, ``rows``,
            ``embedding_dim``, ``dense_features``, ``bottom``, ``top``).

    Returns:
        ``(model, (dense, indices_0, offsets_0, ..., indices_{T-1},
        offsets_{T-1}))``.
    """
    if bag_size < 1:
        raise ValueError(f"bag_size must be at least 1, got {bag_size}")
    return seeded_example(seed, lambda: DLRM(**sizes), lambda model: model.example_inputs(batch, bag_size))
