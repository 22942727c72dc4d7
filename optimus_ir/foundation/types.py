"""Tensor types of the IR and their correspondence with torch.

A tensor value has the builtin type `tensor<DIMSxELEM, "device">`:

* `DIMS` are static sizes or `?` for a symbolic (dynamic) size;
* `ELEM` is the dtype as an xDSL element type (`f32`, `bf16`, `i64`, `i1`...);
* the encoding is the device as a string attribute (`"cpu"`, `"cuda:0"`). A
  type written without an encoding (hand-written tests) has an unknown device,
  which is compatible with every device.

Attribute objects are cached: the importer asks for the same few types many
thousands of times on a large graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    ComplexType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    NoneAttr,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute

if TYPE_CHECKING:
    import torch

DYNAMIC = DYNAMIC_INDEX
"""The size of a symbolic dimension (printed `?`); xDSL's dynamic index, not -1."""

_ELEMENT_TYPES: dict[str, Attribute] = {
    "float32": Float32Type(),
    "float16": Float16Type(),
    "bfloat16": BFloat16Type(),
    "float64": Float64Type(),
    "int64": IntegerType(64),
    "int32": IntegerType(32),
    "int16": IntegerType(16),
    "int8": IntegerType(8),
    "uint8": IntegerType(8, Signedness.UNSIGNED),
    "bool": IntegerType(1),
    "complex64": ComplexType(Float32Type()),
    "complex128": ComplexType(Float64Type()),
}
_DTYPE_NAMES: dict[Attribute, str] = {v: k for k, v in _ELEMENT_TYPES.items()}


class UnsupportedDTypeError(ValueError):
    """A torch dtype with no element type here (its values become `!fx.value`)."""


def element_type_of(dtype: torch.dtype) -> Attribute:
    """The element type for a torch dtype."""
    name = str(dtype).removeprefix("torch.")
    try:
        return _ELEMENT_TYPES[name]
    except KeyError:
        raise UnsupportedDTypeError(f"dtype {dtype} has no IR element type") from None


def dtype_of(element_type: Attribute) -> torch.dtype:
    """The torch dtype for an element type."""
    import torch

    try:
        return getattr(torch, _DTYPE_NAMES[element_type])
    except KeyError:
        raise UnsupportedDTypeError(f"element type {element_type} has no torch dtype") from None


def is_floating(element_type: Attribute) -> bool:
    return isinstance(element_type, Float16Type | BFloat16Type | Float32Type | Float64Type)


@lru_cache(maxsize=64)
def device_attr(device: str | None) -> Attribute:
    return NoneAttr() if device is None else StringAttr(device)


@lru_cache(maxsize=65536)
def tensor_type(
    shape: tuple[int, ...], element_type: Attribute, device: str | None = "cpu"
) -> TensorType:
    """A cached `tensor<...>` type; `DYNAMIC` (-1) marks a symbolic size."""
    return TensorType(element_type, shape, device_attr(device))


def tensor_type_of(value: torch.Tensor) -> TensorType:
    """The type of a real or fake tensor; symbolic sizes become `?`."""
    shape = tuple(
        size if isinstance(size, int) else _static_or_dynamic(size) for size in value.shape
    )
    return tensor_type(shape, element_type_of(value.dtype), str(value.device))


def _static_or_dynamic(size: object) -> int:
    """A SymInt that is really a constant keeps its value; others are `?`."""
    try:
        node = size.node  # type: ignore[attr-defined]
        if node.is_constant() or node.maybe_as_int() is not None:  # noqa: SIM102
            value = node.maybe_as_int()
            if value is not None:
                return int(value)
    except AttributeError:
        pass
    return DYNAMIC


def symbolic_sizes(value: object) -> tuple[tuple[str, ...] | None, tuple[int, ...] | None]:
    """For a (fake) tensor with symbolic sizes: per dim, the symbol of each
    `?` dim (the SymInt's expression, `"s77"`; "" for static dims) and the
    size the example had (the SymInt's hint); (None, None) when every size
    is static or the value is not a tensor.

    Dynamo gives two sizes it knows to be equal the same symbol (and guards
    on it), so equal names are equal sizes at run time: the fact batch
    fusion needs to fuse members with a symbolic batch dim."""
    shape = getattr(value, "shape", None)
    if shape is None or not hasattr(value, "dtype"):
        return None, None
    symbols: list[str] = []
    hints: list[int] = []
    dynamic = False
    for size in shape:
        if isinstance(size, int) or _static_or_dynamic(size) != DYNAMIC:
            symbols.append("")
            hints.append(int(size) if isinstance(size, int) else _static_or_dynamic(size))
            continue
        dynamic = True
        symbols.append(str(size))
        hints.append(_size_hint(size))
    if not dynamic:
        return None, None
    return tuple(symbols), tuple(hints)


def _size_hint(size: object) -> int:
    """The example's value of a SymInt (its hint), or DYNAMIC when unknown
    (an unbacked size)."""
    try:
        hint = size.node.hint  # type: ignore[attr-defined]
    except AttributeError:
        return DYNAMIC
    try:
        return int(hint) if hint is not None else DYNAMIC
    except (TypeError, ValueError):
        return DYNAMIC


def device_of(tensor_ty: TensorType) -> str | None:
    """The device string of a tensor type, or None when unknown."""
    encoding = tensor_ty.encoding
    return encoding.data if isinstance(encoding, StringAttr) else None


def shape_of(tensor_ty: TensorType) -> tuple[int, ...]:
    return tensor_ty.get_shape()


def same_device(a: TensorType, b: TensorType) -> bool:
    """Devices agree, an unknown device agreeing with any."""
    da, db = device_of(a), device_of(b)
    return da is None or db is None or da == db


def dims_compatible(a: int, b: int) -> bool:
    """Two sizes that may be equal at run time (a `?` matches anything)."""
    return a == b or a == DYNAMIC or b == DYNAMIC


def shapes_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(dims_compatible(x, y) for x, y in zip(a, b))


def format_shape(shape: Sequence[int]) -> str:
    return "x".join("?" if d == DYNAMIC else str(d) for d in shape) or "scalar"
