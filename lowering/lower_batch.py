"""`lower-batch`: batch ops -> torch operator ops that run on any device.

The CPU (and generic) lowering of `dialects/batch.py`. Layout is decided
here, where it is known which members already lie together:

    batch.pack       a view when the members are equal, regularly spaced
                     pieces of one tensor (the pieces of one split:
                     `slice -> unflatten -> [slice] -> movedim`), a strided
                     slice of a stack when they are every k-th member of one
                     unpacked stack, `stack + flatten` (one copy) when they
                     interleave m stacks periodically, else `torch.stack`
    batch.unpack     torch.unbind(stack, 0) (views)
    batch.linear     torch.baddbmm(bias[:, None], x, weight.transpose(1, 2))
                     (torch.bmm without bias; member batch dims flattened)
    batch.linear_shared_input
                     one torch.linear on the concatenated weights, viewed
                     as [N, ..., M]
    batch.grouped_linear
                     one torch.linear per member (a grouped GEMM is a
                     kernel-level lowering)
    batch.layer_norm one torch.layer_norm without affine over all members,
                     then `* weight[:, None]` and `+ bias[:, None]`
    batch.pointwise  the member op itself on the stacked operands (stacked
                     operands of lower rank get unit dims after dim 0);
                     a softmax/log_softmax normalizes the member's dim + 1

A `torch.cat` of members taken from stacks in member order (all of one
stack, or m stacks interleaved periodically) becomes one `stack` of the
stacks moved to the cat's layout (a `cat` of them when the stacks' members
differ in size: ragged groups), flattened: one copy instead of N slices and
a cat.

Weights stacked by a pack of parameters become `torch.stack` of `get_attr`
values: the exported module computes them once and caches them
(`optimus_ir.api.param_cache`).

With `target=inductor` (`torch.compile(backend="optimus")` sets it) the
cost model picks each op's form for Inductor
(`optimus_ir.analysis.cost_model.layer_norm_lowering` / `linear_lowering`): a
layer norm of few members whose parameters are graph inputs is one
affine `torch.layer_norm` per member (`PerMemberLayerNorm`, no stack of
the parameters), the rest as above; each linear and layer norm lowered
gets a remark naming its form and why.

With `kernels=auto` (the default) or `kernels=triton`, the kernel lowering
(`lowering/lower_batch_kernels.py`) runs first: the ops it qualifies become
calls of the custom ops `torch.ops.optimus.*` (Triton kernels on CUDA, their
torch references elsewhere) over the members, no stacking; `auto` takes them
for CUDA-typed tensors only, `triton` on any device, `torch` never.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter

from optimus_ir.analysis import AliasAnalysis, shape
from optimus_ir.analysis.strided_pieces import regular_pieces
from optimus_ir.analysis.cost_model import (
    TARGETS, FusionTarget, LoweringChoice, LoweringForm, layer_norm_lowering, linear_lowering,
)
from optimus_ir.foundation.diagnostics import OptimusError, emit_remark
from optimus_ir.dialects import batch as B
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.kernels.norms import STACKED_LAYER_NORM_ATTR
from optimus_ir.lowering.lower_batch_kernels import _Emitter, kernel_patterns
from optimus_ir.foundation.environment import KernelChoice
from optimus_ir.passes.canonicalization_patterns.batch import BATCH_PATTERNS
from optimus_ir.passes.canonicalization_patterns import bind_aliases
from optimus_ir.foundation.rewriting import GreedyRewriteDriver, RewriteConfig, RootedPattern


# ---------------------------------------------------------------------------
# Members in order: one stack, or m stacks interleaved
# ---------------------------------------------------------------------------


def periodic_run(
    values: Sequence[SSAValue], start: int = 0
) -> tuple[list[SSAValue], int] | None:
    """`(stacks, n)` when `values[start:]` begins with `n` whole periods of
    m >= 1 unpacked stacks interleaved: `values[start + k*m + j]` is member
    `k` of stack `S_j` for all `k < n`, `j < m` (`n * m >= 2`). The stacks
    may hold more members than `n` (the tail is then left to the caller)."""
    if start >= len(values):
        return None
    owners: list[B.UnpackOp] = []
    seen: set[B.UnpackOp] = set()
    for position in range(start, len(values)):
        v = values[position]
        owner = v.owner
        if not isinstance(v, OpResult) or not isinstance(owner, B.UnpackOp) or owner in seen:
            break
        if v.index != 0:
            break
        owners.append(owner)
        seen.add(owner)
    m = len(owners)
    if m == 0:
        return None
    n = 0
    while True:
        base = start + n * m
        if base + m > len(values) or any(
            values[base + j].owner is not owners[j] or values[base + j].index != n  # type: ignore[attr-defined]
            for j in range(m)
        ):
            break
        n += 1
    if n * m < 2:
        return None
    return [o.input for o in owners], n


def consecutive_runs(values: Sequence[SSAValue]) -> list[tuple[SSAValue, int, int] | SSAValue]:
    """`values` as runs: `(stack, start, end)` for members `start..end-1` of
    one unpacked stack in order, a plain value for anything else."""
    runs: list[tuple[SSAValue, int, int] | SSAValue] = []
    owner_of_run = None
    for v in values:
        owner = v.owner
        if not isinstance(v, OpResult) or not isinstance(owner, B.UnpackOp):
            runs.append(v)
            owner_of_run = None
            continue
        last = runs[-1] if runs else None
        if owner is owner_of_run and isinstance(last, tuple) and v.index == last[2]:
            runs[-1] = (last[0], last[1], last[2] + 1)
        else:
            runs.append((owner.input, v.index, v.index + 1))
            owner_of_run = owner
    return runs


def _first_members(rewriter: PatternRewriter, stack: SSAValue, n: int) -> SSAValue:
    """`stack[:n]` (the stack itself when it holds n members)."""
    if shape(stack)[0] == n:
        return stack
    piece = T.SliceOp(stack, 0, 0, n)
    rewriter.insert(piece)
    return piece.result


_FRESH_BATCH_RESULTS = (B.LinearOp, B.LayerNormOp, B.PointwiseOp)
"""Batch compute ops whose result is fresh storage that is only ever read
through the stacked value itself (their lowering allocates it)."""


def _may_share_with_join(aliases: AliasAnalysis | None, stack: SSAValue, join: SSAValue) -> bool:
    """The result of the cat `join` of all members of `stack` may become a
    view of `stack` (no copy): `stack` is a fresh batch result, nothing
    aliasing it or the join is written in place, and the join and `stack`
    do not both reach the graph's output (distinct outputs keep distinct
    storage)."""
    if aliases is None or not isinstance(stack.owner, _FRESH_BATCH_RESULTS):
        return False
    if aliases.is_mutated(stack) or aliases.is_mutated(join):
        return False
    return not (aliases.reaches_output(join) and aliases.reaches_output(stack))


def _one_stack_in_member_order(
    rewriter: PatternRewriter, stack: SSAValue, n: int, dim: int
) -> SSAValue:
    """The cat along member dim `dim` of the first `n` members of one
    stack: the stack's member axis moved next to `dim` and flattened into
    it. A view when the layout allows it (dim 0 of a contiguous stack),
    else the one copy `flatten` makes; no single-tensor `stack`/`cat`."""
    rank = len(shape(stack)) - 1
    dim = dim % rank if rank else 0
    value = _first_members(rewriter, stack, n)
    if dim != 0:
        moved = T.MovedimOp(value, [0], [dim])
        rewriter.insert(moved)
        value = moved.result
    flat = T.FlattenOp(value, dim, dim + 1)
    rewriter.insert(flat)
    return flat.result


def _member_order_value(
    rewriter: PatternRewriter, stacks: list[SSAValue], n: int, dim: int
) -> SSAValue:
    """The cat along member dim `dim` of the first `n` members of `stacks`
    interleaved (member k of stack j at position k*m + j), as one fresh copy
    (like the cat) of the stacks moved to `[..., n, member_dim, ...]`,
    flattened (a view of it): a `torch.stack` of the moved stacks when their
    members are of one type, else (ragged groups: linears of widths 8, 12,
    16, 8, 12, 16, ... on one input) a `torch.cat` of them along the member
    dim, which takes members of different sizes there (and promotes dtypes
    as the original cat did)."""
    rank = len(shape(stacks[0])) - 1
    dim = dim % rank if rank else 0
    moved = [T.MovedimOp(_first_members(rewriter, s, n), [0], [dim]) for s in stacks]
    member_types = {B.member_type(s.type) for s in stacks}  # type: ignore[arg-type]
    if len(member_types) == 1:
        joined: Operation = T.StackOp(moved, dim + 1)
        flat = T.FlattenOp(joined, dim, dim + 2)
    else:
        joined = T.CatOp(moved, dim + 1)
        flat = T.FlattenOp(joined, dim, dim + 1)
    for new in (*moved, joined, flat):
        rewriter.insert(new)
    return flat.result


class _AliasAwareLowering(RootedPattern):
    """A lowering pattern that asks the pass's `AliasAnalysis` (None: the
    pattern used on its own, which then declines what needs it or walks)."""

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        self.aliases = aliases


class _TargetedLowering(RootedPattern):
    """A lowering pattern whose form depends on the compiler that runs the
    result (`FusionTarget`: the cost model's choice, remarked)."""

    def __init__(self, target: FusionTarget = "eager") -> None:
        self.target = target


class CatOfMembers(_AliasAwareLowering):
    """`torch.cat` of a run of members that are the whole of one stack in
    order, or m stacks interleaved periodically -> one `stack + flatten` of
    the (moved) stacks in place of the run (`cat + flatten` when the stacks'
    members differ in size, see `_member_order_value`). A cat of the members
    of one fresh stack and nothing else is the stack moved and flattened
    (`_one_stack_in_member_order`: a view where the layout allows, else one
    copy), where sharing the stack's storage is safe (`_may_share_with_join`)."""

    name = "cat-of-members"
    roots = (T.CatOp,)

    def rewrite(self, op: T.CatOp, rewriter: PatternRewriter, /) -> None:
        inputs = list(op.inputs)
        dim = op.dim.data
        out: list[SSAValue] = []
        changed = False
        i = 0
        while i < len(inputs):
            run = periodic_run(inputs, i)
            if run is None:
                out.append(inputs[i])
                i += 1
                continue
            stacks, n = run
            whole = n * len(stacks) == len(inputs)
            # a run among other inputs is copied by the cat that joins them:
            # its storage never escapes, whatever the view shares
            if len(stacks) == 1 and (
                not whole or _may_share_with_join(self.aliases, stacks[0], op.result)
            ):
                out.append(_one_stack_in_member_order(rewriter, stacks[0], n, dim))
            else:
                out.append(_member_order_value(rewriter, stacks, n, dim))
            i += n * len(stacks)
            changed = True
        if not changed:
            return
        if len(out) == 1:  # a fresh copy already (a view of a new stack)
            rewriter.replace(op, [], out)
        else:
            rewriter.replace(op, [T.CatOp(out, dim, result_type=op.result.type)])


class ReturnedMemberCopy(_AliasAwareLowering):
    """`cat([m])` of a member `m` of a fresh batch result `s`, returned by
    the graph (the copy `batch-fusion` makes so that a returned member has
    storage of its own) -> `m` itself, when nothing else of `s`'s storage is
    returned and nothing aliasing it is written: one copy only where
    distinct outputs would otherwise share storage (the first returned
    member of a stack keeps the stack's storage, the others are copied)."""

    name = "returned-member-copy"
    roots = (T.CatOp,)

    def rewrite(self, op: T.CatOp, rewriter: PatternRewriter, /) -> None:
        aliases = self.aliases
        if aliases is None or len(op.inputs) != 1:
            return
        member = op.inputs[0]
        unpack = member.owner
        if not isinstance(unpack, B.UnpackOp) or member.type != op.result.type:
            return
        stack = unpack.input
        if not isinstance(stack.owner, _FRESH_BATCH_RESULTS):
            return
        if not aliases.reaches_output(op.result) or aliases.reaches_output(stack):
            return
        if aliases.is_mutated(stack) or aliases.is_mutated(op.result):
            return
        rewriter.replace(op, [], [member])


# ---------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------


class LowerPack(_AliasAwareLowering):
    """`batch.pack` -> a view of the members' common base, a slice of a
    stack, one stack+flatten of interleaved stacks, or `torch.stack`."""

    name = "lower-pack"
    roots = (B.PackOp,)

    def rewrite(self, op: B.PackOp, rewriter: PatternRewriter, /) -> None:
        members = list(op.members)
        n = len(members)
        aliases = self.aliases
        fresh_needed = aliases is None or aliases.is_mutated(op.result) or aliases.reaches_output(op.result)
        if not fresh_needed:
            # (every k-th member of one stack is already a slice:
            # pack-of-unpacked-members, run first, under the same guard)
            pieces = regular_pieces(members)
            if pieces is not None and not aliases.is_mutated(pieces[0]):  # type: ignore[union-attr]
                view = _pieces_view(rewriter, pieces, n)
                if view is not None:
                    rewriter.replace(op, [], [view])
                    return
        runs = consecutive_runs(members)
        if len(runs) > 1 and any(isinstance(r, tuple) and r[2] - r[1] > 1 for r in runs):
            # one cat of slices of the stacks (and of the other members, unsqueezed)
            pieces: list[Operation] = []
            values: list[SSAValue] = []
            for run in runs:
                if not isinstance(run, tuple):
                    pieces.append(T.UnsqueezeOp(run, 0))
                elif run[1] == 0 and run[2] == shape(run[0])[0]:
                    values.append(run[0])
                    continue
                else:
                    pieces.append(T.SliceOp(run[0], 0, run[1], run[2]))
                values.append(pieces[-1].results[0])
            rewriter.replace(op, [*pieces, T.CatOp(values, 0, result_type=op.result.type)])
            return
        run = periodic_run(members)
        if run is not None and len(run[0]) > 1 and run[1] * len(run[0]) == n:
            stacks = [_first_members(rewriter, s, run[1]) for s in run[0]]
            joined = T.StackOp(stacks, 1)
            flat = T.FlattenOp(joined, 0, 1, result_type=op.result.type)
            rewriter.replace(op, [joined, flat], [flat.result])
            return
        rewriter.replace(op, [T.StackOp(members, 0, result_type=op.result.type)])


def _pieces_view(
    rewriter: PatternRewriter, pieces: tuple[SSAValue, int, int, int, int], n: int
) -> SSAValue | None:
    """Members `base[..., first + k*stride : first + k*stride + size, ...]`
    (along `dim`) as one view `[n, ...]`, or None if the pieces do not fit
    a whole number of strides inside `base` (then `unfold` windows)."""
    base, dim, first, stride, size = pieces
    length = shape(base)[dim]
    shift = min(first, stride - size)
    start = first - shift
    ops: list[Operation] = []
    if start + n * stride > length:
        # the last period is cut short: windows of `size` every `stride`
        value = base
        end = first + (n - 1) * stride + size
        if first != 0 or end != length:
            ops.append(T.SliceOp(value, dim, first, end))
            value = ops[-1].results[0]
        ops.append(T.UnfoldOp(value, dim, size, stride))  # [..., n, ..., size]
        value = ops[-1].results[0]
        rank = len(shape(value))
        ops.append(T.MovedimOp(value, [dim, rank - 1], [0, dim + 1]))
        for new in ops:
            rewriter.insert(new)
        return ops[-1].results[0]
    value = base
    if start != 0 or n * stride != length:
        ops.append(T.SliceOp(value, dim, start, start + n * stride))
        value = ops[-1].results[0]
    ops.append(T.UnflattenOp(value, dim, [n, stride]))
    value = ops[-1].results[0]
    if stride != size:
        ops.append(T.SliceOp(value, dim + 1, shift, shift + size))
        value = ops[-1].results[0]
    if dim != 0:
        ops.append(T.MovedimOp(value, [dim], [0]))
        value = ops[-1].results[0]
    for new in ops:
        rewriter.insert(new)
    return value


def _sole_copy(member: SSAValue) -> T.CatOp | None:
    """The `cat([member])` copy that is `member`'s only reader (what
    `batch-fusion` makes so that a returned member has storage of its
    own), or None."""
    reader = member.get_user_of_unique_use()
    if isinstance(reader, T.CatOp) and len(reader.inputs) == 1 and reader.result.type == member.type:
        return reader
    return None


class LowerUnpack(RootedPattern):
    """`batch.unpack` -> `torch.unbind(stack, 0)`; `stack[i]` (one
    `torch.select`, not an unbind and a getitem) when member `i` is the only
    one read; `torch.unbind_copy(stack, 0)` when two or more members are
    read only by a copy of their own (`cat([m])`, returned members that
    must not share storage): one op makes every member a tensor of its own,
    in place of an unbind and a copy per member."""

    name = "lower-unpack"
    roots = (B.UnpackOp,)

    def rewrite(self, op: B.UnpackOp, rewriter: PatternRewriter, /) -> None:
        used = [r for r in op.outputs if r.uses]
        if len(used) == 1:
            member = used[0]
            select = T.SelectOp(op.input, 0, member.index, result_type=member.type)
            rewriter.replace(op, [select], [select.result if r is member else None for r in op.outputs])
            return
        copies = {r: c for r in used if (c := _sole_copy(r)) is not None}
        if len(copies) < 2:
            rewriter.replace(op, [T.UnbindOp(op.input, 0, result_types=[r.type for r in op.outputs])])
            return
        pieces = T.UnbindCopyOp(op.input, 0, result_types=[r.type for r in op.outputs])
        rewriter.replace(op, [pieces])
        for member, copy in zip(op.outputs, pieces.outputs, strict=True):
            if member in copies:
                rewriter.replace(copies[member], [], [copy])


# ---------------------------------------------------------------------------
# Compute
# ---------------------------------------------------------------------------


class LowerLinear(_TargetedLowering):
    """`batch.linear` -> `baddbmm(bias[:, None], x, w.transpose(1, 2))`
    (bmm without bias); member inputs of rank != 2 are flattened to
    [N, P, K] and the result viewed back."""

    name = "lower-linear"
    roots = (B.LinearOp,)

    def rewrite(self, op: B.LinearOp, rewriter: PatternRewriter, /) -> None:
        _remark_form(op, linear_lowering(self.target, op.member_count, "bmm" if op.bias is None else "baddbmm"))
        ops: list[Operation] = []
        x = op.input
        x_shape = shape(x)
        if len(x_shape) == 2:  # members are vectors [K]
            ops.append(T.UnsqueezeOp(x, 1))
            x = ops[-1].results[0]
        elif len(x_shape) > 3:
            ops.append(T.FlattenOp(x, 1, len(x_shape) - 2))
            x = ops[-1].results[0]
        ops.append(T.TransposeOp(op.weight, 1, 2))
        wt = ops[-1].results[0]
        if op.bias is not None:
            ops.append(T.UnsqueezeOp(op.bias, 1))
            ops.append(T.BaddbmmOp(ops[-1].results[0], x, wt))
        else:
            ops.append(T.BmmOp(x, wt))
        out = ops[-1].results[0]
        out_shape = shape(op.result)
        if shape(out) != out_shape:
            ops.append(T.ReshapeOp(out, list(out_shape), result_type=op.result.type))
            out = ops[-1].results[0]
        rewriter.replace(op, ops, [out])


class LowerLinearSharedInput(_TargetedLowering):
    """`batch.linear_shared_input` -> `linear(x, w.flatten(0, 1), b.flatten())`
    viewed as [..., N, M] and moved to [N, ..., M]."""

    name = "lower-linear-shared-input"
    roots = (B.LinearSharedInputOp,)

    def rewrite(self, op: B.LinearSharedInputOp, rewriter: PatternRewriter, /) -> None:
        _remark_form(op, linear_lowering(self.target, op.member_count, "one linear on the concatenated weights"))
        n, m, _ = shape(op.weight)
        ops: list[Operation] = [T.FlattenOp(op.weight, 0, 1)]
        w = ops[-1].results[0]
        b = None
        if op.bias is not None:
            ops.append(T.FlattenOp(op.bias, 0, 1))
            b = ops[-1].results[0]
        ops.append(T.LinearOp(op.input, w, b))
        y = ops[-1].results[0]
        rank = len(shape(y))
        ops.append(T.UnflattenOp(y, rank - 1, [n, m]))
        ops.append(T.MovedimOp(ops[-1].results[0], [rank - 1], [0], result_type=op.result.type))
        rewriter.replace(op, ops, [ops[-1].results[0]])


class LowerGroupedLinear(RootedPattern):
    """`batch.grouped_linear` -> one `torch.linear` per member (no grouped
    GEMM among the torch ops; `batch-fusion` forms these groups only when
    asked, for a lowering that has one)."""

    name = "lower-grouped-linear"
    roots = (B.GroupedLinearOp,)

    def rewrite(self, op: B.GroupedLinearOp, rewriter: PatternRewriter, /) -> None:
        linears = [
            T.LinearOp(*op.member_operands(i), result_type=op.outputs[i].type)
            for i in range(op.member_count)
        ]
        rewriter.replace(op, linears, [lin.result for lin in linears])


def _broadcast_member(value: SSAValue, rank: int, ops: list[Operation]) -> SSAValue:
    """A stacked `[N, *s]` viewed as `[N, 1, ..., 1, *s]` of rank `rank`
    (members broadcast like the member op broadcasts them)."""
    sizes = shape(value)
    if len(sizes) >= rank:
        return value
    ops.append(T.ReshapeOp(value, [sizes[0], *([1] * (rank - len(sizes))), *sizes[1:]]))
    return ops[-1].results[0]


class LowerLayerNorm(_TargetedLowering):
    """`batch.layer_norm` -> one `layer_norm` without affine over the
    stacked members, then the per-member `* weight` and `+ bias`."""

    name = "lower-layer-norm"
    roots = (B.LayerNormOp,)

    def rewrite(self, op: B.LayerNormOp, rewriter: PatternRewriter, /) -> None:
        choice = layer_norm_lowering(self.target, op.member_count, _parameter_inputs(op))
        if choice.form is LoweringForm.PER_MEMBER:
            # `PerMemberLayerNorm` declined it: stacked values written in place
            choice = dataclasses.replace(
                choice, form=LoweringForm.BATCHED, how="layer norm over the stack, stacked affine",
                reason="its stacked values are written in place (members must be what the stack holds)",
            )
        _remark_form(op, choice)
        rank = len(shape(op.input))
        ops: list[Operation] = [
            T.LayerNormOp(op.input, T.ints(op.normalized_shape), eps=op.eps)
        ]
        if self.target == "eager":  # the faster kernel path under autograd too (`lower-to-fx`)
            ops[0].attributes[STACKED_LAYER_NORM_ATTR] = UnitAttr()
        y = ops[-1].results[0]
        if op.weight is not None:
            w = _broadcast_member(op.weight, rank, ops)
            ops.append(T.MulOp(y, w))
            y = ops[-1].results[0]
        if op.bias is not None:
            b = _broadcast_member(op.bias, rank, ops)
            ops.append(T.AddOp(y, b))
            y = ops[-1].results[0]
        rewriter.replace(op, ops, [y])


class LowerPointwise(RootedPattern):
    """`batch.pointwise` -> the member op on the stacked operands, with
    every property of the members."""

    name = "lower-pointwise"
    roots = (B.PointwiseOp,)

    def rewrite(self, op: B.PointwiseOp, rewriter: PatternRewriter, /) -> None:
        rank = len(shape(op.result))
        ops: list[Operation] = []
        operands: list[SSAValue] = []
        for value, stacked in zip(op.inputs, op.stacked_flags):
            operands.append(_broadcast_member(value, rank, ops) if stacked else value)
        cls = op.fn_class()
        properties = op.member_properties()
        stacked_properties = getattr(cls, "stacked_properties", None)
        if stacked_properties is not None:  # a row-wise op: its dim moves past the stacking dim
            properties = stacked_properties(properties)
        groups: list = list(operands)
        definition = cls.get_irdl_definition()
        while len(groups) < len(definition.operands):
            groups.append([])
        ops.append(
            cls.build(
                operands=groups,
                result_types=[op.result.type],
                properties=properties,
            )
        )
        rewriter.replace(op, ops, [ops[-1].results[0]])


# ---------------------------------------------------------------------------
# Forms per target
# ---------------------------------------------------------------------------


def _remark_form(op: Operation, choice: LoweringChoice) -> None:
    """The remark saying which form `op` is lowered to and why, for the
    Inductor target (the eager lowering is the one form it always was: no
    remark)."""
    if choice.target != "eager":
        emit_remark(op, f"lower-batch: {choice.remark()}")


def _stack_of_inputs(value: SSAValue | None) -> bool:
    """`value` is a `batch.pack` of graph inputs (parameters Dynamo lifted
    to inputs: stacked on every call), not of constants (`fx.get_attr`,
    parameters frozen or cached) or computed values."""
    if value is None:
        return False
    owner = value.owner
    return isinstance(owner, B.PackOp) and all(isinstance(m.owner, fx.PlaceholderOp) for m in owner.members)


def _parameter_inputs(op: B.LayerNormOp) -> bool:
    """The layer norm has affine parameters and each of them is a stack of
    graph inputs (`_stack_of_inputs`)."""
    affine = [v for v in (op.weight, op.bias) if v is not None]
    return bool(affine) and all(_stack_of_inputs(v) for v in affine)


class PerMemberLayerNorm(RootedPattern):
    """`batch.layer_norm` -> one affine `torch.layer_norm` per member, on the
    members of its input (a pack's members, else an unpack: views) with the
    members' own parameters (no stack of them), where the cost model's
    `layer_norm_lowering` says so for the target (under Inductor: few
    members whose parameters are graph inputs). The users of the stacked
    result read the members (an unpack of it becomes them)."""

    name = "per-member-layer-norm"
    roots = (B.LayerNormOp,)

    def __init__(self, aliases: AliasAnalysis, target: FusionTarget) -> None:
        self.aliases = aliases
        self.target = target

    def rewrite(self, op: B.LayerNormOp, rewriter: PatternRewriter, /) -> None:
        if self.target == "eager":
            return
        choice = layer_norm_lowering(self.target, op.member_count, _parameter_inputs(op))
        if choice.form is not LoweringForm.PER_MEMBER:
            return  # remarked where it is lowered batched
        operands = [v for v in (op.input, op.weight, op.bias) if v is not None]
        if any(self.aliases.is_mutated(v) for v in [*operands, op.result]):
            return  # members read here must be what the stack holds
        n = op.member_count
        emit = _Emitter(rewriter, op, self.aliases)
        xs, ws, bs = emit.layer_norm_members(op)
        member = B.member_type(op.result.type)  # type: ignore[arg-type]
        outs = []
        for i in range(n):
            norm = emit.insert(
                T.LayerNormOp(xs[i], T.ints(op.normalized_shape), ws[i], bs[i], eps=op.eps.value.data, result_type=member)
            )
            outs.append(norm.results[0])
        _remark_form(op, choice)
        emit.bind(op.result, outs)
        rewriter.erase(op)


@dataclass(frozen=True)
class LowerBatch(ModulePass):
    """Lower every batch op to torch operator ops (see the module docstring):
    first the conversions that cancel, then (unless `kernels=torch`) the ops
    the kernels take, then cats of members in order, then
    the compute ops, then packs (now that it is known where members lie)
    and unpacks.

    Options:
        kernels: `auto` (default): the compute ops on CUDA-typed tensors that
            a kernel takes become `torch.ops.optimus.*` calls, the rest torch
            ops; `triton`: the kernel calls on any device (their torch
            reference runs off CUDA); `torch`: torch ops only.
        target: what runs the result (`optimus_ir.analysis.cost_model.FusionTarget`):
            `eager` (default) lowers every op batched as above; `inductor`
            (`torch.compile(backend="optimus")` sets it) lets the cost model
            pick each op's form for Inductor (`layer_norm_lowering`,
            `linear_lowering`: small layer norms whose parameters are graph
            inputs per member) and remarks every linear and layer norm
            lowered with the form and why.
    """

    name = "lower-batch"

    kernels: KernelChoice = "auto"
    """One of `KERNEL_CHOICES` (a `Literal`: the pipeline parser refuses other values)."""
    target: FusionTarget = "eager"
    """One of `TARGETS` (a `Literal`, as `batch-fusion`'s)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target not in TARGETS:
            raise OptimusError(f"lower-batch: unknown target {self.target!r} (known: {', '.join(TARGETS)})")
        aliases = AliasAnalysis(op)
        canonical = bind_aliases(BATCH_PATTERNS, aliases)
        config = RewriteConfig()
        listeners = [aliases.listener()]
        kernels = kernel_patterns(aliases, self.kernels)
        # per-member forms take the members of a batch op's stacked operands
        # and hand on members: before anything turns packs into stacks
        forms = [PerMemberLayerNorm(aliases, self.target)] if self.target != "eager" else []
        if kernels or forms:
            # before cats of members are rewritten: a cat of kernel results
            # is one cat of the getitems, not a stack of stacks
            GreedyRewriteDriver([*canonical, *kernels, *forms], config, name=self.name, listeners=listeners).rewrite(op)
        GreedyRewriteDriver([*canonical, CatOfMembers(aliases), ReturnedMemberCopy(aliases)], config, name=self.name, listeners=listeners).rewrite(op)
        GreedyRewriteDriver(
            [
                LowerLinear(self.target), LowerLinearSharedInput(self.target), LowerGroupedLinear(),
                LowerLayerNorm(self.target), LowerPointwise(),
            ],
            config, name=self.name, listeners=listeners,
        ).rewrite(op)
        GreedyRewriteDriver([LowerPack(aliases)], config, name=self.name, listeners=listeners).rewrite(op)
        GreedyRewriteDriver([LowerUnpack()], config, name=self.name, listeners=listeners).rewrite(op)


__all__ = [
    "CatOfMembers",
    "ReturnedMemberCopy",
    "LowerBatch",
    "LowerGroupedLinear",
    "LowerLayerNorm",
    "LowerLinear",
    "LowerLinearSharedInput",
    "LowerPack",
    "LowerPointwise",
    "LowerUnpack",
    "PerMemberLayerNorm",
    "consecutive_runs",
    "periodic_run",
]
