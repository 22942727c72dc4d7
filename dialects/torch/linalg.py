"""Linear-algebra ops: linear, mm, addmm, bmm, baddbmm, matmul."""


from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import IntAttr

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.dialects.torch.base import (
    NumberLike,
    _NUMBER,
    number_attr,
)
from optimus_ir.dialects.torch.assembly import (
    _tensor_of,
    _tensor_types,
)
from optimus_ir.dialects.torch.inference import (
    infer_addmm_type,
    infer_baddbmm_type,
    infer_bmm_type,
    infer_linear_type,
    infer_matmul_type,
    infer_mm_type,
)



# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------


@irdl_op_definition
class LinearOp(TorchOp):
    """`torch.nn.functional.linear(input, weight, bias)`: `input @ weight.T + bias`."""

    name = "torch.linear"
    FACTS: ClassVar[OpFacts] = OpFacts(lowers_to="torch._C._nn.linear", fusion="linear", cost="linear")
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())

    def __init__(
        self,
        input: Value,
        weight: Value,
        bias: Value | None = None,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        if result_type is None:
            t = _tensor_types(self.name, input=input, weight=weight, bias=bias)
            result_type = infer_linear_type(t["input"], t["weight"], t["bias"])  # type: ignore[arg-type]
        super().__init__(operands=[input, weight, bias], result_types=[result_type])

    def expected_types(self) -> Sequence[TensorType]:
        bias = None if self.bias is None else self.bias.type
        return [infer_linear_type(self.input.type, self.weight.type, bias)]


class _ProductOp(TorchOp):
    """Shared declaration of the matrix products: an op of the family gives
    its torch function's name (`torch_name`: the op is `torch.<name>`,
    lowered to that function and costed as a GEMM) and its type function
    (`infer`) as class keywords."""

    traits = traits_def(Pure(), ContiguousResult())
    INFER: ClassVar[Callable[..., TensorType]]

    def __init_subclass__(
        cls,
        *,
        torch_name: str | None = None,
        infer: Callable[..., TensorType] | None = None,
        **kwargs: Any,
    ) -> None:
        if torch_name is not None:
            if infer is None:
                raise TypeError(f"{cls.__name__} declares torch_name but no infer")
            facts = OpFacts(lowers_to=f"torch.{torch_name}", cost="linear")
            declare_op(cls, f"torch.{torch_name}", FACTS=facts, INFER=staticmethod(infer))
        super().__init_subclass__(**kwargs)


class _MatrixProductOp(_ProductOp):
    """Shared shape of mm, bmm and matmul: `lhs @ rhs`, its type by `INFER`."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, lhs: Value, rhs: Value, *, result_type: Attribute | None = None) -> None:
        if result_type is None:
            result_type = self.INFER(_tensor_of(self.name, lhs), _tensor_of(self.name, rhs))
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def expected_types(self) -> Sequence[TensorType]:
        return [self.INFER(self.lhs.type, self.rhs.type)]


class _ScaledProductOp(_ProductOp):
    """Shared shape of addmm and baddbmm: `beta * input + alpha * a @ b`, its
    type by `INFER`. An op of the family names its operands `input` and the
    two factors (`factors`, a class keyword)."""

    beta = prop_def(_NUMBER, default_value=IntAttr(1))
    alpha = prop_def(_NUMBER, default_value=IntAttr(1))
    result = result_def(TensorType)
    FORMAT: ClassVar[Format] = (("beta", "value"), ("alpha", "value"))

    def __init_subclass__(cls, *, factors: tuple[str, str] | None = None, **kwargs: Any) -> None:
        if factors is not None:
            for operand in ("input", *factors):
                setattr(cls, operand, operand_def(TensorType))
        super().__init_subclass__(**kwargs)

    def __init__(
        self,
        input: Value,
        a: Value,
        b: Value,
        *,
        beta: NumberLike = 1,
        alpha: NumberLike = 1,
        result_type: Attribute | None = None,
    ) -> None:
        if result_type is None:
            types = [_tensor_of(self.name, v) for v in (input, a, b)]
            result_type = self.INFER(*types, beta, alpha)
        super().__init__(
            operands=[input, a, b],
            result_types=[result_type],
            properties={"beta": number_attr(beta), "alpha": number_attr(alpha)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        input, a, b = self.operands
        return [self.INFER(input.type, a.type, b.type, self.beta, self.alpha)]


@irdl_op_definition
class MmOp(_MatrixProductOp, torch_name="mm", infer=infer_mm_type):
    """`torch.mm(lhs, rhs)`: a 2-D matrix product."""


@irdl_op_definition
class AddmmOp(
    _ScaledProductOp, torch_name="addmm", infer=infer_addmm_type, factors=("mat1", "mat2")
):
    """`torch.addmm(input, mat1, mat2, beta=, alpha=)`: `beta * input + alpha * mat1 @ mat2`."""


@irdl_op_definition
class BmmOp(_MatrixProductOp, torch_name="bmm", infer=infer_bmm_type):
    """`torch.bmm(lhs, rhs)`: a batched 3-D matrix product."""


@irdl_op_definition
class BaddbmmOp(
    _ScaledProductOp, torch_name="baddbmm", infer=infer_baddbmm_type, factors=("batch1", "batch2")
):
    """`torch.baddbmm(input, batch1, batch2, beta=, alpha=)`:
    `beta * input + alpha * bmm(batch1, batch2)`."""


@irdl_op_definition
class MatmulOp(_MatrixProductOp, torch_name="matmul", infer=infer_matmul_type):
    """`torch.matmul(lhs, rhs)` with torch's 1-D/batched broadcasting rules."""


# ---------------------------------------------------------------------------
# Normalization
# ---------------------------------------------------------------------------

__all__ = ops_defined_in(globals())
"""The op classes this module defines (the package root re-exports them)."""
