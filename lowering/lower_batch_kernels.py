"""The kernel lowering of the batch dialect: batch ops -> `torch.ops.optimus.*`.

`lower-batch{kernels=auto|triton}` runs these patterns before the torch
lowering (`lowering/lower_batch.py`); an op they leave is lowered to torch
ops as before. Each qualifying op becomes one `fx.call_function` of a custom
op of `optimus_ir.kernels.ops` with list arguments, returning a tuple, and
one `operator.getitem` per member result:

    batch.linear / linear_shared_input / grouped_linear -> optimus::grouped_linear
    batch.layer_norm (over the last dim)                -> optimus::batched_layer_norm
    batch.pointwise (ops whose facts name a program)    -> optimus::multi_pointwise

Operands: a stacked operand made by a `batch.pack` (or a dim-0 slice of
one) is passed as the packed member values themselves, no stack; any other
stacked value is unbound into members (`batch.unpack`, views). Results: a
`batch.unpack` of the op's result becomes the getitems themselves; any
other use reads a `batch.pack` of them (a stack, where something needs one).

Batch fusion copies a returned member out of its stack (a `cat` of the one
value); where the member is now a kernel result read by nothing else, the
copy goes (`KernelResultNeedsNoCopy`): it has storage of its own, and the
copy would lose `multi_pointwise`'s eager layout.

Which member ops a kernel computes, and with which program, is the op's
declaration (`OpFacts.kernel` in `dialects/torch`): no op is named here.

Vertical fusion: where every use of a linear's or layer norm's stacked
result is an activation (a `batch.pointwise` of a unary op whose program is
one of the kernels' epilogue activations, `programs.ACTIVATIONS`; directly
or through a dim-0 slice read by nothing else) and the uses take disjoint
members, each use becomes one kernel over its members with that activation
in its epilogue (the recsys towers' alternating activations: two layer-norm
launches, no pointwise launch).

Which ops qualify: member dtypes the kernels take (fp32, bf16, fp16); for
`auto` only tensors typed on a CUDA device (`tensor<..., "cuda:0">`);
`triton` on any device (elsewhere the op runs its torch reference, which
computes what the torch lowering does). An op whose stacked values are
written in place anywhere in their alias class keeps the torch lowering:
members read where the op is must be what the stack held.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    TensorType,
    TupleType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from optimus_ir.analysis import AliasAnalysis
from optimus_ir.dialects import batch as B
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import facts_of
from optimus_ir.dialects.torch.pointwise import program_float
from optimus_ir.kernels.programs import ACTIVATIONS, STEP_BY_NAME
from optimus_ir.lowering.lower_to_fx import call
from optimus_ir.foundation.environment import KernelChoice
from optimus_ir.foundation.rewriting import RootedPattern
from optimus_ir.foundation.types import device_of

KERNEL_CHOICES: tuple[str, ...] = get_args(KernelChoice)
"""The values of lower-batch's `kernels` option (`optimus_ir.options.KernelChoice`)."""

GROUPED_LINEAR = "torch.ops.optimus.grouped_linear.default"
BATCHED_LAYER_NORM = "torch.ops.optimus.batched_layer_norm.default"
MULTI_POINTWISE = "torch.ops.optimus.multi_pointwise.default"
_GETITEM = "_operator.getitem"

_KERNEL_ELEMENT_TYPES = (Float32Type, BFloat16Type, Float16Type)

def _kernel_type(ty: Attribute, kernels: str) -> bool:
    """A tensor type the kernels take under `kernels` (auto: on CUDA only)."""
    if not isinstance(ty, TensorType) or not isinstance(ty.element_type, _KERNEL_ELEMENT_TYPES):
        return False
    if kernels == "triton":
        return True
    device = device_of(ty)
    return device is not None and device.startswith("cuda")


def _member_program(op: B.PointwiseOp) -> str | None:
    """What the member op's facts say computes it (`OpFacts.kernel`): a
    unary op's program, a binary op's step; None where none does."""
    facts = facts_of(op.fn_class())
    return None if facts is None else facts.kernel_step(op.member_properties())


def activation_of(op: Operation) -> str | None:
    """The epilogue activation a `batch.pointwise` applies (one stacked
    operand, a dtype-preserving unary member op whose program is one of the
    kernels' epilogue activations), or None."""
    if not isinstance(op, B.PointwiseOp) or op.stacked_flags != [True] or len(op.inputs) != 1:
        return None
    if op.inputs[0].type != op.result.type:
        return None
    if not issubclass(op.fn_class(), T.UnaryPointwiseOp):
        return None
    program = _member_program(op)
    return program if program is not None and program in ACTIVATIONS and program != "none" else None


def pointwise_program(op: B.PointwiseOp) -> tuple[str, SSAValue | None] | None:
    """`(program, other operand or None)` of multi_pointwise computing the
    member op of `op`, or None where its facts name no program (add/sub with
    alpha != 1, rounding division, replacement of NaNs, dropout, clamp with a
    non-finite bound, ...) or the operands do not fit (a reversed sub/div of
    a tensor, a scalar the program text cannot say)."""
    program = _member_program(op)
    if program is None:
        return None
    if issubclass(op.fn_class(), T.UnaryPointwiseOp):
        return program, None
    props = op.member_properties()
    reverse = props.get("reverse")
    reversed_ = reverse is not None and bool(T.number_value(reverse))
    if len(op.inputs) == 2:
        return None if reversed_ else (f"{program}(other)", op.inputs[1])
    scalar = props.get("scalar")
    text = None if scalar is None else program_float(T.number_value(scalar))
    if text is None:
        return None
    if reversed_:
        step = STEP_BY_NAME.get(program)
        if step is not None and step.commutative:  # s + x == x + s, s * x == x * s exactly
            return f"{program}({text})", None
        if program == "sub":  # s - x == -x + s exactly (IEEE subtraction)
            return f"neg;add({text})", None
        return None
    return f"{program}({text})", None


# ---------------------------------------------------------------------------
# Members in, members out
# ---------------------------------------------------------------------------


class _Emitter:
    """Builds the kernel calls of one rewrite before `anchor`."""

    def __init__(self, rewriter: PatternRewriter, anchor: Operation, aliases: AliasAnalysis) -> None:
        self.rewriter = rewriter
        self.anchor = anchor
        self.aliases = aliases

    def insert(self, op: Operation) -> Operation:
        op.location = self.anchor.location
        self.rewriter.insert(op, InsertPoint.before(self.anchor))
        return op

    def layer_norm_members(
        self, op: B.LayerNormOp
    ) -> tuple[list[SSAValue], list[SSAValue | None], list[SSAValue | None]]:
        """Each member's input, weight and bias of a batch layer norm (None
        for a missing affine parameter)."""
        n = op.member_count
        xs = self.members(op.input)
        ws: list[SSAValue | None] = [None] * n if op.weight is None else list(self.members(op.weight))
        bs: list[SSAValue | None] = [None] * n if op.bias is None else list(self.members(op.bias))
        return xs, ws, bs

    def members(self, value: SSAValue) -> list[SSAValue]:
        """The member values of stacked `value`: a pack's members (or a
        dim-0 slice of them) where nothing writes them, else an unpack."""
        owner = value.owner
        if isinstance(owner, B.PackOp) and not any(self.aliases.is_mutated(m) for m in owner.members):
            return list(owner.members)
        if (
            isinstance(owner, T.SliceOp)
            and owner.dim.data == 0
            and isinstance(owner.input.owner, B.PackOp)
            and not self.aliases.is_mutated(value)
        ):
            packed = self.members(owner.input)
            return packed[owner.start.data : owner.end.data : owner.step.data]
        unpack = self.insert(B.UnpackOp(value))
        return list(unpack.results)

    def call(self, target: str, args: list, result_types: Sequence[Attribute], hint: str | None) -> list[SSAValue]:
        """One call of `target` and a getitem per result."""
        whole = self.insert(call(target, args, {}, TupleType(tuple(result_types))))
        whole.results[0].name_hint = f"{hint}_kernel" if hint else None
        items = []
        for i, ty in enumerate(result_types):
            get = self.insert(call(_GETITEM, [whole.results[0], i], {}, ty))
            get.results[0].name_hint = f"{hint}.{i}" if hint else None
            items.append(get.results[0])
        return items

    def bind(self, stacked: SSAValue, members: list[SSAValue]) -> None:
        """Make the users of `stacked` read `members`: an unpack's results
        become them, any other user reads their pack."""
        pack = None
        for use in list(stacked.uses):
            user = use.operation
            if isinstance(user, B.UnpackOp) and len(user.outputs) == len(members):
                for old, new in zip(user.outputs, members):
                    self.rewriter.replace_all_uses_with(old, new)
                self.rewriter.erase(user)
                continue
            if pack is None:
                pack = self.insert(B.PackOp(members, result_type=stacked.type))
                pack.results[0].name_hint = stacked.name_hint
            self.rewriter.replace_uses_with_if(stacked, pack.results[0], lambda u, user=user: u.operation is user)


def _activation_parts(result: SSAValue, n: int) -> list[tuple[list[int], Operation, Operation | None]] | None:
    """`[(member indices, activation op, slice or None)]` when every use of
    `result` is an activation over disjoint members (see the module doc)."""
    parts = []
    taken: set[int] = set()
    for use in result.uses:
        user = use.operation
        piece = None
        indices = list(range(n))
        if isinstance(user, T.SliceOp) and user.dim.data == 0:
            inner = user.result.get_unique_use()
            if inner is None:
                return None
            piece, indices = user, list(range(n))[user.start.data : user.end.data : user.step.data]
            user = inner.operation
        if activation_of(user) is None or taken.intersection(indices):
            return None
        taken.update(indices)
        parts.append((indices, user, piece))
    parts.sort(key=lambda part: part[0][0] if part[0] else -1)
    return parts or None


class _KernelPattern(RootedPattern):
    """A kernel lowering; `kernels` is lower-batch's option."""

    def __init__(self, aliases: AliasAnalysis, kernels: str) -> None:
        self.aliases = aliases
        self.kernels = kernels

    def qualifies(self, values: Sequence[SSAValue]) -> bool:
        """All values have kernel types and none is written in place."""
        return all(_kernel_type(v.type, self.kernels) for v in values) and not any(
            self.aliases.is_mutated(v) for v in values
        )

    def fused(
        self,
        emit: _Emitter,
        result: SSAValue,
        n: int,
        build,
    ) -> None:
        """Emit `build(indices, activation)` per activation part of `result`
        (or once with "none" over all members) and rebind the users."""
        parts = _activation_parts(result, n)
        if parts is None or any(self.aliases.is_mutated(p[1].results[0]) for p in parts):
            emit.bind(result, build(list(range(n)), "none"))
            return
        for indices, activation_op, piece in parts:
            outputs = build(indices, activation_of(activation_op))
            emit.bind(activation_op.results[0], outputs)
            emit.rewriter.erase(activation_op)
            if piece is not None:
                emit.rewriter.erase(piece)


class KernelLinear(_KernelPattern):
    """`batch.linear`, `batch.linear_shared_input`, `batch.grouped_linear`
    -> `optimus::grouped_linear` over the members (with the activation that
    consumes a stacked result, where one does)."""

    name = "kernel-linear"
    roots = (B.LinearOp, B.LinearSharedInputOp, B.GroupedLinearOp)

    def rewrite(self, op: B.LinearOp | B.LinearSharedInputOp | B.GroupedLinearOp, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, B.GroupedLinearOp):
            if not self.qualifies([*op.members, *op.outputs]):
                return
            emit = _Emitter(rewriter, op, self.aliases)
            n = op.member_count
            xs, ws, bs = zip(*(op.member_operands(i) for i in range(n)))
            outs = emit.call(
                GROUPED_LINEAR, [list(xs), list(ws), list(bs), "none"],
                [r.type for r in op.outputs], op.outputs[0].name_hint,
            )
            rewriter.replace(op, [], outs)
            return
        operands = [op.input, op.weight, *([] if op.bias is None else [op.bias])]
        if not self.qualifies([*operands, op.result]):
            return
        n = op.member_count
        emit = _Emitter(rewriter, op, self.aliases)
        xs = [op.input] * n if isinstance(op, B.LinearSharedInputOp) else emit.members(op.input)
        ws = emit.members(op.weight)
        bs = [None] * n if op.bias is None else emit.members(op.bias)
        member = B.member_type(op.result.type)  # type: ignore[arg-type]
        hint = op.result.name_hint

        def build(indices: list[int], activation: str) -> list[SSAValue]:
            args = [[xs[i] for i in indices], [ws[i] for i in indices], [bs[i] for i in indices], activation]
            return emit.call(GROUPED_LINEAR, args, [member] * len(indices), hint)

        self.fused(emit, op.result, n, build)
        rewriter.erase(op)


class KernelLayerNorm(_KernelPattern):
    """`batch.layer_norm` over the last dim -> `optimus::batched_layer_norm`
    (with the activation that consumes its result, where one does)."""

    name = "kernel-layer-norm"
    roots = (B.LayerNormOp,)

    def rewrite(self, op: B.LayerNormOp, rewriter: PatternRewriter, /) -> None:
        if len(op.normalized_shape) != 1:
            return
        operands = [v for v in (op.input, op.weight, op.bias) if v is not None]
        if not self.qualifies([*operands, op.result]):
            return
        n = op.member_count
        emit = _Emitter(rewriter, op, self.aliases)
        xs, ws, bs = emit.layer_norm_members(op)
        member = B.member_type(op.result.type)  # type: ignore[arg-type]
        eps = op.eps.value.data
        hint = op.result.name_hint

        def build(indices: list[int], activation: str) -> list[SSAValue]:
            args = [
                [xs[i] for i in indices], [ws[i] for i in indices], [bs[i] for i in indices],
                eps, activation,
            ]
            return emit.call(BATCHED_LAYER_NORM, args, [member] * len(indices), hint)

        self.fused(emit, op.result, n, build)
        rewriter.erase(op)


class KernelPointwise(_KernelPattern):
    """`batch.pointwise` whose member op the program grammar says exactly
    -> `optimus::multi_pointwise` (the other operand, stacked or shared,
    must have the member's shape or be 1-D of its last dim)."""

    name = "kernel-pointwise"
    roots = (B.PointwiseOp,)

    def rewrite(self, op: B.PointwiseOp, rewriter: PatternRewriter, /) -> None:
        if not op.stacked_flags[0]:
            return
        if not self.qualifies([*op.inputs, op.result]):
            return
        lhs = op.inputs[0]
        if lhs.type != op.result.type:
            return  # a broadcasting or promoting member op
        found = pointwise_program(op)
        if found is None:
            return
        program, other = found
        member = B.member_type(op.result.type)  # type: ignore[arg-type]
        n = op.member_count
        if other is not None:
            stacked = op.stacked_flags[1]
            other_member = B.member_type(other.type) if stacked else other.type  # type: ignore[arg-type]
            shape = other_member.get_shape()  # type: ignore[union-attr]
            if other_member.element_type != member.element_type or (
                tuple(shape) != tuple(member.get_shape()) and tuple(shape) != (member.get_shape()[-1],)
            ):
                return
        emit = _Emitter(rewriter, op, self.aliases)
        xs = emit.members(lhs)
        others: list[SSAValue] = []
        if other is not None:
            others = emit.members(other) if op.stacked_flags[1] else [other] * n
        outs = emit.call(MULTI_POINTWISE, [xs, others, program], [member] * n, op.result.name_hint)
        emit.bind(op.result, outs)
        rewriter.erase(op)


_KERNEL_TARGETS = frozenset({GROUPED_LINEAR, BATCHED_LAYER_NORM, MULTI_POINTWISE})


def _kernel_result(value: SSAValue) -> bool:
    """`value` is one member result (a getitem) of a kernel call."""
    get = value.owner
    if not isinstance(get, fx.CallFunctionOp) or get.target.data != _GETITEM or not get.operands:
        return False
    whole = get.operands[0].owner
    return isinstance(whole, fx.CallFunctionOp) and whole.target.data in _KERNEL_TARGETS


class KernelResultNeedsNoCopy(RootedPattern):
    """`torch.cat([r], dim)` of a kernel's member result `r` read by nothing
    else -> `r`.

    Batch fusion copies a returned member out of the stacked result (one
    `cat`), so outputs do not share the stack's storage. A kernel's member
    results have storage of their own, so the copy only costs a pass over
    the data, and it loses the result's layout: a cat is contiguous, while
    `multi_pointwise` returns eager's strides (`f(g(p).t())` is transposed
    in eager, issue 19)."""

    name = "kernel-result-needs-no-copy"
    roots = (T.CatOp,)

    def __init__(self, aliases: AliasAnalysis) -> None:
        self.aliases = aliases

    def rewrite(self, op: T.CatOp, rewriter: PatternRewriter, /) -> None:
        if len(op.inputs) != 1:
            return
        source = op.inputs[0]
        if source.type != op.result.type or not _kernel_result(source):
            return
        if source.get_unique_use() is None:
            return  # read elsewhere too: the copy keeps the output apart
        if self.aliases.is_mutated(source) or self.aliases.is_mutated(op.result):
            return
        rewriter.replace(op, [], [source])


def kernel_patterns(aliases: AliasAnalysis, kernels: str) -> list[RewritePattern]:
    """The kernel lowering's patterns for lower-batch's `kernels` option
    (none for `torch`)."""
    if kernels == "torch":
        return []
    return [
        KernelLinear(aliases, kernels), KernelLayerNorm(aliases, kernels),
        KernelPointwise(aliases, kernels), KernelResultNeedsNoCopy(aliases),
    ]


__all__ = [
    "BATCHED_LAYER_NORM",
    "GROUPED_LINEAR",
    "KERNEL_CHOICES",
    "KernelLayerNorm",
    "KernelLinear",
    "KernelPointwise",
    "KernelResultNeedsNoCopy",
    "MULTI_POINTWISE",
    "activation_of",
    "kernel_patterns",
    "pointwise_program",
]
