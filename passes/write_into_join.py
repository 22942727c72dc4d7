"""`write-into-join`: the pieces of a `torch.cat` are computed in their slots.

A join copies its pieces into a new tensor, so while it runs the pieces and
the result are all live: on a wide model the call's largest tensor twice
over (64 towers' outputs and their concatenation, 8 MiB of the 64-tower
model's 8 MiB peak at batch 512). After `reinplace` (anchor: Inductor's
`ConcatKernel`, whose inputs are laid out in the output's buffer), this
pass allocates the join's result before its first piece is made, splits
it into one slot per piece, and has each piece's maker write its slot:

    %h0 = fx.call_function "torch._C._nn.linear"(%x0, %w0, %b0)
    %t0 = fx.call_function "optimus_ir.kernels.inplace.torch__relu"(%h0)
    ...
    %c  = fx.call_function "torch.cat"([%t0, %t1], 1)
  becomes
    %made = fx.call_function "optimus_ir.kernels.joins.join_slots"(%x0, [512, 64], #fx.dtype<f32>, [32, 32], 1, true)
    %buf = fx.call_function "_operator.getitem"(%made, 0)
    %views = fx.call_function "_operator.getitem"(%made, 1)
    %s0 = fx.call_function "_operator.getitem"(%views, 0)    (and %s1)
    %h0 = fx.call_function "optimus_ir.kernels.joins.linear_into"(%s0, %x0, %w0, %b0)
    %t0 = fx.call_function "optimus_ir.kernels.inplace.torch__relu"(%h0)
    ...
    %c  = fx.call_function "optimus_ir.kernels.joins.written_join"(%buf, [%s0, %s1], [%t0, %t1], 1)

Every call made is grad-guarded (`optimus_ir.kernels.joins`): with
gradients recorded no buffer is allocated, the writers return fresh
results and the join is `torch.cat`, as before. Without them the join copies only the pieces that
are not their slot already.

A piece is written in its slot when:

* it is read by the join alone, once, and is the end of a chain of
  `reinplace`'s in-place forms (each link's written operand read by that
  link alone) that starts at a call with a writer (`joins.WRITERS`: linear,
  addmm, mm) and no `out=` of its own: the slot is then the
  only storage the chain writes, and nothing else reads it before the join;
* or the chain reaches, through reshapes (flatten, reshape, view: row-major
  order kept) each read once, a `torch.stack` along a dim past 0 whose
  static result is a view of the slot (along dim 1 it keeps the slot's
  rows and splits its columns; along dim 0 the slot is contiguous): the
  stack writes the slot seen in its shape (`stack_into`), and the reshape
  of it is the slot. That is how `lower-batch` interleaves fused groups'
  members into a join (a stack of moved dims, then a flatten): the stack's
  result and the join were two copies of the same bytes, live at once;
* or, in a rank-3 join along dim 0 (its slots are contiguous), it is made
  by a batched matmul (`torch.baddbmm`, `torch.bmm`): fused groups' outputs
  joined by member for one batched op over all of them (the 64-tower
  model's layer norm over its three first-layer linear groups); the
  buffer's rows (dim 1) are the first writer's batch operand's at run time;
* the call is computed per call (it depends on a graph input: values of
  parameters alone are what `freeze` computes once);
* its type is the join's: same element type (no promotion by the join),
  static shape, rank 2 (a two-dimensional join is row-major whatever its
  pieces' layout, as the buffer is), and the piece is large enough that the
  copy it saves pays for its writer's call (`MIN_WRITTEN_PIECE_BYTES`).

The join is rewritten when its estimated time does not grow (the copies
saved against the split, the join's loop and the writers' calls:
`JOIN_OVERHEAD_S`, `SLOT_OVERHEAD_S`, `COPY_S_PER_BYTE`) and the graph's
peak of live tensor bytes does not grow (`live_bytes`): the buffer lives
from the first written piece, where before only the pieces made so far
did, so a join whose pieces are made early around a larger temporary can
raise the peak and is left alone. The peak is tracked in a range-add /
max tree over the block's positions, so the check of each join is
logarithmic. A join along dim 1 takes its rows from the first written
piece's maker's input at run time (`join_slots(..., rows_like_reference)`),
so the code stays batch generic (the guard's size proof); along dim 0 the
shape is the example's. `target=inductor` (the torch.compile backend)
leaves the graph alone: Inductor lays out concatenations itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, TensorType, TupleType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from optimus_ir.analysis.cost_model import FusionTarget
from optimus_ir.analysis.live_bytes import live_bytes, tensor_bytes
from optimus_ir.dialects import fx
from optimus_ir.foundation.statistics import current_pass_context
from optimus_ir.foundation.types import DYNAMIC
from optimus_ir.kernels import inplace
from optimus_ir.kernels.joins import JOIN_SLOTS_TARGET, WRITERS, WRITTEN_JOIN_TARGET
from optimus_ir.passes.reinplace import reads_of, written_operand

PASS_NAME = "write-into-join"

_INPLACE_PREFIX = inplace.__name__ + "."
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})

MIN_WRITTEN_PIECE_BYTES = 4096
"""A smaller piece is copied by the join as before: its copy (~0.5 us)
costs about what its slot does."""

COPY_S_PER_BYTE = 1 / 8e9
"""What copying a byte into the join costs (the CPU cost model's copy
bandwidth on the 2-core machine, 7.9 GB/s)."""

JOIN_OVERHEAD_S = 2e-6
"""The buffer, its split and the join's call, once per rewritten join.
Measured with 64 pieces of [64, 32] fp32, one thread: buffer, split and
slots 30 us; the join's loop 1.6 us."""

SLOT_OVERHEAD_S = 0.45e-6
"""Per piece: its slot (a view the split makes, and its getitem) and the
join's test of it (the figures of `JOIN_OVERHEAD_S`)."""

WRITER_OVERHEAD_S = 0.0
"""Per written piece: the writer's Python call around the torch call. It
costs nothing net: the `out=` call allocates nothing (measured: a [64, 16]
x [16, 32] linear 3.4 us into its slot, 4.0 us plain)."""


class _RangeAddMax:
    """Values at positions 0..n-1 under range additions, and their maximum."""

    def __init__(self, values: Sequence[int]) -> None:
        size = 1
        while size < max(len(values), 1):
            size *= 2
        self._size = size
        self._max = [float("-inf")] * (2 * size)
        self._added = [0] * (2 * size)
        for i, value in enumerate(values):
            self._max[size + i] = value
        for node in range(size - 1, 0, -1):
            self._max[node] = max(self._max[2 * node], self._max[2 * node + 1])

    def add(self, lo: int, hi: int, amount: int) -> None:
        """Add `amount` to the positions `lo..hi` (inclusive)."""
        if lo <= hi:
            self._add(1, 0, self._size - 1, lo, hi, amount)

    def _add(self, node: int, left: int, right: int, lo: int, hi: int, amount: int) -> None:
        if hi < left or right < lo:
            return
        if lo <= left and right <= hi:
            self._max[node] += amount
            self._added[node] += amount
            return
        middle = (left + right) // 2
        self._add(2 * node, left, middle, lo, hi, amount)
        self._add(2 * node + 1, middle + 1, right, lo, hi, amount)
        self._max[node] = max(self._max[2 * node], self._max[2 * node + 1]) + self._added[node]

    def peak(self) -> float:
        return self._max[1]


def _tuple_items(attr: Attribute) -> Sequence[Attribute] | None:
    if isinstance(attr, ArrayAttr):
        return attr.data
    if isinstance(attr, fx.TupleValueAttr):
        return attr.elements.data
    return None


def _join_parts(op: Operation) -> tuple[list[SSAValue], int] | None:
    """(the pieces, the non-negative dim) of a `torch.cat` call with static
    shapes, rank 2, or rank 3 along dim 0 (its slots are contiguous), or None."""
    if not isinstance(op, fx.CallFunctionOp) or op.target.data not in _JOINS:
        return None
    args, kwargs = op.args.data, op.kwargs.data
    if not args or set(kwargs) - {"dim"} or len(args) > 2 or (len(args) == 2 and "dim" in kwargs):
        return None
    items = _tuple_items(args[0])
    if items is None or not all(isinstance(item, fx.RefAttr) for item in items):
        return None
    dim_attr = args[1] if len(args) == 2 else kwargs.get("dim", IntAttr(0))
    if not isinstance(dim_attr, IntAttr):
        return None
    ty = op.results[0].type
    if not isinstance(ty, TensorType) or ty.get_num_dims() not in (2, 3) or DYNAMIC in ty.get_shape():
        return None
    rank = ty.get_num_dims()
    dim = dim_attr.data + rank if dim_attr.data < 0 else dim_attr.data
    if dim not in ((0, 1) if rank == 2 else (0,)):
        return None
    pieces = [op.operands[item.index.data] for item in items]  # type: ignore[union-attr]
    return pieces, dim


def _maker(piece: SSAValue, join_type: TensorType, dim: int, per_call: set[Operation]) -> fx.CallFunctionOp | None:
    """The call that makes `piece`'s storage where it can write into a slot
    instead (module docstring), else None. The join reads `piece` once (the
    caller checks)."""
    if piece.uses.get_length() != 1:
        return None
    ty = piece.type
    rank = join_type.get_num_dims()
    if not isinstance(ty, TensorType) or ty.element_type != join_type.element_type or ty.get_num_dims() != rank:
        return None
    value = piece
    reshaped = False
    while True:
        if isinstance(value, BlockArgument):
            return None
        op = value.owner
        if not isinstance(op, fx.CallFunctionOp) or "out" in op.kwargs.data:
            return None
        target = op.target.data
        if target.startswith(_INPLACE_PREFIX):
            written = written_operand(op)
            if written is None or written.uses.get_length() != 1 or reads_of(op, written) != 1:
                return None
            if written.type != value.type:
                return None
            value = written
            continue
        if target in _RESHAPES:
            reshaped_input = _reshaped_input(op)
            if reshaped_input is None or reshaped_input.uses.get_length() != 1:
                return None
            value, reshaped = reshaped_input, True
            continue
        if target not in WRITERS or op not in per_call or value.uses.get_length() != 1:
            return None
        if (target in _BATCHED_WRITERS) != (rank == 3) or _reference_operand(op) is None:
            return None
        if target == _STACK:
            return op if _stack_fits_slot(op, ty, dim) else None
        return op if not reshaped and op.results[0].type == ty else None


_STACK = "torch.stack"

_BATCHED_WRITERS = frozenset({"torch.baddbmm", "torch.bmm"})
"""The writers of a rank-3 join's pieces (along dim 0: contiguous slots):
batched matmuls, whose rows (dim 1) are their batch operand's."""

_RESHAPES = frozenset({"torch.flatten", "torch.reshape", "torch.Tensor.view", "torch.Tensor.reshape", "torch.Tensor.flatten"})
"""Calls whose result has their input's elements in row-major order (a view
where the strides allow): a piece may be a stack's result through them."""


def _reshaped_input(op: fx.CallFunctionOp) -> SSAValue | None:
    """The tensor a reshape call reads (its first argument), when it is the
    call's only tensor operand."""
    args = op.args.data
    if not args or not isinstance(args[0], fx.RefAttr) or len(op.operands) != 1:
        return None
    value = op.operands[0]
    if not isinstance(value.type, TensorType) or value.type.element_type != op.results[0].type.element_type:  # type: ignore[union-attr]
        return None
    return value


def _stack_dim(op: fx.CallFunctionOp) -> int | None:
    args, kwargs = op.args.data, op.kwargs.data
    if set(kwargs) - {"dim"} or len(args) > 2 or (len(args) == 2 and "dim" in kwargs):
        return None
    dim_attr = args[1] if len(args) == 2 else kwargs.get("dim", IntAttr(0))
    if not isinstance(dim_attr, IntAttr):
        return None
    rank = op.results[0].type.get_num_dims()  # type: ignore[union-attr]
    return dim_attr.data + rank if dim_attr.data < 0 else dim_attr.data


def _stack_fits_slot(op: fx.CallFunctionOp, piece: TensorType, dim: int) -> bool:
    """A stack (along a dim past 0, so its rows are its inputs') whose static
    result can be seen as a view of its piece's slot: along dim 0 the slot
    is contiguous (same element count); along dim 1 its rows are strided
    and its columns contiguous, so the result must keep the rows and split
    the columns."""
    ty = op.results[0].type
    stack_dim = _stack_dim(op)
    if not isinstance(ty, TensorType) or DYNAMIC in ty.get_shape() or stack_dim is None or stack_dim < 1:
        return False
    sizes, (rows, columns) = ty.get_shape(), piece.get_shape()
    if dim == 0:
        return math.prod(sizes) == rows * columns
    return sizes[0] == rows and math.prod(sizes[1:]) == columns


def _per_call_ops(block: Block) -> set[Operation]:
    per_call: set[Operation] = set()
    for op in block.ops:
        if isinstance(op, fx.PlaceholderOp) or any(
            isinstance(v, BlockArgument) or v.owner in per_call for v in op.operands
        ):
            per_call.add(op)
    return per_call


_ROWS_OPERAND = {"torch.addmm": 1, "torch.baddbmm": 1}
"""The argument whose dim 0 is the result's, per writer target (else the
first): linear's and mm's input, addmm's first matrix."""


def _reference_operand(op: fx.CallFunctionOp) -> SSAValue | None:
    """The operand whose rows are `op`'s result's (`_ROWS_OPERAND`; dim 0,
    a batched matmul's dims 0 and 1): the buffer is made on its device, and
    takes its rows from it."""
    args = op.args.data
    position = _ROWS_OPERAND.get(op.target.data, 0)
    if position >= len(args):
        return None
    ref = args[position]
    if op.target.data == _STACK:  # the first stacked tensor: dim 0 of a stack past dim 0
        items = _tuple_items(ref)
        ref = items[0] if items else None
    if isinstance(ref, fx.RefAttr):
        operand = op.operands[ref.index.data]
        if isinstance(operand.type, TensorType) and operand.type.get_num_dims() >= 1:
            return operand
    return None


def _rows_follow(maker: fx.CallFunctionOp, reference: TensorType, rows: int) -> bool:
    """The maker's result has its reference operand's rows whatever the
    batch: a linear's, mm's or addmm's matrix of the join's rows, a stack
    (past dim 0, `_stack_fits_slot`) of tensors of the join's rows."""
    if reference.get_shape()[0] != rows:
        return False
    return maker.target.data == _STACK or reference.get_num_dims() == 2


def write_into_joins(block: Block) -> tuple[int, int, int]:
    """Rewrite the joins of `block` whose pieces can be written in their
    slots (module docstring); (joins rewritten, pieces written in place,
    bytes those pieces no longer allocate apart from their join)."""
    joins = [(op, parts) for op in block.ops if (parts := _join_parts(op)) is not None]
    if not joins:
        return 0, 0, 0
    per_call = _per_call_ops(block)
    live = live_bytes(block)
    tree = _RangeAddMax(live.live)
    rewritten = written_total = written_bytes = 0
    for join, (pieces, dim) in joins:
        assert isinstance(join, fx.CallFunctionOp)
        join_type = join.results[0].type
        assert isinstance(join_type, TensorType)
        if len(set(pieces)) != len(pieces):
            continue  # a piece joined twice (the join's only references are its pieces: `_join_parts`)
        makers: dict[SSAValue, fx.CallFunctionOp] = {}
        for piece in pieces:
            maker = _maker(piece, join_type, dim, per_call)
            if maker is not None and tensor_bytes(piece) >= MIN_WRITTEN_PIECE_BYTES:
                makers[piece] = maker
        if not makers:
            continue
        saved = sum(tensor_bytes(piece) for piece in makers) * COPY_S_PER_BYTE
        cost = JOIN_OVERHEAD_S + SLOT_OVERHEAD_S * len(pieces) + WRITER_OVERHEAD_S * len(makers)
        if saved <= cost:
            continue
        at = live.position[join]
        first = min(live.position[maker] for maker in makers.values())
        size = tensor_bytes(join.results[0])
        before = tree.peak()
        changes = [(first, at - 1, size)] + [
            (live.position[maker], at, -tensor_bytes(piece)) for piece, maker in makers.items()
        ]
        for lo, hi, amount in changes:
            tree.add(lo, hi, amount)
        if tree.peak() > before:
            for lo, hi, amount in changes:
                tree.add(lo, hi, -amount)
            continue
        _rewrite(block, join, pieces, dim, makers, live.ops[first], join_type)
        rewritten += 1
        written_total += len(makers)
        written_bytes += sum(tensor_bytes(piece) for piece in makers)
    return rewritten, written_total, written_bytes


def _rewrite(
    block: Block,
    join: fx.CallFunctionOp,
    pieces: Sequence[SSAValue],
    dim: int,
    makers: dict[SSAValue, fx.CallFunctionOp],
    first: Operation,
    join_type: TensorType,
) -> None:
    assert isinstance(first, fx.CallFunctionOp)
    reference = _reference_operand(first)
    assert reference is not None
    shape = join_type.get_shape()
    reference_type = reference.type
    assert isinstance(reference_type, TensorType)
    # along dim 1 the rows are the reference's at run time: the code stays batch generic
    rows_like_reference = dim == 1 and _rows_follow(first, reference_type, shape[0])
    # a batched matmul's rows (dim 1) are its batch operand's at run time
    batched_rows = len(shape) == 3 and reference_type.get_shape()[1] == shape[1]
    sizes = [piece.type.get_shape()[dim] for piece in pieces]  # type: ignore[union-attr]
    slot_types = [piece.type for piece in pieces]
    split = fx.CallFunctionOp(
        JOIN_SLOTS_TARGET,
        (
            fx.ref(0),
            ArrayAttr([fx.int_literal(s) for s in shape]),
            fx.DTypeAttr(join_type.element_type),
            ArrayAttr([fx.int_literal(s) for s in sizes]),
            fx.int_literal(dim),
            *([fx.bool_literal(True)] if rows_like_reference else []),
            *([ArrayAttr([fx.int_literal(1)])] if batched_rows else []),
        ),
        {},
        (reference,),
        TupleType((join_type, TupleType(tuple(slot_types)))),
    )
    split.results[0].name_hint = "join_slots"
    buffer = fx.CallFunctionOp("_operator.getitem", (fx.ref(0), fx.int_literal(0)), {}, (split.results[0],), join_type)
    buffer.results[0].name_hint = "join_buffer"
    views = fx.CallFunctionOp(
        "_operator.getitem", (fx.ref(0), fx.int_literal(1)), {}, (split.results[0],), TupleType(tuple(slot_types))
    )
    views.results[0].name_hint = "join_views"
    slots = [
        fx.CallFunctionOp("_operator.getitem", (fx.ref(0), fx.int_literal(i)), {}, (views.results[0],), slot_type)
        for i, slot_type in enumerate(slot_types)
    ]
    for slot in slots:
        slot.results[0].name_hint = "join_slot"
    block.insert_ops_before([split, buffer, views, *slots], first)
    current = list(pieces)  # a piece that is its maker's result is the writer's now
    for i, piece in enumerate(pieces):
        maker = makers.get(piece)
        if maker is None:
            continue
        slot_value = slots[i].results[0]
        kwargs = dict(maker.kwargs.data)
        if maker.target.data == _STACK:  # the slot seen in the stack's shape; rows as the join's
            sizes = maker.results[0].type.get_shape()  # type: ignore[union-attr]
            kwargs["shape"] = ArrayAttr(
                [fx.int_literal(-1 if rows_like_reference and i == 0 else s) for i, s in enumerate(sizes)]
            )
        writer = fx.CallFunctionOp(
            WRITERS[maker.target.data],
            (fx.ref(len(maker.operands)), *maker.args.data),
            kwargs,
            (*maker.operands, slot_value),
            maker.results[0].type,
        )
        writer.location = maker.location
        writer.results[0].name_hint = maker.results[0].name_hint
        block.insert_op_before(writer, maker)
        if maker.results[0] is piece:
            current[i] = writer.results[0]
        maker.results[0].replace_all_uses_with(writer.results[0])
        block.erase_op(maker)
    operands = [buffer.results[0], *(s.results[0] for s in slots), *current]
    n = len(pieces)
    new_join = fx.CallFunctionOp(
        WRITTEN_JOIN_TARGET,
        (
            fx.ref(0),
            ArrayAttr([fx.ref(1 + i) for i in range(n)]),
            ArrayAttr([fx.ref(1 + n + i) for i in range(n)]),
            fx.int_literal(dim),
        ),
        {},
        operands,
        join_type,
    )
    new_join.location = join.location
    new_join.results[0].name_hint = join.results[0].name_hint
    block.insert_op_before(new_join, join)
    join.results[0].replace_all_uses_with(new_join.results[0])
    block.erase_op(join)


@dataclass(frozen=True)
class WriteIntoJoinPass(ModulePass):
    """Compute the pieces of a `torch.cat` in their slots of its result.

    After `reinplace`: a join whose pieces are made by a linear, addmm or mm
    (then written in place by `reinplace`'s forms, or not), or are a
    reshape of a stack, read by nothing else gets its result allocated up front, split into
    slots, and each such piece's maker writes its slot (grad-guarded:
    `optimus_ir.kernels.joins`); the join copies only the other pieces.
    Where the time estimate or the graph's peak of live bytes would grow,
    the join stays. `target=inductor` leaves the graph alone.
    """

    name = PASS_NAME

    target: FusionTarget = "eager"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target == "inductor":
            return
        record = current_pass_context(self.name).record
        for graph in list(op.ops):
            if isinstance(graph, fx.GraphOp):
                joins, pieces, written = write_into_joins(graph.block)
                record.bump("joins written in place", joins)
                record.bump("pieces written in their slots", pieces)
                record.bump("bytes not allocated", written)


__all__ = ["WriteIntoJoinPass", "write_into_joins"]
