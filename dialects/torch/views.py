"""Views and plumbing: split, unbind, cat, stack and the view ops."""


from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
)
from xdsl.ir import Operation

from optimus_ir.dialects.torch.declaration import *  # noqa: F403 - the op-declaration vocabulary
from optimus_ir.foundation.traits import (
    ReturnsInput,
    ViewLike,
)
from optimus_ir.dialects.torch.base import (
    _INTS,
    _int_attr,
    _operand,
    _shape,
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



class _ViewLikeOp(TorchOp):
    """Shared shape of the single-input, single-result plumbing ops: the
    result type is `INFER(input type, *properties)`, the properties' values
    in `FORMAT` order (ints, or tuples of ints for a list property)."""

    FACTS: ClassVar[OpFacts] = OpFacts(cost="free")

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    INFER: ClassVar[Callable[..., TensorType]]

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
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

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
class SqueezeOp(_ViewLikeOp):
    """`torch.squeeze(input, dims)`: `dims` lists exactly the dims removed."""

    name = "torch.squeeze"
    traits = traits_def(ViewLike(_squeeze_relation), _VIEW_CHAIN_CANONICALIZATION)
    dims = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("dims", "value"),)
    INFER = staticmethod(infer_squeeze_type)

    def __init__(
        self, input: Value, dims: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        dims_attr = ints_attr(sorted(dims) if not isinstance(dims, ArrayAttr) else dims)
        self._build(input, result_type, {"dims": dims_attr})


@irdl_op_definition
class UnsqueezeOp(_ViewLikeOp):
    """`torch.unsqueeze(input, dim)`: a new size-1 dim (0 <= dim <= rank)."""

    name = "torch.unsqueeze"
    traits = traits_def(ViewLike(_unsqueeze_relation), _VIEW_CHAIN_CANONICALIZATION)
    dim = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("dim", "value"),)
    INFER = staticmethod(infer_unsqueeze_type)

    def __init__(self, input: Value, dim: int, *, result_type: Attribute | None = None) -> None:
        self._build(input, result_type, {"dim": _int_attr(dim)})


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
        super().__init__(
            operands=[input], result_types=[result_type], properties={"shape": shape_attr}
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
class FlattenOp(_ViewLikeOp):
    """`torch.flatten(input, start_dim, end_dim)` with canonical dims."""

    name = "torch.flatten"
    traits = traits_def(
        ViewLike(_copying_reshape),
        ReturnsInput(_flattens_nothing),
        _VIEW_CHAIN_CANONICALIZATION,
    )
    start_dim = prop_def(IntAttr)
    end_dim = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("start_dim", "value"), ("end_dim", "value"))
    INFER = staticmethod(infer_flatten_type)

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
class UnflattenOp(_ViewLikeOp):
    """`torch.unflatten(input, dim, sizes)`: one dim becomes `sizes` (one -1 allowed)."""

    name = "torch.unflatten"
    traits = traits_def(ViewLike(_reshape), _VIEW_CHAIN_CANONICALIZATION)
    dim = prop_def(IntAttr)
    sizes = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("dim", "value"), ("sizes", "value"))
    INFER = staticmethod(infer_unflatten_type)

    def __init__(
        self, input: Value, dim: int, sizes: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        self._build(input, result_type, {"dim": _int_attr(dim), "sizes": ints_attr(sizes)})


@irdl_op_definition
class PermuteOp(_ViewLikeOp):
    """`torch.permute(input, dims)`: `dims` is a permutation of the input's dims."""

    name = "torch.permute"
    traits = traits_def(ViewLike(_permute_relation), _VIEW_CHAIN_CANONICALIZATION)
    dims = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("dims", "value"),)
    INFER = staticmethod(infer_permute_type)

    def __init__(
        self, input: Value, dims: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        self._build(input, result_type, {"dims": ints_attr(dims)})


@irdl_op_definition
class TransposeOp(_ViewLikeOp):
    """`torch.transpose(input, dim0, dim1)`: swaps two dims."""

    name = "torch.transpose"
    traits = traits_def(ViewLike(_transpose_relation), _VIEW_CHAIN_CANONICALIZATION)
    dim0 = prop_def(IntAttr)
    dim1 = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("dim0", "value"), ("dim1", "value"))
    INFER = staticmethod(infer_transpose_type)

    def __init__(
        self, input: Value, dim0: int, dim1: int, *, result_type: Attribute | None = None
    ) -> None:
        self._build(input, result_type, {"dim0": _int_attr(dim0), "dim1": _int_attr(dim1)})


@irdl_op_definition
class MovedimOp(_ViewLikeOp):
    """`torch.movedim(input, source, destination)` with canonical dim lists."""

    name = "torch.movedim"
    traits = traits_def(ViewLike(_movedim_relation), _VIEW_CHAIN_CANONICALIZATION)
    source = prop_def(_INTS)
    destination = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("source", "value"), ("destination", "value"))
    INFER = staticmethod(infer_movedim_type)

    def __init__(
        self,
        input: Value,
        source: Sequence[int],
        destination: Sequence[int],
        *,
        result_type: Attribute | None = None,
    ) -> None:
        self._build(
            input, result_type, {"source": ints_attr(source), "destination": ints_attr(destination)}
        )


@irdl_op_definition
class SliceOp(_ViewLikeOp):
    """`input[..., start:end:step, ...]` on `dim` (aten.slice); canonical bounds
    on a static dim. `narrow(x, d, s, l)` is `slice(d, s, s + l, 1)`."""

    name = "torch.slice"
    traits = traits_def(ViewLike(_slice_relation), _PLUMBING_CANONICALIZATION)
    dim = prop_def(IntAttr)
    start = prop_def(IntAttr)
    end = prop_def(IntAttr)
    step = prop_def(IntAttr, default_value=IntAttr(1))
    FORMAT: ClassVar[Format] = (
        ("dim", "value"),
        ("start", "value"),
        ("end", "value"),
        ("step", "value"),
    )
    INFER = staticmethod(infer_slice_type)

    def __init__(
        self,
        input: Value,
        dim: int,
        start: int,
        end: int,
        step: int = 1,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        bounds = {"dim": dim, "start": start, "end": end, "step": step}
        self._build(input, result_type, {key: _int_attr(v) for key, v in bounds.items()})


@irdl_op_definition
class UnfoldOp(_ViewLikeOp):
    """`input.unfold(dim, size, step)`: a view of the windows of `size`
    elements every `step` along `dim` (batch fusion reads regularly spaced
    pieces of one tensor through it when they do not fill whole periods)."""

    name = "torch.unfold"
    traits = traits_def(ViewLike(_unfold_relation), _PLUMBING_CANONICALIZATION)
    dim = prop_def(IntAttr)
    size = prop_def(IntAttr)
    step = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("dim", "value"), ("size", "value"), ("step", "value"))
    INFER = staticmethod(infer_unfold_type)

    def __init__(
        self, input: Value, dim: int, size: int, step: int, *, result_type: Attribute | None = None
    ) -> None:
        windows = {"dim": dim, "size": size, "step": step}
        self._build(input, result_type, {key: _int_attr(v) for key, v in windows.items()})


@irdl_op_definition
class SelectOp(_ViewLikeOp):
    """`torch.select(input, dim, index)`: drops `dim` (index non-negative when
    the size is static)."""

    name = "torch.select"
    traits = traits_def(ViewLike(_select_relation), _PLUMBING_CANONICALIZATION)
    dim = prop_def(IntAttr)
    index = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("dim", "value"), ("index", "value"))
    INFER = staticmethod(infer_select_type)

    def __init__(
        self, input: Value, dim: int, index: int, *, result_type: Attribute | None = None
    ) -> None:
        self._build(input, result_type, {"dim": _int_attr(dim), "index": _int_attr(index)})


# ---------------------------------------------------------------------------
# Unary pointwise
# ---------------------------------------------------------------------------

__all__ = ops_defined_in(globals())
"""The op classes this module defines (the package root re-exports them)."""
