"""Split/cat-heavy models for the split-cat-simplify benchmark and tests.

Each model is the kind of plumbing recommendation models are glued with
(feature towers that split a wide input, fold features into the batch,
stack them for interaction, unbind them again). Every model ends in a
compute op, as real models do, so no output is a bare view of an input; the
ops after the plumbing are exact elementwise ones (relu, mul, neg, abs) or
take a contiguous input, so rewritten plumbing (views with other strides)
must give bitwise identical outputs (reductions and transcendental kernels
may round differently on other layouts).

`MODELS` maps a name to a `ModelSpec` (a zero-argument factory for the
module and one for the example inputs, both seeded and CPU-sized).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

B = 8  # batch
N = 6  # features
D = 16  # feature width


class RecsysFoldTower(nn.Module):
    """Split a wide input into features, fold them into the batch (split ->
    cat on dim 0) for one shared tower, then unfold (split on dim 0 -> cat on
    dim 1) for the interaction layer."""

    def __init__(self) -> None:
        super().__init__()
        self.tower = nn.Linear(D, D)
        self.top = nn.Linear(N * D, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = torch.split(x, D, dim=1)
        folded = torch.cat(feats, dim=0)  # [N*B, D]
        h = torch.relu(self.tower(folded))
        per_feature = torch.split(h, B, dim=0)
        wide = torch.cat(per_feature, dim=1)  # [B, N*D]
        return self.top(wide)


class NestedSplits(nn.Module):
    """A split whose pieces are split again, joined by stacks on another dim."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left, right = torch.split(x, [N * D // 2, N * D // 2], dim=1)
        a = torch.split(left, D, dim=1)
        b = torch.split(right, D, dim=1)
        sa = torch.stack(a, dim=1)  # [B, N/2, D]
        sb = torch.stack(b, dim=1)
        return torch.relu(sa) * sb


class SplitStack(nn.Module):
    """split -> stack on a new dim for a feature-interaction matmul."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = x.split(D, dim=1)
        stacked = torch.stack(feats, dim=1)  # [B, N, D]
        return stacked.relu() * stacked


class UnbindStack(nn.Module):
    """unbind the feature dim, stack on another: a transpose."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = torch.unbind(x, dim=1)  # N x [B, D]
        stacked = torch.stack(feats, dim=0)  # [N, B, D]
        cat = torch.cat(feats, dim=1)  # [B, N*D]
        return stacked.relu(), cat.abs()


class SplitSqueeze(nn.Module):
    """split into size-1 pieces, squeeze each, join them again."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 1, dim=1)  # N x [B, 1, D]
        squeezed = [p.squeeze(1) for p in pieces]
        stacked = torch.stack(squeezed, dim=2)  # [B, D, N]
        return stacked.relu()


class CatOfSlices(nn.Module):
    """Features taken with slicing, then concatenated / stacked."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = [x[:, i * D : (i + 1) * D] for i in range(N)]
        wide = torch.cat(parts, dim=1)
        stacked = torch.stack(parts, dim=1)
        return wide.relu(), stacked.neg()


class InterleavedForeign(nn.Module):
    """Pieces of a split joined with other tensors in between (dense and
    embedding features), on the batch dim and in a stack."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.Linear(D, D)

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        p = torch.split(x, D, dim=1)
        dense = self.dense(emb)
        rows = torch.cat([emb, p[0], p[1], p[2], dense, p[3], p[4], p[5]], dim=0)
        stacked = torch.stack([dense, p[2], p[3], p[4], emb], dim=1)
        return rows.relu(), stacked.relu()


class SplitReshapeStack(nn.Module):
    """split -> view each piece as a small matrix -> stack."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, D, dim=1)
        mats = [p.view(B, 4, D // 4) for p in pieces]
        stacked = torch.stack(mats, dim=1)  # [B, N, 4, D/4]
        return stacked.relu()


class ShuffledRanges(nn.Module):
    """Ranges of pieces in another order, joined on another dim."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = torch.split(x, D, dim=1)
        rows = torch.cat([p[3], p[4], p[5], p[0], p[1], p[2]], dim=0)
        return torch.relu(rows)


class MixedPlumbing(nn.Module):
    """A bit of everything: unbind -> cat, split -> squeeze -> cat, split ->
    reshape -> stack, chains of views that cancel."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(N * D, D)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # x: [B, N, D]; y: [B, N*D]
        flat = torch.cat(torch.unbind(x, dim=1), dim=1)  # [B, N*D]
        sq = torch.cat([p.squeeze(1) for p in torch.split(x, 1, dim=1)], dim=0)  # [N*B, D]
        r = torch.stack([p.reshape(B, D) for p in y.split(D, dim=1)], dim=0)  # [N, B, D]
        back = r.permute(1, 0, 2).permute(1, 0, 2).reshape(N * B, D)
        t = y.t().t().view(B, N, D).view(B, N * D)
        return self.proj(flat + t), sq * back


@dataclass(frozen=True)
class ModelSpec:
    """A benchmark model: its factory and its example inputs' factory."""

    make: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]


def _seeded(make: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return make().eval()

    return build


def _randn(*shapes: tuple[int, ...]) -> Callable[[], tuple[torch.Tensor, ...]]:
    def build() -> tuple[torch.Tensor, ...]:
        gen = torch.Generator().manual_seed(1)
        return tuple(torch.randn(*s, generator=gen) for s in shapes)

    return build


MODELS: dict[str, ModelSpec] = {
    "recsys_fold_tower": ModelSpec(_seeded(RecsysFoldTower), _randn((B, N * D))),
    "nested_splits": ModelSpec(_seeded(NestedSplits), _randn((B, N * D))),
    "split_stack": ModelSpec(_seeded(SplitStack), _randn((B, N * D))),
    "unbind_stack": ModelSpec(_seeded(UnbindStack), _randn((B, N, D))),
    "split_squeeze": ModelSpec(_seeded(SplitSqueeze), _randn((B, N, D))),
    "cat_of_slices": ModelSpec(_seeded(CatOfSlices), _randn((B, N * D))),
    "interleaved_foreign": ModelSpec(_seeded(InterleavedForeign), _randn((B, N * D), (B, D))),
    "split_reshape_stack": ModelSpec(_seeded(SplitReshapeStack), _randn((B, N * D))),
    "shuffled_ranges": ModelSpec(_seeded(ShuffledRanges), _randn((B, N * D))),
    "mixed": ModelSpec(_seeded(MixedPlumbing), _randn((B, N, D), (B, N * D))),
}
"""The benchmark's models, by name."""

__all__ = ["MODELS", "ModelSpec"]


if __name__ == "__main__":
    # A module of models, not a benchmark: run as a script it lists them
    # (every script of benchmarks/ answers --help).
    import argparse

    argparse.ArgumentParser(
        description="The split/cat-heavy models of benchmarks/compare_split_cat.py "
        "(a module imported by it and the tests); run alone it lists their names."
    ).parse_args()
    print("\n".join(MODELS))
