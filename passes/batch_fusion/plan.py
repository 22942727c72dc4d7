"""The plan of `batch-fusion`: which candidates group with which, and which
groups fuse, chosen over the whole block before anything is rewritten.

The search (`optimus_ir.analysis.independent_sets`) picks, per key, sets of
members no two of which depend on each other, such that fusing all the sets
at once leaves the graph acyclic; each group is then priced producers first
(`optimus_ir.analysis.fusion_pricing`), split or cut into chunks where that prices
better, and the plans of the shared-input linears' alternatives compared
(`choose_plan`). Last the plan is cut down to the memory budget
(`fit_memory`, on `memory.simulate_plan`).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

import attrs
from xdsl.ir import Operation

from optimus_ir.analysis.independent_sets import SearchResult, find_independent_groups
from optimus_ir.analysis.cost_model import GroupEstimate, format_bytes
from optimus_ir.analysis.live_bytes import tensor_bytes
from optimus_ir.analysis.fusion_pricing import Provenance, estimate_group, operand_slots, slot_source
from optimus_ir.passes.batch_fusion.grouping import (
    Candidates,
    GroupKey,
    SharedInputSet,
    member_names,
)
from optimus_ir.passes.batch_fusion.memory import part_memory, simulate_plan
from optimus_ir.passes.batch_fusion.records import Decision, Plan, PlanningContext


_MAX_FAMILY_TRIALS = 16
"""Families (see `choose_plan`) tried one by one at most; beyond that only
the two uniform plans are compared, so the choice costs a bounded number of
linear-time evaluations of the block."""

_MAX_CHAIN_TRIALS = 16
"""Declined groups tried fused for their consumers (`_fuse_through_chains`)
at most, each one linear-time evaluation of the block."""

CHAIN_KINDS = frozenset({"layer_norm", "pointwise", "softmax"})
"""The group kinds fused at a loss for their consumers: memory-bound ops,
whose loss fused is a few more passes over the stack, while unfused their
results are copied into stacks again, forward and (as the unbinds' and
stacks' backwards) backward. Not the linears: a matmul group that loses
fused loses in arithmetic, which dominates the step; deepctr MMOE's
training step fused a 4-member shared-input linear priced ~65 us behind
its members for a block ~5 us ahead, and ran at 0.87-0.94x of the plan
without it (three processes, 2026-12-07)."""


def choose_plan(context: PlanningContext, candidates: Candidates) -> Plan:
    """The fusion plan of a block (`context`) among its `candidates`: the
    one the cost model expects to gain most (`_plan_by_gain`, then
    `_fuse_through_chains`), then cut down to the memory budget
    (`fit_memory`; `context.memory` None: no budget)."""
    plan = _fuse_through_chains(context, _plan_by_gain(context, candidates))
    if context.memory is None or context.memory.budget.unlimited:
        return plan
    return fit_memory(plan, context)


def _plan_by_gain(context: PlanningContext, candidates: Candidates) -> Plan:
    """The fusion plan of a block, chosen over the whole block by the cost model.

    Linears that read one input can fuse on it (`linear_shared_input`: one
    linear over their concatenated weights, two members of a highway branch
    `g(x) * gate(t(x))`) or each with the same-shape linears of other
    inputs (`batch.linear` over a stack of the inputs: the `g` and `t` of all
    branches). Which pays is a property of the whole graph, not of a group:
    a batched linear's result stays batched for the gate activation and the mul that
    read it (they read the stack in place), while a shared-input pair's
    results are restacked by whoever groups them next. So each choice is
    priced as the plan it makes -- the search over the whole block, every
    group decided producers first with what its operands' groups left
    behind -- and the plan with the higher total gain wins.

    The shared-input sets are chosen per *family*: the sets whose members
    would group together as plain linears (one plain key) at one depth of
    the graph (their first member's longest-path level): level by level.
    Plans compared: all sets on their shared input (the first and
    preferred on ties), all sets across, then from the better of the two
    each family flipped in turn (first-appearance order), kept when the
    total gain grows; at most `_MAX_FAMILY_TRIALS` families are tried one
    by one. Each plan costs one search and one pricing pass, linear in the
    block, and the result depends only on the block (families and sets are
    ordered by position)."""
    ops = context.ops
    base = _evaluate(context, list(candidates.keys))
    if context.model is None or not candidates.shared_sets:
        return base
    level = _levels(context.dag)
    families: dict[tuple[GroupKey, int], list[SharedInputSet]] = {}
    for shared_set in candidates.shared_sets:
        family = (shared_set.cross_keys[0], level[shared_set.members[0]])
        families.setdefault(family, []).append(shared_set)
    family_sets = list(families.values())

    def keys_for(across: Sequence[bool]) -> list[GroupKey | None]:
        keys = list(candidates.keys)
        for flip, sets in zip(across, family_sets):
            if flip:
                for shared_set in sets:
                    for i, cross in zip(shared_set.members, shared_set.cross_keys):
                        keys[i] = cross
        return keys

    best, best_across = base, [False] * len(family_sets)
    everything = [True] * len(family_sets)
    plan = _evaluate(context, keys_for(everything))
    if _better(plan, best):
        best, best_across = plan, everything
    if 1 < len(family_sets) <= _MAX_FAMILY_TRIALS:
        for f in range(len(family_sets)):
            trial = list(best_across)
            trial[f] = not trial[f]
            plan = _evaluate(context, keys_for(trial))
            if _better(plan, best):
                best, best_across = plan, trial
    for flip, sets in zip(best_across, family_sets):
        if flip:
            first = ops[sets[0].members[0]]
            count = sum(len(s.members) for s in sets)
            inputs = "one shared input" if len(sets) == 1 else f"{len(sets)} shared inputs"
            best.notes.append((
                first,
                f"batch-fusion: plan: {count} torch.linear{member_names([ops[s.members[0]] for s in sets])} "
                f"reading {inputs} group as plain linears over stacked inputs, not on their shared "
                f"inputs: the whole block's estimated gain ~{best.gain_s * 1e6:.1f} us against "
                f"~{base.gain_s * 1e6:.1f} us",
            ))
    return best


def _fuse_through_chains(context: PlanningContext, plan: Plan) -> Plan:
    """`plan`, with the declined groups whose fusion pays through their
    consumers fused too.

    Each group is priced alone, with where its operands lie: a group
    declined because it costs more fused than its members (a layer norm's
    affine step over the stack) leaves its results apart, so the group that
    reads them (its activation) must copy them into a stack and is declined
    too, and so on down the tower -- while fused, its consumers read its
    stack without a copy and the chain gains more than the one group loses.
    So each declined group of `CHAIN_KINDS` whose results feed another
    search group is tried fused at a loss (producers first), and where that alone does not pay,
    together with the declined groups downstream of it (its consumers that
    the plan declines, theirs, and so on: a chain that pays only whole).
    Each trial prices the whole block again, and is kept when the block's
    total estimated gain grows; at most `_MAX_CHAIN_TRIALS` trials. Each
    kept group's remark says what it loses alone and what the block gains.
    The result depends only on the block (the trials go in the plan's order)."""
    if context.model is None or not context.options.chains:
        return plan
    ops = context.ops
    group_of = {ops[i]: g for g, ids in enumerate(plan.search.groups) for i in ids}
    first_of = [ops[ids[0]] for ids in plan.search.groups]
    candidates: list[Decision] = []
    seen: set[Operation] = set()
    for decision in plan.decisions:
        group = decision.group
        if decision.verdict != "unprofitable" or group is None or group in seen:
            continue
        seen.add(group)
        if decision.key.kind in CHAIN_KINDS and _feeds_another_group(decision.members, group_of):
            candidates.append(decision)
    best, trials = plan, 0
    for decision in candidates:
        group = decision.group
        assert group is not None
        if group in best.forced or trials >= _MAX_CHAIN_TRIALS:
            continue
        declined = {d.group for d in best.decisions if d.verdict == "unprofitable" and d.key.kind in CHAIN_KINDS}
        chain = _declined_downstream(group, plan.search.groups, ops, group_of, first_of, declined)
        for forced in ({group}, chain) if len(chain) > 1 else ({group},):
            if trials >= _MAX_CHAIN_TRIALS:
                break
            trials += 1
            trial = _evaluate(context, best.keys, forced=best.forced | forced, search=best.search)
            if _better(trial, best):
                best = trial
                break
    if best is plan:
        return plan
    _carry_notes(plan, best)
    at_loss = {d.group for d in best.decisions if _fused_at_loss(d, best.forced)}
    _note_forced(best, FUSED_FOR_CONSUMERS_NOTE.format(
        with_us=best.gain_s * 1e6, without_us=plan.gain_s * 1e6, count=len(at_loss)
    ))
    return best


def _carry_notes(old: Plan, new: Plan) -> None:
    """Give `new`, evaluated again from `old`'s keys, the notes of how `old`
    was chosen; those its own evaluation made again are not repeated."""
    made = {(id(op), text) for op, text in new.notes}
    new.notes.extend((op, text) for op, text in old.notes if (id(op), text) not in made)


def _declined_downstream(
    group: Operation,
    groups: Sequence[Sequence[int]],
    ops: Sequence[Operation],
    group_of: Mapping[Operation, int],
    first_of: Sequence[Operation],
    declined: set[Operation | None],
) -> frozenset[Operation]:
    """`group` and the declined search groups (by first member, of
    `CHAIN_KINDS`: `declined` holds no other) that read its members'
    results, theirs, and so on."""
    chain = {group}
    todo = [group_of[group]]
    while todo:
        for i in groups[todo.pop()]:
            for result in ops[i].results:
                for use in result.uses:
                    g = group_of.get(use.operation)
                    if g is None or first_of[g] in chain or first_of[g] not in declined:
                        continue
                    chain.add(first_of[g])
                    todo.append(g)
    return frozenset(chain)


def _fused_at_loss(decision: Decision, forced: frozenset[Operation]) -> bool:
    """A fused part of a forced group that prices at a loss alone."""
    return (
        decision.verdict == "fuse" and decision.group in forced
        and decision.estimate is not None and not decision.estimate.profitable
    )


def _note_forced(plan: Plan, note: str) -> None:
    """Give `note` to every part the plan fuses at a loss (`_fused_at_loss`)."""
    plan.decisions[:] = [
        attrs.evolve(d, note=note) if _fused_at_loss(d, plan.forced) else d for d in plan.decisions
    ]


FUSED_FOR_CONSUMERS_NOTE = (
    "fused for its consumers, at a loss alone: they read its stack instead of copying its members' results; "
    "the block's estimated gain ~{with_us:.1f} us with the {count} group(s) so fused, ~{without_us:.1f} us without"
)
"""The note of a part fused at an estimated loss because the block gains
with it (`_fuse_through_chains`)."""


def _feeds_another_group(members: Sequence[Operation], group_of: Mapping[Operation, int]) -> bool:
    """Some member's result is read by a member of another search group."""
    own = group_of.get(members[0])
    return any(
        group_of.get(use.operation, own) != own for member in members for result in member.results for use in result.uses
    )


def _better(plan: Plan, than: Plan) -> bool:
    """`plan` gains clearly more than `than` (a relative margin, so that
    rounding in the sums never flips a tie)."""
    return plan.gain_s > than.gain_s + 1e-9 + 1e-6 * abs(than.gain_s)


def _levels(dag: Sequence[Sequence[int]]) -> list[int]:
    """Each node's longest-path depth from the sources of `dag`."""
    level = [0] * len(dag)
    for i, preds in enumerate(dag):
        for p in preds:
            if level[p] >= level[i]:
                level[i] = level[p] + 1
    return level


def _evaluate(
    context: PlanningContext,
    keys: list[GroupKey | None],
    limits: Mapping[Operation, tuple[int, str]] | None = None,
    forced: frozenset[Operation] = frozenset(),
    search: SearchResult | None = None,
) -> Plan:
    """The plan the keys `keys` make: the search's groups, each decided
    producers first (`_choose_parts`), on the unrewritten block. A fused
    part's members' results are recorded as one stack, as the results of its
    `batch.unpack` are when it is rewritten (a returned member's consumers
    read its copy, not the stack), so later groups see where their operands
    lie exactly as the rewrite leaves them. `limits` (from `fit_memory`):
    the most members a part of the search group whose first member is the
    key may have (and the remark of a member declined for it); parts are cut into chunks of at most that many, and
    members left in a chunk below min-size (all of them, for a limit below
    it) are declined for memory. `context.memory`: the captured block's
    live bytes (each part's `PartMemory` and its estimate's `extra_live_bytes`)."""
    ops, options, memory, returned = context.ops, context.options, context.memory, context.returned
    if search is None:
        search = find_independent_groups(context.dag, keys, min_size=options.min_size, max_size=options.max_size)
    result = search
    provenance = Provenance(
        constant_parameters=options.constant_parameters,
        checked_parameters=options.constant_parameters and options.checked_parameters,
        autograd_parameters=options.constant_parameters and options.checked_parameters and options.autograd_parameters,
    )
    group_of = {ops[i]: g for g, ids in enumerate(result.groups) for i in ids}
    decisions: list[Decision] = []
    notes: list[tuple[Operation, str]] = []
    gain = 0.0
    for group_ids in producers_first(result.groups, ops):
        members = [ops[i] for i in group_ids]
        key = keys[group_ids[0]]
        first = members[0]
        assert key is not None
        if all(slot_source(v, provenance) == "shared" for v in operand_slots(key.kind, members)):
            decisions.append(Decision(key, members, None, "cse", first))
            continue
        pricing = _GroupPricing(context, key, provenance, group_of)
        parts = _choose_parts(pricing, members)
        fresh_note = _fresh_pages_note(pricing, members, [part for part, _ in parts])
        if fresh_note:
            notes.append((first, fresh_note))
        limited = limits.get(first) if limits else None
        if limited is not None:
            limit, note = limited
            parts, declined = _within_limit(pricing, parts, limit)
            for part in declined:
                decisions.append(Decision(key, part, None, "memory", first, note=note))
        for part, estimate in parts:
            if estimate is not None and not estimate.profitable and first not in forced:
                free = pricing.with_free_parameter_stacks(part)
                note = "" if free is None else FREE_STACKS_NOTE.format(gain_us=free.gain_s * 1e6)
                gain_if_free = 0.0 if free is None else free.gain_s
                decisions.append(
                    Decision(key, part, estimate, "unprofitable", first, note=note, free_stacks_gain_s=gain_if_free)
                )
                continue
            part = pricing.in_source_order(part)
            held = None
            if memory is not None and _stacks_results(key.kind, part):
                held = part_memory(key.kind, part, provenance, context.dims, returned)
                if estimate is not None:
                    extra = held.extra_over(part, memory.captured, context.dims)
                    estimate = attrs.evolve(estimate, extra_live_bytes=extra)
            if _stacks_results(key.kind, part):
                provenance.record([None if m in returned else m.results[0] for m in part])
            decisions.append(Decision(key, part, estimate, "fuse", first, held))
            if estimate is not None:
                gain += estimate.gain_s
    plan = Plan(keys, result, decisions, gain, forced=forced)
    plan.notes.extend(notes)
    return plan


def _fresh_pages_note(pricing: _GroupPricing, members: Sequence[Operation], parts: Sequence[Sequence[Operation]]) -> str:
    """The remark of a group cut in chunks because its one fused result
    would be allocated in fresh pages on every call and its chunks' would
    not (`CostModel.fresh_pages_seconds`); "" for any other group."""
    model = pricing.context.model
    if model is None or len(parts) < 2 or model.fresh_allocation_bytes <= 0:
        return ""
    result = tensor_bytes(members[0].results[0], pricing.context.dims)
    whole = model.fresh_pages_seconds(result * len(members))
    if whole <= 0 or any(model.fresh_pages_seconds(result * len(part)) > 0 for part in parts):
        return ""
    return (
        f"batch-fusion: {len(members)} {pricing.key.op_name}{member_names(members)} cut in {len(parts)} chunks: "
        f"one fused result of {format_bytes(result * len(members))} would take fresh pages from the allocator "
        f"on every call (from {format_bytes(model.fresh_allocation_bytes)} on; ~{whole * 1e6:.1f} us), "
        "its chunks' do not"
    )


FREE_STACKS_NOTE = (
    "it pays only without the per-call copy of its parameters: parameter_stacks='shared' "
    "(or freeze=True, for inference) would fuse it, gain ~{gain_us:.1f} us"
)
"""The note of an unprofitable part that pays once its parameter stacks are
free (the remark says which option, `DECLINED_FOR_COPIES` counts it)."""


@attrs.frozen(eq=False)
class _GroupPricing:
    """How the parts of one search group are priced while a plan is
    evaluated: the block's cost model and options, the group's key, where
    the earlier parts left their results (`provenance`) and which search
    group each member is in (`group_of`)."""

    context: PlanningContext
    key: GroupKey
    provenance: Provenance
    group_of: dict[Operation, int] | None

    @property
    def smallest(self) -> int:
        """The fewest members a fused part may have (min-size, at least 2)."""
        return max(self.context.options.min_size, 2)

    def price(self, members: Sequence[Operation]) -> GroupEstimate | None:
        """The estimate of fusing `members` as one part (None without a cost model)."""
        return None if self.context.model is None else self.estimate(members)

    def estimate(self, members: Sequence[Operation]) -> GroupEstimate:
        """The estimate of fusing `members` as one part (there is a cost model)."""
        context = self.context
        assert context.model is not None
        return estimate_group(
            context.model, self.key.kind, members, self.provenance, self.group_of, context.dims,
            target=context.options.target,
        )

    def with_free_parameter_stacks(self, members: Sequence[Operation]) -> GroupEstimate | None:
        """The estimate of `members` were their stacks of parameters free
        per call (`parameter_stacks="shared"`, `freeze=True`), where that
        makes the part pay and the stacks are not free already; else None."""
        context = self.context
        if context.model is None or self.provenance.constant_parameters:
            return None
        free = attrs.evolve(
            self.provenance, constant_parameters=True, checked_parameters=True,
            autograd_parameters=context.options.autograd_parameters,
        )
        estimate = estimate_group(
            context.model, self.key.kind, members, free, self.group_of, context.dims, target=context.options.target
        )
        return estimate if estimate.profitable else None

    def in_source_order(self, members: Sequence[Operation]) -> list[Operation]:
        """`members` in the order their stacked operands lie (`reorder_by_source`)."""
        return reorder_by_source(self.key.kind, members, self.provenance)


def _within_limit(
    pricing: _GroupPricing,
    parts: list[tuple[list[Operation], GroupEstimate | None]],
    limit: int,
) -> tuple[list[tuple[list[Operation], GroupEstimate | None]], list[list[Operation]]]:
    """`parts` with every part of more than `limit` members cut into the
    fewest chunks of consecutive members (in source order: each reads one
    slice) of at most `limit`, each priced again; and the members declined
    (a chunk below min-size; every part, for a limit below it)."""
    kept: list[tuple[list[Operation], GroupEstimate | None]] = []
    declined: list[list[Operation]] = []
    smallest = pricing.smallest
    for part, estimate in parts:
        if len(part) <= limit:
            kept.append((part, estimate))
            continue
        if limit < smallest:
            declined.append(part)
            continue
        ordered = pricing.in_source_order(part)
        count = -(-len(ordered) // limit)
        size = -(-len(ordered) // count)
        for i in range(0, len(ordered), size):
            chunk = ordered[i : i + size]
            if len(chunk) < smallest:
                declined.append(chunk)
                continue
            kept.append((chunk, pricing.price(chunk)))
    return kept, declined


_MAX_MEMORY_ROUNDS = 48
"""Parts halved or declined at most, for one block's budget: each round is
one plan evaluation and one simulation (linear-ish in the block)."""


def fit_memory(plan: Plan, context: PlanningContext) -> Plan:
    """`plan`, cut down until its fused schedule holds at most the budget
    of `context.memory` (`simulate_plan`; a context without one is a
    ValueError): while the peak is over it, the part holding the most
    beyond its members there is halved (its search group's parts are cut
    into chunks of at most half its size, `_evaluate`'s `limits`) or, below
    two members (min-size), declined, and the plan is evaluated again.
    Stops when nothing fused holds more at the peak than unfused (a budget
    below what the unfused schedule needs there cannot be met by declining).
    Each group decided so gets a remark with "memory decided": the peak it
    would have made, the budget, and the peak after."""
    memory = context.memory
    if memory is None:
        raise ValueError("fit_memory: the planning context has no memory budget")
    if not any(d.verdict == "fuse" for d in plan.decisions):
        return plan  # nothing fused: the captured schedule itself
    ops, dims, returned = context.ops, context.dims, context.returned
    limit = memory.limit
    limits: dict[Operation, tuple[int, str]] = {}
    trigger: dict[Operation, int] = {}
    budget_text = memory.budget.describe(memory.captured.peak)
    current = plan
    simulated = simulate_plan(ops, current.decisions, memory.captured, dims, returned)
    for _ in range(_MAX_MEMORY_ROUNDS):
        if simulated.peak <= limit or simulated.culprit is None:
            break
        culprit = simulated.culprit
        group = culprit.group
        assert group is not None
        trigger.setdefault(group, simulated.peak)
        size = (len(culprit.members) + 1) // 2  # two chunks of it (a part of 2: declined)
        size = size if size >= max(context.options.min_size, 2) and size < len(culprit.members) else 0
        note = (
            f"memory decided: fused, the call would hold {_mib(trigger[group])} live at once, {budget_text}"
        )
        limits[group] = (size, note)
        current = _evaluate(context, current.keys, limits, current.forced, search=current.search)
        simulated = simulate_plan(ops, current.decisions, memory.captured, dims, returned)
    if not limits:
        return plan
    _carry_notes(plan, current)
    for group, (size, _) in limits.items():
        if size == 0:
            continue  # each declined part has its own remark
        fused = [d for d in current.decisions if d.group is group and d.verdict == "fuse"]
        everything = [m for d in current.decisions if d.group is group for m in d.members]
        key = fused[0].key if fused else None
        if key is None:
            continue
        current.notes.append((
            group,
            f"batch-fusion: {len(everything)} {key.op_name}{member_names(everything)} fused in {len(fused)} chunks: "
            f"memory decided: as one group the call would hold {_mib(trigger[group])} live at once, "
            f"{budget_text}; in chunks the plan holds {_mib(simulated.peak)}",
        ))
    after = f"; declined, the plan holds {_mib(simulated.peak)}"
    forced_note = next((d.note for d in plan.decisions if _fused_at_loss(d, plan.forced)), "")
    if forced_note:
        _note_forced(current, forced_note)
    current.decisions[:] = [
        attrs.evolve(d, note=d.note + after) if d.verdict == "memory" else d for d in current.decisions
    ]
    return current


def _mib(count: float) -> str:
    """`12.00 MiB`: the remarks' unit for memory."""
    return f"{count / 2**20:.2f} MiB"


def _stacks_results(kind: str, members: Sequence[Operation]) -> bool:
    """Whether `fuse_group` leaves the members' results as one stack (every kind
    but a grouped linear of different shapes)."""
    if kind != "grouped-linear":
        return True
    return len({(m.input.type, m.weight.type) for m in members}) == 1  # type: ignore[attr-defined]


def producers_first(groups: Sequence[Sequence[int]], ops: Sequence[Operation]) -> list[Sequence[int]]:
    """`groups` ordered so that a group comes after every group whose members
    produce its members' operands (ties by first member): deciding a group
    then knows where all its fused operands lie."""
    group_of: dict[Operation, int] = {}
    for g, members in enumerate(groups):
        for i in members:
            group_of[ops[i]] = g
    needs: list[set[int]] = [set() for _ in groups]
    for g, members in enumerate(groups):
        for i in members:
            for operand in ops[i].operands:
                producer = group_of.get(operand.owner)  # type: ignore[arg-type]
                if producer is not None and producer != g:
                    needs[g].add(producer)
    users: list[list[int]] = [[] for _ in groups]
    for g, deps in enumerate(needs):
        for d in deps:
            users[d].append(g)
    waiting = [len(deps) for deps in needs]
    ready = [g for g in range(len(groups)) if waiting[g] == 0]
    heapq.heapify(ready)
    order: list[Sequence[int]] = []
    while ready:
        g = heapq.heappop(ready)
        order.append(groups[g])
        for u in users[g]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(groups):
        raise AssertionError("batch-fusion: the groups depend on each other in a cycle (a bug in the search)")
    return order


def _choose_parts(
    pricing: _GroupPricing, members: list[Operation]
) -> list[tuple[list[Operation], GroupEstimate | None]]:
    """The group as the search found it, split by the earlier stacks its
    members come from (when the cost model prefers several copy-free groups
    to one that restacks: regrouping from one level to the next), or cut in
    2, 4, 8, ... chunks of consecutive members (when smaller fused ops run
    faster; not for the Inductor target, where every chunk's pieces are
    joined again by generated code), whichever the cost model prices best;
    each part with its estimate (None without a cost model)."""
    if pricing.context.model is None:
        return [(members, None)]
    whole = pricing.estimate(members)
    min_size = pricing.context.options.min_size
    best: list[tuple[list[Operation], GroupEstimate | None]] = [(members, whole)]
    best_gain = whole.gain_s
    parts = split_by_source(pricing.key.kind, members, pricing.provenance)
    if parts is not None and len(parts) > 1:
        fusable = [p for p in parts if len(p) >= min_size]
        estimates = [pricing.estimate(p) for p in fusable]
        gain = sum(max(e.gain_s, 0.0) for e in estimates)
        if gain > best_gain:
            best, best_gain = list(zip(fusable, estimates)), gain
    # Chunks: on a CPU a fused op over hundreds of members streams its data
    # from memory while each member's op worked in cache; a few chunks of
    # consecutive members (in source order, so each reads one slice) may beat
    # one group. The kernel curves say.
    if pricing.context.options.target == "inductor":
        # Inductor generates one copy loop per piece where chunked results
        # are joined again, and compiles it: at 1024 towers the chunks made
        # a 520-piece join, Inductor took 54.9 s against 31.6 s for whole
        # groups, and the compiled call ran 25.2 ms against 23.5 ms.
        return best
    ordered = pricing.in_source_order(members)
    count = 2
    while len(members) // count >= pricing.smallest:
        size = -(-len(members) // count)
        chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
        estimates = [pricing.estimate(c) for c in chunks]
        gain = sum(e.gain_s for e in estimates)
        if gain > best_gain * 1.05 and all(len(c) >= min_size for c in chunks):
            best, best_gain = list(zip(chunks, estimates)), gain
        count *= 2
    return best


def reorder_by_source(
    kind: str, members: Sequence[Operation], provenance: Provenance
) -> list[Operation]:
    """`members` in the order their first stacked operand lies in earlier
    stacks (stack by stack, member by member): a member's position in a
    batch op is free, and in this order that operand is a few contiguous
    slices of the stacks (one cat) instead of an interleaving (an unbind and
    a stack), and the results come out grouped like their sources."""
    for values in operand_slots(kind, members):
        if slot_source(values, provenance) in ("shared", "parameters"):
            continue
        known = [provenance.members.get(v) for v in values]
        if not any(known):
            continue

        def position(i: int) -> tuple[int, int, int]:
            where = known[i]
            return (0, where[0], where[1]) if where is not None else (1, i, 0)

        order = sorted(range(len(members)), key=position)
        return [members[i] for i in order]
    return list(members)


def split_by_source(
    kind: str, members: Sequence[Operation], provenance: Provenance
) -> list[list[Operation]] | None:
    """The members partitioned by the earlier stack their first stacked
    operand comes from, when it comes from several (each part then reads its
    stack without a copy); None otherwise."""
    for values in operand_slots(kind, members):
        if slot_source(values, provenance) != "stacks":
            continue
        parts: dict[int, list[Operation]] = {}
        for member, value in zip(members, values):
            parts.setdefault(provenance.members[value][0], []).append(member)
        return list(parts.values())
    return None
