"""Python values <-> fx-dialect literal attributes, in one place.

Every translation between the values FX graphs hold in `args`/`kwargs` and the
literal attributes of the fx dialect goes through here: the importer (FX
node arguments -> attributes), lower-to-fx (operator attributes -> fx call
arguments), the exporter and raise-fx (attributes -> Python values). The
attribute constructors themselves (`fx.int_literal`, `fx.scalar_literal`,
...) live with the dialect, which caches them.

* `encode_literal(value, ref, name_object)`: any literal FX can hold.
  Values that are graph values (FX nodes for the importer, SSA values for the
  lowering) become `#fx.ref<i>` through `ref`; objects with no literal form
  become `#fx.object<name>` through `name_object` (the program's object
  table), or are an error when there is none.
* `decode_scalar(attr)`: the Python value of a scalar literal (int, float,
  bool, str, None), or `NOT_SCALAR`.
* `decode_literal(attr, objects)`: the Python value of any non-ref literal
  (dtypes, devices, objects resolved through the table), for export.

Structures (lists, tuples, dicts, slices) are walked with `fx.map_refs` on
the way back, with one of the two decoders for the leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FloatAttr, IntAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute

from optimus_ir.dialects import fx
from optimus_ir.foundation.types import UnsupportedDTypeError, dtype_of, element_type_of, tensor_type_of


class LiteralError(ValueError):
    """A Python value that has no fx literal form (and no object table to
    name it in)."""


def _no_ref(value: Any) -> Attribute | None:
    return None


_ELLIPSIS = fx.ObjectAttr("builtins.Ellipsis")


def encode_literal(
    value: Any,
    ref: Callable[[Any], Attribute | None] = _no_ref,
    name_object: Callable[[Any], str] | None = None,
) -> Attribute:
    """The literal attribute of `value`.

    `ref(value)` returns the `#fx.ref` of a graph value and None for anything
    else; an `Attribute` is taken as already encoded. Objects without a
    literal form are named by `name_object` (e.g. `ObjectTable.name_of`) or
    raise `LiteralError`."""
    scalar = fx.scalar_literal(value)
    if scalar is not None:
        return scalar
    if isinstance(value, Attribute):
        return value
    found = ref(value)
    if found is not None:
        return found

    def encode(item: Any) -> Attribute:
        return encode_literal(item, ref, name_object)

    if isinstance(value, list):
        return ArrayAttr([encode(v) for v in value])
    if isinstance(value, tuple):  # tuple, torch.Size, named tuples
        return fx.TupleValueAttr([encode(v) for v in value])
    if isinstance(value, dict):  # dict, FX's immutable_dict
        return fx.DictValueAttr([encode(k) for k in value], [encode(v) for v in value.values()])
    if type(value) is slice:
        return fx.SliceAttr(encode(value.start), encode(value.stop), encode(value.step))
    if isinstance(value, torch.dtype):
        try:
            return fx.DTypeAttr(element_type_of(value))
        except UnsupportedDTypeError:
            return fx.ObjectAttr(str(value))
    if isinstance(value, torch.device):
        return fx.DeviceAttr(str(value))
    if value is Ellipsis:
        return _ELLIPSIS
    if isinstance(value, torch.memory_format | torch.layout):
        return fx.ObjectAttr(str(value))
    if name_object is None:
        raise LiteralError(f"no fx literal for {value!r}")
    return fx.ObjectAttr(name_object(value))


class _NotScalar:
    """The type of `NOT_SCALAR`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_SCALAR"


NOT_SCALAR: Any = _NotScalar()
"""What `decode_scalar` returns for a literal that is not a scalar."""


def decode_scalar(attr: Attribute) -> Any:
    """The Python value of a scalar literal (int, float, bool, str, None), or
    `NOT_SCALAR`."""
    if isinstance(attr, IntAttr):
        return attr.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        return bool(value) if fx.is_bool_literal(attr) else value
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, fx.NoneValueAttr):
        return None
    return NOT_SCALAR


def decode_literal(attr: Attribute, resolve_object: Callable[[str], Any]) -> Any:
    """The Python value of a non-ref leaf literal; `#fx.object` names are
    resolved by `resolve_object` (e.g. `ObjectTable.resolve`). Raises
    `LiteralError` for an attribute that is not a leaf literal."""
    value = decode_scalar(attr)
    if value is not NOT_SCALAR:
        return value
    if isinstance(attr, fx.DTypeAttr):
        return dtype_of(attr.element_type)
    if isinstance(attr, fx.DeviceAttr):
        return torch.device(attr.device.data)
    if isinstance(attr, fx.ObjectAttr):
        return resolve_object(attr.qualified_name.data)
    raise LiteralError(f"attribute {attr} is not a literal FX can hold")


# ---------------------------------------------------------------------------
# Submodule descriptions (the `module_attrs` of fx.call_module)
# ---------------------------------------------------------------------------


def _describe_literal(value: Any) -> Attribute | None:
    scalar = fx.scalar_literal(value)
    if scalar is not None:
        return scalar
    kind = type(value)
    if kind in (list, tuple) or type(value).__name__ == "Size":
        items = [_describe_literal(v) for v in value]
        if all(i is not None for i in items):
            return ArrayAttr(items)  # type: ignore[arg-type]
    return None


def describe_module(mod: Any) -> DictionaryAttr | None:
    """The `module_attrs` description of a submodule for its fx.call_module op.

    Operator-agnostic: every public attribute of the module that is a literal
    (int, float, bool, str, None, list/tuple of those), and the type of each of
    its own parameters (`#fx.none` for a None parameter). None (no
    description, the call stays opaque) for a module with hooks."""
    if (
        getattr(mod, "_forward_hooks", None)
        or getattr(mod, "_forward_pre_hooks", None)
        or getattr(mod, "_backward_hooks", None)
        or getattr(mod, "_backward_pre_hooks", None)
    ):
        return None
    entries: dict[str, Attribute] = {}
    for key, value in vars(mod).items():
        if key.startswith("_"):
            continue
        attr = _describe_literal(value)
        if attr is not None:
            entries[key] = attr
    for key, param in getattr(mod, "_parameters", {}).items():
        if param is None:
            entries[key] = fx.NONE
        else:
            try:
                entries[key] = tensor_type_of(param)
            except UnsupportedDTypeError:
                continue
    return DictionaryAttr(entries)


__all__ = [
    "NOT_SCALAR",
    "LiteralError",
    "decode_literal",
    "describe_module",
    "decode_scalar",
    "encode_literal",
]
