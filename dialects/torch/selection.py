"""Selection ops: `torch.where` and `torch.masked_fill` (pointwise choices
between values under a boolean mask, with broadcasting)."""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.ir import Operation, SSAValue

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.dialects.torch.assembly import _tensor_of
from optimus_ir.dialects.torch.base import (
    NumberLike,
    _Check,
    _NUMBER,
    _operand,
    number_attr,
)
from optimus_ir.dialects.torch.inference import infer_masked_fill_type, infer_where_type
from optimus_ir.foundation.traits import Elementwise

_SELECTION_ELEMENTWISE = Elementwise(layout_exact=True)
"""A choice between values computes nothing: exact under any layout."""


@irdl_op_definition
class WhereOp(TorchOp):
    """`torch.where(condition, input, other)`: `input` where `condition`
    holds, else `other`, broadcast together; `other` is a tensor operand or
    a Python number (the `scalar` property, exactly one of the two).
    `condition` is boolean; `input` and `other` promote as in torch."""

    name = "torch.where"
    condition = operand_def(TensorType)
    input = operand_def(TensorType)
    other = opt_operand_def(TensorType)
    scalar = opt_prop_def(_NUMBER)
    result = result_def(TensorType)
    traits = traits_def(Pure(), _SELECTION_ELEMENTWISE)
    FORMAT: ClassVar[Format] = (("scalar", "value"),)
    FACTS: ClassVar[OpFacts] = OpFacts(
        spellings=Spellings(custom=(
            "torch.where", "Tensor.where", "where.self", "where.ScalarOther",
        )),
        lowers_to="torch.where", fusion="binary-pointwise", cost="binary",
    )

    def __init__(
        self,
        condition: Value,
        input: Value,
        other: Value | NumberLike,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        is_value = isinstance(other, SSAValue | Operation)
        scalar = None if is_value else number_attr(other)  # type: ignore[arg-type]
        if result_type is None:
            cond_type = _tensor_of(self.name, condition, _operand(0, "condition"))
            input_type = _tensor_of(self.name, input, _operand(1, "input"))
            rhs = _tensor_of(self.name, other, _operand(2, "other")) if is_value else scalar  # type: ignore[arg-type]
            result_type = infer_where_type(cond_type, input_type, rhs)  # type: ignore[arg-type]
        super().__init__(
            operands=[condition, input, other if is_value else None],
            result_types=[result_type],
            properties={"scalar": scalar},
        )

    @classmethod
    def member_result_type(
        cls, operand_types: Sequence[Attribute], properties: Mapping[str, Attribute]
    ) -> TensorType:
        """The result type of one member of a `batch.pointwise` applying
        where (operand types condition, input[, other]; `scalar` when two)."""
        check = _Check(cls.name)
        scalar = properties.get("scalar")
        if len(operand_types) not in (2, 3) or (len(operand_types) == 3) == (scalar is not None):
            check.fail("needs condition, input and exactly one of an other operand and a scalar")
        types = [check.tensor(t, _operand(i)) for i, t in enumerate(operand_types)]
        other = types[2] if len(types) == 3 else scalar
        return infer_where_type(types[0], types[1], other)  # type: ignore[arg-type]

    def expected_types(self) -> Sequence[TensorType]:
        if (self.other is None) == (self.scalar is None):
            _Check(self.name).fail("needs exactly one of an other operand and a scalar")
        other = self.other.type if self.other is not None else self.scalar
        return [infer_where_type(self.condition.type, self.input.type, other)]  # type: ignore[arg-type]


@irdl_op_definition
class MaskedFillOp(TorchOp):
    """`torch.masked_fill(input, mask, value)`: `input` with `value` where the
    boolean `mask` holds, broadcast together (a fresh contiguous tensor, as
    torch clones the broadcast input); the value takes the input's dtype."""

    name = "torch.masked_fill"
    input = operand_def(TensorType)
    mask = operand_def(TensorType)
    value = prop_def(_NUMBER)
    result = result_def(TensorType)
    traits = traits_def(Pure(), _SELECTION_ELEMENTWISE, ContiguousResult())
    FORMAT: ClassVar[Format] = (("value", "value"),)
    FACTS: ClassVar[OpFacts] = OpFacts(
        spellings=Spellings(custom=(
            "torch.masked_fill", "Tensor.masked_fill", "masked_fill.Scalar",
        )),
        lowers_to="torch.masked_fill", fusion="binary-pointwise", cost="binary",
    )

    def __init__(
        self,
        input: Value,
        mask: Value,
        value: NumberLike,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        value_attr = number_attr(value)
        if result_type is None:
            input_type = _tensor_of(self.name, input, _operand(0, "input"))
            mask_type = _tensor_of(self.name, mask, _operand(1, "mask"))
            result_type = infer_masked_fill_type(input_type, mask_type, value_attr)
        super().__init__(
            operands=[input, mask], result_types=[result_type], properties={"value": value_attr}
        )

    @classmethod
    def member_result_type(
        cls, operand_types: Sequence[Attribute], properties: Mapping[str, Attribute]
    ) -> TensorType:
        """The result type of one member of a `batch.pointwise` applying
        masked_fill (operand types input, mask; the `value` property)."""
        check = _Check(cls.name)
        value = properties.get("value")
        if len(operand_types) != 2 or value is None:
            check.fail("needs input, mask and a value")
        input, mask = (check.tensor(t, _operand(i)) for i, t in enumerate(operand_types))
        return infer_masked_fill_type(input, mask, value)

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_masked_fill_type(self.input.type, self.mask.type, self.value)]  # type: ignore[arg-type]


SELECTION_OPS: tuple[type[TorchOp], ...] = (WhereOp, MaskedFillOp)
"""The selection ops (batch fusion's pointwise kind: several tensor
operands, each stacked or shared)."""

__all__ = ops_defined_in(globals())
"""The op classes this module defines (the package root re-exports them)."""
