"""Canonicalization patterns of the fx call ops: the identities a captured
graph carries.

Captured graphs keep calls that do nothing on the values they meet: a
`.contiguous()` of a tensor that is contiguous already, a `.to(dtype)` /
`.float()` / `.type_as(y)` to the dtype and device the tensor has, a
`clone` of a temporary nothing else sees. They stay fx calls (raise-fx has
no operator op for them: they are not computations), and the importer
records the type of every call's result, so the folds read the types and
the layout analysis:

* `fold-no-op-contiguous`: `x.contiguous()` where `x` is provably
  contiguous (`known_contiguous`) is `x`. torch returns `x` itself then
  (the same tensor object), so the fold is exact whatever else happens to
  `x` (a write to the result wrote `x` in eager too).
* `fold-no-op-cast`: `x.to(...)`, `x.type_as(y)`, `x.cpu()` and the dtype
  methods (`float`, `double`, `half`, `bfloat16`, `int`, `long`, `short`,
  `bool`, `byte`, `char`) whose result has `x`'s own dtype and device are
  `x`: torch returns `x` itself. Not with `copy=True` or a `memory_format`
  (a copy, or a layout change), nor a positional `True` (which may be
  `copy`), nor where the device is unknown (hand-written IR) for the calls
  that may move a tensor.
* `fold-temporary-clone`: `clone(a)` (method, `torch.clone` or aten) of a
  temporary `a` (a fresh result of an operator op: not a graph input,
  parameter or view, nor a dropout, which may return its input) is `a`
  when `can_forward_as_alias` allows it with `whole=True`: nothing in
  either alias class is written in place, and where the clone reaches the
  graph output nothing aliasing `a` is returned too (two distinct outputs
  must not become one tensor). `clone` keeps the strides of a dense tensor
  (`preserve_format`), so the layout is the same; another `memory_format`
  is declined.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from optimus_ir.analysis import AliasAnalysis, can_forward_as_alias, known_contiguous
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as t
from optimus_ir.traits import is_view_like

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

_DTYPE_METHODS: frozenset[str] = frozenset(
    {"float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char"}
)
"""Tensor methods that convert to one dtype, on the tensor's device, and
return the tensor itself when it has that dtype already."""

_CAST_METHODS: frozenset[str] = _DTYPE_METHODS | {"to", "type_as", "cpu"}
"""Every cast `fold-no-op-cast` folds; all but the dtype methods may move
the tensor to another device."""

_CLONE_FUNCTIONS: frozenset[str] = frozenset({"torch.clone", "torch.ops.aten.clone.default"})
"""The call_function spellings of `clone` (the method is `clone`)."""

_PRESERVE_FORMAT = "torch.preserve_format"
_CONTIGUOUS_FORMAT = "torch.contiguous_format"


def _self_tensor(op: Operation) -> SSAValue | None:
    """The tensor an fx call acts on (`args[0]`, a reference to an operand
    of tensor type), or None."""
    args = op.args.data  # type: ignore[attr-defined]
    if not args or not isinstance(args[0], fx.RefAttr):
        return None
    index = args[0].index.data
    if not 0 <= index < len(op.operands):
        return None
    value = op.operands[index]
    return value if isinstance(value.type, TensorType) else None


def _is_object(attr: Attribute, qualified_name: str) -> bool:
    return isinstance(attr, fx.ObjectAttr) and attr.qualified_name.data == qualified_name


def _only_memory_format(op: Operation, *allowed: str) -> bool:
    """The call passes nothing after its tensor but, at most, a
    `memory_format=` keyword naming one of `allowed`."""
    if len(op.args.data) != 1:  # type: ignore[attr-defined]
        return False
    kwargs = op.kwargs.data  # type: ignore[attr-defined]
    if not kwargs:
        return True
    if set(kwargs) != {"memory_format"}:
        return False
    return any(_is_object(kwargs["memory_format"], name) for name in allowed)


def _known_device(value: SSAValue) -> bool:
    """The tensor type of `value` names its device (an IR without an
    encoding, written by hand, may be on any)."""
    encoding = value.type.encoding  # type: ignore[attr-defined]
    return isinstance(encoding, StringAttr)


def _cast_arguments_allow_identity(op: Operation) -> bool:
    """The arguments of a cast leave torch free to return the tensor itself:
    no `copy=True`, no `memory_format`, no positional `True` (in
    `to(dtype, non_blocking, copy)` it may be `copy`); dtypes, devices,
    other tensors (`to(other)`, `type_as(other)`), `None` and `False` only."""
    target = op.target.data  # type: ignore[attr-defined]
    args = op.args.data[1:]  # type: ignore[attr-defined]
    kwargs = op.kwargs.data  # type: ignore[attr-defined]
    if target == "cpu":
        return not args and set(kwargs) <= {"non_blocking"}  # memory_format: a copy
    if target in _DTYPE_METHODS:
        return not args and not kwargs  # memory_format: a copy
    for arg in args:
        if isinstance(arg, fx.DTypeAttr | fx.DeviceAttr | StringAttr | fx.RefAttr | fx.NoneValueAttr):
            continue
        if fx.is_bool_literal(arg) and not t.flag(arg):
            continue
        return False
    for key, value in kwargs.items():
        if key in ("dtype", "device", "non_blocking"):
            continue
        if key == "copy" and fx.is_bool_literal(value) and not t.flag(value):
            continue
        return False
    return True


# ---------------------------------------------------------------------------
# patterns
# ---------------------------------------------------------------------------


class FoldNoOpContiguous(RewritePattern):
    """`x.contiguous()` (default or `torch.contiguous_format`) of a value
    the layout analysis proves contiguous is `x`: torch returns `x` itself."""

    name = "fold-no-op-contiguous"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, fx.CallMethodOp) or op.target.data != "contiguous":
            return
        source = _self_tensor(op)
        if source is None or op.result.type != source.type:
            return
        if not _only_memory_format(op, _CONTIGUOUS_FORMAT):
            return
        if known_contiguous(source):
            rewriter.replace(op, [], [source])


class FoldNoOpCast(RewritePattern):
    """A cast (`to`, `type_as`, `cpu`, `float`, ...) whose result has the
    tensor's own dtype and device is the tensor: torch returns it itself
    (see the module docstring for what is declined)."""

    name = "fold-no-op-cast"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, fx.CallMethodOp) or op.target.data not in _CAST_METHODS:
            return
        source = _self_tensor(op)
        if source is None or op.result.type != source.type:
            return
        if op.target.data not in _DTYPE_METHODS and not _known_device(source):
            return
        if _cast_arguments_allow_identity(op):
            rewriter.replace(op, [], [source])


class FoldTemporaryClone(RewritePattern):
    """`clone(a)` of a temporary `a` that nothing writes, where folding does
    not make two returned values one tensor, is `a` (see the module
    docstring)."""

    name = "fold-temporary-clone"

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        # the running pass's analysis (`canonicalize` binds it), or a walk per attempt
        self.aliases = aliases

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, fx.CallMethodOp):
            if op.target.data != "clone":
                return
        elif not isinstance(op, fx.CallFunctionOp) or op.target.data not in _CLONE_FUNCTIONS:
            return
        source = _self_tensor(op)
        if source is None or op.result.type != source.type:
            return
        if not _only_memory_format(op, _PRESERVE_FORMAT):
            return
        if not _is_temporary(source):
            return
        # a dense tensor's clone has its strides: the layout is the same
        if can_forward_as_alias(op.result, source, whole=True, contiguous=True, aliases=self.aliases):
            rewriter.replace(op, [], [source])


def _is_temporary(value: SSAValue) -> bool:
    """`value` is a fresh, dense tensor made by an operator op of the graph:
    not a graph input, parameter or buffer, not a view, not an fx call's
    result (which may be anything), not a dropout (which may be its input)."""
    if not isinstance(value, OpResult):
        return False
    owner = value.owner
    if owner.dialect_name() != "torch" or is_view_like(owner):
        return False
    return not isinstance(owner, t.DropoutOp)


IDENTITY_CALL_PATTERNS: tuple[RewritePattern, ...] = (
    FoldNoOpContiguous(),
    FoldNoOpCast(),
    FoldTemporaryClone(),
)
"""The canonicalization patterns of `fx.call_method` and `fx.call_function`."""

__all__ = [
    "IDENTITY_CALL_PATTERNS",
    "FoldNoOpCast",
    "FoldNoOpContiguous",
    "FoldTemporaryClone",
]
