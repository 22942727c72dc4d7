"""The rewrite of `batch-fusion`: a fused group becomes `batch.pack` of each
member operand that differs between members, the batch op, and
`batch.unpack` of its result; the block is then reordered so that every op
follows what it uses (`restore_dominance`)."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from optimus_ir.analysis import shape
from optimus_ir.analysis.live_bytes import DEFAULT_SYMBOLIC_SIZE
from optimus_ir.analysis.symbolic_dims import Symbol, SymbolicDims
from optimus_ir.dialects import batch as B
from optimus_ir.dialects import torch as T
from optimus_ir.foundation.diagnostics import emit_remark
from optimus_ir.passes.batch_fusion.grouping import is_barrier, member_names
from optimus_ir.passes.batch_fusion.records import Decision, Plan
from optimus_ir.foundation.statistics import current_pass_context
from optimus_ir.foundation.rewriting import patch_operands


BATCH_OP = {
    "linear": "batch.linear",
    "grouped-linear": "batch.grouped_linear",
    "linear-shared-input": "batch.linear_shared_input",
    "layer_norm": "batch.layer_norm",
    "pointwise": "batch.pointwise",
    "softmax": "batch.pointwise",
}


def apply_plan(
    block: Block,
    plan: Plan,
    returned: set[Operation],
    batch_symbols: dict[Operation, Symbol | None],
    dims: SymbolicDims,
    pass_name: str,
) -> int:
    """Rewrite the parts `plan` fuses (within the rewrite budget), each with
    a remark, and a remark for each part it declines; the number fused.
    `returned`: the members whose results the graph returns (they get copies);
    `batch_symbols`: each candidate's symbolic batch dim, read before fusing."""
    context = current_pass_context(pass_name)
    fused = 0
    for decision in plan.decisions:
        if decision.verdict != "fuse":
            _remark_declined(decision)
            continue
        if context.budget.exhausted:
            continue
        key, part, estimate = decision.key, decision.members, decision.estimate
        fuse_group(key.kind, part, {m for m in part if m in returned})
        context.budget.record(pass_name, f"fuse-{key.kind}", part[0], None)
        context.record.pattern(f"fuse-{key.kind}").rewrites += 1
        fused += 1
        why = f" ({estimate.describe()})" if estimate is not None else ""
        why += symbolic_note(batch_symbols.get(part[0]), dims)
        why += f"; {decision.note}" if decision.note else ""
        emit_remark(
            part[0],
            f"batch-fusion: fused {len(part)} {key.op_name}{member_names(part)} into {BATCH_OP[key.kind]}{why}",
        )
    if fused:
        restore_dominance(block)
    return fused


def _remark_declined(decision: Decision) -> None:
    """The remark on a part the plan does not fuse, saying why."""
    key, part = decision.key, decision.members
    head = f"batch-fusion: {len(part)} {key.op_name}{member_names(part)} not fused: "
    if decision.verdict == "cse":
        emit_remark(part[0], head + "they compute the same value (cse merges them)")
    elif decision.verdict == "memory":
        emit_remark(part[0], head + decision.note)
    else:
        assert decision.estimate is not None
        note = f"; {decision.note}" if decision.note else ""
        emit_remark(part[0], head + f"unprofitable: {decision.estimate.describe()}{note}")


def batch_symbol(op: Operation, dims: SymbolicDims) -> Symbol | None:
    """The symbol of a candidate's symbolic batch dim (its first tensor
    operand's leading dim), None when it is static."""
    for value in op.operands:
        found = dims.dims(value)
        if found and isinstance(found[0], Symbol):
            return found[0]
    return None


def symbolic_note(symbol: Symbol | None, dims: SymbolicDims) -> str:
    """The remark's note on the symbolic batch dim of a fused group: which
    symbol it is and the size the cost model priced it at."""
    if symbol is None:
        return ""
    hint = dims.hint(symbol)
    at = (
        f"its example size {hint}" if hint is not None
        else f"the default size {DEFAULT_SYMBOLIC_SIZE} (no example size known)"
    )
    return f"; symbolic batch dim {symbol}, priced at {at}"


def _stack(values: Sequence[SSAValue], before: Operation) -> SSAValue:
    pack = B.PackOp(values)
    Rewriter.insert_op(pack, InsertPoint.before(before))
    pack.result.name_hint = (values[0].name_hint or "member") + "_stacked"
    return pack.result


def fuse_group(
    kind: str, members: Sequence[Operation], returned: set[Operation] = frozenset()  # type: ignore[assignment]
) -> list[SSAValue]:
    """Replace `members` by packs, one batch op and an unpack, inserted
    before the last member; the unpack's results. The results of the
    members in `returned` (returned by the graph, or views of such) become
    copies of the unpacked views: the members of one stack share storage,
    and distinct outputs must stay distinct tensors."""
    anchor = members[-1]

    def operand(values: list[SSAValue | None]) -> SSAValue | None:
        if values[0] is None:
            return None
        return _stack(values, anchor)  # type: ignore[arg-type]

    if kind == "grouped-linear" and len({(m.input.type, m.weight.type) for m in members}) == 1:  # type: ignore[attr-defined]
        kind = "linear"  # equal shapes after all: one bmm
    if kind == "grouped-linear":
        has_bias = members[0].bias is not None  # type: ignore[attr-defined]
        grouped = B.GroupedLinearOp(
            [m.input for m in members],  # type: ignore[attr-defined]
            [m.weight for m in members],  # type: ignore[attr-defined]
            [m.bias for m in members] if has_bias else None,  # type: ignore[attr-defined]
        )
        Rewriter.insert_op(grouped, InsertPoint.before(anchor))
        for member, result in zip(members, grouped.outputs):
            result.name_hint = member.results[0].name_hint
        _replace_uses({m.results[0]: r for m, r in zip(members, grouped.outputs)})
        for member in members:
            Rewriter.erase_op(member)
        return []  # members are not stacked: nothing for later groups to read in place
    if kind == "linear":
        x = operand([m.input for m in members])  # type: ignore[attr-defined]
        w = operand([m.weight for m in members])  # type: ignore[attr-defined]
        b = operand([m.bias for m in members])  # type: ignore[attr-defined]
        new: Operation = B.LinearOp(x, w, b)  # type: ignore[arg-type]
    elif kind == "linear-shared-input":
        w = operand([m.weight for m in members])  # type: ignore[attr-defined]
        b = operand([m.bias for m in members])  # type: ignore[attr-defined]
        new = B.LinearSharedInputOp(members[0].input, w, b)  # type: ignore[attr-defined,arg-type]
    elif kind == "layer_norm":
        first = members[0]
        x = operand([m.input for m in members])  # type: ignore[attr-defined]
        w = operand([m.weight for m in members])  # type: ignore[attr-defined]
        b = operand([m.bias for m in members])  # type: ignore[attr-defined]
        new = B.LayerNormOp(x, T.ints(first.normalized_shape), w, b, eps=first.eps)  # type: ignore[attr-defined,arg-type]
    else:
        first = members[0]
        values: list[SSAValue] = []
        stacked: list[bool] = []
        for i in range(len(first.operands)):
            column = [m.operands[i] for m in members]
            if all(v is column[0] for v in column):
                values.append(column[0])
                stacked.append(False)
            else:
                values.append(_stack(column, anchor))
                stacked.append(True)
        assert any(stacked), "members computing one value are not fused"
        new = B.PointwiseOp(first.name, values, stacked, dict(first.properties))
    Rewriter.insert_op(new, InsertPoint.before(anchor))
    new.results[0].name_hint = (members[0].results[0].name_hint or "fused") + "_batch"
    unpack = B.UnpackOp(new.results[0])
    Rewriter.insert_op(unpack, InsertPoint.before(anchor))
    subst: dict[SSAValue, SSAValue] = {}
    for member, result in zip(members, unpack.outputs):
        result.name_hint = member.results[0].name_hint
        value: SSAValue = result
        if member in returned:
            value = _fresh_copy(result, anchor, member.results[0].name_hint)
        subst[member.results[0]] = value
    _replace_uses(subst)
    for member in members:
        Rewriter.erase_op(member)
    return list(unpack.outputs)


def _fresh_copy(value: SSAValue, anchor: Operation, name: str | None) -> SSAValue:
    """A copy of `value` in fresh storage, inserted before `anchor`:
    `cat([value])`; a rank-0 value (a piece of an unbind of a 1-d tensor),
    which cat cannot take, is copied with one dim added and taken off again."""
    rank0 = len(shape(value)) == 0
    ops: list[Operation] = []
    source = value
    if rank0:
        ops.append(T.UnsqueezeOp(value, 0))
        source = ops[-1].results[0]
    ops.append(T.CatOp([source], 0))
    if rank0:
        ops.append(T.SqueezeOp(ops[-1].results[0], [0]))
    for op in ops:
        Rewriter.insert_op(op, InsertPoint.before(anchor))
    ops[-1].results[0].name_hint = name
    return ops[-1].results[0]


def _replace_uses(subst: dict[SSAValue, SSAValue]) -> None:
    """Every use of a key of `subst` uses its value instead, each user's
    operands set once (a cat of the N members is patched in one step, not
    N times: per-use replacement rebuilds its operand tuple each time)."""
    users: dict[Operation, None] = {}
    for old in subst:
        for use in old.uses:
            users[use.operation] = None
    for user in users:
        patch_operands(user, subst)


def restore_dominance(block: Block) -> None:
    """Reorder `block` so that every op comes after the ops it uses, moving
    as little as possible: a stable topological sort (by original position)
    of each barrier-free segment. Ops with side effects never move, and no
    op crosses one (fused members all lie in one segment)."""
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    start = 0
    while start < len(ops):
        end = start
        while end < len(ops) and not is_barrier(ops[end]):
            end += 1
        if end > start:
            _sort_segment(block, ops[start:end], position)
        start = end + 1


def _sort_segment(block: Block, segment: list[Operation], position: dict[Operation, int]) -> None:
    inside = set(segment)
    missing: dict[Operation, int] = {}
    users: dict[Operation, list[Operation]] = {}
    out_of_order = False
    for op in segment:
        deps = set()
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation) and owner in inside:
                deps.add(owner)
                if position[owner] > position[op]:
                    out_of_order = True
        missing[op] = len(deps)
        for dep in deps:
            users.setdefault(dep, []).append(op)
    if not out_of_order:
        return
    ready = [(position[op], op) for op in segment if missing[op] == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for user in users.get(op, ()):
            missing[user] -= 1
            if missing[user] == 0:
                heapq.heappush(ready, (position[user], user))
    if len(order) != len(segment):
        raise AssertionError("batch-fusion: fused groups formed a cycle (a bug in the search)")
    anchor = segment[-1].next_op
    for op in order:
        op.detach()
        if anchor is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, anchor)
