"""Op-class predicates the analyses are built on, in one place.

Each question an analysis asks about an op ("may its result be a view of an
operand?", "is its result always contiguous?", "is it elementwise, and exact
under a layout change?") is one small function here. Operator-dialect ops
answer through their traits (`optimus_ir.traits`: `ViewLike`,
`ContiguousResult`, `Elementwise`); fx calls through their targets and
`optimus_ir.effects`. The analyses and the passes call these functions and
never test op classes themselves.

`TORCH_VIEW_OPS` and `CONTIGUOUS_RESULT_OPS` remain as the op classes that
carry the traits (derived from the dialect, for tests and error messages).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as t
from optimus_ir import traits
from optimus_ir.effects import effect_kind

TORCH_VIEW_OPS: tuple[type[Operation], ...] = tuple(
    op for op in t.TORCH.operations if op.has_trait(traits.ViewLike)
)
"""Operator-dialect ops whose results may share storage with their input
(those with the `ViewLike` trait)."""

CONTIGUOUS_RESULT_OPS: tuple[type[Operation], ...] = tuple(
    op for op in t.TORCH.operations if op.has_trait(traits.ContiguousResult)
)
"""Operator-dialect ops whose result is always a fresh contiguous tensor
(those with the `ContiguousResult` trait)."""

FX_ALIASING_NAMES: frozenset[str] = frozenset(
    """
    getitem __getitem__ view view_as reshape reshape_as as_strided expand expand_as
    t T mT H mH transpose swapaxes swapdims permute movedim moveaxis narrow select
    slice split split_with_sizes tensor_split chunk unbind hsplit vsplit dsplit
    squeeze unsqueeze flatten unflatten ravel detach alias diagonal real imag
    unfold view_as_real view_as_complex to type float double half bfloat16 int long
    bool cpu cuda contiguous expand_copy _reshape_alias _unsafe_view lift_fresh
    align_to refine_names rename data requires_grad_ indices values crow_indices
    col_indices conj resolve_conj resolve_neg positive numpy_T adjoint
    type_as broadcast_to broadcast_tensors atleast_1d atleast_2d atleast_3d
    unsafe_split unsafe_chunk as_subclass
    dropout dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout
    """.split()
)
"""Last name components of pure torch functions / methods that may return a
view of (or the very same tensor as) an operand (`type_as` to the same dtype
and eval-mode dropout return the operand itself)."""

STRIDE_SENSITIVE_NAMES: frozenset[str] = frozenset(
    """
    view view_as as_strided stride is_contiguous data_ptr storage_offset
    _unsafe_view untyped_storage storage numpy
    """.split()
)
"""fx targets whose behaviour depends on the strides of their operand."""

NON_MUTATING_TARGETS: frozenset[str] = frozenset(
    {
        "torch._assert",
        "torch._check",
        "torch._check_is_size",
        "torch.ops.aten._assert_async.msg",
        "torch.ops.aten._assert_scalar.default",
        "torch.ops.aten.sym_constrain_range_for_size.default",
        "torch.ops.aten._assert_tensor_metadata.default",
    }
)
"""Impure fx call targets (they must stay) that never write to a tensor."""

NON_MUTATING_MODULE_TYPES: frozenset[str] = frozenset({"torch.export._unlift.GuardsFn"})
"""`fx.call_module` module types that never write to their operands
(torch.export's input-guard module)."""


def target_name(op: Operation) -> str | None:
    """The last name component of an fx call's target (`torch.ops.aten.X.o`
    gives `X`), or None for other ops."""
    if isinstance(op, fx.CallFunctionOp | fx.CallMethodOp):
        target = op.target.data
        parts = target.split(".")
        if target.startswith("torch.ops.") and len(parts) >= 4:
            return parts[3]  # torch.ops.aten.<name>.<overload>
        return parts[-1]
    return None


def is_fx_node(op: Operation) -> bool:
    """An fx call (function, method or module)."""
    return isinstance(op, fx.CallFunctionOp | fx.CallMethodOp | fx.CallModuleOp)


def is_view_op(op: Operation) -> bool:
    """An operator-dialect op whose results may be views of its input
    (split, unbind, slice, select, squeeze, reshape, permute, detach, ...):
    the `ViewLike` trait."""
    return traits.is_view_like(op)


def is_join_op(op: Operation) -> bool:
    """`torch.cat` or `torch.stack`: a fresh copy of its inputs."""
    return isinstance(op, t.CatOp | t.StackOp)


def has_contiguous_result(op: Operation) -> bool:
    """The op's result is always a fresh, contiguous tensor (matmuls, linear,
    layer_norm, reductions): the `ContiguousResult` trait."""
    return traits.has_contiguous_result(op)


def is_elementwise_op(op: Operation) -> bool:
    """A unary or binary pointwise operator-dialect op: the `Elementwise` trait."""
    return traits.is_elementwise(op)


def is_layout_exact_elementwise(op: Operation) -> bool:
    """An elementwise op whose values do not depend on the operand strides
    (`Elementwise(layout_exact=True)`: measured per op and declared on its
    class, see `optimus_ir.traits`)."""
    return traits.is_layout_exact(op)


def is_stride_sensitive_op(op: Operation) -> bool:
    """The op's result depends on its operand's strides (`torch.view`, fx
    `view`/`stride`/`is_contiguous`/`data_ptr`...)."""
    if isinstance(op, t.ViewOp):
        return True
    return is_fx_node(op) and target_name(op) in STRIDE_SENSITIVE_NAMES


def may_write_operands(op: Operation) -> bool:
    """`op` may write to (some of) its operands: an fx call that is not known
    pure, except assertions and guards (`NON_MUTATING_TARGETS`,
    `NON_MUTATING_MODULE_TYPES`). `fx.output` and operator-dialect ops never
    do."""
    if not is_fx_node(op) or effect_kind(op) != "impure":
        return False
    if isinstance(op, fx.CallModuleOp):
        module_type = op.attributes.get("module_type")
        return not (
            isinstance(module_type, StringAttr) and module_type.data in NON_MUTATING_MODULE_TYPES
        )
    return not (isinstance(op, fx.CallFunctionOp) and op.target.data in NON_MUTATING_TARGETS)


def may_alias_operands(op: Operation) -> bool:
    """A result of `op` may share storage with one of its tensor operands."""
    if is_view_op(op):
        return True
    if not is_fx_node(op):
        return False
    if effect_kind(op) == "impure":
        return True  # unknown: anything goes (and add_ returns self)
    name = target_name(op)
    return name is None or name in FX_ALIASING_NAMES


__all__ = [
    "CONTIGUOUS_RESULT_OPS",
    "FX_ALIASING_NAMES",
    "NON_MUTATING_MODULE_TYPES",
    "NON_MUTATING_TARGETS",
    "STRIDE_SENSITIVE_NAMES",
    "TORCH_VIEW_OPS",
    "has_contiguous_result",
    "is_elementwise_op",
    "is_fx_node",
    "is_join_op",
    "is_layout_exact_elementwise",
    "is_stride_sensitive_op",
    "is_view_op",
    "may_alias_operands",
    "may_write_operands",
    "target_name",
]
