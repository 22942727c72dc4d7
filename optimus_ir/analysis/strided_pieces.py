"""Strided pieces: values that are equal-sized pieces of one tensor.

`regular_pieces(values)`: when `values` are step-1 pieces (split results or
slices) of one base along one dim, equally sized, at offsets in arithmetic
progression with a stride of at least their size, they are one strided view
of the base. Batch fusion asks it to stack such members for free, and the
batch lowering to emit that view instead of a stack; here so that the
lowering does not import the pass (no import between passes and lowering).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, TensorType
from xdsl.ir import Operation, SSAValue

from optimus_ir.analysis.layout import shape
from optimus_ir.dialects import torch as T


_STARTS: dict[int, tuple[ArrayAttr[IntAttr], list[int]]] = {}
"""`section_starts` of recently read `sections` attributes, by identity (the
entry holds the attribute, so its id is not reused while cached)."""
_STARTS_LIMIT = 256


def section_starts(sections: ArrayAttr[IntAttr]) -> list[int]:
    """The offset of each section of a split's `sections` attribute.

    Cached by the attribute's identity: attributes are immutable, and the
    batch-fusion search asks about pieces of the same split of thousands of
    sections once per candidate group (read each time, that was quadratic in
    the graph's width)."""
    cached = _STARTS.get(id(sections))
    if cached is not None and cached[0] is sections:
        return cached[1]
    starts, total = [], 0
    for section in T.ints(sections):
        starts.append(total)
        total += section
    if len(_STARTS) >= _STARTS_LIMIT:
        _STARTS.clear()
    _STARTS[id(sections)] = (sections, starts)
    return starts


def piece_of(
    value: SSAValue, offsets: dict[Operation, list[int]]
) -> tuple[SSAValue, int, int, int] | None:
    """(base, dim, offset, size) when `value` is a step-1 piece of `base`
    (a split result or a slice); `offsets` caches each split's section
    offsets (a split into K pieces is read once, not once per piece)."""
    owner = value.owner
    if isinstance(owner, T.SplitOp) and isinstance(value.type, TensorType):
        starts = offsets.get(owner)
        if starts is None:
            starts = offsets[owner] = section_starts(owner.sections)
        index = value.index  # type: ignore[attr-defined]
        size = value.type.get_shape()[owner.dim.data]
        if size < 0 or shape(owner.input)[owner.dim.data] < 0:  # type: ignore[index]
            return None  # a split along a symbolic dim: its view is not proven
        return owner.input, owner.dim.data, starts[index], size
    if isinstance(owner, T.SliceOp) and owner.step.data == 1:
        ty = owner.input.type
        if not isinstance(ty, TensorType):
            return None
        dim = owner.dim.data
        size = ty.get_shape()[dim]
        start = owner.start.data
        result_size = value.type.get_shape()[dim]  # type: ignore[union-attr]
        if start < 0 or size < 0 or result_size < 0:
            return None
        return owner.input, dim, start, result_size
    return None


def regular_pieces(values: Sequence[SSAValue]) -> tuple[SSAValue, int, int, int, int] | None:
    """(base, dim, first offset, stride, size) when `values` are equal-sized
    step-1 pieces of one base along one dim at offsets in arithmetic
    progression with a stride of at least their size: one strided view."""
    if len(values) < 2:
        return None
    offsets: dict[Operation, list[int]] = {}
    pieces = [piece_of(v, offsets) for v in values]
    if any(p is None for p in pieces):
        return None
    base, dim, first, size = pieces[0]  # type: ignore[misc]
    stride = pieces[1][2] - first  # type: ignore[index]
    if stride < size:
        return None
    for k, (b, d, offset, s) in enumerate(pieces):  # type: ignore[misc]
        if b is not base or d != dim or s != size or offset != first + k * stride:
            return None
    return base, dim, first, stride, size


__all__ = ["piece_of", "regular_pieces", "section_starts"]
