"""Shared helpers of the torch dialect: scalar and list properties, the
verifier's located checks (`_Check`) and shape helpers."""


from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NoReturn, TypeVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    BoolAttr,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import AttrConstraint, BaseAttr
from xdsl.utils.exceptions import VerifyException

from optimus_ir.dialects.fx import (
    bool_literal,
    float_literal,
    int_literal,
    is_bool_literal,
)
from optimus_ir.foundation.types import (
    DYNAMIC,
    device_of,
    dims_compatible,
    format_shape,
    tensor_type,
)


Number = int | float | bool
NumberLike = Number | Attribute
Value = SSAValue | Operation
PropertyValue = Number | str | Attribute | None
"""A builder's value for a property: a Python value or the attribute itself."""
_Given = TypeVar("_Given")

_NUMBER = IntAttr | FloatAttr | BoolAttr
Format = tuple[tuple[str, str], ...]
"""Keyword fields of an op's assembly format: (name, kind), see `TorchOp`."""
_INTS = ArrayAttr[IntAttr]
_F32 = Float32Type()
_HALF_TYPES = (Float16Type(), BFloat16Type())  # may take f32 layer_norm parameters


# ---------------------------------------------------------------------------
# Attribute <-> Python value helpers
# ---------------------------------------------------------------------------


def ints(attr: ArrayAttr[IntAttr]) -> tuple[int, ...]:
    """The Python ints of a list property (`op.sections`, `op.dims`...)."""
    return tuple(item.data for item in attr.data)


def number_value(attr: Attribute) -> Number:
    """The Python value of a scalar property (IntAttr, FloatAttr or i1 BoolAttr)."""
    if isinstance(attr, IntAttr):
        return attr.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if is_bool_literal(attr):
        return bool(attr.value.data)  # type: ignore[attr-defined]
    raise TypeError(f"{attr} is not a scalar attribute")


def number_attr(value: NumberLike) -> Attribute:
    """The scalar property for a Python number (bools become `i1` BoolAttrs)."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool):
        return bool_literal(value)
    if isinstance(value, int):
        return int_literal(value)
    return float_literal(float(value))


def property_attr(constraint: AttrConstraint, value: PropertyValue) -> Attribute | None:
    """A builder's Python value for a property declared with `constraint`:
    a float, string or bool property takes its kind, any other a number
    (`number_attr`); an attribute is taken as it is, None leaves the
    property unset."""
    if value is None or isinstance(value, Attribute):
        return value
    if constraint == BaseAttr(FloatAttr):
        return float_literal(float(value))
    if constraint == BaseAttr(StringAttr):
        return StringAttr(str(value))
    if constraint == BaseAttr(BoolAttr):
        return bool_literal(bool(value))
    return number_attr(value)  # type: ignore[arg-type]


def bind_arguments(
    owner: str, names: Sequence[str], values: Sequence[_Given], named: Mapping[str, _Given]
) -> dict[str, _Given]:
    """A builder's arguments after its operands by name: `values`
    positionally in the order of `names`, then `named`; too many, unknown
    or repeated ones are a TypeError naming `owner` (the class), as for any
    Python call. Names not given are absent."""
    if len(values) > len(names):
        raise TypeError(
            f"{owner}() takes {len(names)} arguments after its operands "
            f"({', '.join(names) or 'none'}), got {len(values)}"
        )
    given = dict(zip(names, values))
    for name, value in named.items():
        if name not in names:
            raise TypeError(f"{owner}() got an unexpected keyword argument '{name}'")
        if name in given:
            raise TypeError(f"{owner}() got multiple values for argument '{name}'")
        given[name] = value
    return given


def ints_attr(values: Iterable[int] | ArrayAttr[IntAttr]) -> ArrayAttr[IntAttr]:
    """The list property for Python ints."""
    if isinstance(values, ArrayAttr):
        return values
    return ArrayAttr([int_literal(int(v)) for v in values])


def flag(attr: Attribute) -> bool:
    """The Python value of a bool property."""
    return bool(attr.value.data)  # type: ignore[attr-defined]


def _int_attr(value: int | IntAttr) -> IntAttr:
    return value if isinstance(value, IntAttr) else int_literal(int(value))


def _str_attr(value: str | StringAttr) -> StringAttr:
    return value if isinstance(value, StringAttr) else StringAttr(value)


def _scalar_kind(attr: Attribute) -> str:
    """'bool', 'int' or 'float': the Python type a scalar property stands for."""
    if isinstance(attr, IntAttr):
        return "int"
    if isinstance(attr, FloatAttr):
        return "float"
    return "bool"


_SCALAR_SAMPLES: dict[str, Number] = {"bool": True, "int": 1, "float": 1.0}

# ---------------------------------------------------------------------------
# Verification helpers
# ---------------------------------------------------------------------------


class _Check:
    """Raises VerifyExceptions whose message names the op (`'torch.cat' ...`)."""

    __slots__ = ("op",)

    def __init__(self, op: str) -> None:
        self.op = op

    def fail(self, message: str) -> NoReturn:
        raise VerifyException(f"'{self.op}' {message}")

    def tensor(self, ty: Attribute, what: str) -> TensorType:
        if not isinstance(ty, TensorType):
            self.fail(f"{what} must be a tensor, got {ty}")
        return ty

    def rank(self, shape: Sequence[int], what: str, expected: int) -> None:
        if len(shape) != expected:
            self.fail(f"{what} has rank {len(shape)}, expected {expected}")

    def min_rank(self, shape: Sequence[int], what: str, minimum: int) -> None:
        if len(shape) < minimum:
            self.fail(f"{what} has rank {len(shape)}, expected at least {minimum}")

    def dim(self, value: int, rank: int, what: str = "dim", *, inclusive: bool = False) -> int:
        """A canonical dim: 0 <= value < rank (<= rank when `inclusive`)."""
        upper = rank + 1 if inclusive else rank
        if not 0 <= value < upper:
            self.fail(
                f"{what} {value} is out of range for rank {rank} "
                f"(expected 0 <= {what} {'<=' if inclusive else '<'} {rank})"
            )
        return value

    def unique_dims(self, dims: Sequence[int], rank: int, what: str = "dims") -> None:
        for d in dims:
            self.dim(d, rank, f"{what} entry")
        if len(set(dims)) != len(dims):
            self.fail(f"{what} {list(dims)} has a repeated dim")

    def size(self, actual: int, expected: int, what: str) -> None:
        if not dims_compatible(actual, expected):
            self.fail(f"{what} has size {_fmt_dim(actual)}, expected {_fmt_dim(expected)}")

    def same_element(self, ty: TensorType, what: str, ref: TensorType, ref_what: str) -> None:
        if ty.element_type != ref.element_type:
            self.fail(
                f"{what} has element type {ty.element_type} but {ref_what} has "
                f"{ref.element_type}"
            )

    def device(self, labelled: Iterable[tuple[str, TensorType]]) -> str | None:
        """The common device of the operands (None when all are unknown)."""
        found: str | None = None
        found_what = ""
        for what, ty in labelled:
            device = device_of(ty)
            if device is None:
                continue
            if found is None:
                found, found_what = device, what
            elif device != found:
                self.fail(f'{what} is on device "{device}" but {found_what} is on "{found}"')
        return found

    def number(self, attr: Attribute, what: str) -> None:
        if not isinstance(attr, IntAttr | FloatAttr) and not is_bool_literal(attr):
            self.fail(f"{what} must be a number, got {attr}")

    def choice(self, attr: StringAttr, what: str, allowed: Sequence[str]) -> None:
        if attr.data not in allowed:
            options = " | ".join(f'"{a}"' for a in allowed)
            self.fail(f'{what} must be one of {options}, got "{attr.data}"')


def _fmt_dim(d: int) -> str:
    return "?" if d == DYNAMIC else str(d)


def _operand(index: int, name: str | None = None) -> str:
    return f"operand #{index}" if name is None else f"operand #{index} ({name})"


def _sum_dims(sizes: Iterable[int]) -> int:
    total = 0
    for s in sizes:
        if s == DYNAMIC:
            return DYNAMIC
        total += s
    return total


def _prod_dims(sizes: Iterable[int]) -> int:
    total = 1
    for s in sizes:
        if s == DYNAMIC:
            return DYNAMIC
        total *= s
    return total


def _refine(a: int, b: int) -> int:
    """The more static of two compatible sizes."""
    return b if a == DYNAMIC else a


def _shape(ty: TensorType) -> tuple[int, ...]:
    return ty.get_shape()


def _make(shape: Iterable[int], element: Attribute, device: str | None) -> TensorType:
    return tensor_type(tuple(shape), element, device)


def broadcast_shapes(
    a: Sequence[int], b: Sequence[int], check: _Check | None = None
) -> tuple[int, ...]:
    """torch broadcasting of two shapes, `?`-aware (raises VerifyException)."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x == DYNAMIC:
            out.append(y)
        elif y == DYNAMIC:
            out.append(x)
        else:
            (check or _Check("broadcast")).fail(
                f"operands have shapes {format_shape(a)} and {format_shape(b)} that "
                f"do not broadcast (dim {i}: {x} vs {y})"
            )
    return tuple(out)


def _check_broadcastable_to(
    check: _Check, shape: Sequence[int], target: Sequence[int], what: str
) -> None:
    padded = (1,) * (len(target) - len(shape)) + tuple(shape)
    if len(shape) > len(target) or not all(
        s == 1 or dims_compatible(s, t) for s, t in zip(padded, target)
    ):
        check.fail(
            f"{what} of shape {format_shape(shape)} does not broadcast to "
            f"{format_shape(target)}"
        )


def _check_results(op: Operation, expected: Sequence[TensorType]) -> None:
    check = _Check(op.name)
    results = op.results
    if len(results) != len(expected):
        check.fail(f"has {len(results)} results, expected {len(expected)}")
    for index, (result, want) in enumerate(zip(results, expected)):
        have = result.type
        if have == want:
            continue
        what = f"result #{index}"
        have = check.tensor(have, what)
        have_shape, want_shape = _shape(have), _shape(want)
        if len(have_shape) != len(want_shape):
            check.fail(f"{what} has rank {len(have_shape)}, expected {len(want_shape)}")
        if not all(dims_compatible(x, y) for x, y in zip(have_shape, want_shape)):
            check.fail(
                f"{what} has shape {format_shape(have_shape)}, expected "
                f"{format_shape(want_shape)}"
            )
        if have.element_type != want.element_type:
            check.fail(
                f"{what} has element type {have.element_type}, expected {want.element_type}"
            )
        have_device, want_device = device_of(have), device_of(want)
        if have_device is not None and want_device is not None and have_device != want_device:
            check.fail(f'{what} is on device "{have_device}", expected "{want_device}"')


