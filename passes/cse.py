"""`cse`: common-subexpression elimination of pure ops."""

from __future__ import annotations

import time
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import IsolatedFromAbove

from optimus_ir.dialects import fx
from optimus_ir.foundation.traits import is_mergeable
from optimus_ir.analysis import alias_class, may_alias_operands, may_write_operands
from optimus_ir.foundation.statistics import current_pass_context

PATTERN = "merge-identical-op"

class _Key:
    """What makes two ops identical, with its hash computed once (hashing
    nested attributes is not cached by xDSL and dominates on big graphs)."""

    __slots__ = ("raw", "hash")

    def __init__(self, op: Operation) -> None:
        properties = op.properties
        attributes = op.attributes
        self.raw = (
            op.name,
            tuple(op.operands),
            tuple(sorted(properties.items())) if properties else (),
            tuple(sorted(attributes.items())) if attributes else (),
            tuple(r.type for r in op.results),
        )
        self.hash = hash(self.raw)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.hash == other.hash and self.raw == other.raw


class _Scopes:
    """The CSE scopes visible from the current op, innermost last, with an
    index from each operand value to the entries that read it, so that a
    write invalidates only the entries reading its alias class."""

    __slots__ = ("stack", "readers")

    def __init__(self) -> None:
        self.stack: list[dict[_Key, Operation]] = []
        self.readers: dict[SSAValue, list[tuple[dict[_Key, Operation], _Key, Operation]]] = {}

    def lookup(self, key: _Key) -> Operation | None:
        for scope in reversed(self.stack):
            existing = scope.get(key)
            if existing is not None:
                return existing
        return None

    def insert(self, key: _Key, op: Operation) -> None:
        scope = self.stack[-1]
        scope[key] = op
        entry = (scope, key, op)
        for operand in set(op.operands):
            self.readers.setdefault(operand, []).append(entry)

    def invalidate(self, values: set[SSAValue]) -> None:
        """Forget every entry that reads one of `values`."""
        for value in values:
            entries = self.readers.pop(value, None)
            if not entries:
                continue
            for scope, key, op in entries:
                if scope.get(key) is op:
                    del scope[key]


def _returned_values(output: fx.OutputOp, into: set[SSAValue]) -> None:
    """Add to `into` every value that `output` returns or returns a view of
    (walking up through ops that may return a view of an operand)."""
    stack = [v for v in output.operands if v not in into]
    into.update(stack)
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, Operation) and may_alias_operands(owner):
            for operand in owner.operands:
                if operand not in into:
                    into.add(operand)
                    stack.append(operand)


@dataclass(frozen=True)
class CommonSubexpressionElimination(ModulePass):
    """Replace an op by an identical earlier op that dominates it.

    Identical: same op name, operands, properties, attributes and result
    types (locations do not count). Only pure ops are merged (see
    `optimus_ir.foundation.effects`): known-pure fx calls and `fx.get_attr`, and ops
    with no memory effects; never allocating factories, random or in-place
    calls, unknown callables, `fx.call_module`, or ops with regions. An op
    sees the ops before it in its block and in the blocks of enclosing ops,
    up to the nearest isolated-from-above op (`fx.graph`, `func.func`).

    Two rules keep results and aliasing identical:

    * an op that may write to its operands (in-place methods,
      `operator.setitem`, unknown calls, `fx.call_module`: `may_write_operands`)
      is a barrier: every earlier op that reads a value of the alias class
      it writes is forgotten, so `x + 1` before and after `x.add_(1)` stay
      two ops;
    * two ops whose results (or views of them) are both returned by
      `fx.output` stay apart: distinct outputs stay distinct tensors.

    Each merge counts as one rewrite of the `merge-identical-op` pattern.
    """

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        context = current_pass_context(self.name)
        stats = context.record.pattern(PATTERN)
        budget = context.budget
        op_index = (
            {o: i for i, o in enumerate(op.walk())} if budget.keep_log else None
        )
        start = time.perf_counter()
        try:
            for region in op.regions:
                for block in region.blocks:
                    if not self._process_block(block, _Scopes(), set(), stats, context, op_index):
                        return
        finally:
            stats.seconds += time.perf_counter() - start

    def _process_block(
        self, block: Block, scopes: _Scopes, returned: set[SSAValue], stats, context, op_index
    ) -> bool:
        """Returns False when the rewrite budget ran out."""
        budget = context.budget
        last = block.last_op
        if isinstance(last, fx.OutputOp):
            _returned_values(last, returned)
        scopes.stack.append({})
        try:
            op = block.first_op
            while op is not None:
                next_op = op.next_op
                if op.regions:
                    if op.has_trait(IsolatedFromAbove):
                        inner, inner_returned = _Scopes(), set()
                    else:
                        inner, inner_returned = scopes, returned
                    for region in op.regions:
                        for nested in region.blocks:
                            if not self._process_block(
                                nested, inner, inner_returned, stats, context, op_index
                            ):
                                return False
                if may_write_operands(op):
                    # A write: nothing read from its alias classes before it
                    # may stand for a read after it. Classes are computed
                    # only here, at writes.
                    written: set[SSAValue] = set()
                    for operand in op.operands:
                        if operand not in written:
                            written |= alias_class(operand)
                    scopes.invalidate(written)
                elif not op.regions and op.results and is_mergeable(op):
                    stats.attempts += 1
                    key = _Key(op)
                    existing = scopes.lookup(key)
                    if existing is None:
                        scopes.insert(key, op)
                        op = next_op
                        continue
                    if _both_returned(existing, op, returned):
                        # Distinct outputs stay distinct tensors; later
                        # equal ops still merge into the first one.
                        op = next_op
                        continue
                    if budget.exhausted:
                        return False
                    budget.record(
                        context.pass_name,
                        PATTERN,
                        op,
                        op_index.get(op) if op_index is not None else None,
                    )
                    stats.rewrites += 1
                    moves_output = any(r in returned for r in op.results)
                    for old, new in zip(op.results, existing.results, strict=True):
                        old.replace_all_uses_with(new)
                    if moves_output:
                        # The kept op's results are returned now; what they
                        # are views of already is (same operands).
                        returned.update(existing.results)
                    Rewriter.erase_op(op)
                op = next_op
        finally:
            scopes.stack.pop()
        return True


def _both_returned(a: Operation, b: Operation, returned: set[SSAValue]) -> bool:
    return any(r in returned for r in a.results) and any(r in returned for r in b.results)
