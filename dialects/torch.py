"""The `torch` operator dialect: typed torch-level ops with canonical attributes.

This module implements the contract in `docs/operator-dialect.md`. `raise-fx`
produces these ops from `fx` ops, the split/cat and batch-fusion passes match on
them, and `lower-to-fx` turns them back into `fx.call_function` ops.

Types
    Operands and results are builtin `tensor<...>` types whose encoding is the
    device (see `optimus_ir.types`). Scalars are properties: `IntAttr`,
    `FloatAttr(f64)` or a `BoolAttr` (`i1`). Lists of ints are
    `ArrayAttr[IntAttr]`, dims are `IntAttr` and are canonical (non-negative).

Assembly format
    Every op prints as its name, its positional operands, then keyword fields
    (optional operands and properties, in a fixed order), the types of all
    operands and `->` the result types::

        %a, %b = torch.split %x sections [4, 8] dim 1
            : tensor<2x12xf32> -> tensor<2x4xf32>, tensor<2x8xf32>
        %y = torch.layer_norm %x normalized_shape [16] weight %w bias %b eps 1.0e-06
            : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>

    (each op on one line; wrapped here for width)
        %z = torch.sub %x scalar 1 reverse : tensor<4xf32> -> tensor<4xf32>

    A property equal to its default (alpha 1, step 1, approximate "none", ...)
    is left out; a bool property prints as its bare name when true.

Builders
    Every op has a Python constructor taking SSA values and plain Python
    values (ints, floats, bools, lists); `result_type=` / `result_types=` may
    be given explicitly, otherwise it is inferred by the same `infer_*`
    function the verifier uses (which raises `VerifyException` on
    inconsistent operands)::

        SplitOp(x, sections=[4, 4], dim=1)                     # result types inferred
        SplitOp(x, [4, 4], 1, result_types=[t0, t1])           # explicit
        AddOp(x, y); AddOp(x, 2.0); SubOp(x, 1, reverse=True)  # tensor or scalar rhs

Type inference helpers (module level, all pure functions of types and values)
    `infer_linear_type`, `infer_mm_type`, `infer_addmm_type`, `infer_bmm_type`,
    `infer_baddbmm_type`, `infer_matmul_type`, `infer_layer_norm_type`,
    `infer_split_types`, `infer_unbind_types`, `infer_cat_type`,
    `infer_stack_type`, `infer_squeeze_type`, `infer_unsqueeze_type`,
    `infer_reshape_type`, `infer_flatten_type`, `infer_unflatten_type`,
    `infer_permute_type`, `infer_transpose_type`, `infer_movedim_type`,
    `infer_slice_type`, `infer_select_type`, `infer_unary_type`,
    `infer_binary_type`, `infer_reduction_type`, and `broadcast_shapes`.

Verification
    Each op checks ranks, shapes (a `?` is compatible with anything), dtypes
    (binary ops, cat/stack, reductions and int->float unary ops follow torch's
    type promotion, computed once per dtype combination with tiny tensors and
    cached) and devices (an unknown device matches any; a 0-d CPU tensor may
    meet a tensor on another device in a binary op, as in torch).

Effects
    Every op is `Pure` except `torch.dropout`, whose effects depend on `train`
    (see `is_pure`).

Traits (`optimus_ir.traits`)
    The plumbing ops are `ViewLike` (with how the result relates to the
    input), the pointwise ops `Elementwise` (with whether their values are
    exact under a layout change), the linear-algebra, layer_norm and
    reduction ops `ContiguousResult`; split, unbind, cat, stack and the view
    ops carry their canonicalization patterns (`canonicalize`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, NoReturn

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    BoolAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntAttr,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptionalDef,
    VariadicDef,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    ConditionallySpeculatable,
    EffectInstance,
    MemoryEffect,
    MemoryEffectKind,
    Pure,
    get_effects,
)
from xdsl.utils.exceptions import VerifyException

from optimus_ir.dialects.fx import (
    FALSE,
    _OperandCollector,
    bool_literal,
    float_literal,
    int_literal,
    is_bool_literal,
    parse_literal,
    print_literal,
)
from optimus_ir.traits import (
    ContiguousResult,
    Elementwise,
    Identity,
    LazyCanonicalizationPatterns,
    Permutation,
    Piece,
    Reshape,
    UnitDims,
    ViewLike,
    ViewRelation,
)
from optimus_ir.types import (
    DYNAMIC,
    UnsupportedDTypeError,
    device_of,
    dims_compatible,
    dtype_of,
    element_type_of,
    format_shape,
    is_floating,
    tensor_type,
)

Number = int | float | bool
NumberLike = Number | Attribute
Value = SSAValue | Operation

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


def _check_results(op: TorchOp, expected: Sequence[TensorType]) -> None:
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


# ---------------------------------------------------------------------------
# dtype rules computed with torch (cached: a handful of combinations per model)
# ---------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _sample(element: Attribute, zero_dim: bool) -> Any:
    import torch

    return torch.ones(() if zero_dim else (1,), dtype=dtype_of(element))


def _torch_error(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@lru_cache(maxsize=None)
def _promote(a: Attribute, b: Attribute) -> Attribute:
    """torch.promote_types on element types (cat/stack)."""
    if a == b:
        return a
    import torch

    return element_type_of(torch.promote_types(dtype_of(a), dtype_of(b)))


def _unary_probe(name: str) -> Callable[..., Any] | None:
    import torch
    import torch.nn.functional as F

    return {
        "torch.tanh": torch.tanh,
        "torch.sigmoid": torch.sigmoid,
        "torch.relu": torch.relu,
        "torch.silu": F.silu,
        "torch.exp": torch.exp,
        "torch.log": torch.log,
        "torch.neg": torch.neg,
        "torch.abs": torch.abs,
        "torch.gelu": F.gelu,
        "torch.clamp": torch.clamp,
    }.get(name)


@lru_cache(maxsize=None)
def _unary_element(
    name: str, element: Attribute, bound_kinds: tuple[str | None, ...]
) -> Attribute | str:
    """The result element type of a unary op, or an error message."""
    if is_floating(element):
        return element
    probe = _unary_probe(name)
    if probe is None:
        return element
    try:
        bounds = [None if k is None else _SCALAR_SAMPLES[k] for k in bound_kinds]
        out = probe(_sample(element, False), *bounds)
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        return f"does not support element type {element}: {_torch_error(error)}"


@lru_cache(maxsize=None)
def _binary_element(
    name: str,
    lhs: Attribute,
    lhs_0d: bool,
    rhs: Attribute | str,
    rhs_0d: bool,
    alpha_kind: str | None,
    rounding_mode: str,
) -> Attribute | str:
    """The promoted element type of a binary op, or an error message.

    `rhs` is an element type (tensor operand) or a scalar kind ('int'...)."""
    import torch

    a = _sample(lhs, lhs_0d)
    b = _sample(rhs, rhs_0d) if isinstance(rhs, Attribute) else _SCALAR_SAMPLES[rhs]
    kwargs: dict[str, Any] = {}
    if alpha_kind is not None:
        kwargs["alpha"] = _SCALAR_SAMPLES[alpha_kind]
    try:
        if name == "torch.add":
            out = torch.add(a, b, **kwargs)
        elif name == "torch.sub":
            out = torch.sub(a, b, **kwargs)
        elif name == "torch.mul":
            out = torch.mul(a, b)
        else:
            mode = None if rounding_mode == "none" else rounding_mode
            out = torch.div(a, b, rounding_mode=mode)
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        rhs_text = rhs if isinstance(rhs, str) else str(rhs)
        return (
            f"does not support operands of element types {lhs} and {rhs_text}: "
            f"{_torch_error(error)}"
        )


@lru_cache(maxsize=None)
def _reduction_element(name: str, element: Attribute, dtype: Attribute | None) -> Attribute | str:
    import torch

    fn = torch.sum if name == "torch.sum" else torch.mean
    try:
        out = fn(_sample(element, False), dim=0, dtype=None if dtype is None else dtype_of(dtype))
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        what = f"element type {element}" + ("" if dtype is None else f" with dtype {dtype}")
        return f"does not support {what}: {_torch_error(error)}"


def _element_or_fail(check: _Check, result: Attribute | str) -> Attribute:
    if isinstance(result, str):
        check.fail(result)
    return result


def _known_element(check: _Check, element: Attribute, what: str) -> None:
    try:
        dtype_of(element)
    except UnsupportedDTypeError:
        check.fail(f"{what} has element type {element}, which has no torch dtype")


# ---------------------------------------------------------------------------
# Type inference (shared by the builders and the verifiers)
# ---------------------------------------------------------------------------


def _same_elements(check: _Check, labelled: Sequence[tuple[str, TensorType]]) -> Attribute:
    ref_what, ref = labelled[0]
    for what, ty in labelled[1:]:
        check.same_element(ty, what, ref, ref_what)
    return ref.element_type


def _check_scale_kinds(check: _Check, element: Attribute, **scales: Attribute) -> None:
    """Integral inputs reject float beta/alpha, as torch does."""
    for name, attr in scales.items():
        check.number(attr, name)
        if isinstance(attr, FloatAttr) and not is_floating(element):
            check.fail(f"{name} must be an integer for integral inputs of type {element}")


def infer_linear_type(
    input: TensorType, weight: TensorType, bias: TensorType | None = None
) -> TensorType:
    """`linear(input [*, in], weight [out, in], bias [out]?) -> [*, out]`."""
    check = _Check("torch.linear")
    labelled = [(_operand(0, "input"), input), (_operand(1, "weight"), weight)]
    shape, w = _shape(input), _shape(weight)
    check.min_rank(shape, labelled[0][0], 1)
    check.rank(w, labelled[1][0], 2)
    if not dims_compatible(shape[-1], w[1]):
        check.fail(
            f"operand #0 (input) has {_fmt_dim(shape[-1])} features but operand #1 "
            f"(weight) has shape {format_shape(w)} (expected {_fmt_dim(w[1])} features)"
        )
    if bias is not None:
        labelled.append((_operand(2, "bias"), bias))
        b = _shape(bias)
        if len(b) > 1:
            check.fail(f"operand #2 (bias) has rank {len(b)}, expected 1")
        if b:
            check.size(b[0], w[0], "operand #2 (bias)")
    element = _same_elements(check, labelled)
    return _make((*shape[:-1], w[0]), element, check.device(labelled))


def _mm_shape(
    check: _Check, a: Sequence[int], b: Sequence[int], names: tuple[str, str]
) -> tuple[int, int]:
    check.rank(a, names[0], 2)
    check.rank(b, names[1], 2)
    if not dims_compatible(a[1], b[0]):
        check.fail(
            f"{names[0]} of shape {format_shape(a)} and {names[1]} of shape "
            f"{format_shape(b)} have mismatched inner dims ({_fmt_dim(a[1])} vs {_fmt_dim(b[0])})"
        )
    return a[0], b[1]


def _bmm_shape(
    check: _Check, a: Sequence[int], b: Sequence[int], names: tuple[str, str]
) -> tuple[int, int, int]:
    check.rank(a, names[0], 3)
    check.rank(b, names[1], 3)
    if not dims_compatible(a[0], b[0]):
        check.fail(
            f"{names[0]} and {names[1]} have different batch sizes "
            f"({_fmt_dim(a[0])} vs {_fmt_dim(b[0])})"
        )
    if not dims_compatible(a[2], b[1]):
        check.fail(
            f"{names[0]} of shape {format_shape(a)} and {names[1]} of shape "
            f"{format_shape(b)} have mismatched inner dims ({_fmt_dim(a[2])} vs {_fmt_dim(b[1])})"
        )
    return _refine(a[0], b[0]), a[1], b[2]


def infer_mm_type(lhs: TensorType, rhs: TensorType) -> TensorType:
    """`mm([n, k], [k, m]) -> [n, m]`."""
    check = _Check("torch.mm")
    labelled = [(_operand(0, "lhs"), lhs), (_operand(1, "rhs"), rhs)]
    shape = _mm_shape(check, _shape(lhs), _shape(rhs), (labelled[0][0], labelled[1][0]))
    return _make(shape, _same_elements(check, labelled), check.device(labelled))


def infer_addmm_type(
    input: TensorType,
    mat1: TensorType,
    mat2: TensorType,
    beta: NumberLike = 1,
    alpha: NumberLike = 1,
) -> TensorType:
    """`addmm(input, mat1 [n, k], mat2 [k, m]) -> [n, m]`; input broadcasts to [n, m]."""
    check = _Check("torch.addmm")
    labelled = [
        (_operand(0, "input"), input),
        (_operand(1, "mat1"), mat1),
        (_operand(2, "mat2"), mat2),
    ]
    shape = _mm_shape(check, _shape(mat1), _shape(mat2), (labelled[1][0], labelled[2][0]))
    _check_broadcastable_to(check, _shape(input), shape, labelled[0][0])
    element = _same_elements(check, labelled)
    _check_scale_kinds(check, element, beta=number_attr(beta), alpha=number_attr(alpha))
    return _make(shape, element, check.device(labelled))


def infer_bmm_type(lhs: TensorType, rhs: TensorType) -> TensorType:
    """`bmm([b, n, k], [b, k, m]) -> [b, n, m]`."""
    check = _Check("torch.bmm")
    labelled = [(_operand(0, "lhs"), lhs), (_operand(1, "rhs"), rhs)]
    shape = _bmm_shape(check, _shape(lhs), _shape(rhs), (labelled[0][0], labelled[1][0]))
    return _make(shape, _same_elements(check, labelled), check.device(labelled))


def infer_baddbmm_type(
    input: TensorType,
    batch1: TensorType,
    batch2: TensorType,
    beta: NumberLike = 1,
    alpha: NumberLike = 1,
) -> TensorType:
    """`baddbmm(input, batch1 [b, n, k], batch2 [b, k, m]) -> [b, n, m]`."""
    check = _Check("torch.baddbmm")
    labelled = [
        (_operand(0, "input"), input),
        (_operand(1, "batch1"), batch1),
        (_operand(2, "batch2"), batch2),
    ]
    shape = _bmm_shape(check, _shape(batch1), _shape(batch2), (labelled[1][0], labelled[2][0]))
    _check_broadcastable_to(check, _shape(input), shape, labelled[0][0])
    element = _same_elements(check, labelled)
    _check_scale_kinds(check, element, beta=number_attr(beta), alpha=number_attr(alpha))
    return _make(shape, element, check.device(labelled))


def infer_matmul_type(lhs: TensorType, rhs: TensorType) -> TensorType:
    """`matmul` with torch's rules: 1-D operands are promoted and squeezed back,
    batch dims broadcast."""
    check = _Check("torch.matmul")
    labelled = [(_operand(0, "lhs"), lhs), (_operand(1, "rhs"), rhs)]
    a, b = _shape(lhs), _shape(rhs)
    check.min_rank(a, labelled[0][0], 1)
    check.min_rank(b, labelled[1][0], 1)
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if not dims_compatible(a2[-1], b2[-2]):
        check.fail(
            f"operand #0 (lhs) of shape {format_shape(a)} and operand #1 (rhs) of shape "
            f"{format_shape(b)} have mismatched inner dims "
            f"({_fmt_dim(a2[-1])} vs {_fmt_dim(b2[-2])})"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2], check)
    rows = a2[-2:-1] if len(a) > 1 else ()
    cols = b2[-1:] if len(b) > 1 else ()
    shape = (*batch, *rows, *cols)
    return _make(shape, _same_elements(check, labelled), check.device(labelled))


def infer_layer_norm_type(
    input: TensorType,
    normalized_shape: Sequence[int],
    weight: TensorType | None = None,
    bias: TensorType | None = None,
) -> TensorType:
    """`layer_norm(input [*, *normalized_shape]) -> same type`; weight and bias
    have shape `normalized_shape`."""
    check = _Check("torch.layer_norm")
    shape = _shape(input)
    normalized = tuple(normalized_shape)
    if not normalized:
        check.fail("normalized_shape must not be empty")
    if any(s < 0 for s in normalized):
        check.fail(f"normalized_shape {list(normalized)} has a negative size")
    check.min_rank(shape, _operand(0, "input"), len(normalized))
    tail = shape[len(shape) - len(normalized) :]
    if not all(dims_compatible(x, y) for x, y in zip(tail, normalized)):
        check.fail(
            f"operand #0 (input) of shape {format_shape(shape)} does not end with "
            f"normalized_shape {list(normalized)}"
        )
    labelled = [(_operand(0, "input"), input)]
    for name, param in (("weight", weight), ("bias", bias)):
        if param is None:
            continue
        what = _operand(len(labelled), name)
        labelled.append((what, param))
        if len(_shape(param)) != len(normalized) or not all(
            dims_compatible(x, y) for x, y in zip(_shape(param), normalized)
        ):
            check.fail(
                f"{what} has shape {format_shape(_shape(param))}, expected "
                f"{format_shape(normalized)} (normalized_shape)"
            )
        mixed = param.element_type == _F32 and input.element_type in _HALF_TYPES
        if param.element_type != input.element_type and not mixed:
            check.same_element(param, what, input, "operand #0 (input)")
    return _make(shape, input.element_type, check.device(labelled))


def infer_split_types(input: TensorType, sections: Sequence[int], dim: int) -> list[TensorType]:
    """One piece type per section: the input type with `dim` resized.

    `sections` are explicit sizes (`split(x, 4)` on a dim of 10 is [4, 4, 2])."""
    check = _Check("torch.split")
    shape = _shape(input)
    check.dim(dim, len(shape))
    if not sections:
        check.fail("sections must not be empty")
    if any(s < 0 for s in sections):
        check.fail(f"sections {list(sections)} has a negative size")
    total = sum(sections)
    if not dims_compatible(total, shape[dim]):
        check.fail(
            f"sections {list(sections)} sum to {total} but dim {dim} of the input "
            f"has size {shape[dim]}"
        )
    device = device_of(input)
    return [
        _make((*shape[:dim], s, *shape[dim + 1 :]), input.element_type, device) for s in sections
    ]


def split_sections(size: int, split_size: int) -> list[int]:
    """The explicit sections of `split(x, split_size)` on a dim of `size`."""
    if split_size <= 0:
        raise ValueError("split_size must be positive")
    sections = [split_size] * (size // split_size)
    if size % split_size:
        sections.append(size % split_size)
    return sections or [0]


def infer_unbind_types(input: TensorType, dim: int, count: int | None = None) -> list[TensorType]:
    """One type per index of `dim` (the input type without `dim`). A dynamic
    `dim` needs `count`, the number of results."""
    check = _Check("torch.unbind")
    shape = _shape(input)
    check.min_rank(shape, _operand(0, "input"), 1)
    check.dim(dim, len(shape))
    size = shape[dim]
    if size == DYNAMIC:
        if count is None:
            check.fail(f"cannot infer the number of results: dim {dim} is dynamic")
        size = count
    piece = _make((*shape[:dim], *shape[dim + 1 :]), input.element_type, device_of(input))
    return [piece] * size


def _labelled_inputs(inputs: Sequence[TensorType]) -> list[tuple[str, TensorType]]:
    return [(_operand(i), ty) for i, ty in enumerate(inputs)]


def _promoted(check: _Check, labelled: Sequence[tuple[str, TensorType]]) -> Attribute:
    element = labelled[0][1].element_type
    for what, ty in labelled:
        _known_element(check, ty.element_type, what)
        element = _promote(element, ty.element_type)
    return element


def infer_cat_type(inputs: Sequence[TensorType], dim: int) -> TensorType:
    """`cat` along `dim`: other dims agree, dtypes promote. Legacy empty 1-D
    tensors (shape [0]) are skipped, as in torch."""
    check = _Check("torch.cat")
    if not inputs:
        check.fail("needs at least one operand")
    labelled = _labelled_inputs(inputs)
    ranked = [(w, t) for w, t in labelled if _shape(t) != (0,)] or labelled[:1]
    ref_what, ref = ranked[0]
    shape = list(_shape(ref))
    check.dim(dim, len(shape))
    for what, ty in ranked[1:]:
        other = _shape(ty)
        check.rank(other, what, len(shape))
        for d, (x, y) in enumerate(zip(other, shape)):
            if d != dim:
                check.size(x, y, f"{what} dim {d}")
                shape[d] = _refine(y, x)
    shape[dim] = _sum_dims(_shape(t)[dim] for _, t in ranked)
    return _make(shape, _promoted(check, labelled), check.device(labelled))


def infer_stack_type(inputs: Sequence[TensorType], dim: int) -> TensorType:
    """`stack` at new dim `dim` (0 <= dim <= rank): shapes agree, dtypes promote."""
    check = _Check("torch.stack")
    if not inputs:
        check.fail("needs at least one operand")
    labelled = _labelled_inputs(inputs)
    shape = list(_shape(inputs[0]))
    check.dim(dim, len(shape), inclusive=True)
    for what, ty in labelled[1:]:
        other = _shape(ty)
        if len(other) != len(shape) or not all(dims_compatible(x, y) for x, y in zip(other, shape)):
            check.fail(
                f"{what} has shape {format_shape(other)}, expected {format_shape(shape)} "
                f"(stacked tensors must have equal shapes)"
            )
        shape = [_refine(y, x) for x, y in zip(other, shape)]
    shape.insert(dim, len(inputs))
    return _make(shape, _promoted(check, labelled), check.device(labelled))


def infer_squeeze_type(input: TensorType, dims: Sequence[int]) -> TensorType:
    """Remove `dims` (each of size 1, or dynamic)."""
    check = _Check("torch.squeeze")
    shape = _shape(input)
    check.unique_dims(dims, len(shape))
    for d in dims:
        if shape[d] not in (1, DYNAMIC):
            check.fail(f"cannot squeeze dim {d} of size {shape[d]} (expected size 1)")
    removed = set(dims)
    return _make(
        (s for d, s in enumerate(shape) if d not in removed), input.element_type, device_of(input)
    )


def infer_unsqueeze_type(input: TensorType, dim: int) -> TensorType:
    """Insert a size-1 dim at `dim` (0 <= dim <= rank)."""
    check = _Check("torch.unsqueeze")
    shape = _shape(input)
    check.dim(dim, len(shape), inclusive=True)
    return _make((*shape[:dim], 1, *shape[dim:]), input.element_type, device_of(input))


def _resolve_sizes(
    check: _Check, sizes: Sequence[int], numel: int, what: str, target: str
) -> list[int]:
    """Sizes with their one -1 resolved against `numel` (DYNAMIC if unknown)."""
    sizes = list(sizes)
    if sizes.count(-1) > 1:
        check.fail(f"{what} {sizes} has more than one -1")
    if any(s < -1 for s in sizes):
        check.fail(f"{what} {sizes} has a negative size")
    known = _prod_dims(s for s in sizes if s != -1)
    if -1 in sizes:
        if numel == DYNAMIC:
            inferred = DYNAMIC
        elif known == 0 or numel % known:
            check.fail(f"cannot reshape {target} of {numel} elements into {what} {sizes}")
        else:
            inferred = numel // known
        sizes[sizes.index(-1)] = inferred
    elif numel != DYNAMIC and known != numel:
        check.fail(f"cannot reshape {target} of {numel} elements into {what} {sizes}")
    return sizes


def infer_reshape_type(
    input: TensorType, shape: Sequence[int], op_name: str = "torch.reshape"
) -> TensorType:
    """`reshape`/`view` to `shape` (may hold one -1)."""
    check = _Check(op_name)
    sizes = _resolve_sizes(check, shape, _prod_dims(_shape(input)), "shape", "a tensor")
    return _make(sizes, input.element_type, device_of(input))


def infer_flatten_type(input: TensorType, start_dim: int, end_dim: int) -> TensorType:
    """Merge dims `start_dim..end_dim` (inclusive); a 0-d input becomes [1]."""
    check = _Check("torch.flatten")
    shape = _shape(input)
    if not shape:
        if start_dim != 0 or end_dim != 0:
            check.fail("start_dim and end_dim must be 0 for a 0-d input")
        return _make((1,), input.element_type, device_of(input))
    check.dim(start_dim, len(shape), "start_dim")
    check.dim(end_dim, len(shape), "end_dim")
    if start_dim > end_dim:
        check.fail(f"start_dim {start_dim} is after end_dim {end_dim}")
    merged = _prod_dims(shape[start_dim : end_dim + 1])
    return _make(
        (*shape[:start_dim], merged, *shape[end_dim + 1 :]), input.element_type, device_of(input)
    )


def infer_unflatten_type(input: TensorType, dim: int, sizes: Sequence[int]) -> TensorType:
    """Split dim `dim` into `sizes` (may hold one -1)."""
    check = _Check("torch.unflatten")
    shape = _shape(input)
    check.dim(dim, len(shape))
    if not sizes:
        check.fail("sizes must not be empty")
    resolved = _resolve_sizes(check, sizes, shape[dim], "sizes", f"dim {dim}")
    return _make((*shape[:dim], *resolved, *shape[dim + 1 :]), input.element_type, device_of(input))


def _check_permutation(check: _Check, dims: Sequence[int], rank: int) -> None:
    if len(dims) != rank:
        check.fail(f"dims {list(dims)} has {len(dims)} entries, expected {rank} (the rank)")
    if sorted(dims) != list(range(rank)):
        check.fail(f"dims {list(dims)} is not a permutation of 0..{rank - 1}")


def infer_permute_type(input: TensorType, dims: Sequence[int]) -> TensorType:
    """`result.shape[i] = input.shape[dims[i]]`; dims is a permutation."""
    check = _Check("torch.permute")
    shape = _shape(input)
    _check_permutation(check, dims, len(shape))
    return _make((shape[d] for d in dims), input.element_type, device_of(input))


def infer_transpose_type(input: TensorType, dim0: int, dim1: int) -> TensorType:
    """Swap dims `dim0` and `dim1`."""
    check = _Check("torch.transpose")
    shape = list(_shape(input))
    check.dim(dim0, len(shape), "dim0")
    check.dim(dim1, len(shape), "dim1")
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    return _make(shape, input.element_type, device_of(input))


def movedim_permutation(rank: int, source: Sequence[int], destination: Sequence[int]) -> list[int]:
    """The permute dims equivalent to `movedim(source, destination)` (canonical dims)."""
    order: list[int | None] = [None] * rank
    for s, d in zip(source, destination):
        order[d] = s
    rest_src = (i for i in range(rank) if i not in set(source))
    for d in range(rank):
        if order[d] is None:
            order[d] = next(rest_src)
    return order  # type: ignore[return-value]


def infer_movedim_type(
    input: TensorType, source: Sequence[int], destination: Sequence[int]
) -> TensorType:
    """Move dims `source[i]` to `destination[i]`, others keep their order."""
    check = _Check("torch.movedim")
    shape = _shape(input)
    if len(source) != len(destination):
        check.fail(
            f"source {list(source)} and destination {list(destination)} have different lengths"
        )
    check.unique_dims(source, len(shape), "source")
    check.unique_dims(destination, len(shape), "destination")
    order = movedim_permutation(len(shape), source, destination)
    return _make((shape[d] for d in order), input.element_type, device_of(input))


def infer_slice_type(
    input: TensorType, dim: int, start: int, end: int, step: int = 1
) -> TensorType:
    """`input[..., start:end:step, ...]` on `dim`; on a static dim the bounds must
    be canonical (0 <= start <= end <= size)."""
    check = _Check("torch.slice")
    shape = list(_shape(input))
    check.dim(dim, len(shape))
    if step < 1:
        check.fail(f"step {step} must be positive")
    size = shape[dim]
    if size == DYNAMIC:
        shape[dim] = DYNAMIC
    else:
        if not 0 <= start <= end <= size:
            check.fail(
                f"start {start} and end {end} are not canonical for dim {dim} of size "
                f"{size} (expected 0 <= start <= end <= {size})"
            )
        shape[dim] = (end - start + step - 1) // step
    return _make(shape, input.element_type, device_of(input))


def infer_unfold_type(input: TensorType, dim: int, size: int, step: int) -> TensorType:
    """`input.unfold(dim, size, step)`: the windows of `size` every `step`
    along `dim` (that dim becomes the window count), the window as a new last
    dim."""
    check = _Check("torch.unfold")
    shape = list(_shape(input))
    check.dim(dim, len(shape))
    if size < 1 or step < 1:
        check.fail(f"size {size} and step {step} must be positive")
    length = shape[dim]
    if length != DYNAMIC:
        if size > length:
            check.fail(f"window size {size} exceeds dim {dim} of size {length}")
        shape[dim] = (length - size) // step + 1
    return _make([*shape, size], input.element_type, device_of(input))


def infer_select_type(input: TensorType, dim: int, index: int) -> TensorType:
    """`input.select(dim, index)`: drops `dim`; 0 <= index < size when static."""
    check = _Check("torch.select")
    shape = _shape(input)
    check.min_rank(shape, _operand(0, "input"), 1)
    check.dim(dim, len(shape))
    size = shape[dim]
    if size != DYNAMIC and not 0 <= index < size:
        check.fail(f"index {index} is out of range for dim {dim} of size {size}")
    return _make((*shape[:dim], *shape[dim + 1 :]), input.element_type, device_of(input))


def infer_unary_type(
    op_name: str,
    input: TensorType,
    min: NumberLike | None = None,
    max: NumberLike | None = None,
) -> TensorType:
    """A unary pointwise op: same shape and device; the dtype is kept, except
    that integral inputs of tanh/sigmoid/exp/log/... become floating as in torch
    (`min`/`max` are clamp's bounds, which may promote too)."""
    check = _Check(op_name)
    _known_element(check, input.element_type, _operand(0, "input"))
    kinds = tuple(None if b is None else _scalar_kind(number_attr(b)) for b in (min, max))
    if op_name != "torch.clamp":
        kinds = ()
    element = _element_or_fail(check, _unary_element(op_name, input.element_type, kinds))
    return _make(_shape(input), element, device_of(input))


def infer_binary_type(
    op_name: str,
    lhs: TensorType,
    rhs: TensorType | NumberLike,
    alpha: NumberLike | None = None,
    rounding_mode: str = "none",
) -> TensorType:
    """A binary pointwise op: broadcast shape, torch's type promotion (a Python
    number `rhs` takes part as a scalar), common device (a 0-d CPU tensor may
    meet any device)."""
    check = _Check(op_name)
    lhs_what = _operand(0, "lhs")
    _known_element(check, lhs.element_type, lhs_what)
    lhs_shape = _shape(lhs)
    alpha_kind = None if alpha is None else _scalar_kind(number_attr(alpha))
    if isinstance(rhs, TensorType):
        rhs_what = _operand(1, "rhs")
        _known_element(check, rhs.element_type, rhs_what)
        rhs_shape = _shape(rhs)
        shape = broadcast_shapes(lhs_shape, rhs_shape, check)
        element = _binary_element(
            op_name,
            lhs.element_type,
            not lhs_shape,
            rhs.element_type,
            not rhs_shape,
            alpha_kind,
            rounding_mode,
        )
        device = _binary_device(check, (lhs_what, lhs), (rhs_what, rhs))
    else:
        scalar = number_attr(rhs)
        check.number(scalar, "scalar")
        shape = lhs_shape
        element = _binary_element(
            op_name,
            lhs.element_type,
            not lhs_shape,
            _scalar_kind(scalar),
            True,
            alpha_kind,
            rounding_mode,
        )
        device = device_of(lhs)
    return _make(shape, _element_or_fail(check, element), device)


def _binary_device(check: _Check, *labelled: tuple[str, TensorType]) -> str | None:
    """The common device; a 0-d CPU tensor is allowed beside any device."""
    devices = [device_of(ty) for _, ty in labelled]
    if len(set(d for d in devices if d is not None)) > 1:
        others = [
            (what, ty)
            for (what, ty), d in zip(labelled, devices)
            if not (_shape(ty) == () and d == "cpu")
        ]
        if others:
            return check.device(others)
    return check.device(labelled)


def infer_reduction_type(
    op_name: str,
    input: TensorType,
    dims: Sequence[int] = (),
    keepdim: bool = False,
    dtype: Attribute | None = None,
) -> TensorType:
    """`sum`/`mean` over `dims` (empty: all dims), optionally keeping them as 1;
    the result dtype follows torch (sum of ints is i64; `dtype` overrides)."""
    check = _Check(op_name)
    shape = _shape(input)
    check.unique_dims(dims, len(shape))
    _known_element(check, input.element_type, _operand(0, "input"))
    if dtype is not None:
        _known_element(check, dtype, "dtype")
    reduced = set(dims) if dims else set(range(len(shape)))
    if keepdim:
        out = [1 if d in reduced else s for d, s in enumerate(shape)]
    else:
        out = [s for d, s in enumerate(shape) if d not in reduced]
    element = _element_or_fail(check, _reduction_element(op_name, input.element_type, dtype))
    return _make(out, element, device_of(input))


# ---------------------------------------------------------------------------
# The shared op base: assembly format and verification
# ---------------------------------------------------------------------------


class TorchOp(IRDLOperation):
    """Base of the dialect's ops.

    Assembly: `name %positional, ... kw value ... {attrs} : operand types -> result types`.
    FORMAT lists the keyword fields in print order as (name, kind): "operand"
    (an optional operand), "value" (a literal property, left out when equal to
    its default), "flag" (a bool property, printed as its name when true),
    "type" (an element-type property). Operands not in FORMAT are positional.

    verify_ compares the results with `expected_types()`, which subclasses
    implement with the module's `infer_*` functions."""

    FORMAT: ClassVar[Format] = ()

    def __init__(
        self,
        *,
        operands: Sequence[Value | Sequence[Value] | None] = (),
        result_types: Sequence[Attribute | Sequence[Attribute]] = (),
        properties: Mapping[str, Attribute | None] | None = None,
        attributes: Mapping[str, Attribute | None] | None = None,
    ) -> None:
        """The IRDL builder (`IRDLOperation.__init__`) for what torch ops have:
        operand groups, result groups, properties. xDSL's generic builder
        costs more than the op itself (segment bookkeeping for every kind
        of construct); raise-fx builds one op per raised node."""
        op_def = type(self).get_irdl_definition()
        if op_def.regions or op_def.successors or any(
            not (isinstance(o, AttrSizedOperandSegments) and o.as_property) for o in op_def.options
        ):  # not a shape of op this builder knows
            IRDLOperation.__init__(
                self, operands=operands, result_types=result_types,
                properties=properties, attributes=attributes,
            )
            return
        flat_operands, operand_sizes = _flatten_groups(op_def.operands, operands, "operand")
        flat_results, _ = _flatten_groups(op_def.results, result_types, "result")
        props = {k: v for k, v in properties.items() if v is not None} if properties else {}
        if op_def.options:  # AttrSizedOperandSegments(as_property=True)
            props[AttrSizedOperandSegments.attribute_name] = _segment_sizes(tuple(operand_sizes))
        attrs = {k: v for k, v in attributes.items() if v is not None} if attributes else {}
        Operation.__init__(
            self,
            operands=[SSAValue.get(v) for v in flat_operands],
            result_types=flat_results,
            properties=props,
            attributes=attrs,
        )

    def expected_types(self) -> Sequence[TensorType]:
        """The result types the operands and properties imply (may hold `?`)."""
        raise NotImplementedError

    def verify_(self) -> None:
        self.verify_types()

    def verify_types(self) -> None:
        """The op's own check (results against `expected_types()`), without
        IRDL's generic structure check; for builders whose ops hold the IRDL
        structure by construction (`raise-fx`)."""
        _check_results(self, self.expected_types())

    # -- printing ----------------------------------------------------------

    def print(self, printer: Printer) -> None:
        keyword_names = {name for name, _ in self.FORMAT}
        op_def = self.get_irdl_definition()
        positional: list[SSAValue] = []
        for name, _ in op_def.operands:
            if name not in keyword_names:
                positional.extend(_as_values(getattr(self, name)))
        if positional:
            printer.print_string(" ")
            printer.print_list(positional, printer.print_operand)
        for name, kind in self.FORMAT:
            value = getattr(self, name)
            if kind == "operand":
                if value is not None:
                    printer.print_string(f" {name} ")
                    printer.print_operand(value)
            elif kind == "flag":
                if flag(value):
                    printer.print_string(f" {name}")
            elif value is not None and value != op_def.properties[name].default_value:
                printer.print_string(f" {name} ")
                if kind == "type":
                    printer.print_attribute(value)
                else:
                    print_literal(printer, value, ())
        if self.attributes:
            printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list((v.type for v in self.operands), printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_list((r.type for r in self.results), printer.print_attribute)

    # -- parsing -----------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> TorchOp:
        op_def = cls.get_irdl_definition()
        kinds = dict(cls.FORMAT)
        unresolved: list[UnresolvedOperand] = []
        first = parser.parse_optional_unresolved_operand()
        if first is not None:
            unresolved.append(first)
            while parser.parse_optional_punctuation(",") is not None:
                unresolved.append(parser.parse_unresolved_operand())
        keyword_operands: dict[str, UnresolvedOperand] = {}
        properties: dict[str, Attribute] = {}
        seen: set[str] = set()
        while (name := parser.parse_optional_keyword_in(kinds)) is not None:
            if name in seen:
                parser.raise_error(f"'{cls.name}' field '{name}' given twice")
            seen.add(name)
            kind = kinds[name]
            if kind == "operand":
                keyword_operands[name] = parser.parse_unresolved_operand()
            elif kind == "flag":
                properties[name] = bool_literal(True)
            elif kind == "type":
                properties[name] = parser.parse_type()
            else:
                collector = _OperandCollector()
                properties[name] = parse_literal(parser, collector)
                if collector.operands:
                    parser.raise_error(f"'{cls.name}' field '{name}' must be a literal")
        for name, kind in cls.FORMAT:
            if kind == "flag" and name not in properties:
                properties[name] = FALSE
        attributes = parser.parse_optional_attr_dict()

        groups = _group_operands(parser, cls, op_def.operands, unresolved, keyword_operands)
        flat = [u for group in groups for u in group]
        parser.parse_punctuation(":")
        operand_types = _parse_types(parser) if flat else []
        if len(operand_types) != len(flat):
            parser.raise_error(
                f"'{cls.name}' has {len(flat)} operands but {len(operand_types)} operand types"
            )
        parser.parse_punctuation("->")
        result_types = _parse_types(parser)
        values = iter(parser.resolve_operand(u, t) for u, t in zip(flat, operand_types))
        operands: list[SSAValue | list[SSAValue]] = []
        for (_, definition), group in zip(op_def.operands, groups):
            taken = [next(values) for _ in group]
            operands.append(taken if isinstance(definition, VariadicDef) else taken[0])
        result_groups: list[Attribute | list[Attribute]] = (
            [result_types] if isinstance(op_def.results[0][1], VariadicDef) else list(result_types)
        )
        op = cls.build(operands=operands, result_types=result_groups, properties=properties)
        op.attributes.update(attributes)
        return op


def _flatten_groups(defs, groups, what: str) -> tuple[list[Any], list[int]]:
    """The flat operands (results) of per-definition groups, and the group
    sizes; the checks of `irdl_build_arg_list`."""
    if len(groups) != len(defs):
        raise ValueError(f"Expected {len(defs)} {what}s, but got {len(groups)}")
    flat: list[Any] = []
    sizes: list[int] = []
    for (name, definition), group in zip(defs, groups):
        if group is None:
            if not isinstance(definition, OptionalDef):
                raise ValueError(f"passed None to a non-optional {what} '{name}'")
            sizes.append(0)
        elif isinstance(group, Sequence):
            if not isinstance(definition, VariadicDef) and len(group) != 1:
                raise ValueError(f"passed a sequence to the non-variadic {what} '{name}'")
            if isinstance(definition, OptionalDef) and len(group) > 1:
                raise ValueError(f"passed {len(group)} values to the optional {what} '{name}'")
            flat.extend(group)
            sizes.append(len(group))
        else:
            flat.append(group)
            sizes.append(1)
    return flat, sizes


@lru_cache(maxsize=256)
def _segment_sizes(sizes: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, sizes)


def _as_values(value: SSAValue | Sequence[SSAValue] | None) -> list[SSAValue]:
    if value is None:
        return []
    if isinstance(value, SSAValue):
        return [value]
    return list(value)


def _parse_types(parser: Parser) -> list[Attribute]:
    types = [parser.parse_type()]
    while parser.parse_optional_punctuation(",") is not None:
        types.append(parser.parse_type())
    return types


def _group_operands(
    parser: Parser,
    cls: type[TorchOp],
    defs: Sequence[tuple[str, Any]],
    positional: list[UnresolvedOperand],
    keyword: dict[str, UnresolvedOperand],
) -> list[list[UnresolvedOperand]]:
    """Distribute parsed operands over the operand definitions, in order: the
    one variadic/optional positional definition takes what the singles leave."""
    kinds = dict(cls.FORMAT)
    positional_defs = [(n, d) for n, d in defs if n not in kinds]
    singles = sum(1 for _, d in positional_defs if not isinstance(d, VariadicDef))
    spare = len(positional) - singles
    if spare < 0:
        parser.raise_error(
            f"'{cls.name}' expects at least {singles} operands, got {len(positional)}"
        )
    groups: list[list[UnresolvedOperand]] = []
    rest = iter(positional)
    for name, definition in defs:
        if name in kinds:
            groups.append([keyword[name]] if name in keyword else [])
        elif isinstance(definition, VariadicDef):
            if isinstance(definition, OptionalDef) and spare > 1:
                parser.raise_error(f"'{cls.name}' has too many operands")
            groups.append([next(rest) for _ in range(spare)])
            spare = 0
        else:
            groups.append([next(rest)])
    if spare:
        parser.raise_error(f"'{cls.name}' has too many operands")
    return groups


def _type(value: Value) -> Attribute:
    return SSAValue.get(value).type


def _tensor_of(op_name: str, value: Value, what: str = "operand") -> TensorType:
    """The type of a builder operand, which must be a tensor."""
    return _Check(op_name).tensor(_type(value), what)


def _opt_type(value: Value | None) -> Attribute | None:
    return None if value is None else _type(value)


def _tensor_types(op_name: str, **values: Value | None) -> dict[str, TensorType | None]:
    """Operand types for inference in builders (a clear error on non-tensors)."""
    check = _Check(op_name)
    return {
        name: None if v is None else check.tensor(_type(v), f"operand ({name})")
        for name, v in values.items()
    }


# ---------------------------------------------------------------------------
# Op traits (see optimus_ir.traits): view relations, elementwise exactness,
# canonicalization patterns
# ---------------------------------------------------------------------------


def _split_relation(op: Operation) -> ViewRelation:
    return Piece(op.properties["dim"].data)  # type: ignore[attr-defined]


def _unbind_relation(op: Operation) -> ViewRelation:
    return Piece(op.properties["dim"].data, keeps_dim=False)  # type: ignore[attr-defined]


def _slice_relation(op: Operation) -> ViewRelation:
    props = op.properties
    return Piece(props["dim"].data, props["step"].data)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Windows(ViewRelation):
    """Windows of `size` every `step` along `dim`, appended as the last dim."""

    dim: int
    step: int

    def strides(self, sizes, strides, result_sizes):  # type: ignore[override]
        if not 0 <= self.dim < len(strides):
            return None
        out = list(strides)
        out[self.dim] = strides[self.dim] * self.step
        return (*out, strides[self.dim])


def _unfold_relation(op: Operation) -> ViewRelation:
    props = op.properties
    return _Windows(props["dim"].data, props["step"].data)  # type: ignore[attr-defined]


def _select_relation(op: Operation) -> ViewRelation:
    return Piece(op.properties["dim"].data, keeps_dim=False)  # type: ignore[attr-defined]


def _squeeze_relation(op: Operation) -> ViewRelation:
    return UnitDims(removed=ints(op.properties["dims"]))  # type: ignore[arg-type]


def _unsqueeze_relation(op: Operation) -> ViewRelation:
    return UnitDims(inserted=(op.properties["dim"].data,))  # type: ignore[attr-defined]


_COPYING_RESHAPE = Reshape(may_copy=True)
_VIEW_RESHAPE = Reshape(may_copy=False)
_IDENTITY = Identity()


def _copying_reshape(op: Operation) -> ViewRelation:
    return _COPYING_RESHAPE


def _reshape(op: Operation) -> ViewRelation:
    return _VIEW_RESHAPE


def _identity_relation(op: Operation) -> ViewRelation:
    return _IDENTITY


def _permute_relation(op: Operation) -> ViewRelation:
    return Permutation(ints(op.properties["dims"]))  # type: ignore[arg-type]


def _transpose_relation(op: Operation) -> ViewRelation:
    rank = len(op.operands[0].type.get_shape())  # type: ignore[attr-defined]
    order = list(range(rank))
    a, b = op.properties["dim0"].data, op.properties["dim1"].data  # type: ignore[attr-defined]
    order[a], order[b] = order[b], order[a]
    return Permutation(tuple(order))


def _movedim_relation(op: Operation) -> ViewRelation:
    rank = len(op.operands[0].type.get_shape())  # type: ignore[attr-defined]
    source = ints(op.properties["source"])  # type: ignore[arg-type]
    destination = ints(op.properties["destination"])  # type: ignore[arg-type]
    return Permutation(tuple(movedim_permutation(rank, source, destination)))


def _unit_alpha(op: Operation) -> bool:
    """add/sub round exactly like a plain `+`/`-` only with `alpha == 1`: the
    vectorized CPU kernel computes `lhs + alpha * rhs` as one fused
    multiply-add, the strided (scalar) one in two roundings."""
    alpha = op.properties.get("alpha")
    return alpha is None or number_value(alpha) == 1


_EXACT_ELEMENTWISE = Elementwise(layout_exact=True)
_INEXACT_ELEMENTWISE = Elementwise(layout_exact=False)
_ADD_SUB_ELEMENTWISE = Elementwise(layout_exact=_unit_alpha)

_PATTERNS = "optimus_ir.passes.canonicalization_patterns.torch"
_SPLIT_CANONICALIZATION = LazyCanonicalizationPatterns(_PATTERNS, "SPLIT_PATTERNS")
_JOIN_CANONICALIZATION = LazyCanonicalizationPatterns(_PATTERNS, "JOIN_PATTERNS")
_VIEW_CHAIN_CANONICALIZATION = LazyCanonicalizationPatterns(_PATTERNS, "VIEW_CHAIN_PATTERNS")
_PLUMBING_CANONICALIZATION = LazyCanonicalizationPatterns(_PATTERNS, "PLUMBING_PATTERNS")


# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------


@irdl_op_definition
class LinearOp(TorchOp):
    """`torch.nn.functional.linear(input, weight, bias)`: `input @ weight.T + bias`."""

    name = "torch.linear"
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


@irdl_op_definition
class MmOp(TorchOp):
    """`torch.mm(lhs, rhs)`: a 2-D matrix product."""

    name = "torch.mm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())

    def __init__(self, lhs: Value, rhs: Value, *, result_type: Attribute | None = None) -> None:
        if result_type is None:
            result_type = infer_mm_type(_tensor_of(self.name, lhs), _tensor_of(self.name, rhs))
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_mm_type(self.lhs.type, self.rhs.type)]


@irdl_op_definition
class AddmmOp(TorchOp):
    """`torch.addmm(input, mat1, mat2, beta=, alpha=)`: `beta * input + alpha * mat1 @ mat2`."""

    name = "torch.addmm"
    input = operand_def(TensorType)
    mat1 = operand_def(TensorType)
    mat2 = operand_def(TensorType)
    beta = prop_def(_NUMBER, default_value=IntAttr(1))
    alpha = prop_def(_NUMBER, default_value=IntAttr(1))
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())
    FORMAT: ClassVar[Format] = (("beta", "value"), ("alpha", "value"))

    def __init__(
        self,
        input: Value,
        mat1: Value,
        mat2: Value,
        *,
        beta: NumberLike = 1,
        alpha: NumberLike = 1,
        result_type: Attribute | None = None,
    ) -> None:
        if result_type is None:
            types = [_tensor_of(self.name, v) for v in (input, mat1, mat2)]
            result_type = infer_addmm_type(*types, beta, alpha)
        super().__init__(
            operands=[input, mat1, mat2],
            result_types=[result_type],
            properties={"beta": number_attr(beta), "alpha": number_attr(alpha)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [
            infer_addmm_type(
                self.input.type, self.mat1.type, self.mat2.type, self.beta, self.alpha
            )
        ]


@irdl_op_definition
class BmmOp(TorchOp):
    """`torch.bmm(lhs, rhs)`: a batched 3-D matrix product."""

    name = "torch.bmm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())

    def __init__(self, lhs: Value, rhs: Value, *, result_type: Attribute | None = None) -> None:
        if result_type is None:
            result_type = infer_bmm_type(_tensor_of(self.name, lhs), _tensor_of(self.name, rhs))
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_bmm_type(self.lhs.type, self.rhs.type)]


@irdl_op_definition
class BaddbmmOp(TorchOp):
    """`torch.baddbmm(input, batch1, batch2, beta=, alpha=)`:
    `beta * input + alpha * bmm(batch1, batch2)`."""

    name = "torch.baddbmm"
    input = operand_def(TensorType)
    batch1 = operand_def(TensorType)
    batch2 = operand_def(TensorType)
    beta = prop_def(_NUMBER, default_value=IntAttr(1))
    alpha = prop_def(_NUMBER, default_value=IntAttr(1))
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())
    FORMAT: ClassVar[Format] = (("beta", "value"), ("alpha", "value"))

    def __init__(
        self,
        input: Value,
        batch1: Value,
        batch2: Value,
        *,
        beta: NumberLike = 1,
        alpha: NumberLike = 1,
        result_type: Attribute | None = None,
    ) -> None:
        if result_type is None:
            types = [_tensor_of(self.name, v) for v in (input, batch1, batch2)]
            result_type = infer_baddbmm_type(*types, beta, alpha)
        super().__init__(
            operands=[input, batch1, batch2],
            result_types=[result_type],
            properties={"beta": number_attr(beta), "alpha": number_attr(alpha)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [
            infer_baddbmm_type(
                self.input.type, self.batch1.type, self.batch2.type, self.beta, self.alpha
            )
        ]


@irdl_op_definition
class MatmulOp(TorchOp):
    """`torch.matmul(lhs, rhs)` with torch's 1-D/batched broadcasting rules."""

    name = "torch.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())

    def __init__(self, lhs: Value, rhs: Value, *, result_type: Attribute | None = None) -> None:
        if result_type is None:
            result_type = infer_matmul_type(_tensor_of(self.name, lhs), _tensor_of(self.name, rhs))
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_matmul_type(self.lhs.type, self.rhs.type)]


# ---------------------------------------------------------------------------
# Normalization
# ---------------------------------------------------------------------------


@irdl_op_definition
class LayerNormOp(TorchOp):
    """`torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)`."""

    name = "torch.layer_norm"
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
        eps: float = 1e-5,
        result_type: Attribute | None = None,
    ) -> None:
        shape_attr = ints_attr(normalized_shape)
        if result_type is None:
            t = _tensor_types(self.name, input=input, weight=weight, bias=bias)
            result_type = infer_layer_norm_type(
                t["input"], ints(shape_attr), t["weight"], t["bias"]  # type: ignore[arg-type]
            )
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties={
                "normalized_shape": shape_attr,
                "eps": eps if isinstance(eps, FloatAttr) else float_literal(eps),
            },
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


# ---------------------------------------------------------------------------
# Plumbing
# ---------------------------------------------------------------------------


class _ViewLikeOp(TorchOp):
    """Shared shape of the single-input, single-result plumbing ops."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class SplitOp(TorchOp):
    """`torch.split(input, sections, dim)` with explicit sections; one result
    per section (no tuple, no getitem)."""

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


@irdl_op_definition
class UnbindOp(TorchOp):
    """`torch.unbind(input, dim)`: one result per index of `dim`."""

    name = "torch.unbind"
    traits = traits_def(Pure(), ViewLike(_unbind_relation), _PLUMBING_CANONICALIZATION)
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


class _JoinOp(TorchOp):
    """Shared shape of cat and stack: variadic inputs, a dim."""

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

    def __init__(
        self, input: Value, dims: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        dims_attr = ints_attr(sorted(dims) if not isinstance(dims, ArrayAttr) else dims)
        if result_type is None:
            result_type = infer_squeeze_type(_tensor_of(self.name, input), ints(dims_attr))
        super().__init__(
            operands=[input], result_types=[result_type], properties={"dims": dims_attr}
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_squeeze_type(self.input.type, ints(self.dims))]


@irdl_op_definition
class UnsqueezeOp(_ViewLikeOp):
    """`torch.unsqueeze(input, dim)`: a new size-1 dim (0 <= dim <= rank)."""

    name = "torch.unsqueeze"
    traits = traits_def(ViewLike(_unsqueeze_relation), _VIEW_CHAIN_CANONICALIZATION)
    dim = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("dim", "value"),)

    def __init__(self, input: Value, dim: int, *, result_type: Attribute | None = None) -> None:
        if result_type is None:
            result_type = infer_unsqueeze_type(_tensor_of(self.name, input), int(dim))
        super().__init__(
            operands=[input], result_types=[result_type], properties={"dim": _int_attr(dim)}
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_unsqueeze_type(self.input.type, self.dim.data)]


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


@irdl_op_definition
class FlattenOp(_ViewLikeOp):
    """`torch.flatten(input, start_dim, end_dim)` with canonical dims."""

    name = "torch.flatten"
    traits = traits_def(ViewLike(_copying_reshape), _VIEW_CHAIN_CANONICALIZATION)
    start_dim = prop_def(IntAttr)
    end_dim = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("start_dim", "value"), ("end_dim", "value"))

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
        if result_type is None:
            input_type = _tensor_of(self.name, input)
            result_type = infer_flatten_type(input_type, int(start_dim), int(end_dim))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"start_dim": _int_attr(start_dim), "end_dim": _int_attr(end_dim)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_flatten_type(self.input.type, self.start_dim.data, self.end_dim.data)]


@irdl_op_definition
class UnflattenOp(_ViewLikeOp):
    """`torch.unflatten(input, dim, sizes)`: one dim becomes `sizes` (one -1 allowed)."""

    name = "torch.unflatten"
    traits = traits_def(ViewLike(_reshape), _VIEW_CHAIN_CANONICALIZATION)
    dim = prop_def(IntAttr)
    sizes = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("dim", "value"), ("sizes", "value"))

    def __init__(
        self, input: Value, dim: int, sizes: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        sizes_attr = ints_attr(sizes)
        if result_type is None:
            input_type = _tensor_of(self.name, input)
            result_type = infer_unflatten_type(input_type, int(dim), ints(sizes_attr))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim": _int_attr(dim), "sizes": sizes_attr},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_unflatten_type(self.input.type, self.dim.data, ints(self.sizes))]


@irdl_op_definition
class PermuteOp(_ViewLikeOp):
    """`torch.permute(input, dims)`: `dims` is a permutation of the input's dims."""

    name = "torch.permute"
    traits = traits_def(ViewLike(_permute_relation), _VIEW_CHAIN_CANONICALIZATION)
    dims = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("dims", "value"),)

    def __init__(
        self, input: Value, dims: Sequence[int], *, result_type: Attribute | None = None
    ) -> None:
        dims_attr = ints_attr(dims)
        if result_type is None:
            result_type = infer_permute_type(_tensor_of(self.name, input), ints(dims_attr))
        super().__init__(
            operands=[input], result_types=[result_type], properties={"dims": dims_attr}
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_permute_type(self.input.type, ints(self.dims))]


@irdl_op_definition
class TransposeOp(_ViewLikeOp):
    """`torch.transpose(input, dim0, dim1)`: swaps two dims."""

    name = "torch.transpose"
    traits = traits_def(ViewLike(_transpose_relation), _VIEW_CHAIN_CANONICALIZATION)
    dim0 = prop_def(IntAttr)
    dim1 = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("dim0", "value"), ("dim1", "value"))

    def __init__(
        self, input: Value, dim0: int, dim1: int, *, result_type: Attribute | None = None
    ) -> None:
        if result_type is None:
            result_type = infer_transpose_type(_tensor_of(self.name, input), int(dim0), int(dim1))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim0": _int_attr(dim0), "dim1": _int_attr(dim1)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_transpose_type(self.input.type, self.dim0.data, self.dim1.data)]


@irdl_op_definition
class MovedimOp(_ViewLikeOp):
    """`torch.movedim(input, source, destination)` with canonical dim lists."""

    name = "torch.movedim"
    traits = traits_def(ViewLike(_movedim_relation), _VIEW_CHAIN_CANONICALIZATION)
    source = prop_def(_INTS)
    destination = prop_def(_INTS)
    FORMAT: ClassVar[Format] = (("source", "value"), ("destination", "value"))

    def __init__(
        self,
        input: Value,
        source: Sequence[int],
        destination: Sequence[int],
        *,
        result_type: Attribute | None = None,
    ) -> None:
        source_attr, destination_attr = ints_attr(source), ints_attr(destination)
        if result_type is None:
            input_type = _tensor_of(self.name, input)
            result_type = infer_movedim_type(input_type, ints(source_attr), ints(destination_attr))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"source": source_attr, "destination": destination_attr},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_movedim_type(self.input.type, ints(self.source), ints(self.destination))]


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
        if result_type is None:
            input_type = _tensor_of(self.name, input)
            result_type = infer_slice_type(input_type, int(dim), int(start), int(end), int(step))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "dim": _int_attr(dim),
                "start": _int_attr(start),
                "end": _int_attr(end),
                "step": _int_attr(step),
            },
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [
            infer_slice_type(
                self.input.type, self.dim.data, self.start.data, self.end.data, self.step.data
            )
        ]


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

    def __init__(
        self, input: Value, dim: int, size: int, step: int, *, result_type: Attribute | None = None
    ) -> None:
        if result_type is None:
            result_type = infer_unfold_type(_tensor_of(self.name, input), int(dim), int(size), int(step))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim": _int_attr(dim), "size": _int_attr(size), "step": _int_attr(step)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_unfold_type(self.input.type, self.dim.data, self.size.data, self.step.data)]


@irdl_op_definition
class SelectOp(_ViewLikeOp):
    """`torch.select(input, dim, index)`: drops `dim` (index non-negative when
    the size is static)."""

    name = "torch.select"
    traits = traits_def(ViewLike(_select_relation), _PLUMBING_CANONICALIZATION)
    dim = prop_def(IntAttr)
    index = prop_def(IntAttr)
    FORMAT: ClassVar[Format] = (("dim", "value"), ("index", "value"))

    def __init__(
        self, input: Value, dim: int, index: int, *, result_type: Attribute | None = None
    ) -> None:
        if result_type is None:
            result_type = infer_select_type(_tensor_of(self.name, input), int(dim), int(index))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim": _int_attr(dim), "index": _int_attr(index)},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [infer_select_type(self.input.type, self.dim.data, self.index.data)]


# ---------------------------------------------------------------------------
# Unary pointwise
# ---------------------------------------------------------------------------


class UnaryPointwiseOp(TorchOp):
    """Base of the unary pointwise ops: `input -> result` of the same shape.

    Subclasses without properties need nothing but a name and a docstring;
    those with properties pass them to `__init__` as `properties`."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(
        self,
        input: Value,
        *,
        result_type: Attribute | None = None,
        properties: dict[str, Attribute | None] | None = None,
    ) -> None:
        properties = properties or {}
        if result_type is None:
            ty = _tensor_of(self.name, input, _operand(0, "input"))
            result_type = infer_unary_type(
                self.name, ty, properties.get("min"), properties.get("max")
            )
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    def verify_props(self) -> None:
        """Extra property checks of a subclass."""

    def expected_types(self) -> Sequence[TensorType]:
        self.verify_props()
        return [infer_unary_type(self.name, self.input.type)]


class _PureUnaryOp(UnaryPointwiseOp):
    traits = traits_def(Pure())


@irdl_op_definition
class TanhOp(_PureUnaryOp):
    """`torch.tanh(input)`; integral inputs give a floating result."""

    name = "torch.tanh"
    traits = traits_def(_INEXACT_ELEMENTWISE)


@irdl_op_definition
class SigmoidOp(_PureUnaryOp):
    """`torch.sigmoid(input)`; integral inputs give a floating result."""

    name = "torch.sigmoid"
    traits = traits_def(_INEXACT_ELEMENTWISE)


@irdl_op_definition
class ReluOp(_PureUnaryOp):
    """`torch.relu(input)`."""

    name = "torch.relu"
    traits = traits_def(_EXACT_ELEMENTWISE)


@irdl_op_definition
class SiluOp(_PureUnaryOp):
    """`torch.nn.functional.silu(input)`: `input * sigmoid(input)` (floating only)."""

    name = "torch.silu"
    traits = traits_def(_INEXACT_ELEMENTWISE)


@irdl_op_definition
class ExpOp(_PureUnaryOp):
    """`torch.exp(input)`; integral inputs give a floating result."""

    name = "torch.exp"
    traits = traits_def(_INEXACT_ELEMENTWISE)


@irdl_op_definition
class LogOp(_PureUnaryOp):
    """`torch.log(input)`; integral inputs give a floating result."""

    name = "torch.log"
    traits = traits_def(_INEXACT_ELEMENTWISE)


@irdl_op_definition
class NegOp(_PureUnaryOp):
    """`torch.neg(input)` (not defined for bool)."""

    name = "torch.neg"
    traits = traits_def(_EXACT_ELEMENTWISE)


@irdl_op_definition
class AbsOp(_PureUnaryOp):
    """`torch.abs(input)`."""

    name = "torch.abs"
    traits = traits_def(_EXACT_ELEMENTWISE)


@irdl_op_definition
class DetachOp(_PureUnaryOp):
    """`torch.detach(input)`: the same values, cut from autograd."""

    name = "torch.detach"
    traits = traits_def(
        _EXACT_ELEMENTWISE, ViewLike(_identity_relation), _PLUMBING_CANONICALIZATION
    )


@irdl_op_definition
class GeluOp(_PureUnaryOp):
    """`torch.nn.functional.gelu(input, approximate=)`, approximate "none" | "tanh"."""

    name = "torch.gelu"
    traits = traits_def(_INEXACT_ELEMENTWISE)
    approximate = prop_def(StringAttr, default_value=StringAttr("none"))
    FORMAT: ClassVar[Format] = (("approximate", "value"),)

    def __init__(
        self, input: Value, approximate: str = "none", *, result_type: Attribute | None = None
    ) -> None:
        super().__init__(
            input, result_type=result_type, properties={"approximate": _str_attr(approximate)}
        )

    def verify_props(self) -> None:
        _Check(self.name).choice(self.approximate, "approximate", ("none", "tanh"))


@irdl_op_definition
class NanToNumOp(_PureUnaryOp):
    """`torch.nan_to_num(input, nan=, posinf=, neginf=)`; an absent bound takes
    torch's default (0, the dtype's max, the dtype's min)."""

    name = "torch.nan_to_num"
    traits = traits_def(_EXACT_ELEMENTWISE)
    nan = opt_prop_def(FloatAttr)
    posinf = opt_prop_def(FloatAttr)
    neginf = opt_prop_def(FloatAttr)
    FORMAT: ClassVar[Format] = (("nan", "value"), ("posinf", "value"), ("neginf", "value"))

    def __init__(
        self,
        input: Value,
        nan: float | None = None,
        posinf: float | None = None,
        neginf: float | None = None,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        def opt(value: float | Attribute | None) -> Attribute | None:
            if value is None or isinstance(value, Attribute):
                return value
            return float_literal(float(value))

        super().__init__(
            input,
            result_type=result_type,
            properties={"nan": opt(nan), "posinf": opt(posinf), "neginf": opt(neginf)},
        )


@irdl_op_definition
class ClampOp(_PureUnaryOp):
    """`torch.clamp(input, min=, max=)`; at least one bound. A float bound on an
    integral input promotes the result, as in torch."""

    name = "torch.clamp"
    traits = traits_def(_EXACT_ELEMENTWISE)
    min = opt_prop_def(_NUMBER)
    max = opt_prop_def(_NUMBER)
    FORMAT: ClassVar[Format] = (("min", "value"), ("max", "value"))

    def __init__(
        self,
        input: Value,
        min: NumberLike | None = None,
        max: NumberLike | None = None,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        super().__init__(
            input,
            result_type=result_type,
            properties={
                "min": None if min is None else number_attr(min),
                "max": None if max is None else number_attr(max),
            },
        )

    def expected_types(self) -> Sequence[TensorType]:
        if self.min is None and self.max is None:
            _Check(self.name).fail("needs at least one of min and max")
        return [infer_unary_type(self.name, self.input.type, self.min, self.max)]


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


@irdl_op_definition
class DropoutOp(UnaryPointwiseOp):
    """`torch.nn.functional.dropout(input, p, train)`. Not `Pure`: with
    `train = true` it is random and must never be CSE'd or fused."""

    name = "torch.dropout"
    p = prop_def(FloatAttr)
    train = prop_def(BoolAttr, default_value=FALSE)
    traits = traits_def(
        _DropoutEffects(), _DropoutSpeculatable(), _INEXACT_ELEMENTWISE
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


class BinaryPointwiseOp(TorchOp):
    """Base of the binary pointwise ops: `lhs OP rhs` with broadcasting and
    torch's type promotion. When one side is a Python number, `rhs` is absent
    and `scalar` holds it; `reverse` means the scalar is the left-hand side
    (`scalar OP lhs`)."""

    lhs = operand_def(TensorType)
    rhs = opt_operand_def(TensorType)
    scalar = opt_prop_def(_NUMBER)
    reverse = prop_def(BoolAttr, default_value=FALSE)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(
        self,
        lhs: Value,
        rhs: Value | NumberLike,
        *,
        reverse: bool = False,
        result_type: Attribute | None = None,
        properties: dict[str, Attribute] | None = None,
    ) -> None:
        properties = dict(properties or {})
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


class _AddSubOp(BinaryPointwiseOp):
    """add/sub: `lhs OP alpha * rhs` (`scalar OP alpha * lhs` when reversed)."""

    alpha = prop_def(_NUMBER, default_value=IntAttr(1))
    FORMAT: ClassVar[Format] = (("scalar", "value"), ("alpha", "value"), ("reverse", "flag"))

    def __init__(
        self,
        lhs: Value,
        rhs: Value | NumberLike,
        *,
        alpha: NumberLike = 1,
        reverse: bool = False,
        result_type: Attribute | None = None,
    ) -> None:
        super().__init__(
            lhs,
            rhs,
            reverse=reverse,
            result_type=result_type,
            properties={"alpha": number_attr(alpha)},
        )


@irdl_op_definition
class AddOp(_AddSubOp):
    """`torch.add(lhs, rhs, alpha=)`: `lhs + alpha * rhs`."""

    name = "torch.add"
    traits = traits_def(_ADD_SUB_ELEMENTWISE)


@irdl_op_definition
class SubOp(_AddSubOp):
    """`torch.sub(lhs, rhs, alpha=)`: `lhs - alpha * rhs`; reversed (rsub):
    `scalar - alpha * lhs`."""

    name = "torch.sub"
    traits = traits_def(_ADD_SUB_ELEMENTWISE)


@irdl_op_definition
class MulOp(BinaryPointwiseOp):
    """`torch.mul(lhs, rhs)`."""

    name = "torch.mul"
    traits = traits_def(_EXACT_ELEMENTWISE)
    FORMAT: ClassVar[Format] = (("scalar", "value"), ("reverse", "flag"))


@irdl_op_definition
class DivOp(BinaryPointwiseOp):
    """`torch.div(lhs, rhs, rounding_mode=)`, rounding_mode "none" (true
    division: integral inputs give a floating result) | "trunc" | "floor"."""

    name = "torch.div"
    traits = traits_def(_EXACT_ELEMENTWISE)
    rounding_mode = prop_def(StringAttr, default_value=StringAttr("none"))
    FORMAT: ClassVar[Format] = (
        ("scalar", "value"),
        ("rounding_mode", "value"),
        ("reverse", "flag"),
    )

    def __init__(
        self,
        lhs: Value,
        rhs: Value | NumberLike,
        *,
        rounding_mode: str | None = "none",
        reverse: bool = False,
        result_type: Attribute | None = None,
    ) -> None:
        super().__init__(
            lhs,
            rhs,
            reverse=reverse,
            result_type=result_type,
            properties={"rounding_mode": _str_attr(rounding_mode or "none")},
        )


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------


class ReductionOp(TorchOp):
    """Base of sum/mean: reduce `dims` (empty: all), `keepdim`, optional `dtype`
    (an element type) as in torch."""

    input = operand_def(TensorType)
    dims = prop_def(_INTS, default_value=ArrayAttr([]))
    keepdim = prop_def(BoolAttr, default_value=FALSE)
    dtype = opt_prop_def(Attribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ContiguousResult())
    FORMAT: ClassVar[Format] = (("dims", "value"), ("keepdim", "flag"), ("dtype", "type"))

    def __init__(
        self,
        input: Value,
        dims: Sequence[int] = (),
        keepdim: bool = False,
        dtype: Attribute | None = None,
        *,
        result_type: Attribute | None = None,
    ) -> None:
        dims_attr = ints_attr(sorted(dims) if not isinstance(dims, ArrayAttr) else dims)
        if result_type is None:
            ty = _tensor_of(self.name, input, _operand(0, "input"))
            result_type = infer_reduction_type(self.name, ty, ints(dims_attr), keepdim, dtype)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dims": dims_attr, "keepdim": bool_literal(keepdim), "dtype": dtype},
        )

    def expected_types(self) -> Sequence[TensorType]:
        return [
            infer_reduction_type(
                self.name, self.input.type, ints(self.dims), flag(self.keepdim), self.dtype
            )
        ]


@irdl_op_definition
class SumOp(ReductionOp):
    """`torch.sum(input, dims, keepdim, dtype=)`; integral inputs sum to i64."""

    name = "torch.sum"


@irdl_op_definition
class MeanOp(ReductionOp):
    """`torch.mean(input, dims, keepdim, dtype=)`; needs a floating input or dtype."""

    name = "torch.mean"


# ---------------------------------------------------------------------------
# Families, purity, dialect
# ---------------------------------------------------------------------------

UNARY_POINTWISE_OPS: tuple[type[UnaryPointwiseOp], ...] = (
    TanhOp,
    SigmoidOp,
    ReluOp,
    SiluOp,
    ExpOp,
    LogOp,
    NegOp,
    AbsOp,
    DetachOp,
    GeluOp,
    NanToNumOp,
    ClampOp,
    DropoutOp,
)

BINARY_POINTWISE_OPS: tuple[type[BinaryPointwiseOp], ...] = (AddOp, SubOp, MulOp, DivOp)

REDUCTION_OPS: tuple[type[ReductionOp], ...] = (SumOp, MeanOp)


def is_pure(op: Operation) -> bool:
    """Side-effect free (CSE-able, fusable): every torch op except a dropout
    in training."""
    effects = get_effects(op)
    return effects is not None and not effects


TORCH = Dialect(
    "torch",
    [
        LinearOp,
        MmOp,
        AddmmOp,
        BmmOp,
        BaddbmmOp,
        MatmulOp,
        LayerNormOp,
        SplitOp,
        UnbindOp,
        CatOp,
        StackOp,
        SqueezeOp,
        UnsqueezeOp,
        ReshapeOp,
        ViewOp,
        FlattenOp,
        UnflattenOp,
        PermuteOp,
        TransposeOp,
        MovedimOp,
        SliceOp,
        UnfoldOp,
        SelectOp,
        *UNARY_POINTWISE_OPS,
        *BINARY_POINTWISE_OPS,
        *REDUCTION_OPS,
    ],
    [],
)

__all__ = [
    "BINARY_POINTWISE_OPS",
    "REDUCTION_OPS",
    "TORCH",
    "UNARY_POINTWISE_OPS",
    "AbsOp",
    "AddOp",
    "AddmmOp",
    "BaddbmmOp",
    "BinaryPointwiseOp",
    "BmmOp",
    "CatOp",
    "ClampOp",
    "DetachOp",
    "DivOp",
    "DropoutOp",
    "ExpOp",
    "FlattenOp",
    "GeluOp",
    "LayerNormOp",
    "LinearOp",
    "LogOp",
    "MatmulOp",
    "MeanOp",
    "MmOp",
    "MovedimOp",
    "MulOp",
    "NanToNumOp",
    "NegOp",
    "PermuteOp",
    "ReductionOp",
    "ReluOp",
    "ReshapeOp",
    "SelectOp",
    "SigmoidOp",
    "SiluOp",
    "SliceOp",
    "UnfoldOp",
    "SplitOp",
    "SqueezeOp",
    "StackOp",
    "SubOp",
    "SumOp",
    "TanhOp",
    "TorchOp",
    "TransposeOp",
    "UnaryPointwiseOp",
    "UnbindOp",
    "UnflattenOp",
    "UnsqueezeOp",
    "ViewOp",
    "broadcast_shapes",
    "flag",
    "infer_addmm_type",
    "infer_baddbmm_type",
    "infer_binary_type",
    "infer_bmm_type",
    "infer_cat_type",
    "infer_flatten_type",
    "infer_layer_norm_type",
    "infer_linear_type",
    "infer_matmul_type",
    "infer_mm_type",
    "infer_movedim_type",
    "infer_permute_type",
    "infer_reduction_type",
    "infer_reshape_type",
    "infer_select_type",
    "infer_slice_type",
    "infer_split_types",
    "infer_squeeze_type",
    "infer_stack_type",
    "infer_transpose_type",
    "infer_unary_type",
    "infer_unbind_types",
    "infer_unflatten_type",
    "infer_unfold_type",
    "infer_unsqueeze_type",
    "ints",
    "ints_attr",
    "is_pure",
    "movedim_permutation",
    "number_attr",
    "number_value",
    "split_sections",
]
