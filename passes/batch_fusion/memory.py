"""The memory of a `batch-fusion` plan (issue 24): what one fused part
allocates (`part_memory`) and the live bytes of the whole fused schedule
(`simulate_plan`), which `fit_memory` keeps within the budget."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

import attrs
from xdsl.ir import Operation, SSAValue

from optimus_ir.analysis import AliasAnalysis, is_graph_input, is_join_op
from optimus_ir.analysis.live_bytes import LiveBytes, allocated_bytes
from optimus_ir.analysis.live_bytes import tensor_bytes as _bytes
from optimus_ir.analysis.live_bytes import tensor_elements as _elements
from optimus_ir.analysis.symbolic_dims import SymbolicDims
from optimus_ir.dialects import torch as T
from optimus_ir.analysis.fusion_pricing import Provenance, is_parameter, operand_slots, part_of_a_stack, slot_source
from optimus_ir.passes.batch_fusion.records import Decision, PartMemory, Simulated


def part_memory(
    kind: str,
    members: Sequence[Operation],
    provenance: Provenance,
    dims: SymbolicDims | None,
    returned: set[Operation],
) -> PartMemory:
    """What fusing `members` allocates (`PartMemory`), with their operands'
    sources as `provenance` says before the part is recorded."""
    n = len(members)
    result = _bytes(members[0].results[0], dims)
    copies, input_copies, scratch, epilogue = 0, 0, 0, 0
    copied: set[int] = set()
    first_slot = 1 if kind == "linear-shared-input" else 0
    for slot, values in enumerate(operand_slots(kind, members), start=first_slot):
        source = slot_source(values, provenance)
        if source in ("parameters", "pieces"):
            continue  # held between calls, or a view
        if source == "shared" and (
            kind in ("pointwise", "softmax")
            or (provenance.constant_parameters and is_parameter(values[0]))
        ):
            continue  # broadcast, or one parameter stacked once
        if source == "stack" and not part_of_a_stack([values], provenance):
            continue  # the earlier stack itself, or a strided slice of it
        if all(is_graph_input(v) for v in values):
            input_copies += _bytes(values[0], dims) * n
            continue
        copies += _bytes(values[0], dims) * n
        copied.add(slot)
    if kind == "layer_norm":
        first = members[0]
        if first.weight is not None or first.bias is not None:  # type: ignore[attr-defined]
            epilogue = n * result
        normalized = 1
        for d in T.ints(first.normalized_shape):  # type: ignore[attr-defined]
            normalized *= max(d, 1)
        rows = _elements(first.operands[0], dims) // normalized
        scratch = 2 * 4 * n * rows  # the fp32 mean and rstd of `native_layer_norm`
    kept = sum(_bytes(m.results[0], dims) for m in members if m in returned)
    return PartMemory(n * result, copies, frozenset(copied), scratch, epilogue, kept, input_copies)


def simulate_plan(
    ops: Sequence[Operation],
    decisions: Sequence[Decision],
    captured: LiveBytes,
    dims: SymbolicDims | None,
    returned: set[Operation],
) -> Simulated:
    """The live bytes of the block as it runs once `decisions` are fused:
    each fused part one op at its last member's position, every op in the
    stable topological order by original position that `restore_dominance`
    gives (the consumers of an earlier member move after the part), each
    op's allocations as `analysis.live_bytes` counts them and each part's
    as `PartMemory` says (its stack freed after the last reader of any
    non-returned member's result, its copies after the batch op, the
    returned members' copies held to the end). O(n log n) in the ops."""
    parts = [d for d in decisions if d.verdict == "fuse" and d.memory is not None]
    schedule = _fused_schedule(ops, parts, captured.position)
    if schedule is None:  # pragma: no cover - the search keeps fused groups acyclic
        return Simulated(captured.peak, None, 0)
    member_at: dict[SSAValue, tuple[int, int]] = {}
    for k, decision in enumerate(parts):
        for i, member in enumerate(decision.members):
            if member not in returned:  # a returned member's readers read its copy
                member_at[member.results[0]] = (k, i)
    _read_steps(schedule, ops, member_at, captured.aliases, dims)
    delta = _allocations(schedule, ops, captured.aliases, dims, returned)
    peak, at, running = 0, 0, 0
    for i in range(len(delta) - 1):
        running += delta[i]
        if running > peak:
            peak, at = running, i
    culprit, excess = _culprit(schedule, at, captured, dims)
    return Simulated(peak, culprit, excess)


@attrs.define
class _Schedule:
    """The fused schedule of a block: its nodes -- the ops (`0 .. count-1`),
    one per fused part (`count + k`), then one per part for the packs of
    its graph inputs and parameters (`packs + k`: they stay where its last
    member was) -- in the order they run, three steps each.

    A part copies its stacked operands (step 0; their sources are last read
    there), runs the batch op (1: copies, result and scratch live) and its
    epilogue (2: the result and one more stack); any other op reads and
    allocates at step 1, but a join that gathers members of fused parts
    first (`_gathered_runs`) reads them and copies them at step 0."""

    parts: list[Decision]
    count: int
    packs: int
    key: list[int]
    """Each node's position in the captured order (a part's: its last member's)."""
    order: list[int]
    step: list[int]
    """The first step of each node."""
    gathers: dict[int, tuple[int, set[int], list[tuple[int, int]]]] = attrs.field(factory=dict)
    """The joins that gather members of fused parts (`_gathered_runs`)."""
    last: dict[SSAValue, int] = attrs.field(factory=dict)
    """The step each alias class (by its root) is last read at."""
    stack_end: list[int] = attrs.field(factory=list)
    """The step each part's stack is last held at."""

    @property
    def end(self) -> int:
        """The schedule's last step."""
        return 3 * len(self.order) - 1

    def part_step(self, k: int) -> int:
        """The first step of part `k`'s batch op."""
        return self.step[self.count + k]


def _fused_schedule(
    ops: Sequence[Operation], parts: Sequence[Decision], position: Mapping[Operation, int]
) -> _Schedule | None:
    """The order the fused block runs in: the stable topological order by
    original position (None on a cycle)."""
    count = len(ops)
    part_of: dict[Operation, int] = {}
    for k, decision in enumerate(parts):
        for member in decision.members:
            part_of[member] = k

    def node_of(op: Operation) -> int:
        k = part_of.get(op)
        return position[op] if k is None else count + k

    packs = count + len(parts)
    nodes = packs + len(parts)
    part_keys = [max(position[m] for m in d.members) for d in parts]
    key = [*range(count), *part_keys, *part_keys]
    present = [op not in part_of for op in ops] + [True] * (2 * len(parts))
    users: list[list[int]] = [[] for _ in range(nodes)]
    missing = [0] * nodes
    for k in range(len(parts)):
        users[packs + k].append(count + k)
        missing[count + k] += 1
    for op in ops:
        me = node_of(op)
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation) and owner in position:
                source = node_of(owner)
                if source != me:
                    users[source].append(me)
                    missing[me] += 1
    ready = [(key[v], v) for v in range(nodes) if present[v] and missing[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for u in users[v]:
            missing[u] -= 1
            if missing[u] == 0:
                heapq.heappush(ready, (key[u], u))
    if len(order) != sum(present):
        return None
    step = [0] * nodes
    for s, v in enumerate(order):
        step[v] = 3 * s
    return _Schedule(list(parts), count, packs, key, order, step)


def _read_steps(
    schedule: _Schedule,
    ops: Sequence[Operation],
    member_at: Mapping[SSAValue, tuple[int, int]],
    aliases: AliasAnalysis,
    dims: SymbolicDims | None,
) -> None:
    """Fill in the schedule's gathering joins and the step each alias class
    is last read at."""
    step, last, count = schedule.step, schedule.last, schedule.count
    for v in schedule.order:
        if v >= schedule.packs:
            continue
        if v < count:
            op = ops[v]
            gathered = _gathered_runs(op, member_at, dims) if member_at and is_join_op(op) else None
            if gathered is not None:
                schedule.gathers[v] = gathered
            early = gathered[1] if gathered is not None else ()
            for i, operand in enumerate(op.operands):
                root = aliases.find(operand)
                last[root] = max(last.get(root, 0), step[v] + (0 if i in early else 1))
            continue
        decision = schedule.parts[v - count]
        copied = decision.memory.copied  # type: ignore[union-attr]
        for member in decision.members:
            for i, operand in enumerate(member.operands):
                root = aliases.find(operand)
                last[root] = max(last.get(root, 0), step[v] + (0 if i in copied else 1))


def _allocations(
    schedule: _Schedule,
    ops: Sequence[Operation],
    aliases: AliasAnalysis,
    dims: SymbolicDims | None,
    returned: set[Operation],
) -> list[int]:
    """The change of the live bytes at each step of the schedule (and when
    each part's stack is freed, `stack_end`)."""
    step, last, count, packs = schedule.step, schedule.last, schedule.count, schedule.packs
    end = schedule.end
    delta = [0] * (end + 2)

    def hold(size: int, start: int, stop: int) -> None:
        if size:
            delta[start] += size
            delta[max(stop, start) + 1] -= size

    schedule.stack_end = [0] * len(schedule.parts)
    for v in schedule.order:
        s = step[v]
        if v >= packs:
            held = schedule.parts[v - packs].memory
            hold(held.input_copies, s + 1, step[v - len(schedule.parts)] + 1)  # type: ignore[union-attr]
            continue
        if v < count:
            size = allocated_bytes(ops[v], dims)
            free = max((last.get(aliases.find(r), s + 1) for r in ops[v].results), default=s + 1)
            hold(size, s + 1, free)
            if v in schedule.gathers:
                hold(schedule.gathers[v][0], s, s + 1)
            continue
        decision = schedule.parts[v - count]
        held = decision.memory
        assert held is not None
        free = max(
            (last.get(aliases.find(m.results[0]), s + 2) for m in decision.members if m not in returned),
            default=s + 2,
        )
        schedule.stack_end[v - count] = max(free, s + 2)
        hold(held.copies, s, s + 1)
        hold(held.scratch, s + 1, s + 1)
        hold(held.stack, s + 1, schedule.stack_end[v - count])
        hold(held.epilogue, s + 2, s + 2)
        hold(held.returned, s + 2, end)
    return delta


def _culprit(
    schedule: _Schedule, at: int, captured: LiveBytes, dims: SymbolicDims | None
) -> tuple[Decision | None, int]:
    """Who holds the peak (at step `at`): the part whose bytes live there,
    less what its members' own results would hold there unfused, are the
    most; with those bytes."""
    order, last, position = schedule.order, schedule.last, captured.position
    aliases = captured.aliases
    peak_key = schedule.key[order[at // 3]] if order else 0
    gathered_there: dict[int, int] = {}  # the gathers live at the peak, by the part they copy
    join = order[at // 3] if order else -1
    if join in schedule.gathers and at % 3 < 2:
        for k, size in schedule.gathers[join][2]:
            gathered_there[k] = gathered_there.get(k, 0) + size
    culprit, excess = None, 0
    for k, decision in enumerate(schedule.parts):
        held = decision.memory
        assert held is not None
        s = schedule.part_step(k)
        there = {s: held.copies, s + 1: held.copies + held.scratch, s + 2: held.epilogue}.get(at, 0)
        there += gathered_there.get(k, 0)
        there += held.input_copies if schedule.step[schedule.packs + k] + 1 <= at <= s + 1 else 0
        there += held.stack if s + 1 <= at <= schedule.stack_end[k] else 0
        there += held.returned if s + 2 <= at else 0
        for m in decision.members:
            result = m.results[0]
            if position[m] <= peak_key and last.get(aliases.find(result), -1) >= at:
                there -= _bytes(result, dims)
        if there > excess:
            culprit, excess = decision, there
    return culprit, excess


def _gathered_runs(
    join: Operation, member_at: Mapping[SSAValue, tuple[int, int]], dims: SymbolicDims | None
) -> tuple[int, set[int], list[tuple[int, int]]] | None:
    """What a cat or stack of members of fused parts copies before it runs,
    as `lower-batch`'s `CatOfMembers` rewrites it: each run of whole
    periods of interleaved parts (`periodic_run`: member k of part j at
    operand k*m + j) becomes one copy of the run (a stack of the moved
    stacks), unless that run is the join's only input (the copy is then
    the join's result). The bytes copied, the operand indices gathered
    (read by the copy, not the join) and (part, bytes) per run; None when
    nothing is gathered."""
    values = list(join.operands)
    runs: list[tuple[int, int]] = []  # (start, length)
    i = 0
    while i < len(values):
        run = _periodic_run(values, i, member_at)
        if run is None:
            i += 1
            continue
        runs.append((i, run))
        i += run
    if not runs or (len(runs) == 1 and runs[0] == (0, len(values))):
        return None
    copied, indices, by_part = 0, set(), []
    for start, length in runs:
        for index in range(start, start + length):
            size = _bytes(values[index], dims)
            copied += size
            indices.add(index)
            by_part.append((member_at[values[index]][0], size))
    return copied, indices, by_part


def _periodic_run(values: Sequence[SSAValue], start: int, member_at: Mapping[SSAValue, tuple[int, int]]) -> int | None:
    """The length of the run of whole periods of interleaved fused parts
    that begins at `values[start]` (`lower_batch.periodic_run` on the
    plan's parts: each period reads member k of m distinct parts, from
    member 0 on); None when it is shorter than two values."""
    parts: list[int] = []
    for value in values[start:]:
        where = member_at.get(value)
        if where is None or where[1] != 0 or where[0] in parts:
            break
        parts.append(where[0])
    m = len(parts)
    if m == 0:
        return None
    n = 0
    while start + (n + 1) * m <= len(values) and all(
        member_at.get(values[start + n * m + j]) == (parts[j], n) for j in range(m)
    ):
        n += 1
    return n * m if n * m >= 2 else None
