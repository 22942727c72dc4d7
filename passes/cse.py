"""`cse`: common-subexpression elimination of pure ops."""

from __future__ import annotations

import time
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import IsolatedFromAbove

from optimus_ir.effects import is_cse_candidate
from optimus_ir.statistics import current_pass_context

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


@dataclass(frozen=True)
class CommonSubexpressionElimination(ModulePass):
    """Replace an op by an identical earlier op that dominates it.

    Identical: same op name, operands, properties, attributes and result
    types (locations do not count). Only pure ops are merged (see
    `optimus_ir.effects`): known-pure fx calls and `fx.get_attr`, and ops
    with no memory effects; never allocating factories, random or in-place
    calls, unknown callables, `fx.call_module`, or ops with regions. An op
    sees the ops before it in its block and in the blocks of enclosing ops,
    up to the nearest isolated-from-above op (`fx.graph`, `func.func`).
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
                    if not self._process_block(block, [], stats, context, op_index):
                        return
        finally:
            stats.seconds += time.perf_counter() - start

    def _process_block(self, block: Block, scopes, stats, context, op_index) -> bool:
        """Returns False when the rewrite budget ran out."""
        budget = context.budget
        scope: dict[_Key, Operation] = {}
        scopes = [*scopes, scope]
        op = block.first_op
        while op is not None:
            next_op = op.next_op
            if op.regions:
                inner = [] if op.has_trait(IsolatedFromAbove) else scopes
                for region in op.regions:
                    for nested in region.blocks:
                        if not self._process_block(nested, inner, stats, context, op_index):
                            return False
            elif op.results and is_cse_candidate(op):
                stats.attempts += 1
                key = _Key(op)
                existing = None
                for s in reversed(scopes):
                    existing = s.get(key)
                    if existing is not None:
                        break
                if existing is None:
                    scope[key] = op
                else:
                    if budget.exhausted:
                        return False
                    budget.record(
                        context.pass_name,
                        PATTERN,
                        op,
                        op_index.get(op) if op_index is not None else None,
                    )
                    stats.rewrites += 1
                    for old, new in zip(op.results, existing.results, strict=True):
                        old.replace_all_uses_with(new)
                    Rewriter.erase_op(op)
            op = next_op
        return True
