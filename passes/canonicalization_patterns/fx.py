"""Canonicalization patterns of the fx call ops: the identities a captured
graph carries.

Captured graphs keep calls that do nothing on the values they meet: a
`.contiguous()` of a tensor that is contiguous already, a `.to(dtype)` /
`.float()` / `.type_as(y)` to the dtype and device the tensor has, a
`clone` of a temporary nothing else sees. They stay fx calls (raise-fx has
no operator op for them: they are not computations), and the importer
records the type of every call's result, so the folds read the types and
the layout analysis:

* `fold-call-returning-operand`: a call that torch answers with one of its
  operand tensors itself (the very object) is that operand. Which calls do
  is asked of torch, not of a list of names: the call is run on meta/fake
  tensors of its operand types with the strides the layout analysis proves
  (`alias_facts.returned_operand`; unknown strides must give the same
  answer row-major and column-major, an unknown device on CPU and CUDA).
  So `x.contiguous()` of a contiguous `x`, `x.float()` / `x.to(dtype)` /
  `x.type_as(y)` / `x.short()` to `x`'s own dtype and device, `+x`, an
  eval-mode `F.dropout` are `x`; a cast to another dtype, `copy=True`, a
  `memory_format` that changes the layout are not. The fold is exact
  whatever else happens to `x`: a write to the result was a write to `x`
  in eager too, and a returned result was `x` there as well. Calls with
  effects (an in-place `x.add_(0)` returns `x` too) are left alone.
* `fold-temporary-clone`: `clone(a)` (method, `torch.clone` or aten) of a
  temporary `a` (a fresh result of an operator op: not a graph input,
  parameter or view, nor an op that may return its input) is `a` when
  `can_forward_as_alias` allows it with `whole=True`: nothing in either
  alias class is written in place, and where the clone reaches the graph
  output nothing aliasing `a` is returned too (two distinct outputs must
  not become one tensor). `clone` keeps the strides of a dense tensor
  (`preserve_format`), so the layout is the same; another `memory_format`
  is declined.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from optimus_ir.analysis import AliasAnalysis, can_forward_as_alias, strides_of
from optimus_ir.analysis.alias_facts import returned_operand
from optimus_ir.foundation.effects import effect_kind
from optimus_ir.dialects import fx
from optimus_ir.foundation.traits import is_view_like, returns_input

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

_CLONE_FUNCTIONS: frozenset[str] = frozenset({"torch.clone", "torch.ops.aten.clone.default"})
"""The call_function spellings of `clone` (the method is `clone`)."""

_PRESERVE_FORMAT = "torch.preserve_format"


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


# ---------------------------------------------------------------------------
# patterns
# ---------------------------------------------------------------------------


class FoldCallReturningOperand(RewritePattern):
    """An fx call that torch answers with one of its operands itself (run on
    meta/fake tensors of the operand types and proven strides) is that
    operand (see the module docstring)."""

    name = "fold-call-returning-operand"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, fx.CallMethodOp | fx.CallFunctionOp):
            return
        if not isinstance(op.result.type, TensorType) or effect_kind(op) == "impure":
            return
        layouts = tuple(
            strides_of(v) if isinstance(v.type, TensorType) else None for v in op.operands
        )
        index = returned_operand(op, layouts)
        if index is None or op.operands[index].type != op.result.type:
            return
        rewriter.replace(op, [], [op.operands[index]])


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
    result (which may be anything), not an op that may return its input (an eval-mode dropout)."""
    if not isinstance(value, OpResult):
        return False
    owner = value.owner
    return owner.dialect_name() == "torch" and not is_view_like(owner) and not returns_input(owner)


IDENTITY_CALL_PATTERNS: tuple[RewritePattern, ...] = (
    FoldCallReturningOperand(),
    FoldTemporaryClone(),
)
"""The canonicalization patterns of `fx.call_method` and `fx.call_function`."""

__all__ = [
    "IDENTITY_CALL_PATTERNS",
    "FoldCallReturningOperand",
    "FoldTemporaryClone",
]
