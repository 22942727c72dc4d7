"""Reductions: sum and mean over dims."""


from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
)

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.dialects.fx import (
    FALSE,
    bool_literal,
)
from optimus_ir.dialects.torch.base import (
    _INTS,
    _operand,
    flag,
    ints,
    ints_attr,
)
from optimus_ir.dialects.torch.assembly import _tensor_of
from optimus_ir.dialects.torch.inference import (
    infer_reduction_type,
)



# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------


class ReductionOp(TorchOp):
    """Base of sum/mean: reduce `dims` (empty: all), `keepdim`, optional `dtype`
    (an element type) as in torch."""

    input = operand_def(TensorType)
    dims = prop_def(_INTS, default_value=ArrayAttr([]))
    keepdim = prop_def(BoolAttr, default_value=FALSE)
    dtype = opt_prop_def(Attribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())
    FORMAT: ClassVar[Format] = (("dims", "value"), ("keepdim", "flag"), ("dtype", "type"))

    def __init__(
        self,
        input: Value,
        dims: Sequence[int] = (),
        keepdim: bool = False,
        dtype: Attribute | None = None,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        dims_attr = ints_attr(sorted(dims) if not isinstance(dims, ArrayAttr) else dims)
        if result_type is None:
            ty = _tensor_of(self.name, input, _operand(0, "input"))
            result_type = infer_reduction_type(self.name, ty, ints(dims_attr), keepdim, dtype)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dims": dims_attr, "keepdim": bool_literal(keepdim), "dtype": dtype},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [
            infer_reduction_type(
                self.name, self.input.type, ints(self.dims), flag(self.keepdim), self.dtype
            )
        ]


@irdl_op_definition
class SumOp(ReductionOp):
    """`torch.sum(input, dims, keepdim, dtype=)`; integral inputs sum to i64."""

    name = "torch.sum"
    FACTS: ClassVar[OpFacts] = OpFacts(lowers_to="torch.sum", cost="reduction")


@irdl_op_definition
class MeanOp(ReductionOp):
    """`torch.mean(input, dims, keepdim, dtype=)`; needs a floating input or dtype."""

    name = "torch.mean"
    FACTS: ClassVar[OpFacts] = OpFacts(lowers_to="torch.mean", cost="reduction")

__all__ = ops_defined_in(globals())
"""The op classes this module defines (the package root re-exports them)."""
