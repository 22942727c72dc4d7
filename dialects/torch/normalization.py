"""Normalization ops: layer_norm, softmax and log_softmax."""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    FloatAttr,
    IntAttr,
)

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.dialects.fx import (
    float_literal,
)
from optimus_ir.dialects.torch.base import (
    _Check,
    _INTS,
    _int_attr,
    _operand,
    ints,
    ints_attr,
)
from optimus_ir.dialects.torch.assembly import (
    _opt_type,
    _tensor_of,
    _tensor_types,
)
from optimus_ir.dialects.torch.inference import (
    infer_layer_norm_type,
    infer_softmax_type,
)



LayerNormOperands = tuple[Value, Value | None, Value | None]
"""A layer_norm's builder operands: input, weight (or None), bias (or None)."""


class LayerNormLikeOp(TorchOp):
    """Base of `torch.layer_norm` and `batch.layer_norm`: `input` normalized
    over its trailing `normalized_shape` dims (with `eps`), scaled by the
    optional `weight` and shifted by the optional `bias`. A subclass says how
    a builder without `result_type` infers it (`infer_result_type`) and
    what the verifier expects (`expected_types`)."""

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
        eps: float | FloatAttr = 1e-5,
        result_type: Attribute | None = None,
    ) -> None:
        shape_attr = ints_attr(normalized_shape)
        if result_type is None:
            result_type = self.infer_result_type((input, weight, bias), ints(shape_attr))
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties={
                "normalized_shape": shape_attr,
                "eps": eps if isinstance(eps, FloatAttr) else float_literal(eps),
            },
        )

    def infer_result_type(self, operands: LayerNormOperands, normalized_shape: tuple[int, ...]) -> Attribute:
        """The result type of the op built from these operands (input,
        weight, bias) and `normalized_shape`."""
        raise NotImplementedError


@irdl_op_definition
class LayerNormOp(LayerNormLikeOp):
    """`torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)`."""

    name = "torch.layer_norm"
    FACTS: ClassVar[OpFacts] = OpFacts(lowers_to="torch.nn.functional.layer_norm", fusion="norm", cost="layer_norm")

    def infer_result_type(self, operands: LayerNormOperands, normalized_shape: tuple[int, ...]) -> Attribute:
        input, weight, bias = operands
        t = _tensor_types(self.name, input=input, weight=weight, bias=bias)
        return infer_layer_norm_type(
            t["input"], normalized_shape, t["weight"], t["bias"]  # type: ignore[arg-type]
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


class SoftmaxLikeOp(TorchOp):
    """Base of softmax/log_softmax: `input` normalized along `dim` (canonical,
    0 <= dim < rank), computed in `dtype` when given (torch casts the input
    to it first; without it the input must be floating).

    Each row along `dim` is computed on its own: N members of equal shapes,
    stacked along a new dim 0, are one op over `dim + 1` of the stack, row
    for row the same arithmetic. Batch fusion groups them when `dim` is the
    last dim (`fusion="softmax"`); the batch lowering shifts `dim` by one."""

    input = operand_def(TensorType)
    dim = prop_def(IntAttr)
    dtype = opt_prop_def(Attribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())
    FORMAT: ClassVar[Format] = (("dim", "value"), ("dtype", "type"))

    def __init__(
        self,
        input: Value,
        dim: int | IntAttr,
        dtype: Attribute | None = None,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        dim_attr = _int_attr(dim)
        if result_type is None:
            ty = _tensor_of(self.name, input, _operand(0, "input"))
            result_type = infer_softmax_type(self.name, ty, dim_attr.data, dtype)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim": dim_attr, "dtype": dtype},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_softmax_type(self.name, self.input.type, self.dim.data, self.dtype)]  # type: ignore[arg-type]

    @classmethod
    def member_result_type(
        cls, operand_types: Sequence[Attribute], properties: Mapping[str, Attribute]
    ) -> TensorType:
        """The result type of one member of a `batch.pointwise` applying this
        op (its operand types and properties, as the member op has them)."""
        if len(operand_types) != 1:
            _Check(cls.name).fail(f"takes one operand, got {len(operand_types)}")
        dim = properties.get("dim")
        if not isinstance(dim, IntAttr):
            _Check(cls.name).fail("needs an integer dim")
        input = _Check(cls.name).tensor(operand_types[0], _operand(0, "input"))
        return infer_softmax_type(cls.name, input, dim.data, properties.get("dtype"))

    @classmethod
    def stacked_properties(cls, properties: Mapping[str, Attribute]) -> dict[str, Attribute]:
        """The properties of the one op computing N stacked members (a new
        dim 0): `dim` moves up by one, each member's rows stay rows."""
        stacked = dict(properties)
        stacked["dim"] = IntAttr(properties["dim"].data + 1)  # type: ignore[attr-defined]
        return stacked

    def over_last_dim(self) -> bool:
        """`dim` is the input's last dim (members then fuse by stacking)."""
        return self.dim.data == len(self.input.type.get_shape()) - 1  # type: ignore[union-attr]


@irdl_op_definition
class SoftmaxOp(SoftmaxLikeOp):
    """`torch.softmax(input, dim, dtype=)`: `exp(x) / sum(exp(x))` along `dim`."""

    name = "torch.softmax"
    FACTS: ClassVar[OpFacts] = OpFacts(
        spellings=Spellings(custom=(
            "torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax",
            "Tensor.softmax", "torch.nn.modules.activation.Softmax",
            "softmax.int", "_softmax.default", "special_softmax.default",
        )),
        lowers_to="torch.softmax", fusion="softmax", cost="softmax",
    )


@irdl_op_definition
class LogSoftmaxOp(SoftmaxLikeOp):
    """`torch.log_softmax(input, dim, dtype=)`: `x - log(sum(exp(x)))` along `dim`."""

    name = "torch.log_softmax"
    FACTS: ClassVar[OpFacts] = OpFacts(
        spellings=Spellings(custom=(
            "torch.log_softmax", "torch.nn.functional.log_softmax",
            "torch.special.log_softmax", "Tensor.log_softmax",
            "torch.nn.modules.activation.LogSoftmax", "log_softmax.int",
            "_log_softmax.default", "special_log_softmax.default",
        )),
        lowers_to="torch.log_softmax", fusion="softmax", cost="softmax",
    )

__all__ = ops_defined_in(globals())
"""The op classes this module defines (the package root re-exports them)."""
