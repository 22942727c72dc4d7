"""Pointwise ops: unary (activations, clamp, nan_to_num, dropout) and binary
(add, sub, mul, div) with broadcasting and torch's type promotion."""


from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    BoolAttr,
    FloatAttr,
    IntAttr,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.traits import (
    ConditionallySpeculatable,
    EffectInstance,
    MemoryEffect,
    MemoryEffectKind,
    OpTrait,
)

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.dialects.fx import (
    FALSE,
    bool_literal,
    float_literal,
)
from optimus_ir.foundation.traits import (
    Elementwise,
    LazyCanonicalizationPatterns,
    ReturnsInput,
    ViewLike,
)
from optimus_ir.dialects.torch.facts import (
    INPLACE,
    at_defaults,
    binary_facts,
    facts_of,
    unary_facts,
)
from optimus_ir.dialects.torch.base import (
    NumberLike,
    PropertyValue,
    _Check,
    _NUMBER,
    _operand,
    _str_attr,
    bind_arguments,
    flag,
    number_attr,
    number_value,
    property_attr,
)
from optimus_ir.dialects.torch.assembly import _tensor_of
from optimus_ir.dialects.torch.relations import (
    _PLUMBING_CANONICALIZATION,
    _identity_relation,
)
from optimus_ir.dialects.torch.inference import (
    infer_binary_type,
    infer_unary_type,
)



def _unit_alpha(op: Operation) -> bool:
    """add/sub round exactly like a plain `+`/`-` only with `alpha == 1`: the
    vectorized CPU kernel computes `lhs + alpha * rhs` as one fused
    multiply-add, the strided (scalar) one in two roundings."""
    alpha = op.properties.get("alpha")
    return alpha is None or number_value(alpha) == 1


_EXACT_ELEMENTWISE = Elementwise(layout_exact=True)
_INEXACT_ELEMENTWISE = Elementwise(layout_exact=False)
LayoutExact = bool | Callable[[Operation], bool]
"""Whether a pointwise op's values are exact under a layout change
(`Elementwise.layout_exact`): a bool, or a function of the op."""


def _elementwise(layout_exact: LayoutExact) -> Elementwise:
    """The `Elementwise` trait of a pointwise op."""
    if isinstance(layout_exact, bool):
        return _EXACT_ELEMENTWISE if layout_exact else _INEXACT_ELEMENTWISE
    return Elementwise(layout_exact=layout_exact)


class _PointwiseOp(TorchOp):
    """Shared declaration of the pointwise ops: an op of a family is declared
    by its distinct facts, as class keywords: `torch_name` (the op is
    `torch.<torch_name>`), `layout_exact` (see `Elementwise`),
    `extra_traits`, and the keywords of the family's facts function
    (`DECLARE_FACTS`: `unary_facts` or `binary_facts`)."""

    DECLARE_FACTS: ClassVar[Callable[..., OpFacts]]

    def __init_subclass__(
        cls,
        *,
        torch_name: str | None = None,
        layout_exact: LayoutExact | None = None,
        extra_traits: Sequence[OpTrait] = (),
        **facts: Any,
    ) -> None:
        if torch_name is not None:
            if layout_exact is None:
                raise TypeError(f"{cls.__name__} declares torch_name but not layout_exact")
            traits = (_elementwise(layout_exact), *extra_traits)
            facts_of_op = cls.DECLARE_FACTS(torch_name, **facts)
            declare_op(cls, f"torch.{torch_name}", *traits, FACTS=facts_of_op)
        elif facts or extra_traits or layout_exact is not None:
            raise TypeError(f"{cls.__name__} declares pointwise facts without a torch_name")
        super().__init_subclass__()


class UnaryPointwiseOp(_PointwiseOp):
    """Base of the unary pointwise ops: `input -> result` of the same shape.

    An op of the family is declared by its distinct facts as class keywords
    (`_PointwiseOp`), its facts those of `unary_facts` (spellings,
    arguments, cost, kernel...)::

        @irdl_op_definition
        class ExpOp(_PlainUnaryOp, torch_name="exp", layout_exact=False, cost="transcendental", kernel="exp"):
            \"\"\"`torch.exp(input)`; integral inputs give a floating result.\"\"\"

    An op with properties declares them in its class body and binds them to
    its torch arguments (`arguments=`), which the builder then takes as
    Python values."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    DECLARE_FACTS = staticmethod(unary_facts)

    def __init__(
        self,
        input: Value,
        *values: PropertyValue,
        result_type: Attribute | None = None,
        properties: Mapping[str, Attribute | None] | None = None,
        **named: PropertyValue,
    ) -> None:
        """`input`, then the op's arguments (`FACTS.spellings.arguments`,
        torch's signature after the tensor) as Python values, positionally
        or by name: each sets its property, torch's default where not given;
        or else `properties`, the attributes themselves."""
        if properties is None:
            properties = self._argument_properties(values, named)
        elif values or named:
            raise TypeError(f"{type(self).__name__}() takes arguments or properties, not both")
        if result_type is None:
            ty = _tensor_of(self.name, input, _operand(0, "input"))
            result_type = infer_unary_type(
                self.name, ty, properties.get("min"), properties.get("max")
            )
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    def _argument_properties(
        self, values: Sequence[PropertyValue], named: Mapping[str, PropertyValue]
    ) -> dict[str, Attribute | None]:
        """The properties the builder's arguments set (`__init__`)."""
        facts = facts_of(self)
        arguments = [
            a for a in (facts.spellings.arguments if facts else ()) if a.name != INPLACE.name
        ]
        names = [a.name for a in arguments]
        given = bind_arguments(type(self).__name__, names, values, named)
        definitions = self.get_irdl_definition().properties
        return {
            a.property_name: property_attr(
                definitions[a.property_name].constr, given.get(a.name, a.default)
            )
            for a in arguments
        }

    def verify_props(self) -> None:
        """Extra property checks of a subclass."""

    def expected_types(self) -> Sequence[TensorType]:
        self.verify_props()
        return [infer_unary_type(self.name, self.input.type)]


class _PureUnaryOp(UnaryPointwiseOp):
    """A unary op without effects (all but dropout)."""

    traits = traits_def(Pure())


class _PlainUnaryOp(_PureUnaryOp):
    """A pure unary op without properties, printed by xDSL's declarative
    assembly format: `torch.tanh %x : tensor<4xf32> -> tensor<4xf32>`."""

    print = Operation.print  # the declarative format replaces TorchOp's
    parse = classmethod(Operation.parse.__func__)  # type: ignore[assignment]
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"


@irdl_op_definition
class TanhOp(
    _PlainUnaryOp, torch_name="tanh", layout_exact=False,
    functions=("torch.tanh", "torch.nn.functional.tanh"),
    modules=("torch.nn.modules.activation.Tanh",), cost="transcendental", kernel="tanh",
):
    """`torch.tanh(input)`; integral inputs give a floating result."""


@irdl_op_definition
class SigmoidOp(
    _PlainUnaryOp, torch_name="sigmoid", layout_exact=False,
    functions=("torch.sigmoid", "torch.nn.functional.sigmoid",
               "torch._C._special.special_expit", "torch.special.expit"),
    modules=("torch.nn.modules.activation.Sigmoid",), cost="transcendental", kernel="sigmoid",
):
    """`torch.sigmoid(input)`; integral inputs give a floating result."""


@irdl_op_definition
class ReluOp(
    _PlainUnaryOp, torch_name="relu", layout_exact=True,
    functions=("torch.relu", "torch.nn.functional.relu"), arguments=(INPLACE,),
    modules=("torch.nn.modules.activation.ReLU",), kernel="relu",
):
    """`torch.relu(input)`."""


@irdl_op_definition
class SiluOp(
    _PlainUnaryOp, torch_name="silu", layout_exact=False, nn_activation="SiLU",
    arguments=(INPLACE,), cost="transcendental", kernel="silu",
):
    """`torch.nn.functional.silu(input)`: `input * sigmoid(input)` (floating only)."""


@irdl_op_definition
class ExpOp(_PlainUnaryOp, torch_name="exp", layout_exact=False, cost="transcendental", kernel="exp"):
    """`torch.exp(input)`; integral inputs give a floating result."""


@irdl_op_definition
class LogOp(_PlainUnaryOp, torch_name="log", layout_exact=False, cost="transcendental", kernel="log"):
    """`torch.log(input)`; integral inputs give a floating result."""


@irdl_op_definition
class SinOp(_PlainUnaryOp, torch_name="sin", layout_exact=False, cost="transcendental", kernel="sin"):
    """`torch.sin(input)`; integral inputs give a floating result."""


@irdl_op_definition
class CosOp(_PlainUnaryOp, torch_name="cos", layout_exact=False, cost="transcendental", kernel="cos"):
    """`torch.cos(input)`; integral inputs give a floating result."""


@irdl_op_definition
class NegOp(
    _PlainUnaryOp, torch_name="neg", layout_exact=True,
    functions=("torch.neg", "torch.negative", "operator.neg"),
    methods=("neg", "negative"), aten=("neg.default", "negative.default"), kernel="neg",
):
    """`torch.neg(input)` (not defined for bool)."""


@irdl_op_definition
class AbsOp(
    _PlainUnaryOp, torch_name="abs", layout_exact=True,
    functions=("torch.abs", "torch.absolute", "operator.abs"),
    methods=("abs", "absolute"), aten=("abs.default", "absolute.default"), kernel="abs",
):
    """`torch.abs(input)`."""


@irdl_op_definition
class DetachOp(
    _PlainUnaryOp, torch_name="detach", layout_exact=True,
    extra_traits=(ViewLike(_identity_relation), _PLUMBING_CANONICALIZATION),
    fusion=None, cost="free",
):
    """`torch.detach(input)`: the same values, cut from autograd."""


def _gelu_kernel(properties: Mapping[str, Attribute]) -> str | None:
    """gelu's program step by its approximation."""
    mode = properties.get("approximate")
    approximate = mode.data if isinstance(mode, StringAttr) else "none"
    return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)


@irdl_op_definition
class GeluOp(
    _PlainUnaryOp, torch_name="gelu", layout_exact=False, nn_activation="GELU",
    lowers_to="torch._C._nn.gelu",
    arguments=(Argument("approximate", "none", choices=("none", "tanh")),),
    cost="transcendental", kernel=_gelu_kernel,
):
    """`torch.nn.functional.gelu(input, approximate=)`, approximate "none" | "tanh"."""

    approximate = prop_def(StringAttr, default_value=StringAttr("none"))
    assembly_format = (
        "$input (`approximate` $approximate^)? attr-dict `:` type($input) `->` type($result)"
    )

    def verify_props(self) -> None:
        _Check(self.name).choice(self.approximate, "approximate", ("none", "tanh"))


# ---------------------------------------------------------------------------
# Activations and math functions: one declaration each (issue 20)
# ---------------------------------------------------------------------------


@irdl_op_definition
class ErfOp(
    _PlainUnaryOp, torch_name="erf", layout_exact=False,
    functions=("torch.erf", "torch.special.erf", "torch._C._special.special_erf"),
    aten=("erf.default", "special_erf.default"), cost="transcendental", kernel="erf",
):
    """`torch.erf(input)`, the error function; integral inputs give a floating result."""


@irdl_op_definition
class SoftplusOp(
    _PureUnaryOp, torch_name="softplus", layout_exact=False, nn_activation="Softplus",
    functions=("torch._C._nn.softplus", "torch.nn.functional.softplus"),
    arguments=(Argument("beta", 1.0), Argument("threshold", 20.0)),
    cost="transcendental", kernel=at_defaults("softplus", beta=1.0, threshold=20.0),
):
    """`torch.nn.functional.softplus(input, beta=1, threshold=20)`:
    `log(1 + exp(beta * input)) / beta`, and `input` itself where
    `beta * input > threshold` (floating only)."""

    beta = prop_def(FloatAttr, default_value=float_literal(1.0))
    threshold = prop_def(FloatAttr, default_value=float_literal(20.0))
    FORMAT: ClassVar[Format] = (("beta", "value"), ("threshold", "value"))


@irdl_op_definition
class HardswishOp(
    _PlainUnaryOp, torch_name="hardswish", layout_exact=False, nn_activation="Hardswish",
    arguments=(INPLACE,), kernel="hardswish",
):
    """`torch.nn.functional.hardswish(input)`: `input * relu6(input + 3) / 6`
    (floating only)."""


@irdl_op_definition
class HardsigmoidOp(
    _PlainUnaryOp, torch_name="hardsigmoid", layout_exact=False, nn_activation="Hardsigmoid",
    arguments=(INPLACE,), kernel="hardsigmoid",
):
    """`torch.nn.functional.hardsigmoid(input)`: `relu6(input + 3) / 6`
    (floating only)."""


@irdl_op_definition
class LeakyReluOp(
    _PureUnaryOp, torch_name="leaky_relu", layout_exact=True, nn_activation="LeakyReLU",
    arguments=(Argument("negative_slope", 0.01), INPLACE),
):
    """`torch.nn.functional.leaky_relu(input, negative_slope=0.01)` (floating only)."""

    negative_slope = prop_def(FloatAttr, default_value=float_literal(0.01))
    FORMAT: ClassVar[Format] = (("negative_slope", "value"),)


@irdl_op_definition
class EluOp(
    _PureUnaryOp, torch_name="elu", layout_exact=False, nn_activation="ELU",
    functions=("torch.nn.functional.elu",), arguments=(Argument("alpha", 1.0), INPLACE),
    cost="transcendental", kernel=at_defaults("elu", alpha=1.0),
):
    """`torch.nn.functional.elu(input, alpha=1)`: `input` where positive,
    `alpha * (exp(input) - 1)` elsewhere (floating only). `torch._C._nn.elu`
    and aten's `elu` take `scale`/`input_scale` too: not raised."""

    alpha = prop_def(FloatAttr, default_value=float_literal(1.0))
    FORMAT: ClassVar[Format] = (("alpha", "value"),)


@irdl_op_definition
class MishOp(
    _PlainUnaryOp, torch_name="mish", layout_exact=False, nn_activation="Mish",
    arguments=(INPLACE,), cost="transcendental", kernel="mish",
):
    """`torch.nn.functional.mish(input)`: `input * tanh(softplus(input))`
    (floating only)."""


@irdl_op_definition
class HardtanhOp(
    _PureUnaryOp, torch_name="hardtanh", layout_exact=True, nn_activation="Hardtanh",
    modules=("torch.nn.modules.activation.ReLU6",),
    arguments=(Argument("min_val", -1.0), Argument("max_val", 1.0), INPLACE),
    custom=("torch.nn.functional.relu6", "torch._C._nn.relu6", "relu6.default"),
):
    """`torch.nn.functional.hardtanh(input, min_val=-1, max_val=1)`: `input`
    clamped to [min_val, max_val]. `F.relu6` and `nn.ReLU6` are hardtanh
    over [0, 6]."""

    min_val = prop_def(FloatAttr, default_value=float_literal(-1.0))
    max_val = prop_def(FloatAttr, default_value=float_literal(1.0))
    FORMAT: ClassVar[Format] = (("min_val", "value"), ("max_val", "value"))


@irdl_op_definition
class SqrtOp(_PlainUnaryOp, torch_name="sqrt", layout_exact=True, kernel="sqrt"):
    """`torch.sqrt(input)`; integral inputs give a floating result."""


@irdl_op_definition
class RsqrtOp(_PlainUnaryOp, torch_name="rsqrt", layout_exact=False, kernel="rsqrt"):
    """`torch.rsqrt(input)`: `1 / sqrt(input)`; integral inputs give a floating result."""


@irdl_op_definition
class ReciprocalOp(_PlainUnaryOp, torch_name="reciprocal", layout_exact=True, kernel="reciprocal"):
    """`torch.reciprocal(input)`: `1 / input`; integral inputs give a floating result."""


@irdl_op_definition
class Log1pOp(
    _PlainUnaryOp, torch_name="log1p", layout_exact=False,
    functions=("torch.log1p", "torch.special.log1p", "torch._C._special.special_log1p"),
    aten=("log1p.default", "special_log1p.default"), cost="transcendental", kernel="log1p",
):
    """`torch.log1p(input)`: `log(1 + input)`, exact near 0; integral
    inputs give a floating result."""


@irdl_op_definition
class Expm1Op(
    _PlainUnaryOp, torch_name="expm1", layout_exact=False,
    functions=("torch.expm1", "torch.special.expm1", "torch._C._special.special_expm1"),
    aten=("expm1.default", "special_expm1.default"), cost="transcendental", kernel="expm1",
):
    """`torch.expm1(input)`: `exp(input) - 1`, exact near 0; integral inputs
    give a floating result."""


@irdl_op_definition
class NanToNumOp(_PureUnaryOp):
    """`torch.nan_to_num(input, nan=, posinf=, neginf=)`; an absent bound takes
    torch's default (0, the dtype's max, the dtype's min)."""

    name = "torch.nan_to_num"
    traits = traits_def(_EXACT_ELEMENTWISE)
    FACTS: ClassVar[OpFacts] = OpFacts(
        spellings=Spellings(
            custom=("torch.nan_to_num", "Tensor.nan_to_num", "nan_to_num.default"),
            arguments=(Argument("nan"), Argument("posinf"), Argument("neginf")),
        ),
        lowers_to="torch.nan_to_num", fusion="unary-pointwise",
    )
    nan = opt_prop_def(FloatAttr)
    posinf = opt_prop_def(FloatAttr)
    neginf = opt_prop_def(FloatAttr)
    FORMAT: ClassVar[Format] = (("nan", "value"), ("posinf", "value"), ("neginf", "value"))


def program_float(value: object) -> str | None:
    """`value` as a program's float literal (`1.0`), None for what the
    program text cannot say (bools, NaN, infinities)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return repr(number)


def _clamp_kernel(properties: Mapping[str, Attribute]) -> str | None:
    """clamp as `maximum(min);minimum(max)` (torch's clamp_min then
    clamp_max, bit for bit); None for bounds the program cannot say."""
    steps = []
    for key, step in (("min", "maximum"), ("max", "minimum")):
        bound = properties.get(key)
        if bound is not None:
            text = program_float(number_value(bound))
            if text is None:
                return None
            steps.append(f"{step}({text})")
    return ";".join(steps) or None


@irdl_op_definition
class ClampOp(_PureUnaryOp):
    """`torch.clamp(input, min=, max=)`; at least one bound. A float bound on an
    integral input promotes the result, as in torch."""

    name = "torch.clamp"
    traits = traits_def(_EXACT_ELEMENTWISE)
    FACTS: ClassVar[OpFacts] = OpFacts(
        spellings=Spellings(custom=(
            "torch.clamp", "torch.clip", "torch.clamp_min", "torch.clamp_max",
            "Tensor.clamp", "Tensor.clip", "Tensor.clamp_min", "Tensor.clamp_max",
        ), arguments=(Argument("min"), Argument("max"))),
        lowers_to="torch.clamp", fusion="unary-pointwise", kernel=_clamp_kernel,
    )
    min = opt_prop_def(_NUMBER)
    max = opt_prop_def(_NUMBER)
    FORMAT: ClassVar[Format] = (("min", "value"), ("max", "value"))

    def expected_types(self) -> Sequence[TensorType]:
        if self.min is None and self.max is None:
            _Check(self.name).fail("needs at least one of min and max")
        return [infer_unary_type(self.name, self.input.type, self.min, self.max)]


def _eval_dropout(input: object) -> object:
    """Dropout's dtype probe: eval-mode dropout, which returns its input (any
    dtype); in training only floating inputs are valid, as torch says when
    the graph runs."""
    import torch.nn.functional as F

    return F.dropout(input, training=False)  # type: ignore[arg-type]


class _DropoutEffects(MemoryEffect):
    """Dropout in training draws random numbers: an effect that forbids CSE,
    DCE-free reordering and fusion. In eval mode it has none."""

    @classmethod
    def get_effects(cls, op: Operation) -> frozenset[EffectInstance]:
        if flag(op.properties["train"]):
            return frozenset((EffectInstance(MemoryEffectKind.WRITE),))
        return frozenset()


class _DropoutSpeculatable(ConditionallySpeculatable):
    @classmethod
    def is_speculatable(cls, op: Operation) -> bool:
        return not flag(op.properties["train"])


def _dropout_is_identity(op: Operation) -> bool:
    """`at::dropout` returns its input itself for `p == 0`, in eval mode,
    and for an empty input (`if (p == 0 || !train || numel == 0) return
    input`)."""
    if not flag(op.properties["train"]) or op.properties["p"].value.data == 0.0:  # type: ignore[attr-defined]
        return True
    return 0 in op.operands[0].type.get_shape()  # type: ignore[attr-defined]


@irdl_op_definition
class DropoutOp(UnaryPointwiseOp):
    """`torch.nn.functional.dropout(input, p, train)`. Not `Pure`: with
    `train = true` it is random and must never be CSE'd or fused. With
    `train = false` it has no effect (removable, mergeable) and, as with
    `p = 0`, it is its input: `canonicalize` folds it away
    (`fold-identity-dropout`)."""

    name = "torch.dropout"
    FACTS: ClassVar[OpFacts] = OpFacts(
        spellings=Spellings(custom=(
            "torch.nn.functional.dropout", "torch.dropout", "torch.nn.modules.dropout.Dropout",
        )),
        lowers_to="torch.nn.functional.dropout", fusion="unary-pointwise",
        reference=_eval_dropout,
    )
    p = prop_def(FloatAttr)
    train = prop_def(BoolAttr, default_value=FALSE)
    traits = traits_def(
        _DropoutEffects(),
        _DropoutSpeculatable(),
        ReturnsInput(_dropout_is_identity),
        _INEXACT_ELEMENTWISE,
        LazyCanonicalizationPatterns("torch.dropout"),
    )
    FORMAT: ClassVar[Format] = (("p", "value"), ("train", "flag"))

    def __init__(
        self,
        input: Value,
        p: float = 0.5,
        train: bool = True,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        super().__init__(
            input,
            result_type=result_type,
            properties={
                "p": p if isinstance(p, FloatAttr) else float_literal(float(p)),
                "train": bool_literal(bool(train)),
            },
        )

    def verify_props(self) -> None:
        p = self.p.value.data
        if not 0.0 <= p <= 1.0:
            _Check(self.name).fail(f"p must be in [0, 1], got {p}")


# ---------------------------------------------------------------------------
# Binary pointwise
# ---------------------------------------------------------------------------


class BinaryPointwiseOp(_PointwiseOp):
    """Base of the binary pointwise ops: `lhs OP rhs` with broadcasting and
    torch's type promotion. When one side is a Python number, `rhs` is absent
    and `scalar` holds it; `reverse` means the scalar is the left-hand side
    (`scalar OP lhs`). An op of the family is declared by its distinct facts
    as class keywords (`_PointwiseOp`), its facts those of `binary_facts`
    (its `custom` spellings and its `kernel` step)."""

    lhs = operand_def(TensorType)
    rhs = opt_operand_def(TensorType)
    scalar = opt_prop_def(_NUMBER)
    reverse = prop_def(BoolAttr, default_value=FALSE)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    DECLARE_FACTS = staticmethod(binary_facts)

    def __init__(
        self,
        lhs: Value,
        rhs: Value | NumberLike,
        *,
        alpha: NumberLike | None = None,
        rounding_mode: str | None = None,
        reverse: bool = False,
        result_type: Attribute | None = None,
    ) -> None:
        """`lhs OP rhs`, `rhs` a tensor or a Python number; `alpha` (add,
        sub: 1 when not given) and `rounding_mode` (div: "none" when not
        given) only for the ops that have them."""
        properties = self._keyword_properties(alpha, rounding_mode)
        is_value = isinstance(rhs, SSAValue | Operation)
        properties["scalar"] = None if is_value else number_attr(rhs)  # type: ignore[arg-type]
        properties["reverse"] = bool_literal(reverse)
        if result_type is None:
            lhs_type = _tensor_of(self.name, lhs, _operand(0, "lhs"))
            other = (
                _tensor_of(self.name, rhs, _operand(1, "rhs"))  # type: ignore[arg-type]
                if is_value
                else properties["scalar"]
            )
            result_type = infer_binary_type(
                self.name,
                lhs_type,
                other,  # type: ignore[arg-type]
                properties.get("alpha"),
                _rounding_mode(properties.get("rounding_mode")),
            )
        super().__init__(
            operands=[lhs, rhs if is_value else None],
            result_types=[result_type],
            properties=properties,
        )

    def _keyword_properties(
        self, alpha: NumberLike | None, rounding_mode: str | None
    ) -> dict[str, Attribute | None]:
        """The properties of the builder's keywords that this op has; a
        keyword it does not have is a TypeError, as for any Python call."""
        own = self.get_irdl_definition().properties
        given = {"alpha": alpha, "rounding_mode": rounding_mode}
        unknown = [key for key, value in given.items() if value is not None and key not in own]
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument '{unknown[0]}'")
        properties: dict[str, Attribute | None] = {}
        if "alpha" in own:
            properties["alpha"] = number_attr(1 if alpha is None else alpha)
        if "rounding_mode" in own:
            properties["rounding_mode"] = _str_attr(rounding_mode or "none")
        return properties

    @property
    def other(self) -> SSAValue | Attribute:
        """The right-hand side: the `rhs` operand or the `scalar` attribute."""
        return self.rhs if self.rhs is not None else self.scalar  # type: ignore[return-value]

    def expected_types(self) -> Sequence[TensorType]:
        check = _Check(self.name)
        if (self.rhs is None) == (self.scalar is None):
            check.fail("needs exactly one of an rhs operand and a scalar")
        if flag(self.reverse) and self.scalar is None:
            check.fail("reverse is only meaningful with a scalar")
        rhs = self.rhs.type if self.rhs is not None else self.scalar
        alpha = getattr(self, "alpha", None)
        mode = getattr(self, "rounding_mode", None)
        if mode is not None:
            check.choice(mode, "rounding_mode", ("none", "trunc", "floor"))
        return [
            infer_binary_type(
                self.name, self.lhs.type, rhs, alpha, _rounding_mode(mode)  # type: ignore[arg-type]
            )
        ]


def _rounding_mode(attr: Attribute | None) -> str:
    return attr.data if isinstance(attr, StringAttr) else "none"


def _unit_alpha_step(step: str) -> Callable[[Mapping[str, Attribute]], str | None]:
    """add/sub's program step: `step` where alpha is 1 (a program step adds
    or subtracts the operand itself)."""

    def choose(properties: Mapping[str, Attribute]) -> str | None:
        alpha = properties.get("alpha")
        return step if alpha is None or number_value(alpha) == 1 else None

    return choose


def _true_div_step(properties: Mapping[str, Attribute]) -> str | None:
    """div's program step: true division only (no rounding mode)."""
    return "div" if _rounding_mode(properties.get("rounding_mode")) == "none" else None


class _AddSubOp(BinaryPointwiseOp):
    """add/sub: `lhs OP alpha * rhs` (`scalar OP alpha * lhs` when reversed)."""

    alpha = prop_def(_NUMBER, default_value=IntAttr(1))
    FORMAT: ClassVar[Format] = (("scalar", "value"), ("alpha", "value"), ("reverse", "flag"))


@irdl_op_definition
class AddOp(
    _AddSubOp, torch_name="add", layout_exact=_unit_alpha, kernel=_unit_alpha_step("add"),
    custom=("torch.add", "operator.add", "Tensor.add"),
):
    """`torch.add(lhs, rhs, alpha=)`: `lhs + alpha * rhs`."""


@irdl_op_definition
class SubOp(
    _AddSubOp, torch_name="sub", layout_exact=_unit_alpha, kernel=_unit_alpha_step("sub"),
    custom=("torch.sub", "torch.rsub", "operator.sub"),
):
    """`torch.sub(lhs, rhs, alpha=)`: `lhs - alpha * rhs`; reversed (rsub):
    `scalar - alpha * lhs`."""


@irdl_op_definition
class MulOp(
    BinaryPointwiseOp, torch_name="mul", layout_exact=True, kernel="mul",
    custom=("torch.mul", "operator.mul", "Tensor.mul"),
):
    """`torch.mul(lhs, rhs)`."""

    FORMAT: ClassVar[Format] = (("scalar", "value"), ("reverse", "flag"))


@irdl_op_definition
class DivOp(
    BinaryPointwiseOp, torch_name="div", layout_exact=True, kernel=_true_div_step,
    custom=("torch.div", "operator.truediv", "operator.floordiv", "Tensor.div"),
):
    """`torch.div(lhs, rhs, rounding_mode=)`, rounding_mode "none" (true
    division: integral inputs give a floating result) | "trunc" | "floor"."""

    rounding_mode = prop_def(StringAttr, default_value=StringAttr("none"))
    FORMAT: ClassVar[Format] = (
        ("scalar", "value"),
        ("rounding_mode", "value"),
        ("reverse", "flag"),
    )


__all__ = ops_defined_in(globals())
"""The op classes this module defines (the package root re-exports them)."""
