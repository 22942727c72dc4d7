"""The records of a `batch-fusion` plan: each group's decision, the plan of
a block, what planning a block reads, and the memory a fused part and the
fused schedule hold."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from attrs.validators import ge, in_
from xdsl.ir import Operation

from optimus_ir.analysis.independent_sets import SearchResult
from optimus_ir.analysis.live_bytes import LiveBytes
from optimus_ir.analysis.live_bytes import tensor_bytes as _bytes
from optimus_ir.analysis.symbolic_dims import SymbolicDims
from optimus_ir.analysis.cost_model import CostModel, GroupEstimate, MemoryBudget
from optimus_ir.passes.batch_fusion.grouping import FusionSettings, GroupKey


VERDICTS = ("fuse", "unprofitable", "cse", "memory")
"""What the plan does with a group (`Decision.verdict`)."""


@attrs.frozen
class Decision:
    """One group (or part of a search group) and what to do with it."""

    key: GroupKey
    members: list[Operation]
    """In the order the batch op takes them (`reorder_by_source`)."""
    estimate: GroupEstimate | None
    verdict: str = attrs.field(validator=in_(VERDICTS))
    """"fuse", "unprofitable", "cse" (the members compute one value) or
    "memory" (declined to stay within the memory budget)."""
    group: Operation | None = None
    """The first member of the search group the part is of (the key of
    `_evaluate`'s `limits`)."""
    memory: PartMemory | None = None
    """What the fused part allocates (fused parts that stack their results)."""
    note: str = ""
    """Why a "memory" verdict, for its remark; on an "unprofitable" one,
    what would make it pay (`plan.FREE_STACKS_NOTE`); on a "fuse" one
    priced at a loss, why it fuses (`plan.FUSED_FOR_CONSUMERS_NOTE`)."""
    free_stacks_gain_s: float = 0.0
    """For an "unprofitable" part that would pay with its parameter stacks
    free per call: the gain it would then bring (seconds per call)."""


@attrs.frozen
class Plan:
    """The groups of a block and their decisions, in the order they fuse
    (producers first), with the gain the cost model expects of them all."""

    keys: list[GroupKey | None]
    search: SearchResult
    decisions: list[Decision]
    gain_s: float
    """The sum of the fused parts' estimated gains (0 without a model)."""
    notes: list[tuple[Operation, str]] = attrs.field(factory=list)
    """Remarks on how the plan was chosen (shared-input linears grouped
    across their sets)."""
    forced: frozenset[Operation] = frozenset()
    """The search groups (by first member) fused although they price at a
    loss alone, because the block gains with them (`plan._fuse_through_chains`)."""

    def groups_in_parts(self) -> int:
        """How many search groups fuse as several parts (chunks, or parts by
        the earlier stacks their members come from)."""
        parts: dict[Operation, int] = {}
        for decision in self.decisions:
            if decision.verdict == "fuse" and decision.group is not None:
                parts[decision.group] = parts.get(decision.group, 0) + 1
        return sum(1 for count in parts.values() if count > 1)


@attrs.frozen
class BlockMemory:
    """The memory budget of one block and the block's live bytes as
    captured (before anything fuses)."""

    budget: MemoryBudget
    captured: LiveBytes
    dims: SymbolicDims | None

    @property
    def limit(self) -> float:
        """The bytes one call of the fused block may hold at once."""
        return self.budget.limit(self.captured.peak)


@attrs.frozen(eq=False)
class PlanningContext:
    """What planning one block's fusion reads, the same for every plan
    compared (`plan.choose_plan`, `plan.fit_memory`): the block's ops in
    order, their dependences, the pricing and the pass's options."""

    ops: Sequence[Operation]
    dag: list[list[int]]
    """The ops' predecessors, by index (`block_dag`)."""
    model: CostModel | None
    """None: every group the search finds fuses, unpriced."""
    options: FusionSettings
    dims: SymbolicDims | None
    returned: set[Operation]
    """The candidates whose results (or views of them) the graph returns."""
    memory: BlockMemory | None = None
    """The block's memory budget and live bytes as captured (None: no budget)."""


@attrs.frozen
class PartMemory:
    """What one fused part allocates when its batch op runs (eager
    lowering, `lower-batch`), beyond views: the inputs of the estimate of
    the fused schedule's live bytes (`simulate_plan`)."""

    stack: int = attrs.field(validator=ge(0))
    """The stacked results: held while any (non-returned) member's result
    is read."""
    copies: int = attrs.field(validator=ge(0))
    """The stacked operand copies, made before the batch op and freed
    after it: every stack but a slice of one earlier stack, a strided view
    of one tensor, a broadcast, and -- under constant parameters -- a stack
    of parameters (computed once and held between calls, not per call)."""
    copied: frozenset[int]
    """The member operand indices those copies are of (their sources are
    last read by the copy, before the batch op runs)."""
    scratch: int = attrs.field(validator=ge(0))
    """Held beside the copies and the result while the batch op runs: a
    batched layer norm's mean and rstd."""
    epilogue: int = attrs.field(validator=ge(0))
    """Held beside the result just after the batch op: a batched layer
    norm's affine step (`* weight`, `+ bias`) writes a new stack while the
    last one lives."""
    returned: int = attrs.field(validator=ge(0))
    """The copies of members returned by the graph (held to the end)."""
    input_copies: int = attrs.field(default=0, validator=ge(0))
    """The stacked copies of graph inputs and parameters (per call, unless
    constant): their packs depend on nothing the fusion moves, so they stay
    where the group's last member was and are held from there until the
    batch op runs (which the members' other operands may delay)."""

    def extra_over(self, members: Sequence[Operation], captured: LiveBytes, dims: SymbolicDims | None) -> int:
        """The part's bytes beyond what its members' results held at the
        part's point (its last member) in the captured schedule
        (`GroupEstimate.extra_live_bytes`). Local: the members' operands
        the fused op keeps alive longer, and the ops the fusion moves, are
        what `simulate_plan` adds."""
        point = max(captured.position[m] for m in members)
        held = sum(_bytes(m.results[0], dims) for m in members if captured.held_at(m.results[0], point))
        extra = self.stack + self.copies + self.input_copies + max(self.scratch, self.epilogue) + self.returned
        return extra - held


@attrs.frozen
class Simulated:
    """The live bytes of a plan's fused schedule (`simulate_plan`)."""

    peak: int = attrs.field(validator=ge(0))
    """The most tensor bytes one call holds at once."""
    culprit: Decision | None
    """The fused part holding the most beyond what its members would hold
    unfused at the peak (None: no part holds more there)."""
    excess: int = attrs.field(validator=ge(0))
    """That part's bytes beyond its members' at the peak."""
