"""The view relations and canonicalization hooks the plumbing ops carry
(see `optimus_ir.foundation.traits`)."""


from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from optimus_ir.foundation.traits import (
    Identity,
    LazyCanonicalizationPatterns,
    Permutation,
    Piece,
    Reshape,
    UnitDims,
    ViewRelation,
)
from optimus_ir.dialects.torch.base import (
    ints,
)
from optimus_ir.dialects.torch.inference import (
    movedim_permutation,
)



# ---------------------------------------------------------------------------
# Op traits (see optimus_ir.foundation.traits): view relations, elementwise exactness,
# canonicalization patterns
# ---------------------------------------------------------------------------


def _split_relation(op: Operation) -> ViewRelation:
    return Piece(op.properties["dim"].data)  # type: ignore[attr-defined]


def _unbind_relation(op: Operation) -> ViewRelation:
    return Piece(op.properties["dim"].data, keeps_dim=False)  # type: ignore[attr-defined]


def _slice_relation(op: Operation) -> ViewRelation:
    props = op.properties
    return Piece(props["dim"].data, props["step"].data)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Windows(ViewRelation):
    """Windows of `size` every `step` along `dim`, appended as the last dim."""

    dim: int
    step: int

    def strides(self, sizes, strides, result_sizes):  # type: ignore[override]
        if not 0 <= self.dim < len(strides):
            return None
        out = list(strides)
        out[self.dim] = strides[self.dim] * self.step
        return (*out, strides[self.dim])


def _unfold_relation(op: Operation) -> ViewRelation:
    props = op.properties
    return _Windows(props["dim"].data, props["step"].data)  # type: ignore[attr-defined]


def _select_relation(op: Operation) -> ViewRelation:
    return Piece(op.properties["dim"].data, keeps_dim=False)  # type: ignore[attr-defined]


def _squeeze_relation(op: Operation) -> ViewRelation:
    return UnitDims(removed=ints(op.properties["dims"]))  # type: ignore[arg-type]


def _unsqueeze_relation(op: Operation) -> ViewRelation:
    return UnitDims(inserted=(op.properties["dim"].data,))  # type: ignore[attr-defined]


_COPYING_RESHAPE = Reshape(may_copy=True)
_VIEW_RESHAPE = Reshape(may_copy=False)
_IDENTITY = Identity()


def _copying_reshape(op: Operation) -> ViewRelation:
    return _COPYING_RESHAPE


def _reshape(op: Operation) -> ViewRelation:
    return _VIEW_RESHAPE


def _identity_relation(op: Operation) -> ViewRelation:
    return _IDENTITY


def _permute_relation(op: Operation) -> ViewRelation:
    return Permutation(ints(op.properties["dims"]))  # type: ignore[arg-type]


def _transpose_relation(op: Operation) -> ViewRelation:
    rank = len(op.operands[0].type.get_shape())  # type: ignore[attr-defined]
    order = list(range(rank))
    a, b = op.properties["dim0"].data, op.properties["dim1"].data  # type: ignore[attr-defined]
    order[a], order[b] = order[b], order[a]
    return Permutation(tuple(order))


def _movedim_relation(op: Operation) -> ViewRelation:
    rank = len(op.operands[0].type.get_shape())  # type: ignore[attr-defined]
    source = ints(op.properties["source"])  # type: ignore[arg-type]
    destination = ints(op.properties["destination"])  # type: ignore[arg-type]
    return Permutation(tuple(movedim_permutation(rank, source, destination)))


# Pattern sets by their name in `passes/registry.py` CANONICALIZATION_PATTERNS
# (the dialect names no pass module: the registry binds them lazily).
_SPLIT_CANONICALIZATION = LazyCanonicalizationPatterns("torch.split")
_JOIN_CANONICALIZATION = LazyCanonicalizationPatterns("torch.join")
_VIEW_CHAIN_CANONICALIZATION = LazyCanonicalizationPatterns("torch.view-chain")
_PLUMBING_CANONICALIZATION = LazyCanonicalizationPatterns("torch.plumbing")


