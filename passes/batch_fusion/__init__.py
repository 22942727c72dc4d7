"""`batch-fusion`: N independent same-kind ops become one `batch` op.

The horizontal fusion of Optimus. For every candidate op (a `torch` dialect
op whose declaration names a fusion kind, `OpFacts.fusion`: linear, norm,
unary and binary pointwise, softmax over the last dim; no op is named here
but where its rewrite is its own, the linear and the layer norm) the pass
computes a *grouping key* -- everything that changes what the op computes:
its kind, the shape, dtype and device of every operand, every property
(eps, alpha, bounds, replacement values, approximation modes, ...; scalars by Python type and exact bits, `ScalarKey`: `2`, `2.0` and
`True` differ, so do `0.0` and `-0.0`, and NaN equals NaN), the result's
dtype, and the barrier-free segment of the block it lies in. The search
(`optimus_ir.analysis.independent_sets`) picks, per key, sets of members no
two of which depend on each other, over the whole graph, such that fusing
all the sets at once leaves the graph acyclic. A cost model
(`optimus_ir.analysis.cost_model`) then decides per group whether fusing pays on
the device: the ops and launches saved against the bytes any remaining
copy moves. Every group is fused or left alone with a remark saying why
(`optimus-opt --remarks`, `OptimizeReport.remarks`).

The plan is chosen over the whole block (`choose_plan`): linears that read
one input can group on it (`linear-shared-input`) or with the same-shape
linears of other inputs (`linear`, over stacked inputs; the highway
`g[i](x[i]) * gate(t[i](x[i]))` (gate: a pointwise activation): 2-wide groups inside each branch
against 2N-wide groups across them). Each alternative is searched and
priced as a whole plan -- including that consumers of a batched result read
its stack in place -- level by level, and the plan the cost model expects
to gain most is rewritten; nothing is rewritten before the choice.

A fused group becomes `batch.pack` of each member operand that differs
between members, the batch op, and `batch.unpack` of its result; the
conversions between two fused groups cancel (`batch.unpack` -> `batch.pack`
of the same members in the same order is the stack itself), so a batched
linear feeds a batched layer_norm without restacking. Members regroup freely
from one level to the next: towers of input widths 16/32/64 form three
linear groups, while their layer_norms (all of one width) form one.

Safety
    * Ops whose operands or results are in an alias class that anything
      writes in place are not candidates (remark "mutation").
    * Members lie in one barrier-free segment (no op with side effects
      between them): fusing moves a member's computation to the position
      of the group's last member, which must not cross a write or a call
      with unknown effects.
    * Random ops (dropout in training mode) are not candidates.
    * Batched matmuls and normalizations may reorder arithmetic: results
      are equal within the dtype's tolerance, not bit for bit (the
      numerical tests say which tolerance).

The package, module by module:

* `grouping`: candidate keys and what keeps an op out of every group;
* `plan`: the search, the pricing of each group producers first, the
  choice between alternatives, and the cut to the memory budget;
* `optimus_ir.analysis.fusion_pricing`: the estimate of one group (beside the cost
  model, in the analysis layer);
* `memory`: what a fused part allocates and the fused schedule's live bytes;
* `records`: the plan's records (decisions, parts' memory, what planning
  a block reads: `PlanningContext`);
* `rewrite`: packs, the batch op, unpacks, and the reordering after;
* `fusion_pass`: the pass itself, `BatchFusion`.
"""

from __future__ import annotations

from optimus_ir.analysis.fusion_pricing import Provenance, estimate_group, estimate_group_inductor, member_kernel, part_of_a_stack
from optimus_ir.passes.batch_fusion.fusion_pass import GROUPS_CHUNKED, BatchFusion, fuse_block
from optimus_ir.passes.batch_fusion.grouping import GroupKey, ScalarKey, candidate_key, fusion_kind, is_barrier, scalar_key
from optimus_ir.passes.batch_fusion.memory import part_memory, simulate_plan
from optimus_ir.passes.batch_fusion.plan import choose_plan, fit_memory, producers_first, reorder_by_source, split_by_source
from optimus_ir.passes.batch_fusion.records import PartMemory, Plan, PlanningContext, Simulated
from optimus_ir.passes.batch_fusion.rewrite import restore_dominance

# The names tests imported from the one-module pass, before the package.
_Provenance = Provenance
_member_kernel = member_kernel
_part_of_a_stack = part_of_a_stack

__all__ = [
    "GROUPS_CHUNKED",
    "BatchFusion",
    "GroupKey",
    "PartMemory",
    "Plan",
    "PlanningContext",
    "ScalarKey",
    "Simulated",
    "candidate_key",
    "choose_plan",
    "estimate_group",
    "estimate_group_inductor",
    "fit_memory",
    "fuse_block",
    "fusion_kind",
    "is_barrier",
    "part_memory",
    "producers_first",
    "reorder_by_source",
    "restore_dominance",
    "scalar_key",
    "simulate_plan",
    "split_by_source",
]
