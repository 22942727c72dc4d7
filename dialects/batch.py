"""The `batch` dialect: one op computes N independent members at once.

`batch-fusion` produces these ops from groups of independent same-kind
`torch` ops; `lower-batch` turns them back into `torch` ops (bmm/baddbmm,
one layer_norm over the stacked members with per-member affine, one
pointwise op on the stacked tensor) that run on any device. A Triton
lowering is another consumer of the same ops.

Values with a layout
    Batch ops take and return *stacked* values: a `tensor<N x S>` whose
    index 0 selects the member, `S` being the member's own shape. The
    conversions between members and stacks are explicit and are the only
    places where a layout changes:

        %s = batch.pack %a, %b, %c : T, T, T -> tensor<3xT...>
        %a2, %b2, %c2 = batch.unpack %s : tensor<3xT...> -> T, T, T

    so a batched linear can feed a batched layer_norm without unstacking:
    the `unpack`/`pack` pair between them cancels (canonicalization), and a
    pack of members that already lie regularly in one tensor (the pieces of
    one split, every k-th member of another stack) is lowered to a view.

Members keep every argument
    `batch.pointwise` holds the member op's name and *all* its properties
    (`fn_properties`), so the bounds, modes, scalars and coefficients the
    member op declares are those of every member (the grouping key
    of `batch-fusion` requires them equal). Each operand is either stacked
    (one member value per member) or shared (the same value for every member,
    broadcast): `stacked` says which.

Assembly format
    The `torch` dialect's: positional operands, keyword fields, types::

        %y = batch.linear %x, %w bias %b
            : tensor<4x8x16xf32>, tensor<4x32x16xf32>, tensor<4x32xf32> -> tensor<4x8x32xf32>
        %y = batch.pointwise %x, %t fn "torch.add" stacked [true, false] fn_properties {alpha = 1}
            : tensor<4x8x32xf32>, tensor<32xf32> -> tensor<4x8x32xf32>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    StringAttr,
)
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import facts_of
from optimus_ir.dialects.torch.normalization import LayerNormLikeOp, LayerNormOperands
from optimus_ir.dialects.fx import DictValueAttr, bool_literal
from optimus_ir.foundation.traits import LazyCanonicalizationPatterns, Piece, ViewLike
from optimus_ir.foundation.types import device_of, tensor_type

# By its name in `passes/registry.py` CANONICALIZATION_PATTERNS.
_CANONICALIZATION = LazyCanonicalizationPatterns("batch")
_STRING_NAME_CACHE: dict[str, StringAttr] = {}


def _str(value: str) -> StringAttr:
    attr = _STRING_NAME_CACHE.get(value)
    if attr is None:
        attr = _STRING_NAME_CACHE[value] = StringAttr(value)
    return attr


@lru_cache(maxsize=4096)
def stacked_type(count: int, member: TensorType) -> TensorType:
    """The type of `count` stacked members of type `member`: `tensor<count x S>`."""
    return tensor_type((count, *member.get_shape()), member.element_type, device_of(member))


@lru_cache(maxsize=4096)
def member_type(stacked: TensorType) -> TensorType:
    """The member type of a stacked type (its shape without dim 0)."""
    return tensor_type(tuple(stacked.get_shape()[1:]), stacked.element_type, device_of(stacked))


def _fail(op: str, message: str) -> VerifyException:
    return VerifyException(f"'{op}': {message}")


def _stacked(op: str, value: SSAValue, what: str, count: int | None = None) -> TensorType:
    ty = value.type
    if not isinstance(ty, TensorType) or ty.get_num_dims() < 1:
        raise _fail(op, f"{what} must be a stacked tensor (rank >= 1), got {ty}")
    n = ty.get_shape()[0]
    if count is not None and n != count:
        raise _fail(op, f"{what} stacks {n} members, expected {count}")
    return ty


class BatchOp(TorchOp):
    """Base of the batch ops: the torch dialect's assembly format and builder."""

    @property
    def member_count(self) -> int:
        """N, the number of members the op computes."""
        raise NotImplementedError


# ---------------------------------------------------------------------------
# Layout conversions
# ---------------------------------------------------------------------------


@irdl_op_definition
class PackOp(BatchOp):
    """Stack N member values of one type into `tensor<N x S>` (member i at
    index i). Lowered to a view where the members already lie regularly in
    one tensor, else to `torch.stack`."""

    name = "batch.pack"
    members = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult(), _CANONICALIZATION)

    def __init__(self, members: Sequence[Value], *, result_type: Attribute | None = None) -> None:
        if result_type is None:
            if not members:
                raise VerifyException("'batch.pack' needs at least one member")
            first = SSAValue.get(members[0]).type
            assert isinstance(first, TensorType)
            result_type = stacked_type(len(members), first)
        super().__init__(operands=[list(members)], result_types=[result_type])

    @property
    def member_count(self) -> int:
        return len(self.members)

    def expected_types(self) -> Sequence[TensorType]:
        if not self.members:
            raise _fail(self.name, "needs at least one member")
        first = self.members[0].type
        for i, member in enumerate(self.members):
            if member.type != first:
                raise _fail(self.name, f"member {i} has type {member.type}, member 0 {first}")
        assert isinstance(first, TensorType)
        return [stacked_type(len(self.members), first)]


def _unpack_relation(op: Operation) -> Piece:
    return Piece(0, keeps_dim=False)


@irdl_op_definition
class UnpackOp(BatchOp):
    """The N members of a stacked value: result i is index i of dim 0 (a view,
    like `torch.unbind(x, 0)`)."""

    name = "batch.unpack"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    traits = traits_def(Pure(), ViewLike(_unpack_relation), _CANONICALIZATION)

    def __init__(self, input: Value, *, result_types: Sequence[Attribute] | None = None) -> None:
        if result_types is None:
            ty = SSAValue.get(input).type
            assert isinstance(ty, TensorType)
            result_types = [member_type(ty)] * ty.get_shape()[0]
        super().__init__(operands=[input], result_types=[list(result_types)])

    @property
    def member_count(self) -> int:
        return len(self.outputs)

    def expected_types(self) -> Sequence[TensorType]:
        ty = _stacked(self.name, self.input, "input", len(self.outputs))
        return [member_type(ty)] * len(self.outputs)


# ---------------------------------------------------------------------------
# Compute
# ---------------------------------------------------------------------------


class _StackedWeightsLinear(BatchOp):
    """N linears whose weights (and biases) are stacked; `SHARED_INPUT`
    says whether the input is one tensor for all members or stacked too."""

    SHARED_INPUT: ClassVar[bool] = False
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    FORMAT: ClassVar[Format] = (("bias", "operand"),)

    def __init__(
        self, input: Value, weight: Value, bias: Value | None = None, *,
        result_type: Attribute | None = None,
    ) -> None:
        if result_type is None:
            result_type = _linear_type(
                self.name, SSAValue.get(input), SSAValue.get(weight),
                None if bias is None else SSAValue.get(bias), shared_input=self.SHARED_INPUT,
            )
        super().__init__(operands=[input, weight, bias], result_types=[result_type])

    @property
    def member_count(self) -> int:
        return self.weight.type.get_shape()[0]  # type: ignore[union-attr]

    def expected_types(self) -> Sequence[TensorType]:
        return [
            _linear_type(self.name, self.input, self.weight, self.bias, shared_input=self.SHARED_INPUT)
        ]


@irdl_op_definition
class LinearOp(_StackedWeightsLinear):
    """N linears of equal shapes: member i is `linear(input[i], weight[i], bias[i])`.
    `input: tensor<N x ... x K>`, `weight: tensor<N x M x K>`,
    `bias: tensor<N x M>` -> `tensor<N x ... x M>` (one baddbmm)."""

    name = "batch.linear"
    traits = traits_def(Pure(), ContiguousResult())


@irdl_op_definition
class LinearSharedInputOp(_StackedWeightsLinear):
    """N linears of one shared input: member i is `linear(input, weight[i], bias[i])`.
    `input: tensor<... x K>` (not stacked), `weight: tensor<N x M x K>`,
    `bias: tensor<N x M>` -> `tensor<N x ... x M>` (one linear on the
    concatenated weights)."""

    name = "batch.linear_shared_input"
    SHARED_INPUT: ClassVar[bool] = True
    traits = traits_def(Pure())


def _linear_type(
    op: str, input: SSAValue, weight: SSAValue, bias: SSAValue | None, *, shared_input: bool
) -> TensorType:
    w = _stacked(op, weight, "weight")
    n = w.get_shape()[0]
    x = input.type
    if not isinstance(x, TensorType):
        raise _fail(op, f"input must be a tensor, got {x}")
    if not shared_input:
        x = member_type(_stacked(op, input, "input", n))
    b = None if bias is None else member_type(_stacked(op, bias, "bias", n))
    try:
        out = T.infer_linear_type(x, member_type(w), b)
    except VerifyException as error:
        raise _fail(op, f"members: {error}") from None
    return stacked_type(n, out)


@irdl_op_definition
class GroupedLinearOp(BatchOp):
    """N linears of different shapes: result i is `linear(input_i, weight_i,
    bias_i)`. The operands are the N inputs, then the N weights, then (with
    `has_bias`) the N biases; members are not stacked (their shapes differ).
    A grouped GEMM kernel computes them in one launch; the generic lowering
    is one torch.linear per member."""

    name = "batch.grouped_linear"
    members = var_operand_def(TensorType)
    has_bias = prop_def(BoolAttr, default_value=bool_literal(False))
    outputs = var_result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())
    FORMAT: ClassVar[Format] = (("has_bias", "flag"),)

    def __init__(
        self, inputs: Sequence[Value], weights: Sequence[Value],
        biases: Sequence[Value] | None = None, *,
        result_types: Sequence[Attribute] | None = None,
    ) -> None:
        values = [SSAValue.get(v) for v in (*inputs, *weights, *(biases or ()))]
        if result_types is None:
            result_types = _grouped_types(self.name, values, len(inputs), bool(biases))
        super().__init__(
            operands=[values],
            result_types=[list(result_types)],
            properties={"has_bias": bool_literal(bool(biases))},
        )

    @property
    def member_count(self) -> int:
        return len(self.outputs)

    def member_operands(self, i: int) -> tuple[SSAValue, SSAValue, SSAValue | None]:
        """(input, weight, bias or None) of member `i`."""
        n = self.member_count
        ops = self.members
        return ops[i], ops[n + i], (ops[2 * n + i] if T.flag(self.has_bias) else None)

    def expected_types(self) -> Sequence[TensorType]:
        return _grouped_types(self.name, list(self.members), len(self.outputs), T.flag(self.has_bias))


def _grouped_types(op: str, values: Sequence[SSAValue], n: int, has_bias: bool) -> list[TensorType]:
    if n < 1 or len(values) != n * (3 if has_bias else 2):
        raise _fail(op, f"needs {3 if has_bias else 2} operands per member, got {len(values)} for {n} members")
    out = []
    for i in range(n):
        bias = values[2 * n + i].type if has_bias else None
        try:
            out.append(T.infer_linear_type(values[i].type, values[n + i].type, bias))  # type: ignore[arg-type]
        except VerifyException as error:
            raise _fail(op, f"member {i}: {error}") from None
    return out


@irdl_op_definition
class LayerNormOp(BatchOp, LayerNormLikeOp):
    """N layer_norms with per-member affine: member i is
    `layer_norm(input[i], normalized_shape, weight[i], bias[i], eps)`."""

    name = "batch.layer_norm"

    def infer_result_type(self, operands: LayerNormOperands, normalized_shape: tuple[int, ...]) -> Attribute:
        """The members' type stacked: the input's."""
        return SSAValue.get(operands[0]).type

    @property
    def member_count(self) -> int:
        return self.input.type.get_shape()[0]  # type: ignore[union-attr]

    def expected_types(self) -> Sequence[TensorType]:
        x = _stacked(self.name, self.input, "input")
        n = x.get_shape()[0]
        w = None if self.weight is None else member_type(_stacked(self.name, self.weight, "weight", n))
        b = None if self.bias is None else member_type(_stacked(self.name, self.bias, "bias", n))
        try:
            out = T.infer_layer_norm_type(member_type(x), T.ints(self.normalized_shape), w, b)
        except VerifyException as error:
            raise _fail(self.name, f"members: {error}") from None
        return [stacked_type(n, out)]


@irdl_op_definition
class PointwiseOp(BatchOp):
    """N applications of one pointwise torch op (`fn`, with all its
    properties `fn_properties`): member i is `fn(operand_0[i] or operand_0,
    ...)`, where an operand is indexed when `stacked` says so and shared
    (broadcast to every member) otherwise. At least one operand is stacked.

    `fn` may also be a row-wise op (softmax, log_softmax: each row along
    `dim` computed on its own), whose members stack exactly like pointwise
    ones; its lowering moves `dim` past the stacking dim
    (`stacked_properties` of the op class)."""

    name = "batch.pointwise"
    inputs = var_operand_def(TensorType)
    fn = prop_def(StringAttr)
    stacked = prop_def(ArrayAttr)
    fn_properties = prop_def(DictValueAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    FORMAT: ClassVar[Format] = (("fn", "value"), ("stacked", "value"), ("fn_properties", "value"))

    def __init__(
        self, fn: str, operands: Sequence[Value], stacked: Sequence[bool],
        fn_properties: Mapping[str, Attribute], *,
        result_type: Attribute | None = None,
    ) -> None:
        props = properties_literal(fn_properties)
        flags = ArrayAttr([bool_literal(bool(s)) for s in stacked])
        values = [SSAValue.get(v) for v in operands]
        if result_type is None:
            result_type = _pointwise_type(self.name, fn, values, [bool(s) for s in stacked], props)
        super().__init__(
            operands=[values],
            result_types=[result_type],
            properties={"fn": _str(fn), "stacked": flags, "fn_properties": props},
        )

    @property
    def member_count(self) -> int:
        return self.result.type.get_shape()[0]  # type: ignore[union-attr]

    @property
    def stacked_flags(self) -> list[bool]:
        """Per operand: whether it is stacked (else shared)."""
        return [T.flag(f) for f in self.stacked.data]

    def member_properties(self) -> dict[str, Attribute]:
        """The properties every member op has (`fn_properties` as a dict)."""
        return {k.data: v for k, v in self.fn_properties.items()}  # type: ignore[attr-defined]

    def fn_class(self) -> type[TorchOp]:
        """The torch op class each member applies."""
        return pointwise_op_class(self.fn.data)

    def expected_types(self) -> Sequence[TensorType]:
        return [
            _pointwise_type(
                self.name, self.fn.data, list(self.inputs), self.stacked_flags, self.fn_properties
            )
        ]


POINTWISE_FUSION_KINDS = frozenset({"unary-pointwise", "binary-pointwise", "softmax"})
"""The fusion kinds (`OpFacts.fusion`) whose ops a `batch.pointwise` applies
(a softmax-like op over its member's last dim: the stacked op normalizes the
same rows)."""


@lru_cache(maxsize=None)
def _pointwise_classes() -> dict[str, type[TorchOp]]:
    """Every torch op class whose facts declare a pointwise fusion kind."""
    classes = {}
    for cls in T.TORCH.operations:
        facts = facts_of(cls)
        if facts is not None and facts.fusion in POINTWISE_FUSION_KINDS:
            classes[cls.name] = cls
    return classes


def _declared_pointwise_class(name: str) -> type[TorchOp] | None:
    """A pointwise op class called `name` declared outside the torch dialect's
    list (a subclass of `TorchOp` defined by an extension or a test)."""
    pending = list(TorchOp.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        facts = facts_of(cls)
        if getattr(cls, "name", None) == name and facts is not None and (
            facts.fusion in POINTWISE_FUSION_KINDS
        ):
            return cls
    return None


def pointwise_op_class(name: str) -> type[TorchOp]:
    """The pointwise torch op class called `name`: one whose facts declare a
    pointwise fusion kind."""
    cls = _pointwise_classes().get(name) or _declared_pointwise_class(name)
    if cls is None:
        raise VerifyException(f"'batch.pointwise': '{name}' is not a pointwise torch op")
    return cls


def properties_literal(properties: Mapping[str, Attribute]) -> DictValueAttr:
    """`properties` as the dict literal `batch.pointwise` keeps them in
    (keys in sorted order, so equal properties give equal attributes)."""
    keys = sorted(properties)
    return DictValueAttr([_str(k) for k in keys], [properties[k] for k in keys])


def _pointwise_type(
    op: str, fn: str, operands: Sequence[SSAValue], stacked: Sequence[bool], props: DictValueAttr
) -> TensorType:
    cls = pointwise_op_class(fn)
    if len(stacked) != len(operands):
        raise _fail(op, f"has {len(operands)} operands but {len(stacked)} stacked flags")
    if not any(stacked):
        raise _fail(op, "needs at least one stacked operand")
    counts = {value.type.get_shape()[0] for value, s in zip(operands, stacked) if s}  # type: ignore[union-attr]
    if len(counts) != 1:
        raise _fail(op, f"stacked operands have different member counts {sorted(counts)}")
    n = counts.pop()
    members = [
        member_type(_stacked(op, value, f"operand {i}", n)) if s else value.type
        for i, (value, s) in enumerate(zip(operands, stacked))
    ]
    fields = {k.data: v for k, v in props.items()}  # type: ignore[attr-defined]
    known = cls.get_irdl_definition().properties
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise _fail(
            op,
            f"'{fn}' has no properties {unknown} (it has: {', '.join(sorted(known)) or 'none'})",
        )
    member_result_type = getattr(cls, "member_result_type", None)
    try:
        if member_result_type is not None:  # softmax-like and selection ops
            out = member_result_type(members, fields)
        elif issubclass(cls, T.UnaryPointwiseOp):
            if len(members) != 1:
                raise VerifyException(f"'{fn}' takes one operand, got {len(members)}")
            out = T.infer_unary_type(fn, members[0], fields.get("min"), fields.get("max"))  # type: ignore[arg-type]
        else:
            rhs = members[1] if len(members) > 1 else fields.get("scalar")
            if rhs is None or len(members) > 2:
                raise VerifyException(f"'{fn}' needs a tensor or scalar right-hand side")
            mode = fields.get("rounding_mode")
            out = T.infer_binary_type(
                fn, members[0], rhs, fields.get("alpha"),  # type: ignore[arg-type]
                mode.data if isinstance(mode, StringAttr) else "none",
            )
    except VerifyException as error:
        raise _fail(op, f"members: {error}") from None
    return stacked_type(n, out)


BATCH_OPS: tuple[type[BatchOp], ...] = (
    PackOp, UnpackOp, LinearOp, LinearSharedInputOp, GroupedLinearOp, LayerNormOp, PointwiseOp,
)

BATCH = Dialect("batch", list(BATCH_OPS), [])

__all__ = [
    "BATCH",
    "BATCH_OPS",
    "BatchOp",
    "member_type",
    "pointwise_op_class",
    "properties_literal",
    "stacked_type",
    *(op.__name__ for op in BATCH_OPS),
]
