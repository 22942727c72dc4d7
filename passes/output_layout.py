"""`match-output-strides`: every returned tensor has the strides the
captured graph returns.

The passes may change a value's layout (a member of a fused group is a
slice of a stack, a pointwise op over a stack allocates its result in the
stack's layout, a kernel returns contiguous members), and a layout change
can reach the graph's output: `f(g(piece).t())`, f and g pointwise, is `(1, 4)`-strided
in eager but a row of a contiguous stack once the members are fused. The
README promises eager's strides, so after the pipeline every output whose
layout is not provably the captured one gets a restore:

    expected row-major        `.contiguous()` (returns its input itself when
                              that is contiguous already, else one copy)
    any other layout          `match_strides(value, strides)`: its input
                              itself when the strides agree already, else a
                              copy into `torch.empty_strided(size, strides)`
                              (any dense, permuted or gapped layout); dims
                              the captured graph broadcasts (stride 0) are
                              copied once and expanded again

Strides are compared as torch's `is_contiguous` compares them: the stride of
a size-1 dim does not matter. A layout whose non-broadcast dims overlap
(windows of `unfold`, a hand-made `as_strided`) cannot be made by a copy;
such an output keeps its computed strides (its values are right).

The expected strides come from the captured graph, not from the IR:
`optimize()` runs the pass after the pipeline (through the pass manager,
like every pass) with the strides the importer recorded, as typed options
that a `-p` pipeline can spell too: `ranks` (each output's rank, -1 where
the strides are unknown: that output is left alone) and `strides` (the
strides of every output with a known rank, concatenated), e.g.
`match-output-strides{ranks=2,-1 strides=1,4}`. `rewritten=false` says no
rewrite ran (raising and lowering keep every layout): outputs computed by fx
ops alone are then left alone. The pass counts the restores it adds
(`restores added`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from optimus_ir.analysis import is_row_major, provably_row_major, strides_of
from optimus_ir.dialects import fx
from optimus_ir.foundation.diagnostics import OptimusError
from optimus_ir.foundation.effects import register_allocating_function
from optimus_ir.foundation.statistics import current_pass_context

MATCH_STRIDES = "optimus_ir.passes.output_layout.match_strides"
"""The qualified name the generated code calls `match_strides` by."""


# ---------------------------------------------------------------------------
# What the generated code runs
# ---------------------------------------------------------------------------


def same_strides(sizes: Sequence[int], a: Sequence[int], b: Sequence[int]) -> bool:
    """`a` and `b` lay out a tensor of `sizes` alike: equal strides in every
    dim of size > 1 (an empty tensor has no layout to differ in)."""
    if len(a) != len(b) or len(a) != len(sizes):
        return False
    if any(n == 0 for n in sizes):
        return True
    return all(x == y for x, y, n in zip(a, b, sizes) if n != 1)


def _overlaps(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Two indices of a tensor of `sizes` and `strides` (no stride 0 in a
    dim of size > 1) may share a memory location: taken by increasing
    stride, each dim must step past everything the smaller ones reach."""
    reach = 0
    for stride, size in sorted((s, n) for s, n in zip(strides, sizes) if n > 1):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def match_strides(value: torch.Tensor, strides: tuple[int, ...]) -> torch.Tensor:
    """`value` laid out with `strides` (see the module docstring): `value`
    itself when it is already, else a fresh copy; `value` unchanged when no
    copy can have those strides (overlapping dims)."""
    sizes = tuple(value.shape)
    if same_strides(sizes, value.stride(), strides):
        return value
    base = value
    base_strides = list(strides)
    broadcast = False
    for dim, (size, stride) in enumerate(zip(sizes, strides)):
        if stride == 0 and size > 1:  # eager broadcasts this dim: copy one slice
            base = base.narrow(dim, 0, 1)
            broadcast = True
    if _overlaps(base.shape, base_strides):
        return value
    out = torch.empty_strided(base.shape, base_strides, dtype=value.dtype, device=value.device)
    out.copy_(base)
    return out.expand(sizes) if broadcast else out


# A fresh tensor or its input: removable when unused, never merged (two
# calls are two tensors), and no write anyone else sees.
register_allocating_function(MATCH_STRIDES)


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


def _graph_output(module: ModuleOp) -> fx.OutputOp | None:
    for graph in module.ops:
        if isinstance(graph, fx.GraphOp):
            last = graph.block.last_op
            return last if isinstance(last, fx.OutputOp) else None
    return None


def restore_output_strides(
    module: ModuleOp, expected: Sequence[tuple[int, ...] | None], *, rewritten: bool = True
) -> int:
    """Give every output of `module`'s graph the strides `expected[i]` (None:
    unknown, left alone); the number of restores added.

    A value computed by an operator op may have another layout than in the
    captured graph; so may the result of an fx op (an op the raise does not
    know, a kernel of its own) that reads such a value, since most ops lay
    their result out like their input. `rewritten=False` says no rewrite
    ran (raising and lowering keep every layout): then fx ops, which the
    analysis knows nothing of, are left alone. A value whose strides are
    proven to be the expected ones needs nothing."""
    output = _graph_output(module)
    if output is None or not expected:
        return 0
    touched = _downstream_of_operator_ops(output) if rewritten else set()
    added = 0
    restored: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
    for index, value in enumerate(list(output.operands)):
        want = expected[index] if index < len(expected) else None
        ty = value.type
        if want is None or not isinstance(ty, TensorType):
            continue
        owner = value.owner
        if not isinstance(owner, Operation):
            continue
        if owner.dialect_name() == "fx" and owner not in touched:
            continue
        sizes = tuple(ty.get_shape())
        if len(want) != len(sizes) or any(s < 0 for s in sizes):
            continue
        known = strides_of(value)
        if known is not None and same_strides(sizes, known, want):
            continue
        row_major = is_row_major(want, sizes)
        if row_major and provably_row_major(value):
            continue
        fixed = restored.get((value, want))
        if fixed is None:
            if row_major:
                op: Operation = fx.CallMethodOp("contiguous", [fx.ref(0)], {}, [value], ty)
                suffix = "contiguous"
            else:
                strides = fx.TupleValueAttr([fx.int_literal(s) for s in want])
                op = fx.CallFunctionOp(MATCH_STRIDES, [fx.ref(0), strides], {}, [value], ty)
                suffix = "restrided"
            op.results[0].name_hint = f"{value.name_hint or 'output'}_{suffix}"
            Rewriter.insert_op(op, InsertPoint.before(output))
            fixed = restored[(value, want)] = op.results[0]
            added += 1
        output.operands[index] = fixed
    return added


def _downstream_of_operator_ops(output: Operation) -> set[Operation]:
    """The fx ops of `output`'s block that read, directly or through other
    fx ops, a value an operator op computed: one walk over the block."""
    touched: set[Operation] = set()
    block = output.parent_block()
    if block is None:
        return touched
    for op in block.ops:
        if op.dialect_name() != "fx":
            continue
        for operand in op.operands:
            source = operand.owner
            if isinstance(source, Operation) and (source.dialect_name() != "fx" or source in touched):
                touched.add(op)
                break
    return touched


@dataclass(frozen=True)
class MatchOutputStrides(ModulePass):
    """Give every output the strides the captured graph returns (see the
    module docstring): `.contiguous()` or `match_strides` before `fx.output`
    where the layout is not provably the expected one.

    Options: `ranks` (per output; -1: unknown strides, left alone),
    `strides` (those of the outputs of known rank, concatenated),
    `rewritten` (false: no rewrite ran, fx-only outputs are left alone).
    `optimize()` builds it with `expecting(...)`."""

    name = "match-output-strides"

    ranks: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    rewritten: bool = True

    @classmethod
    def expecting(
        cls, expected: Sequence[tuple[int, ...] | None], *, rewritten: bool = True
    ) -> MatchOutputStrides:
        """The pass for outputs expected with `expected[i]` strides (None:
        unknown)."""
        ranks = tuple(-1 if want is None else len(want) for want in expected)
        strides = tuple(s for want in expected if want is not None for s in want)
        return cls(ranks=ranks, strides=strides, rewritten=rewritten)

    def expected(self) -> tuple[tuple[int, ...] | None, ...]:
        """The expected strides per output (None: unknown), from the options."""
        if sum(r for r in self.ranks if r > 0) != len(self.strides):
            raise OptimusError(
                f"{self.name}: {len(self.strides)} strides given for outputs of ranks "
                f"{list(self.ranks)} (want the sum of the known ranks)"
            )
        found: list[tuple[int, ...] | None] = []
        start = 0
        for rank in self.ranks:
            if rank < 0:
                found.append(None)
                continue
            found.append(tuple(self.strides[start : start + rank]))
            start += rank
        return tuple(found)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        added = restore_output_strides(op, self.expected(), rewritten=self.rewritten)
        current_pass_context(self.name).record.bump(RESTORES_ADDED, added)


RESTORES_ADDED = "restores added"
"""The counter of `match-output-strides`: the restores it inserted."""


__all__ = [
    "MATCH_STRIDES",
    "MatchOutputStrides",
    "RESTORES_ADDED",
    "match_strides",
    "restore_output_strides",
    "same_strides",
]
