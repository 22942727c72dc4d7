"""Op-class predicates the analyses are built on, in one place.

Each question an analysis asks about an op ("may its result be a view of an
operand?", "is its result always contiguous?", "is it elementwise, and exact
under a layout change?") is one small function here. Operator-dialect ops
answer through their traits (`optimus_ir.foundation.traits`: `ViewLike`,
`ReturnsInput`, `ContiguousResult`, `Elementwise`); fx calls through
`alias_facts` (what torch does when the call runs on fake tensors, and the
aten schemas) and `optimus_ir.foundation.effects`. The analyses and the passes call these functions and
never test op classes themselves.

`TORCH_VIEW_OPS` and `CONTIGUOUS_RESULT_OPS` remain as the op classes that
carry the traits (derived from the dialect, for tests and error messages).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from optimus_ir.analysis import alias_facts
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as t
from optimus_ir.foundation import traits
from optimus_ir.foundation.effects import effect_kind

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
    class, see `optimus_ir.foundation.traits`)."""
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
    `NON_MUTATING_MODULE_TYPES`) and calls whose aten schemas write no
    argument (`x.item()`, a random `native_dropout` that only draws
    numbers: `alias_facts.written_operands`). `fx.output`
    and operator-dialect ops never do."""
    if not is_fx_node(op) or effect_kind(op) != "impure":
        return False
    if isinstance(op, fx.CallModuleOp):
        module_type = op.attributes.get("module_type")
        return not (
            isinstance(module_type, StringAttr) and module_type.data in NON_MUTATING_MODULE_TYPES
        )
    if isinstance(op, fx.CallFunctionOp) and op.target.data in NON_MUTATING_TARGETS:
        return False
    return alias_facts.written_operands(op) != ()  # type: ignore[arg-type]


def written_operands(op: Operation) -> list[SSAValue]:
    """The operands `op` may write: none for an op that writes nothing; the
    ones torch's schemas name (`x.add_(y)` writes `x`, not `y`:
    `alias_facts.written_operands`); every operand otherwise."""
    if not may_write_operands(op):
        return []
    indices = alias_facts.written_operands(op)  # type: ignore[arg-type]
    if indices is None:
        return list(op.operands)
    return [op.operands[i] for i in indices if i < len(op.operands)]


def may_alias_operands(op: Operation) -> bool:
    """A result of `op` may share storage with one of its tensor operands:
    a view-like operator op, one that may return its input itself
    (`ReturnsInput`: an eval-mode dropout), or an fx call that torch does
    not show to return fresh storage (`alias_facts.call_may_alias`: run on
    fake tensors, the aten schemas' alias annotations; unknown calls may
    alias)."""
    if is_view_op(op) or traits.returns_input(op):
        return True
    if not is_fx_node(op):
        return False
    return alias_facts.call_may_alias(op)  # type: ignore[arg-type]


def may_return_operand(op: Operation) -> bool:
    """A result of `op` may be one of its operand tensor objects itself (not
    a new tensor object): `ReturnsInput` operator ops where their condition
    holds, and fx calls torch does not show to return a new object
    (`alias_facts.call_may_return_operand`)."""
    if traits.returns_input(op):
        return True
    if not is_fx_node(op):
        return False
    return alias_facts.call_may_return_operand(op)  # type: ignore[arg-type]


def result_is_fresh(op: Operation) -> bool:
    """`op`'s results are storage nothing else holds: not an fx placeholder
    or get_attr, and `may_alias_operands` is false."""
    if isinstance(op, fx.PlaceholderOp | fx.GetAttrOp | fx.OutputOp):
        return False
    return not may_alias_operands(op)


__all__ = [
    "CONTIGUOUS_RESULT_OPS",
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
    "may_return_operand",
    "may_write_operands",
    "result_is_fresh",
    "written_operands",
    "target_name",
]
