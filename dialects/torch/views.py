"""Views and plumbing: split, unbind, cat, stack and the view ops."""


from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, get_type_hints

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
)
from xdsl.ir import Operation
from xdsl.irdl import BaseAttr
from xdsl.traits import OpTrait

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.foundation.traits import (
    ReturnsInput,
    ViewLike,
    ViewRelation,
)
from optimus_ir.dialects.torch.base import (
    _INTS,
    _int_attr,
    _operand,
    _shape,
    bind_arguments,
    ints,
    ints_attr,
)
from optimus_ir.dialects.torch.assembly import _tensor_of
from optimus_ir.dialects.torch.relations import (
    _JOIN_CANONICALIZATION,
    _PLUMBING_CANONICALIZATION,
    _SPLIT_CANONICALIZATION,
    _VIEW_CHAIN_CANONICALIZATION,
    _copying_reshape,
    _movedim_relation,
    _permute_relation,
    _reshape,
    _select_relation,
    _slice_relation,
    _split_relation,
    _squeeze_relation,
    _transpose_relation,
    _unbind_relation,
    _unfold_relation,
    _unsqueeze_relation,
)
from optimus_ir.dialects.torch.inference import (
    infer_cat_type,
    infer_flatten_type,
    infer_movedim_type,
    infer_permute_type,
    infer_reshape_type,
    infer_select_type,
    infer_slice_type,
    infer_split_types,
    infer_squeeze_type,
    infer_stack_type,
    infer_transpose_type,
    infer_unbind_types,
    infer_unflatten_type,
    infer_unfold_type,
    infer_unsqueeze_type,
)



ViewProperty = int | Sequence[int] | Attribute
"""A view op builder's value for a property: an int, a list of ints, or the
attribute itself."""


def _infer_arguments(infer: Callable[..., TensorType]) -> list[tuple[str, bool, int | None]]:
    """`infer`'s arguments after the input type: (name, whether it is a list
    of ints, its default or None)."""
    hints = get_type_hints(infer)
    parameters = list(inspect.signature(infer).parameters.values())[1:]
    return [
        (p.name, hints[p.name] is not int, None if p.default is p.empty else p.default)
        for p in parameters
    ]


class _ViewLikeOp(TorchOp):
    """Shared declaration of the single-input, single-result plumbing ops:
    the result type is `INFER(input type, *properties)`.

    An op of the family is declared by its distinct facts, as class
    keywords: `torch_name` (the op is `torch.<torch_name>`), `relation` (its
    `ViewLike` relation), `infer` (its type function), `canonicalization`
    (the view-chain patterns by default) and `extra_traits`. Its properties
    are `infer`'s arguments after the input, of the same names (an `int`
    argument an integer property, any other a list of ints; a default the
    property's default), printed in that order (`FORMAT`); the builder takes
    them, as Python values, in that order or by name."""

    FACTS: ClassVar[OpFacts] = OpFacts(cost="free")

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    INFER: ClassVar[Callable[..., TensorType]]

    def __init_subclass__(
        cls,
        *,
        torch_name: str | None = None,
        relation: Callable[[Operation], ViewRelation] | None = None,
        infer: Callable[..., TensorType] | None = None,
        canonicalization: OpTrait = _VIEW_CHAIN_CANONICALIZATION,
        extra_traits: Sequence[OpTrait] = (),
        **kwargs: Any,
    ) -> None:
        if torch_name is not None:
            if relation is None or infer is None:
                raise TypeError(f"{cls.__name__} declares torch_name without relation and infer")
            arguments = _infer_arguments(infer)
            for name, is_list, default in arguments:
                if default is not None:
                    default = ints_attr(default) if is_list else IntAttr(default)
                setattr(cls, name, prop_def(_INTS if is_list else IntAttr, default_value=default))
            declare_op(
                cls, f"torch.{torch_name}", ViewLike(relation), *extra_traits, canonicalization,
                FORMAT=tuple((name, "value") for name, _, _ in arguments),
                INFER=staticmethod(infer),
            )
        super().__init_subclass__(**kwargs)

    def __init__(
        self,
        input: Value,
        *values: ViewProperty,
        result_type: Attribute | None = None,
        **named: ViewProperty,
    ) -> None:
        """`input`, then the op's properties (`FORMAT` order) positionally or
        by name; one with a default may be left out."""
        names = [name for name, _ in self.FORMAT]
        given = bind_arguments(type(self).__name__, names, values, named)
        definitions = self.get_irdl_definition().properties
        properties: dict[str, Attribute] = {}
        for name in names:
            definition = definitions[name]
            value = given.get(name, definition.default_value)
            if value is None:
                raise TypeError(f"{type(self).__name__}() missing argument '{name}'")
            is_int = definition.constr == BaseAttr(IntAttr)
            properties[name] = _int_attr(value) if is_int else ints_attr(value)  # type: ignore[arg-type]
        self._build(input, result_type, properties)

    def _property_values(self, properties: Callable[[str], Attribute]) -> list[int | tuple[int, ...]]:
        """The values `INFER` takes after the input type, each property read by `properties`."""
        values: list[int | tuple[int, ...]] = []
        for name, _ in self.FORMAT:
            attr = properties(name)
            values.append(attr.data if isinstance(attr, IntAttr) else ints(attr))  # type: ignore[arg-type]
        return values

    def _build(self, input: Value, result_type: Attribute | None, properties: dict[str, Attribute]) -> None:
        """Build the op with `properties`, its result type inferred unless given."""
        if result_type is None:
            values = self._property_values(properties.__getitem__)
            result_type = type(self).INFER(_tensor_of(self.name, input), *values)
        TorchOp.__init__(self, operands=[input], result_types=[result_type], properties=properties)

    def expected_types(self) -> Sequence[TensorType]:
        values = self._property_values(lambda name: getattr(self, name))
        return [type(self).INFER(self.input.type, *values)]


@irdl_op_definition
class SplitOp(TorchOp):
    """`torch.split(input, sections, dim)` with explicit sections; one result
    per section (no tuple, no getitem)."""

    FACTS: ClassVar[OpFacts] = OpFacts(cost="free")

    name = "torch.split"
    traits = traits_def(Pure(), ViewLike(_split_relation), _SPLIT_CANONICALIZATION)
    input = operand_def(TensorType)
    sections = prop_def(_INTS)
    dim = prop_def(IntAttr)
    outputs = var_result_def(TensorType)
    FORMAT: ClassVar[Format] = (("sections", "value"), ("dim", "value"))

    def __init__(
        self,
        input: Value,
        sections: Sequence[int],
        dim: int,
        *,
        result_types: Sequence[Attribute] | None = None,
    ) -> None:
        sections_attr = ints_attr(sections)
        if result_types is None:
            input_type = _tensor_of(self.name, input, _operand(0, "input"))
            result_types = infer_split_types(input_type, ints(sections_attr), int(dim))
        super().__init__(
            operands=[input],
            result_types=[list(result_types)],
            properties={"sections": sections_attr, "dim": _int_attr(dim)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return infer_split_types(self.input.type, ints(self.sections), self.dim.data)


class _UnbindLikeOp(TorchOp):
    """Shared shape of unbind and unbind_copy: an input, a dim, one result
    per index of the dim."""

    input = operand_def(TensorType)
    dim = prop_def(IntAttr)
    outputs = var_result_def(TensorType)
    FORMAT: ClassVar[Format] = (("dim", "value"),)

    def __init__(
        self,
        input: Value,
        dim: int,
        *,
        result_types: Sequence[Attribute] | None = None,
    ) -> None:
        if result_types is None:
            input_type = _tensor_of(self.name, input, _operand(0, "input"))
            result_types = infer_unbind_types(input_type, int(dim))
        super().__init__(
            operands=[input],
            result_types=[list(result_types)],
            properties={"dim": _int_attr(dim)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return infer_unbind_types(self.input.type, self.dim.data, len(self.results))


@irdl_op_definition
class UnbindOp(_UnbindLikeOp):
    """`torch.unbind(input, dim)`: one result per index of `dim`."""

    FACTS: ClassVar[OpFacts] = OpFacts(cost="free")

    name = "torch.unbind"
    traits = traits_def(Pure(), ViewLike(_unbind_relation), _PLUMBING_CANONICALIZATION)


@irdl_op_definition
class UnbindCopyOp(_UnbindLikeOp):
    """`torch.unbind_copy(input, dim)`: one result per index of `dim`, each
    a fresh contiguous copy with storage of its own (not a view). One op
    where returned members of a batched value must not share storage: it
    replaces an unbind and a copy per member."""

    FACTS: ClassVar[OpFacts] = OpFacts(cost="copy")

    name = "torch.unbind_copy"
    traits = traits_def(Pure(), ContiguousResult())


class _JoinOp(TorchOp):
    """Shared shape of cat and stack: variadic inputs, a dim."""

    FACTS: ClassVar[OpFacts] = OpFacts(cost="copy")

    inputs = var_operand_def(TensorType)
    dim = prop_def(IntAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    FORMAT: ClassVar[Format] = (("dim", "value"),)
    INFER: ClassVar[Callable[[Sequence[TensorType], int], TensorType]]

    def __init__(
        self, inputs: Sequence[Value], dim: int, *, result_type: Attribute | None = None
    ) -> None:
        if result_type is None:
            types = [_tensor_of(self.name, v, _operand(i)) for i, v in enumerate(inputs)]
            result_type = type(self).INFER(types, int(dim))
        super().__init__(
            operands=[list(inputs)], result_types=[result_type], properties={"dim": _int_attr(dim)}
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [type(self).INFER([v.type for v in self.inputs], self.dim.data)]


@irdl_op_definition
class CatOp(_JoinOp):
    """`torch.cat(inputs, dim)`: concatenation along an existing dim."""

    name = "torch.cat"
    traits = traits_def(_JOIN_CANONICALIZATION)
    INFER = staticmethod(infer_cat_type)


@irdl_op_definition
class StackOp(_JoinOp):
    """`torch.stack(inputs, dim)`: stacking along a new dim (0 <= dim <= rank)."""

    name = "torch.stack"
    traits = traits_def(_JOIN_CANONICALIZATION)
    INFER = staticmethod(infer_stack_type)


@irdl_op_definition
class SqueezeOp(
    _ViewLikeOp, torch_name="squeeze", relation=_squeeze_relation, infer=infer_squeeze_type
):
    """`torch.squeeze(input, dims)`: `dims` lists exactly the dims removed."""

    def __init__(
        self, input: Value, dims: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        dims_attr = ints_attr(sorted(dims) if not isinstance(dims, ArrayAttr) else dims)
        self._build(input, result_type, {"dims": dims_attr})


@irdl_op_definition
class UnsqueezeOp(
    _ViewLikeOp, torch_name="unsqueeze", relation=_unsqueeze_relation, infer=infer_unsqueeze_type
):
    """`torch.unsqueeze(input, dim)`: a new size-1 dim (0 <= dim <= rank)."""


class _ReshapeLikeOp(_ViewLikeOp):
    """Shared shape of reshape and view: a target shape with at most one -1."""

    shape = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("shape", "value"),)

    def __init__(
        self, input: Value, shape: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        shape_attr = ints_attr(shape)
        if result_type is None:
            input_type = _tensor_of(self.name, input)
            result_type = infer_reshape_type(input_type, ints(shape_attr), self.name)
        TorchOp.__init__(
            self, operands=[input], result_types=[result_type], properties={"shape": shape_attr}
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_reshape_type(self.input.type, ints(self.shape), self.name)]


@irdl_op_definition
class ReshapeOp(_ReshapeLikeOp):
    """`torch.reshape(input, shape)`: a view when possible, else a copy."""

    name = "torch.reshape"
    traits = traits_def(ViewLike(_copying_reshape), _VIEW_CHAIN_CANONICALIZATION)


@irdl_op_definition
class ViewOp(_ReshapeLikeOp):
    """`Tensor.view(shape)`: a guaranteed view (kept apart from reshape for aliasing)."""

    name = "torch.view"
    traits = traits_def(ViewLike(_reshape), _VIEW_CHAIN_CANONICALIZATION)


def _flattens_nothing(op: Operation) -> bool:
    """`at::flatten` returns its input itself when there is nothing to
    flatten: one dim (`start_dim == end_dim`), or an input of rank <= 1."""
    rank = len(_shape(op.operands[0].type))
    return op.start_dim.data == op.end_dim.data or rank <= 1  # type: ignore[attr-defined]


@irdl_op_definition
class FlattenOp(
    _ViewLikeOp, torch_name="flatten", relation=_copying_reshape, infer=infer_flatten_type,
    extra_traits=(ReturnsInput(_flattens_nothing),),
):
    """`torch.flatten(input, start_dim, end_dim)` with canonical dims."""

    def __init__(
        self,
        input: Value,
        start_dim: int = 0,
        end_dim: int | None = None,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        if end_dim is None:
            end_dim = max(len(_shape(_tensor_of(self.name, input))) - 1, 0)
        self._build(
            input, result_type, {"start_dim": _int_attr(start_dim), "end_dim": _int_attr(end_dim)}
        )


@irdl_op_definition
class UnflattenOp(
    _ViewLikeOp, torch_name="unflatten", relation=_reshape, infer=infer_unflatten_type
):
    """`torch.unflatten(input, dim, sizes)`: one dim becomes `sizes` (one -1 allowed)."""


@irdl_op_definition
class PermuteOp(
    _ViewLikeOp, torch_name="permute", relation=_permute_relation, infer=infer_permute_type
):
    """`torch.permute(input, dims)`: `dims` is a permutation of the input's dims."""


@irdl_op_definition
class TransposeOp(
    _ViewLikeOp, torch_name="transpose", relation=_transpose_relation, infer=infer_transpose_type
):
    """`torch.transpose(input, dim0, dim1)`: swaps two dims."""


@irdl_op_definition
class MovedimOp(
    _ViewLikeOp, torch_name="movedim", relation=_movedim_relation, infer=infer_movedim_type
):
    """`torch.movedim(input, source, destination)` with canonical dim lists."""


@irdl_op_definition
class SliceOp(
    _ViewLikeOp, torch_name="slice", relation=_slice_relation, infer=infer_slice_type,
    canonicalization=_PLUMBING_CANONICALIZATION,
):
    """`input[..., start:end:step, ...]` on `dim` (aten.slice); canonical bounds
    on a static dim. `narrow(x, d, s, l)` is `slice(d, s, s + l, 1)`."""


@irdl_op_definition
class UnfoldOp(
    _ViewLikeOp, torch_name="unfold", relation=_unfold_relation, infer=infer_unfold_type,
    canonicalization=_PLUMBING_CANONICALIZATION,
):
    """`input.unfold(dim, size, step)`: a view of the windows of `size`
    elements every `step` along `dim` (batch fusion reads regularly spaced
    pieces of one tensor through it when they do not fill whole periods)."""


@irdl_op_definition
class SelectOp(
    _ViewLikeOp, torch_name="select", relation=_select_relation, infer=infer_select_type,
    canonicalization=_PLUMBING_CANONICALIZATION,
):
    """`torch.select(input, dim, index)`: drops `dim` (index non-negative when
    the size is static)."""


__all__ = ops_defined_in(globals())
"""The op classes this module defines (the package root re-exports them)."""
