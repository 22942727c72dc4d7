"""Aliasing and mutation: which values may share storage, which are written.

Two values *alias* when they may share storage. A value's *alias class* is
the closure of that relation through ops that may return a view of an
operand (`op_classes.may_alias_operands`): torch plumbing ops (split, unbind,
slice, select, squeeze, unsqueeze, view, reshape, flatten, unflatten,
permute, transpose, movedim, detach), ops that may return their input
itself (an eval-mode dropout), and fx calls that torch does not show to
return fresh storage (`alias_facts`: run on fake tensors, the aten schemas'
alias annotations; unknown calls may alias). The class is followed both up (what a value is a view of) and down
(the views of it, the views of those...), so siblings (other pieces of one
split) are in one class. This is conservative on purpose.

A class is *mutated* when one of its values is an operand of an op that may
write to it (`op_classes.written_operands`: the `self` of in-place `add_`,
`copy_`, the arguments an aten schema marks `(a!)`; every operand of
`operator.setitem`, unknown calls, `call_module`).
Operator-dialect ops never write to their operands.

Two forms:

* the free functions (`alias_class`, `may_be_mutated`, ...) walk the IR from
  the values asked about, each call on its own: fine for a single question;
* `AliasAnalysis` computes every class of a block in one walk (union-find)
  with a per-class *mutated* and *reaches the output* flag, and keeps them
  up to date through a `PatternRewriterListener` while a pass rewrites:
  what a pattern asks per match is then near O(1).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriterListener

from optimus_ir.analysis import alias_facts
from optimus_ir.analysis.graph_walk import reachable
from optimus_ir.analysis.op_classes import (
    is_fx_node,
    is_stride_sensitive_op,
    may_alias_operands,
    may_return_operand,
    may_write_operands,
    written_operands,
)
from optimus_ir.dialects import fx

# ---------------------------------------------------------------------------
# Walking queries (one call, no state)
# ---------------------------------------------------------------------------


def _aliasable(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType | fx.ValueType)


def direct_views(value: SSAValue) -> Iterator[SSAValue]:
    """Results of the users of `value` that may be views of it."""
    for use in value.uses:
        user = use.operation
        if may_alias_operands(user):
            yield from user.results


def _viewed_operands(value: SSAValue) -> tuple[SSAValue, ...]:
    """The operands `value` may be a view of (one step up its view chain)."""
    owner = value.owner
    if isinstance(owner, Operation) and may_alias_operands(owner):
        return owner.operands
    return ()


def alias_class(value: SSAValue, limit: int = 100_000) -> set[SSAValue]:
    """Every value that may share storage with `value` (see the module
    docstring): the views it is made from, their views, and so on."""

    def aliases(v: SSAValue) -> Iterator[SSAValue]:
        yield from (operand for operand in _viewed_operands(v) if _aliasable(operand))
        yield from direct_views(v)

    return reachable(value, aliases, limit)


def view_closure(value: SSAValue) -> set[SSAValue]:
    """`value` and every value that may be a view of it (downward only)."""
    return reachable(value, direct_views)


def class_is_mutated(values: Iterable[SSAValue]) -> bool:
    """Some value of the set is an operand of an op that may write to it."""
    return any(
        may_write_operands(use.operation) and v in written_operands(use.operation)
        for v in values
        for use in v.uses
    )


def may_be_mutated(value: SSAValue) -> bool:
    """True when `value` or anything aliasing it (its pieces, slices, views,
    what it is a view of, their other views) is used by an op that may write
    to it (in-place `add_`, `copy_`, `out=`, a non-pure call)."""
    return class_is_mutated(alias_class(value))


def is_view_result(value: SSAValue) -> bool:
    """`value` is produced by an op that may return a view of an operand:
    it is not the top of its view chain."""
    owner = value.owner
    return isinstance(owner, Operation) and may_alias_operands(owner)


def alias_roots(value: SSAValue) -> set[SSAValue]:
    """The values at the top of `value`'s view chains: values not produced
    by an op that may alias its operands (graph inputs, parameters, fresh
    results of compute ops)."""
    up = reachable(value, _viewed_operands)
    return {v for v in up if not is_view_result(v)}


def is_graph_input(value: SSAValue) -> bool:
    """A graph input or parameter/buffer (`fx.placeholder`, `fx.get_attr`,
    a block argument): storage the caller owns."""
    if isinstance(value, BlockArgument):
        return True
    return isinstance(value.owner, fx.PlaceholderOp | fx.GetAttrOp)


def is_graph_input_view(value: SSAValue) -> bool:
    """`value` may be (a view of) a graph input or parameter."""
    return any(is_graph_input(root) for root in alias_roots(value))


def reaches_output(values: Iterable[SSAValue]) -> bool:
    """Some value of the set is returned by `fx.output`."""
    return any(isinstance(use.operation, fx.OutputOp) for v in values for use in v.uses)


def is_returned(value: SSAValue) -> bool:
    """`value` itself is an operand of `fx.output` (not merely aliased by one)."""
    return any(isinstance(use.operation, fx.OutputOp) for use in value.uses)


def forwarding_returns_another_object(view: SSAValue, source: SSAValue) -> bool:
    """Replacing `view` (a view of `source`: a distinct tensor object over the
    same memory) by `source` itself would change which tensor objects the
    graph returns: `view` is returned, and `source` may be the caller's own
    tensor object (`may_be_a_caller_object`: a graph input, parameter or
    buffer, or what an in-place op on one returns) or is returned as well.

    Eager and the captured graph return a new tensor object for each view
    (even one that does nothing, `x.view(x.shape)`); the caller may change
    that object's metadata (`unsqueeze_`, `requires_grad_`, `.grad`), which
    must not reach the input or another output. Only asked when a rewrite
    would forward a returned view, so the scan of `source`'s uses is paid
    for returned views only."""
    if not is_returned(view):
        return False
    return may_be_a_caller_object(source) or is_returned(source)


def may_be_a_caller_object(value: SSAValue) -> bool:
    """`value` may be the very tensor object of a graph input, parameter or
    buffer: one of those, or the result of an op that may return an operand
    object itself (`may_return_operand`: an in-place method returns its
    operand, `x.float()` of a float `x` returns `x`, an eval-mode dropout
    its input, an unknown call anything) whose operands may be. Every
    other op makes a new tensor object."""

    def returned_operands(v: SSAValue) -> tuple[SSAValue, ...]:
        owner = v.owner
        if isinstance(owner, Operation) and may_return_operand(owner):
            return owner.operands
        return ()

    def is_caller_object(v: SSAValue) -> bool:
        owner = v.owner
        if is_graph_input(v):
            return True
        # unknown code may return any tensor it can reach
        return isinstance(owner, Operation) and is_fx_node(owner) and not alias_facts.call_is_known(owner)

    return any(is_caller_object(v) for v in reachable(value, returned_operands))


def stride_sensitive(values: Iterable[SSAValue]) -> bool:
    """Some value of the set is used by an op whose result depends on its
    operand's strides (`torch.view`, fx `view`/`stride`/`is_contiguous`...)."""
    return any(is_stride_sensitive_op(use.operation) for v in values for use in v.uses)


# ---------------------------------------------------------------------------
# The analysis: computed once, kept up to date
# ---------------------------------------------------------------------------


class AliasAnalysis:
    """The alias classes of the values of a block, as a union-find, with a
    *mutated* flag per class and the set of classes returned by `fx.output`.

    Built in one walk (`AliasAnalysis(block)`), then kept up to date by the
    rewriter events of `listener()`:

    * an inserted op, and an op whose operands changed (`replace_all_uses_with`
      notifies every user as modified), is registered again: its results join
      the classes of its operands when it may alias them, the classes it may
      write to become mutated, an `fx.output`'s operands are re-read;
    * an erased op changes nothing: classes are never split and flags never
      cleared. A class may thus hold values that no longer alias (dead ones,
      or values whose connecting view was erased) -- conservative, since a
      bigger class only forbids more rewrites.

    Values the analysis has never seen (ops built but not inserted) are
    classes of their own."""

    def __init__(self, root: Block | Operation | None = None) -> None:
        self._parent: dict[SSAValue, SSAValue] = {}
        self._members: dict[SSAValue, list[SSAValue]] = {}
        self._mutated: set[SSAValue] = set()
        self._outputs: list[fx.OutputOp] = []
        self._output_roots: set[SSAValue] | None = None
        if root is not None:
            self.build(root)

    # -- building ------------------------------------------------------------

    def build(self, root: Block | Operation) -> None:
        """Register every op nested in `root` (a block, or an op's regions)."""
        ops = root.walk() if isinstance(root, Block | Operation) else ()
        for op in ops:
            self.register(op)

    def register(self, op: Operation) -> None:
        """Add what `op` says about aliasing: its results join its operands'
        classes when it may alias them; the classes of its operands become
        mutated when it may write to them; an `fx.output` is tracked."""
        if isinstance(op, fx.OutputOp):
            if op not in self._outputs:
                self._outputs.append(op)
            self._output_roots = None
            return
        if may_alias_operands(op):
            anchor: SSAValue | None = None
            for operand in op.operands:
                if _aliasable(operand):
                    anchor = operand if anchor is None else anchor
                    self._union(anchor, operand)
            for r in op.results:
                if anchor is None:
                    anchor = r
                self._union(anchor, r)
        for operand in written_operands(op):
            self._mutated.add(self.find(operand))

    # -- union-find ----------------------------------------------------------

    def find(self, value: SSAValue) -> SSAValue:
        """The representative of `value`'s class."""
        parent = self._parent
        root = parent.get(value)
        if root is None:
            parent[value] = value
            self._members[value] = [value]
            return value
        if root is value:
            return value
        path = [value]
        while (up := parent[root]) is not root:
            path.append(root)
            root = up
        for v in path:
            parent[v] = root
        return root

    def _union(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ra, rb = self.find(a), self.find(b)
        if ra is rb:
            return ra
        members = self._members
        if len(members[ra]) < len(members[rb]):
            ra, rb = rb, ra
        self._parent[rb] = ra
        members[ra].extend(members.pop(rb))
        if rb in self._mutated:
            self._mutated.discard(rb)
            self._mutated.add(ra)
        output_roots = self._output_roots
        if output_roots is not None and rb in output_roots:
            output_roots.discard(rb)
            output_roots.add(ra)
        return ra

    # -- queries -------------------------------------------------------------

    def same_class(self, a: SSAValue, b: SSAValue) -> bool:
        """`a` and `b` may share storage."""
        return self.find(a) is self.find(b)

    def members(self, value: SSAValue) -> list[SSAValue]:
        """Every value of `value`'s class (a superset of `alias_class`)."""
        return list(self._members[self.find(value)])

    def is_mutated(self, value: SSAValue) -> bool:
        """Something in `value`'s class may be written in place."""
        return self.find(value) in self._mutated

    def reaches_output(self, value: SSAValue) -> bool:
        """Something in `value`'s class is returned by the graph."""
        roots = self._output_roots
        if roots is None:
            self._outputs = [o for o in self._outputs if o.parent is not None]
            roots = {self.find(v) for out in self._outputs for v in out.operands}
            self._output_roots = roots
        return self.find(value) in roots

    # -- staying up to date -------------------------------------------------

    def listener(self) -> PatternRewriterListener:
        """Rewriter callbacks that keep the analysis up to date."""
        return PatternRewriterListener(
            operation_insertion_handler=[self.register],
            operation_modification_handler=[self.register],
        )


__all__ = [
    "AliasAnalysis",
    "alias_class",
    "alias_roots",
    "class_is_mutated",
    "direct_views",
    "forwarding_returns_another_object",
    "is_graph_input",
    "is_graph_input_view",
    "is_returned",
    "may_be_a_caller_object",
    "is_view_result",
    "may_be_mutated",
    "reaches_output",
    "stride_sensitive",
    "view_closure",
]
