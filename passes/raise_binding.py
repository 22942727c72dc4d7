"""How raise-fx binds an fx call to a torch-dialect op: decoding of the
call's argument structures, the literal helpers binders use (`skip_unless`,
`lit_int`, `canon_dim`, ...), the `Raiser` context handed to binders, and
the binder tables (`FUNCTIONS`, `METHODS`, `MODULES`) with their
registration decorators."""

from __future__ import annotations


from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import (
    TensorType,
    TupleType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from optimus_ir.dialects import fx
from optimus_ir.dialects.literals import NOT_SCALAR, decode_scalar


# ---------------------------------------------------------------------------
# Decoding of argument structures into Python values
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DType:
    """A `torch.dtype` literal: its element type."""

    element_type: Attribute


@dataclass(frozen=True)
class Opaque:
    """Any literal a binder cannot use as a number, string or list."""

    attr: Attribute


def _convert(attr: Attribute) -> Any:
    value = decode_scalar(attr)
    if value is not NOT_SCALAR:
        return value
    if isinstance(attr, fx.DTypeAttr):
        return DType(attr.element_type)
    return Opaque(attr)


def decode(op: fx.NodeOp) -> tuple[list[Any], dict[str, Any]]:
    """The op's args and kwargs as Python values, SSAValues in place of refs."""
    operands = op.operands
    get = operands.__getitem__
    args = [fx.map_refs(a, get, _convert) for a in op.args.data]
    kwargs = {k: fx.map_refs(v, get, _convert) for k, v in op.kwargs.data.items()}
    return args, kwargs


# ---------------------------------------------------------------------------
# Binder helpers
# ---------------------------------------------------------------------------


class Skip(Exception):
    """Raised by a binder: leave this op as it is."""


_SKIP = Skip()


def skip_unless(cond: Any) -> None:
    if not cond:
        raise _SKIP


def tensor(value: Any) -> SSAValue:
    """An operand that must be an SSA value of tensor type."""
    if isinstance(value, SSAValue) and isinstance(value.type, TensorType):
        return value
    raise _SKIP


def opt_tensor(value: Any) -> SSAValue | None:
    return None if value is None else tensor(value)


def tensors(values: Any) -> list[SSAValue]:
    skip_unless(isinstance(values, list | tuple) and values)
    return [tensor(v) for v in values]


def shape(value: SSAValue) -> tuple[int, ...]:
    return value.type.get_shape()  # type: ignore[attr-defined]


def rank(value: SSAValue) -> int:
    return len(value.type.get_shape())  # type: ignore[attr-defined]


def lit_int(value: Any) -> int:
    """A literal int (not a bool, not a symbolic value)."""
    if type(value) is int:
        return value
    raise _SKIP


def lit_bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    raise _SKIP


def lit_float(value: Any) -> float:
    if type(value) is float or type(value) is int:
        return float(value)
    raise _SKIP


def lit_number(value: Any) -> int | float:
    if type(value) is int or type(value) is float:
        return value
    raise _SKIP


def is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def lit_str(value: Any) -> str:
    if type(value) is str:
        return value
    raise _SKIP


def lit_ints(value: Any) -> list[int]:
    """A literal list/tuple of ints."""
    skip_unless(isinstance(value, list | tuple))
    return [lit_int(v) for v in value]


def int_or_ints(value: Any) -> list[int]:
    if type(value) is int:
        return [value]
    return lit_ints(value)


def varargs_ints(values: tuple[Any, ...]) -> list[int]:
    """`x.view(2, 3)` and `x.view((2, 3))` alike."""
    if len(values) == 1 and not isinstance(values[0], int):
        return lit_ints(values[0])
    return lit_ints(values)


def canon_dim(dim: Any, rank_: int) -> int:
    """A dim in [-rank, rank) made non-negative; rank-0 tensors are left alone."""
    d = lit_int(dim)
    skip_unless(rank_ > 0 and -rank_ <= d < rank_)
    return d + rank_ if d < 0 else d


def canon_dims(dims: Sequence[Any], rank_: int) -> list[int]:
    out = [canon_dim(d, rank_) for d in dims]
    skip_unless(len(set(out)) == len(out))
    return out


def opt_dtype(value: Any) -> Attribute | None:
    if value is None:
        return None
    skip_unless(isinstance(value, DType))
    return value.element_type


def not_inplace(inplace: Any) -> None:
    skip_unless(inplace is False)


# ---------------------------------------------------------------------------
# The raising context handed to binders
# ---------------------------------------------------------------------------


class Raiser:
    """State of one raise-fx run; binders receive it as their first argument.

    `op` is the fx op being raised, `out` its result type (a TensorType, or a
    TupleType for ops with one result per piece), `used` the tuple indices
    read by its `getitem` users.
    """

    def __init__(self) -> None:
        self.op: fx.NodeOp = None  # type: ignore[assignment]
        self.out: Attribute = fx.VALUE
        self.used: set[int] = set()
        # rank-2 transposes raised so far: result -> input (for addmm/mm -> linear)
        self.transposed: dict[SSAValue, SSAValue] = {}
        self.transpose_ops: list[Operation] = []
        self._params: dict[str, SSAValue] = {}
        self.block: Block = None  # type: ignore[assignment]

    # -- results ----------------------------------------------------------

    def out_tensor(self) -> TensorType:
        out = self.out
        skip_unless(isinstance(out, TensorType))
        return out  # type: ignore[return-value]

    def out_pieces(self) -> list[Attribute]:
        out = self.out
        skip_unless(isinstance(out, TupleType))
        types = list(out.types.data)  # type: ignore[attr-defined]
        skip_unless(all(isinstance(t, TensorType) for t in types))
        return types

    # -- diagnostics ----------------------------------------------------------

    def remark(self, message: str) -> None:
        """A remark about the op being raised (why a binder keeps it)."""
        from optimus_ir.foundation.diagnostics import emit_remark

        emit_remark(self.op, message)

    # -- module parameters --------------------------------------------------

    def param(self, path: str, name: str, module: dict[str, Any]) -> SSAValue | None:
        """An fx.get_attr of a submodule parameter (None when it is None)."""
        ty = module.get(name, _MISSING)
        skip_unless(ty is not _MISSING)
        if ty is None:
            return None
        skip_unless(isinstance(ty, Opaque) and isinstance(ty.attr, TensorType))
        return self.read_param(f"{path}.{name}", ty.attr)

    def read_param(self, target: str, type: TensorType) -> SSAValue:
        """The parameter `target` (of `type`) read by one `fx.get_attr`,
        inserted before the op being raised and shared by its later reads."""
        value = self._params.get(target)
        if value is None:
            get = fx.GetAttrOp(target, type)
            self.block.insert_op_before(get, self.op)
            value = self._params[target] = get.result
            hint = target.replace(".", "_")
            value.name_hint = f"_{hint}" if hint[0].isdigit() else hint
        return value


_MISSING = object()

Binder = Callable[..., Any]

FUNCTIONS: dict[str, Binder] = {}
METHODS: dict[str, Binder] = {}
MODULES: dict[str, Binder] = {}


def function(*names: str) -> Callable[[Binder], Binder]:
    """Register a binder for call_function targets (operator.X also as _operator.X)."""

    def register(binder: Binder) -> Binder:
        for name in names:
            FUNCTIONS[name] = binder
            if name.startswith("operator."):
                FUNCTIONS["_" + name] = binder
        return binder

    return register


def method(*names: str) -> Callable[[Binder], Binder]:
    """Register a binder for call_method targets (also as `torch.Tensor.X` functions)."""

    def register(binder: Binder) -> Binder:
        for name in names:
            METHODS[name] = binder
            FUNCTIONS.setdefault(f"torch.Tensor.{name}", binder)
        return binder

    return register


def module(*names: str) -> Callable[[Binder], Binder]:
    """Register a binder for call_module ops of the given module classes.

    The binder is called as `binder(raiser, path, attrs, *args, **kwargs)`,
    `attrs` being the decoded `module_attrs` dictionary."""

    def register(binder: Binder) -> Binder:
        for name in names:
            MODULES[name] = binder
        return binder

    return register


def aten(*names: str) -> tuple[str, ...]:
    return tuple(f"torch.ops.aten.{n}" for n in names)


