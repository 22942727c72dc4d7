"""The `batch-fusion` pass: per block, the candidates' keys
(`grouping`), the plan (`plan`), then the rewrite (`rewrite`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from optimus_ir.analysis import AliasAnalysis
from optimus_ir.analysis.independent_sets import block_dag
from optimus_ir.analysis.live_bytes import live_bytes
from optimus_ir.analysis.symbolic_dims import SymbolicDims
from optimus_ir.analysis.cost_model import (
    DEFAULT_MEMORY_BUDGET,
    TARGETS,
    CostModel,
    FusionTarget,
    MemoryBudget,
    calibrated_cost_model,
    default_cost_model,
    parse_memory_budget,
)
from optimus_ir.foundation.diagnostics import OptimusError, emit_remark
from optimus_ir.dialects import fx
from optimus_ir.foundation.environment import CostModelChoice
from optimus_ir.passes.batch_fusion.grouping import KINDS, candidate_keys, explain_rejections
from optimus_ir.passes.batch_fusion.plan import choose_plan
from optimus_ir.passes.batch_fusion.records import BlockMemory, PlanningContext
from optimus_ir.passes.batch_fusion.rewrite import apply_plan, batch_symbol
from optimus_ir.passes.canonicalization_patterns import rewrite_with_aliases
from optimus_ir.passes.canonicalization_patterns.batch import BATCH_PATTERNS
from optimus_ir.foundation.rewriting import RewriteConfig
from optimus_ir.foundation.statistics import current_pass_context
from optimus_ir.foundation.types import device_of


@dataclass(frozen=True)
class BatchFusion(ModulePass):
    """Fuse groups of independent same-kind ops (linear, layer_norm,
    pointwise) into `batch` ops, where the cost model says it pays.

    Options:
        min_size / max_size: bounds on a group's size.
        cost_model: "calibrated" (measured once on this machine and cached),
            "default" (documented constants) or "none" (fuse every group the
            search finds); a `Literal` (`optimus_ir.options.CostModelChoice`):
            the pipeline parser refuses other values. OPTIMUS_COST_MODEL=default
            (read in `optimus_ir.options`) overrides "calibrated".
        kinds: comma-separated fusion kinds to consider ("all", or some of
            linear, layer_norm, pointwise, softmax).
        grouped_linear: group linears of different shapes too
            (`batch.grouped_linear`), for a lowering with a grouped GEMM;
            groups whose members turn out equal become `batch.linear`.
        constant_parameters: the stacks of parameters and buffers cost
            nothing per call (`optimize(freeze=True)` computes them once);
            by default they are priced as the copies they are on every call.
        checked_parameters: with constant_parameters, each member of a
            stacked parameter is still checked on every call
            (`parameter_stacks="shared"` sets both): a small per-member cost.
        autograd_parameters: with checked_parameters, the shared stacks are
            read under autograd (`optimize()` of a model in training mode):
            stacks of members under `GRAD_VIEW_MIN_BYTES` are stacked per
            call there and priced as copies, larger ones at the view's
            autograd cost (`GRAD_VIEW_STACK_S`, `GRAD_VIEW_MEMBER_S`).
            Without checked_parameters (`optimize()` sets it for a model in
            training mode with copies too) it changes no price, only what
            the remark of a group declined for its copies says
            `parameter_stacks="shared"` would do.
        target: what runs the result, "eager" (the exported module) or
            "inductor" (`torch.compile(backend="optimus")` sets it): under
            Inductor pointwise ops fuse vertically anyway, views are free and
            linears are extern calls (`optimus_ir.analysis.cost_model.InductorCosts`),
            so groups are priced for that and a group that does not pay there
            is declined with a remark naming the target.
        memory_budget: how many tensor bytes one call of the fused graph may
            hold at once (issue 24): "1.5x" or "+50%" -- a ratio over the
            peak of the block as it was before fusing (`analysis.live_bytes`)
            --, optionally plus an allowance ("1.5x+1MiB", the default,
            `DEFAULT_MEMORY_BUDGET`), bytes ("64MiB", "1GiB", an int), or
            "none" (`cost_model.parse_memory_budget`). The plan's whole
            fused schedule is simulated (`simulate_plan`); while its peak
            exceeds the budget, the fused part holding the most beyond its
            members at that peak is cut in half (chunks, as the cost model
            cuts groups) and at last declined, each such group with a
            remark saying "memory decided". No timing is involved, and the
            budget applies without a cost model too. In Python also a
            `MemoryBudget` already parsed (what `optimize()` hands it:
            `OptimizeOptions.resolve`), taken as it is.
        chains: price chains of groups, not only each group alone: a
            declined layer_norm, pointwise or softmax group
            (`plan.CHAIN_KINDS`) is tried fused for its consumers (which
            then read its stack instead of copying its members' results),
            and kept where the whole block's estimated gain grows
            (`plan._fuse_through_chains`). false: each group is priced
            alone, as before issue 36 (for comparison).
    """

    name = "batch-fusion"

    min_size: int = 2
    max_size: int = 4096
    cost_model: CostModelChoice = "calibrated"
    kinds: str = "all"
    grouped_linear: bool = False
    constant_parameters: bool = False
    checked_parameters: bool = False
    autograd_parameters: bool = False
    target: FusionTarget = "eager"
    memory_budget: str | int | float = DEFAULT_MEMORY_BUDGET
    chains: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        budget = self.check_options()
        for graph in list(op.ops):
            if isinstance(graph, fx.GraphOp):
                fuse_block(graph.block, self, self._cost_model(graph.block), budget)
        rewrite_with_aliases(op, BATCH_PATTERNS, RewriteConfig(), self.name)

    def check_options(self) -> MemoryBudget | None:
        """Raise `OptimusError` naming every bad option; the memory budget, parsed."""
        problems = []
        if self.min_size < 1 or self.max_size < self.min_size:
            problems.append(f"need 1 <= min-size <= max-size, got {self.min_size} and {self.max_size}")
        unknown = {k.strip() for k in self.kinds.split(",")} - {"all", *KINDS}
        if unknown:
            problems.append(f"unknown kinds {sorted(unknown)} (known: all, {', '.join(KINDS)})")
        if self.target not in TARGETS:
            problems.append(f"unknown target {self.target!r} (known: {', '.join(TARGETS)})")
        budget = None
        try:
            budget = self.parsed_memory_budget()
        except ValueError as error:
            problems.append(f"memory-budget: {error}")
        if problems:
            raise OptimusError("batch-fusion: " + "; ".join(problems))
        return budget

    def parsed_memory_budget(self) -> MemoryBudget:
        """`memory_budget` as a `MemoryBudget` (parsed unless it is one)."""
        if isinstance(self.memory_budget, MemoryBudget):
            return self.memory_budget
        return parse_memory_budget(self.memory_budget)

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        """xDSL's spec of the pass; a parsed budget is written as its text."""
        if isinstance(self.memory_budget, MemoryBudget):
            written = dataclasses.replace(self, memory_budget=self.memory_budget.text())
            return written.spec(include_default=include_default)
        return super().spec(include_default=include_default)

    def _cost_model(self, block: Block) -> CostModel | None:
        """The model of the device the graph's tensors live on (the first
        one with a known device; CPU when none says)."""
        if self.cost_model == "none":
            return None
        device = "cpu"
        for op in block.ops:
            ty = op.results[0].type if op.results else None
            if isinstance(ty, TensorType) and device_of(ty) is not None:
                device = device_of(ty)  # type: ignore[assignment]
                break
        kind = "cuda" if device.startswith("cuda") else "cpu"
        if self.cost_model == "default":
            return default_cost_model(kind)
        return calibrated_cost_model(kind)

    def enabled(self, kind: str) -> bool:
        if self.kinds == "all":
            return True
        wanted = {k.strip() for k in self.kinds.split(",")}
        return kind in wanted or (kind in ("linear-shared-input", "grouped-linear") and "linear" in wanted)


def fuse_block(
    block: Block, options: BatchFusion, model: CostModel | None, budget: MemoryBudget | None = None
) -> int:
    """Find, decide and fuse the groups of `block`; the number fused.

    The plan (which candidates group with which, and which groups fuse) is
    chosen over the whole block before anything is rewritten: see
    `choose_plan`. `budget`: the memory budget (default: the options')."""
    context = current_pass_context(options.name)
    ops = list(block.ops)
    aliases = AliasAnalysis(block)
    dims = SymbolicDims(block)
    candidates = candidate_keys(ops, options, aliases, dims)
    if budget is None:
        budget = options.parsed_memory_budget()
    # the block as captured: what the budget is relative to, and where each
    # member's result is still held in the captured schedule
    memory = BlockMemory(budget, live_bytes(ops, aliases, dims), dims) if any(candidates.keys) else None

    # the batch symbol of each candidate, read before any group is fused
    # (fusing a producer group replaces the operands of the next level)
    batch_symbols = {op: batch_symbol(op, dims) for op, key in zip(ops, candidates.keys) if key is not None}
    returned = {op for op, key in zip(ops, candidates.keys) if key is not None and _reaches_output(op, aliases)}
    dag = block_dag(ops)
    plan = choose_plan(PlanningContext(ops, dag, model, options, dims, returned, memory), candidates)
    explain_rejections(ops, plan.keys, plan.search, options)
    for op, text in plan.notes:
        emit_remark(op, text)

    fused = apply_plan(block, plan, returned, batch_symbols, dims, options.name)
    context.record.bump("groups fused", fused)
    context.record.bump(GROUPS_CHUNKED, plan.groups_in_parts())
    declined = [d for d in plan.decisions if d.verdict == "unprofitable" and d.free_stacks_gain_s > 0]
    context.record.bump(DECLINED_FOR_COPIES, len(declined))
    context.record.bump(DECLINED_FOR_COPIES_GAIN_NS, round(sum(d.free_stacks_gain_s for d in declined) * 1e9))
    return fused


DECLINED_FOR_COPIES = "groups declined for parameter copies"
"""The statistics counter of the parts declined as unprofitable that would
pay with their parameter stacks free (`plan.FREE_STACKS_NOTE`)."""

DECLINED_FOR_COPIES_GAIN_NS = "groups declined for parameter copies, gain ns"
"""What those parts would save per call with free parameter stacks, in ns."""


GROUPS_CHUNKED = "groups fused in parts"
"""The statistics counter of the search groups fused as several parts, each
its own fused op with its own copies: chunks, where the memory budget cut
the group or smaller fused ops priced better, or parts by the earlier
stacks their members come from (`OptimizeReport.groups_chunked`)."""


def _reaches_output(op: Operation, aliases: AliasAnalysis) -> bool:
    """A result of `op` (or a view of it) is returned by the graph."""
    return any(aliases.reaches_output(r) for r in op.results)
