"""Normalization ops: layer_norm."""


from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    FloatAttr,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import (
    Pure,
)

from optimus_ir.dialects.fx import (
    float_literal,
)
from optimus_ir.traits import (
    ContiguousResult,
)
from optimus_ir.dialects.torch.facts import OpFacts
from optimus_ir.dialects.torch.base import (
    Format,
    Value,
    _INTS,
    ints,
    ints_attr,
)
from optimus_ir.dialects.torch.assembly import (
    TorchOp,
    _opt_type,
    _tensor_types,
)
from optimus_ir.dialects.torch.inference import (
    infer_layer_norm_type,
)



@irdl_op_definition
class LayerNormOp(TorchOp):
    """`torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)`."""

    name = "torch.layer_norm"
    FACTS: ClassVar[OpFacts] = OpFacts(lowers_to="torch.nn.functional.layer_norm", fusion="norm", cost="layer_norm")
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    normalized_shape = prop_def(_INTS)
    eps = prop_def(FloatAttr, default_value=float_literal(1e-5))
    result = result_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure(), ContiguousResult())
    FORMAT: ClassVar[Format] = (
        ("normalized_shape", "value"),
        ("weight", "operand"),
        ("bias", "operand"),
        ("eps", "value"),
    )

    def __init__(
        self,
        input: Value,
        normalized_shape: Sequence[int],
        weight: Value | None = None,
        bias: Value | None = None,
        *,
        eps: float = 1e-5,
        result_type: Attribute | None = None,
    ) -> None:
        shape_attr = ints_attr(normalized_shape)
        if result_type is None:
            t = _tensor_types(self.name, input=input, weight=weight, bias=bias)
            result_type = infer_layer_norm_type(
                t["input"], ints(shape_attr), t["weight"], t["bias"]  # type: ignore[arg-type]
            )
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties={
                "normalized_shape": shape_attr,
                "eps": eps if isinstance(eps, FloatAttr) else float_literal(eps),
            },
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [
            infer_layer_norm_type(
                self.input.type,
                ints(self.normalized_shape),
                _opt_type(self.weight),  # type: ignore[arg-type]
                _opt_type(self.bias),  # type: ignore[arg-type]
            )
        ]


# ---------------------------------------------------------------------------
# Plumbing
# ---------------------------------------------------------------------------


