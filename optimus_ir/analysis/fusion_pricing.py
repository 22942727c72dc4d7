"""The pricing of one `batch-fusion` group: what fusing its members is
expected to save, on the kernel curves of the cost model
(`optimus_ir.analysis.cost_model`), for the eager target and for Inductor.

An estimate depends on where the members' operands come from: a parameter,
one shared value, an earlier fused group's stack (`Provenance`), a strided
view of one tensor, or values that must be copied into a stack.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from optimus_ir.analysis.live_bytes import tensor_bytes as _bytes
from optimus_ir.analysis.live_bytes import tensor_elements as _elements
from optimus_ir.analysis.strided_pieces import regular_pieces
from optimus_ir.analysis.symbolic_dims import SymbolicDims
from optimus_ir.analysis.cost_model import (
    INDUCTOR_EXTERN_STACK_MIN_INPUTS,
    CostModel,
    FusionTarget,
    GroupEstimate,
    measured_kind,
)
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import facts_of


@attrs.define
class Provenance:
    """What the pass knows about values produced by fused groups: value ->
    (stack id, index, stack size)."""

    members: dict[SSAValue, tuple[int, int, int]] = attrs.field(factory=dict)
    next_id: int = 0
    constant_parameters: bool = False
    """Stacks of parameters cost nothing per call (`optimize(freeze=True)`
    computes them once); otherwise they are copies like any other."""
    checked_parameters: bool = False
    """With `constant_parameters`: each stack of parameters is still
    checked on every call (`parameter_stacks="shared"`): in eager, whether a
    re-pointing route touched it (`SHARED_STACK_CHECK_S` a stack); under
    Inductor, each member's `is_set_to` (`SHARED_MEMBER_CHECK_S` each)."""
    autograd_parameters: bool = False
    """With `checked_parameters`: the shared stacks are read under autograd
    (a model optimized in training mode), where a stack whose members are
    smaller than `GRAD_VIEW_MIN_BYTES` is stacked on every call
    (`SharedStack.differentiable`): such an operand is priced as the copy
    it is."""

    def record(self, results: Sequence[SSAValue | None]) -> None:
        """`results` are the members of one new stack, in order; a None
        member takes its place but is not recorded (its consumers read a
        copy of it)."""
        stack = self.next_id
        self.next_id += 1
        for i, value in enumerate(results):
            if value is not None:
                self.members[value] = (stack, i, len(results))


SHARED_MEMBER_CHECK_S = 0.3e-6
"""What checking one member of a shared parameter stack costs per call
(`SharedStack.holds`: one `Tensor.is_set_to`, 280 ns measured on the 2-core
CI machine, 2026-12-06): under torch.compile a group of shared stacks pays
it for each member of each stacked parameter operand."""

GRAD_VIEW_MIN_BYTES = 32 * 1024
"""The member size from which a shared stack read under autograd is a view
of the stack (`SharedStack.differentiable`'s `_StackView`: Python
autograd, `GRAD_VIEW_STACK_S` + `GRAD_VIEW_MEMBER_S` a member); smaller
members are stacked per call (a copy, cheaper than that). Shared by the pricing and the run time."""

GRAD_VIEW_MEMBER_S = 2.0e-6
"""What a member of a shared stack read under autograd costs per step
beyond what its own parameter costs unfused (`_StackView`: its input edge
in the forward, its slice of the unbound gradient in the backward; measured
on the 2-core CI machine, 2026-12-07, forward and backward of 2 to 64
members: ~4.7 us a member against ~2.5 us for the accumulation every
parameter pays): members of `GRAD_VIEW_MIN_BYTES` or more, in a model
optimized in training mode."""

GRAD_VIEW_STACK_S = 20e-6
"""What one shared stack read under autograd costs per step whatever its
members (`_StackView`'s Python forward and backward calls: ~20 us over a
plain leaf's forward and backward, measured as `GRAD_VIEW_MEMBER_S` was).
deepctr MMOE at batch 64 fused a 4-member shared-input linear priced
~0.5 us ahead without it, and the training step ran at 0.91x of `copy`."""

SHARED_STACK_CHECK_S = 0.2e-6
"""What reading one shared parameter stack costs per call in an optimized
module (`SharedRead.read_own`: the stack's `verified` flag, the grad mode,
the view made once; 12 stacks in 1.9 us measured on the 2-core CI machine,
2026-12-06): its members are `WatchedParameter`s, which flag their stack
when re-pointed, so no member is tested while none moved."""


def is_parameter(value: SSAValue) -> bool:
    """A parameter or buffer (an `fx.get_attr`): with constant parameters,
    stacked once at optimize time (`optimus_ir.api.param_cache`)."""
    owner = value.owner
    return isinstance(owner, fx.GetAttrOp)


def member_kernel(kind: str, op: Operation, dims: SymbolicDims | None = None) -> tuple[str, float]:
    """The measured kernel kind and size of one member op."""
    if kind in ("linear", "linear-shared-input", "grouped-linear"):
        x, w = op.operands[0], op.operands[1]
        k = x.type.get_shape()[-1]  # type: ignore[union-attr]
        return "linear", 2.0 * _elements(x, dims) * _elements(w) / max(k, 1)
    if kind == "layer_norm":  # the kernel's cost goes with the rows it normalizes
        normalized = 1
        for d in T.ints(op.normalized_shape):  # type: ignore[attr-defined]
            normalized *= max(d, 1)
        return "layer_norm", float(_elements(op.operands[0], dims) // normalized)
    facts = facts_of(op)
    tensors = sum(isinstance(v.type, TensorType) for v in op.operands)
    name = measured_kind(facts.cost if facts is not None else "pointwise", tensors)
    return name, float(_elements(op.results[0], dims))


def operand_slots(kind: str, members: Sequence[Operation]) -> list[list[SSAValue]]:
    first = 1 if kind == "linear-shared-input" else 0
    return [[m.operands[i] for m in members] for i in range(first, len(members[0].operands))]


def slot_source(values: Sequence[SSAValue], provenance: Provenance) -> str:
    """How a stacked operand's members lie: "shared", "parameters",
    "stack" (one earlier stack), "stacks" (several), "pieces" (one strided
    view of a tensor) or "copy"."""
    if all(v is values[0] for v in values):
        return "shared"
    if provenance.constant_parameters and all(is_parameter(v) for v in values):
        if provenance.autograd_parameters and _bytes(values[0]) < GRAD_VIEW_MIN_BYTES:
            return "copy"  # stacked per call under autograd
        return "parameters"
    sources = [provenance.members.get(v) for v in values]
    if all(s is not None for s in sources):
        return "stack" if len({s[0] for s in sources}) == 1 else "stacks"  # type: ignore[index]
    if regular_pieces(values) is not None:
        return "pieces"
    return "copy"


def results_feed_one_group(members: Sequence[Operation], group_of: dict[Operation, int] | None) -> bool:
    """Every use of every member's result is by a member of one other group
    (which reads the stack directly once fused: the unpack cancels)."""
    if not group_of:
        return False
    target = None
    for member in members:
        for result in member.results:
            for use in result.uses:
                g = group_of.get(use.operation)
                if g is None or (target is not None and g != target):
                    return False
                target = g
    return target is not None


@attrs.define
class _Tally:
    """A group's estimate while it is summed up (a `GroupEstimate` is frozen)."""

    members_s: float
    fused_s: float
    target: FusionTarget = "eager"
    copies_s: float = 0.0
    views: int = 0
    views_s: float = 0.0
    checked_members: int = 0
    checked_stacks: int = 0

    grad_view_members: int = 0
    grad_view_stacks: int = 0
    copy_sizes: list[int] = attrs.field(factory=list)

    def add_copy(self, nbytes: int) -> None:
        """A stacked copy of `nbytes` (its kernel priced by the caller)."""
        self.copy_sizes.append(nbytes)

    @property
    def bytes_copied(self) -> int:
        """The bytes every stacked copy writes."""
        return sum(self.copy_sizes)

    def check_shared(self, source: str, members: int, provenance: Provenance) -> None:
        """A stacked parameter operand: where its stack is shared, it is
        checked on every call (per stack in eager, per member under
        Inductor); read under autograd in eager, each member also pays the
        view's Python autograd function (`GRAD_VIEW_MEMBER_S` a member,
        `GRAD_VIEW_STACK_S` a stack)."""
        if source == "parameters" and provenance.checked_parameters:
            if self.target == "eager":
                self.checked_stacks += 1
                if provenance.autograd_parameters:
                    self.grad_view_members += members
                    self.grad_view_stacks += 1
            else:
                self.checked_members += members

    def done(self) -> GroupEstimate:
        """The estimate summed up."""
        return GroupEstimate(
            members_s=self.members_s, fused_s=self.fused_s, copies_s=self.copies_s,
            bytes_copied=self.bytes_copied, views=self.views, views_s=self.views_s, target=self.target,
            checked_members=self.checked_members + self.grad_view_members, checked_stacks=self.checked_stacks,
            checks_s=self.checked_members * SHARED_MEMBER_CHECK_S + self.checked_stacks * SHARED_STACK_CHECK_S
            + self.grad_view_members * GRAD_VIEW_MEMBER_S + self.grad_view_stacks * GRAD_VIEW_STACK_S,
        )


def estimate_group(
    model: CostModel, kind: str, members: Sequence[Operation], provenance: Provenance,
    group_of: dict[Operation, int] | None = None,
    dims: SymbolicDims | None = None,
    *,
    target: FusionTarget = "eager",
) -> GroupEstimate:
    """What fusing `members` is expected to save on the model's device
    (`group_of`: the search's group of each candidate, to see whether the
    results feed another group directly; `dims`: the example sizes of
    symbolic dims; `target`: what runs the result, see
    `estimate_group_inductor`)."""
    if target == "inductor":
        return estimate_group_inductor(model, kind, members, provenance, dims)
    n = len(members)
    member_kind, size = member_kernel(kind, members[0], dims)
    tally = _Tally(members_s=n * model.kernel_seconds(member_kind, size), fused_s=0.0)
    if kind == "grouped-linear":  # the generic lowering: one linear per member
        tally.fused_s = sum(model.kernel_seconds(*member_kernel(kind, m, dims)) for m in members)
        return tally.done()
    slots = operand_slots(kind, members)
    sources = [slot_source(values, provenance) for values in slots]

    def live_views(count: int, slot: int) -> int:
        """`count` views of operand `slot`, unless it is absent or parameters
        (the exported module computes their views once, with the stack)."""
        if slot >= len(sources) or sources[slot] == "parameters":
            return 0
        return count

    if kind == "linear":
        tally.fused_s = model.kernel_seconds("bmm", n * size)
        tally.views += live_views(1, 1) + live_views(1, 2)  # weight transpose, bias unsqueeze
    elif kind == "linear-shared-input":
        tally.fused_s = model.kernel_seconds("linear", n * size)
        tally.views += 2 + live_views(1, 0)  # unflatten, movedim; weight flatten
    elif kind == "layer_norm":
        tally.fused_s = model.kernel_seconds("layer_norm", n * size)
        first = members[0]
        affine = sum(v is not None for v in (first.weight, first.bias))  # type: ignore[attr-defined]
        tally.fused_s += affine * model.kernel_seconds("binary", float(n * _elements(first.operands[0], dims)))
        tally.views += sum(live_views(1, i) for i in range(1, 1 + affine))
    else:
        tally.fused_s = model.kernel_seconds(member_kind, n * size)
    for values, source in zip(slots, sources):
        if source == "parameters":
            tally.check_shared(source, n, provenance)
            continue  # stacked once, at optimize time (or shared: checked per call)
        if source == "shared" and (
            kind in ("pointwise", "softmax")
            or (provenance.constant_parameters and is_parameter(values[0]))
        ):
            continue  # broadcast, or one parameter stacked once
        # (else a shared operand of a linear or layer_norm is stacked N times: a copy)
        if source in ("stack", "pieces"):
            tally.views += 1 if source == "stack" else 3
            continue
        copied = _bytes(values[0], dims) * n
        tally.add_copy(copied)
        tally.copies_s += model.kernel_seconds("stack", copied)
    if not results_feed_one_group(members, group_of):
        tally.views += 1  # the unpack (cancelled when one group reads them all)
    tally.views_s = tally.views * model.view_overhead_s
    _price_fresh_pages(model, tally, members, dims)
    return tally.done()


def _price_fresh_pages(
    model: CostModel, tally: _Tally, members: Sequence[Operation], dims: SymbolicDims | None
) -> None:
    """The fresh pages of every allocation at least `fresh_allocation_bytes`
    big (`CostModel.fresh_pages_seconds`): the fused result, each member's
    result, each stacked copy. A group whose fused result crosses that size
    pays it on every call where its members did not, and is cut in chunks
    below it (`plan._choose_parts`)."""
    if model.fresh_allocation_bytes <= 0:
        return
    result = _bytes(members[0].results[0], dims)
    tally.fused_s += model.fresh_pages_seconds(result * len(members))
    tally.members_s += len(members) * model.fresh_pages_seconds(result)
    tally.copies_s += sum(model.fresh_pages_seconds(nbytes) for nbytes in tally.copy_sizes)


def estimate_group_inductor(
    model: CostModel, kind: str, members: Sequence[Operation], provenance: Provenance,
    dims: SymbolicDims | None = None,
) -> GroupEstimate:
    """What fusing `members` saves when Inductor compiles the result
    (`optimus_ir.analysis.cost_model.InductorCosts`): linears are extern calls at
    their eager price, a layer norm is a generated kernel (priced by the
    eager curve, its affine epilogue fused in), a pointwise op costs its
    data only (fused into a
    neighbouring kernel either way), views are free, and every stack of
    values that do not already lie in one tensor is a copy per call (a stack
    of few graph inputs a slow generated concatenation on top). So a group
    pays under Inductor when it replaces extern calls or kernel launches by
    fewer than the copies it adds; a pointwise group only when it copies
    nothing (then it keeps a fused chain stacked)."""
    costs = model.inductor
    n = len(members)
    member_kind, size = member_kernel(kind, members[0], dims)
    tally = _Tally(members_s=0.0, fused_s=0.0, target="inductor")
    if kind in ("linear", "linear-shared-input", "grouped-linear"):
        tally.members_s = sum(model.kernel_seconds(*member_kernel(kind, m, dims)) for m in members)
        if kind == "grouped-linear":  # the generic lowering: one linear per member
            tally.fused_s = tally.members_s
            return tally.done()
        tally.fused_s = model.kernel_seconds("bmm" if kind == "linear" else "linear", n * size)
    elif kind == "layer_norm":
        # Inductor's layer-norm kernel measured about half the eager op's
        # time, members and fused op alike: the eager curve prices both
        # (the ratio is what decides); the affine epilogue of the fused op
        # is fused into its kernel (its data only).
        tally.members_s = n * model.kernel_seconds(member_kind, size)
        first = members[0]
        affine = sum(v is not None for v in (first.weight, first.bias))  # type: ignore[attr-defined]
        elements = float(n * _elements(first.operands[0], dims))
        tally.fused_s = model.kernel_seconds(member_kind, n * size) + affine * model.data_seconds("binary", elements)
    else:
        tally.members_s = n * (costs.fused_op_s + model.data_seconds(member_kind, size))
        tally.fused_s = costs.fused_op_s + model.data_seconds(member_kind, n * size)
    slots = operand_slots(kind, members)
    for values in slots:
        source = slot_source(values, provenance)
        if source in ("parameters", "stack", "pieces"):
            tally.check_shared(source, n, provenance)
            continue  # folded (freeze; shared: checked per call), or views of one tensor: free under Inductor
        if source == "shared" and kind in ("pointwise", "softmax"):
            continue  # broadcast
        copied = _bytes(values[0], dims) * n
        tally.add_copy(copied)
        # a copy kernel as eagerly (computed values, or an extern torch.stack
        # of many graph inputs: `inductor_handoff`), and where Inductor
        # concatenates few graph inputs itself, its slow generated loop
        tally.copies_s += model.kernel_seconds("stack", copied)
        if all(isinstance(v.owner, fx.PlaceholderOp) for v in values):
            wide = n >= INDUCTOR_EXTERN_STACK_MIN_INPUTS
            tally.copies_s += costs.extern_stack_s if wide else n * costs.input_cat_s
    if kind not in ("linear", "linear-shared-input", "grouped-linear", "layer_norm") and part_of_a_stack(
        slots, provenance
    ):
        # A pointwise group over an irregular part of one fused result (one
        # activation of several cycled over towers of mixed widths): its
        # results come out as a stack of their own, which the consumers
        # gather back with the other parts -- a copy. Left alone, Inductor
        # writes each member's result straight into the consumers'
        # concatenation (recsys-activations-64: 0.95x of Inductor alone with
        # every pointwise group fused, 1.11x with none; regular parts, every
        # other tower, do pay: recsys-uniform-64 1.56x with them, 1.31x without).
        copied = _bytes(members[0].results[0], dims) * n
        tally.add_copy(copied)
        tally.copies_s += model.kernel_seconds("stack", copied)
    _price_fresh_pages(model, tally, members, dims)
    return tally.done()


def part_of_a_stack(slots: Sequence[Sequence[SSAValue]], provenance: Provenance) -> bool:
    """Some operand of the group is an irregular part of one earlier stack:
    its members all from one fused group, fewer than that group's members,
    at positions that are no strided slice of it (a gather, not a view)."""
    for values in slots:
        if slot_source(values, provenance) != "stack":
            continue
        positions = sorted(provenance.members[v][1] for v in values)
        size = provenance.members[values[0]][2]
        steps = {b - a for a, b in zip(positions, positions[1:])}
        if len(values) < size and len(steps) > 1:
            return True
    return False
