"""The `torch` operator dialect: typed torch-level ops with canonical attributes.

This module implements the contract in `docs/operator-dialect.md`. `raise-fx`
produces these ops from `fx` ops, the split/cat and batch-fusion passes match on
them, and `lower-to-fx` turns them back into `fx.call_function` ops.

Types
    Operands and results are builtin `tensor<...>` types whose encoding is the
    device (see `optimus_ir.foundation.types`). Scalars are properties: `IntAttr`,
    `FloatAttr(f64)` or a `BoolAttr` (`i1`). Lists of ints are
    `ArrayAttr[IntAttr]`, dims are `IntAttr` and are canonical (non-negative).

Assembly format
    Every op prints as its name, its positional operands, then keyword fields
    (optional operands and properties, in a fixed order), the types of all
    operands and `->` the result types::

        %a, %b = torch.split %x sections [4, 8] dim 1
            : tensor<2x12xf32> -> tensor<2x4xf32>, tensor<2x8xf32>
        %y = torch.layer_norm %x normalized_shape [16] weight %w bias %b eps 1.0e-06
            : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>

    (each op on one line; wrapped here for width)
        %z = torch.sub %x scalar 1 reverse : tensor<4xf32> -> tensor<4xf32>

    A property equal to its default (alpha 1, step 1, approximate "none", ...)
    is left out; a bool property prints as its bare name when true.

Builders
    Every op has a Python constructor taking SSA values and plain Python
    values (ints, floats, bools, lists); `result_type=` / `result_types=` may
    be given explicitly, otherwise it is inferred by the same `infer_*`
    function the verifier uses (which raises `VerifyException` on
    inconsistent operands)::

        SplitOp(x, sections=[4, 4], dim=1)                     # result types inferred
        SplitOp(x, [4, 4], 1, result_types=[t0, t1])           # explicit
        AddOp(x, y); AddOp(x, 2.0); SubOp(x, 1, reverse=True)  # tensor or scalar rhs

Type inference helpers (module level, all pure functions of types and values)
    `infer_linear_type`, `infer_mm_type`, `infer_addmm_type`, `infer_bmm_type`,
    `infer_baddbmm_type`, `infer_matmul_type`, `infer_layer_norm_type`,
    `infer_split_types`, `infer_unbind_types`, `infer_cat_type`,
    `infer_stack_type`, `infer_squeeze_type`, `infer_unsqueeze_type`,
    `infer_reshape_type`, `infer_flatten_type`, `infer_unflatten_type`,
    `infer_permute_type`, `infer_transpose_type`, `infer_movedim_type`,
    `infer_slice_type`, `infer_select_type`, `infer_unary_type`,
    `infer_binary_type`, `infer_reduction_type`, `infer_softmax_type`,
    `infer_where_type`, `infer_masked_fill_type`, and `broadcast_shapes`.

Verification
    Each op checks ranks, shapes (a `?` is compatible with anything), dtypes
    (binary ops, cat/stack, reductions and int->float unary ops follow torch's
    type promotion, computed once per dtype combination with tiny tensors and
    cached) and devices (an unknown device matches any; a 0-d CPU tensor may
    meet a tensor on another device in a binary op, as in torch).

Effects
    Every op is `Pure` except `torch.dropout`, whose effects depend on `train`
    (see `is_pure`).

Traits (`optimus_ir.foundation.traits`)
    The plumbing ops are `ViewLike` (with how the result relates to the
    input), the pointwise ops `Elementwise` (with whether their values are
    exact under a layout change), the linear-algebra, layer_norm and
    reduction ops `ContiguousResult`; split, unbind, cat, stack and the view
    ops carry their canonicalization patterns (`canonicalize`).
"""


from __future__ import annotations

from xdsl.ir import Dialect, Operation
from xdsl.traits import get_effects

from optimus_ir.dialects.torch.base import (
    Format,
    Number,
    NumberLike,
    Value,
    broadcast_shapes,
    flag,
    ints,
    ints_attr,
    number_attr,
    number_value,
)
from optimus_ir.dialects.torch.facts import OpFacts, facts_of
from optimus_ir.dialects.torch.inference import (
    infer_addmm_type,
    infer_baddbmm_type,
    infer_binary_type,
    infer_bmm_type,
    infer_cat_type,
    infer_flatten_type,
    infer_layer_norm_type,
    infer_linear_type,
    infer_masked_fill_type,
    infer_matmul_type,
    infer_mm_type,
    infer_movedim_type,
    infer_permute_type,
    infer_reduction_type,
    infer_reshape_type,
    infer_select_type,
    infer_slice_type,
    infer_softmax_type,
    infer_split_types,
    infer_squeeze_type,
    infer_stack_type,
    infer_transpose_type,
    infer_unary_type,
    infer_unbind_types,
    infer_unflatten_type,
    infer_unfold_type,
    infer_unsqueeze_type,
    infer_where_type,
    movedim_permutation,
    split_sections,
)
from optimus_ir.dialects.torch import (
    linalg,
    normalization,
    pointwise,
    reductions,
    selection,
    views,
)
from optimus_ir.dialects.torch.assembly import TorchOp
from optimus_ir.dialects.torch.linalg import *  # noqa: F403 - its op classes
from optimus_ir.dialects.torch.normalization import *  # noqa: F403
from optimus_ir.dialects.torch.normalization import SoftmaxLikeOp
from optimus_ir.dialects.torch.pointwise import *  # noqa: F403
from optimus_ir.dialects.torch.pointwise import BinaryPointwiseOp, UnaryPointwiseOp
from optimus_ir.dialects.torch.reductions import *  # noqa: F403
from optimus_ir.dialects.torch.reductions import ReductionOp
from optimus_ir.dialects.torch.selection import *  # noqa: F403
from optimus_ir.dialects.torch.views import *  # noqa: F403

# ---------------------------------------------------------------------------
# Families, purity, dialect
# ---------------------------------------------------------------------------

_KIND_MODULES = (linalg, normalization, views, pointwise, selection, reductions)
"""The modules of the dialect's ops, by kind; each lists its ops in `__all__`."""

ALL_OPS: tuple[type[TorchOp], ...] = tuple(
    getattr(module, name) for module in _KIND_MODULES for name in module.__all__
)
"""Every op of the dialect, in the order of the kind modules."""

UNARY_POINTWISE_OPS: tuple[type[UnaryPointwiseOp], ...] = tuple(
    op for op in ALL_OPS if issubclass(op, UnaryPointwiseOp)
)
BINARY_POINTWISE_OPS: tuple[type[BinaryPointwiseOp], ...] = tuple(
    op for op in ALL_OPS if issubclass(op, BinaryPointwiseOp)
)
REDUCTION_OPS: tuple[type[ReductionOp], ...] = tuple(
    op for op in ALL_OPS if issubclass(op, ReductionOp)
)
SOFTMAX_OPS: tuple[type[SoftmaxLikeOp], ...] = tuple(
    op for op in ALL_OPS if issubclass(op, SoftmaxLikeOp)
)
SELECTION_OPS: tuple[type[TorchOp], ...] = tuple(
    getattr(selection, name) for name in selection.__all__
)


def is_pure(op: Operation) -> bool:
    """Side-effect free (CSE-able, fusable): every torch op except a dropout
    in training."""
    effects = get_effects(op)
    return effects is not None and not effects


TORCH = Dialect("torch", list(ALL_OPS), [])

__all__ = [
    "ALL_OPS",
    "BINARY_POINTWISE_OPS",
    "BinaryPointwiseOp",
    "Format",
    "Number",
    "NumberLike",
    "OpFacts",
    "REDUCTION_OPS",
    "ReductionOp",
    "SELECTION_OPS",
    "SOFTMAX_OPS",
    "SoftmaxLikeOp",
    "TORCH",
    "TorchOp",
    "UNARY_POINTWISE_OPS",
    "UnaryPointwiseOp",
    "Value",
    "broadcast_shapes",
    "facts_of",
    "flag",
    "infer_addmm_type",
    "infer_baddbmm_type",
    "infer_binary_type",
    "infer_bmm_type",
    "infer_cat_type",
    "infer_flatten_type",
    "infer_layer_norm_type",
    "infer_linear_type",
    "infer_masked_fill_type",
    "infer_matmul_type",
    "infer_mm_type",
    "infer_movedim_type",
    "infer_permute_type",
    "infer_reduction_type",
    "infer_reshape_type",
    "infer_select_type",
    "infer_slice_type",
    "infer_softmax_type",
    "infer_split_types",
    "infer_squeeze_type",
    "infer_stack_type",
    "infer_transpose_type",
    "infer_unary_type",
    "infer_unbind_types",
    "infer_unflatten_type",
    "infer_unfold_type",
    "infer_unsqueeze_type",
    "infer_where_type",
    "ints",
    "ints_attr",
    "is_pure",
    "movedim_permutation",
    "number_attr",
    "number_value",
    "split_sections",
    *(op.__name__ for op in ALL_OPS),
]
