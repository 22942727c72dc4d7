"""`reinplace`: out-of-place calls whose written operand dies there go back in place.

`maximize-value-semantics` makes the model's in-place writes to temporaries
out of place so that fusion sees values. Where nothing consumed them, the
user would pay for it: a fresh buffer per write (on CPU a large one is a new
mapping, page faults included) and a higher peak. This pass, after
`lower-to-fx` (anchor: Inductor's `reinplace` FX pass, the inverse of
functionalization), writes such a call in place again -- and any other
out-of-place call the user wrote whose first operand dies at it:

    %h = fx.call_function "torch._C._nn.linear"(%x, %w, %b)
    %r = fx.call_function "torch.relu"(%h)            // %h read by nothing later
  becomes
    %r = fx.call_function "optimus_ir.kernels.inplace.torch__relu"(%h)

The call written is the grad-guarded form (`optimus_ir.kernels.inplace`): in
place when gradients are not recorded, the original call otherwise, since
with autograd on an earlier op may have saved the operand for its backward.

The written operand `x` (the call's first positional argument) must be:

* fresh storage of its own: the result of an op torch shows returns fresh
  storage (`result_is_fresh`: not an input, parameter, buffer, view or a
  call that may alias), so nothing else sees the write, and dense as that
  op made it (so the in-place result has the strides the out-of-place one
  would have: see below); or the result of a call this pass made in place
  on such a value (`relu(h) + 1` is two writes into `h`'s storage);
* dead after the call: every other reader of `x` comes before it in the
  block, and none of those may alias or write it (a view of `x` made
  earlier and read later would see the write); the call reads `x` once
  (`x + x` stays); an output reads it after, so an output is never written;
* or rows of a stack nobody else sees them in (`is_private_rows`): `x =
  stack[a:b]` along dim 0, with constant bounds, or a piece of
  `torch.split_with_sizes(stack, sizes, 0)` (what `slices-to-split` makes
  of such slices), of such fresh storage, every reader of the stack
  viewing rows no other reader's rows meet (a fused group's stacked
  result cut into its consumers' slices or split pieces). Then `x`
  must be provably contiguous (so the in-place result is laid out as the
  out-of-place one) and the result must reach no output, itself or
  through a view (two outputs would share the stack's storage);
* computed per call: made from a graph input (values of parameters and
  constants alone are what `optimize(freeze=True)` computes once; a write
  there would make them look effectful);
* of the result's type exactly: same dtype (no promotion: `int + 0.5`),
  same shape (no broadcasting into a bigger result). A call with another
  tensor operand also needs every dim of `x` static: a dynamic dim could be
  1 at run time and broadcast against the other operand's.

Layout: the in-place result has `x`'s strides. The out-of-place result has
them too where it matters: `x` is dense (fresh storage of its own), so its
dims of size above 1 have distinct strides, and TensorIterator orders the
result's dims by the first operand whose strides tell them apart -- `x`,
the first argument of every form. Only the strides of size-1 dims can
differ, which the project's layout contract ignores as `is_contiguous`
does (`match-output-strides`). Where the model wrote the call in place
(value semantics took it out of place) the in-place form is exactly what
the captured graph computed.

Forms known (`optimus_ir.kernels.inplace`): `torch.<f>` and `aten.<f>.<o>`
with an in-place twin as torchgen pairs them (`alias_facts.functional_form`:
`relu`/`relu_`, `add`/`add_`, not random ops nor metadata changes), Tensor
methods likewise, `operator.add`/`sub`/`mul`/... (`+=`), and
`torch.nn.functional.<act>` with an `inplace` parameter. `out=` calls stay.

Every call left out of place with an in-place form gets no remark (most
have a live operand, which is the normal case); the statistics count the
re-inplaced calls. One forward walk, positions numbered once: linear in the
block.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from optimus_ir.analysis.alias_facts import functional_form
from optimus_ir.analysis.aliasing import reaches_output, view_closure
from optimus_ir.analysis.cost_model import FusionTarget
from optimus_ir.analysis.layout import known_contiguous
from optimus_ir.analysis.live_bytes import tensor_bytes
from optimus_ir.analysis.symbolic_dims import SymbolicDims
from optimus_ir.analysis.op_classes import may_alias_operands, may_write_operands, result_is_fresh
from optimus_ir.dialects import fx
from optimus_ir.foundation.statistics import current_pass_context
from optimus_ir.foundation.types import DYNAMIC
from optimus_ir.kernels.inplace import OPERATOR_IN_PLACE, inplace_form_name
from optimus_ir.passes.value_semantics import FUNCTIONAL_INPLACE_POSITION

PASS_NAME = "reinplace"

_FUNCTIONAL = "torch.nn.functional."


def _has_inplace_twin(name: str) -> bool:
    return functional_form(name + "_") == name


def inplace_form(op: Operation) -> str | None:
    """The qualified name of the grad-guarded in-place form of the fx call
    `op`, or None where it has none."""
    if not isinstance(op, fx.CallFunctionOp | fx.CallMethodOp) or "out" in op.kwargs.data:
        return None
    target = op.target.data
    if isinstance(op, fx.CallMethodOp):
        return inplace_form_name("call_method", target) if _has_inplace_twin(target) else None
    module, _, last = target.rpartition(".")
    if module in ("operator", "_operator"):
        known = last in OPERATOR_IN_PLACE
    elif target.startswith(_FUNCTIONAL):
        position = FUNCTIONAL_INPLACE_POSITION.get(last)  # the activations; not the (random) dropouts
        known = position is not None and "inplace" not in op.kwargs.data and len(op.args.data) <= position
    elif target.startswith("torch.ops."):
        parts = target.split(".")
        known = len(parts) == 5 and _has_inplace_twin(parts[3])
    else:
        known = target.startswith("torch.") and _has_inplace_twin(last)
    return inplace_form_name("call_function", target) if known else None


def written_operand(op: fx.NodeOp) -> SSAValue | None:
    """The operand the in-place form writes: the first positional argument,
    a tensor."""
    args = op.args.data
    if not args or not isinstance(args[0], fx.RefAttr):
        return None
    value = op.operands[args[0].index.data]
    return value if isinstance(value.type, TensorType) else None


def reads_of(op: fx.NodeOp, x: SSAValue) -> int:
    """How many times `op`'s arguments name `x` (operands are listed once
    however often the arguments refer to them)."""
    indices: list[int] = []
    for attr in (*op.args.data, *op.kwargs.data.values()):
        fx.map_refs(attr, indices.append, lambda _: None)
    return sum(1 for i in indices if op.operands[i] is x)


_GETITEM = "_operator.getitem"
_FULL_SLICE = fx.SliceAttr(fx.NoneValueAttr(), fx.NoneValueAttr(), fx.NoneValueAttr())  # `:`
_STEP_ONE = IntAttr(1)


def _row_bound(attr: Attribute, rows: int, default: int) -> int | None:
    """A slice bound literal as a row index in `[0, rows]` (Python's
    clamping of negative and out-of-range bounds); None where it is not a
    constant int."""
    if isinstance(attr, fx.NoneValueAttr):
        return default
    if not isinstance(attr, IntAttr):
        return None
    bound = attr.data + rows if attr.data < 0 else attr.data
    return min(max(bound, 0), rows)


def leading_rows(op: Operation, stack: SSAValue) -> tuple[int, int] | None:
    """The rows `[start, stop)` along dim 0 of `stack` that `op` views, where
    `op` is `stack[i]`, `stack[a:b]` or `stack[(a:b, :, ...)]` with constant
    bounds and step 1 (what `lower-batch` cuts a stacked result into); None
    for any other reader."""
    if not isinstance(op, fx.CallFunctionOp) or op.target.data != _GETITEM or op.kwargs.data:
        return None
    args = op.args.data
    if len(args) != 2 or not isinstance(args[0], fx.RefAttr) or op.operands[args[0].index.data] is not stack:
        return None
    sizes = stack.type.get_shape() if isinstance(stack.type, TensorType) else ()
    if not sizes or sizes[0] == DYNAMIC:
        return None
    rows = sizes[0]
    index = args[1]
    if isinstance(index, fx.TupleValueAttr):
        parts = index.elements.data
        if not parts or any(part != _FULL_SLICE for part in parts[1:]):
            return None
        index = parts[0]
    if isinstance(index, IntAttr):  # an int literal (a bool is an IntegerAttr)
        row = index.data + rows if index.data < 0 else index.data
        return (row, row + 1) if 0 <= row < rows else None
    if not isinstance(index, fx.SliceAttr):
        return None
    if not (isinstance(index.step, fx.NoneValueAttr) or index.step == _STEP_ONE):
        return None
    start, stop = _row_bound(index.start, rows, 0), _row_bound(index.stop, rows, rows)
    if start is None or stop is None or start >= stop:
        return None
    return start, stop


_SPLIT_WITH_SIZES = "torch.split_with_sizes"


def _row_split_sections(op: Operation, stack: SSAValue) -> tuple[int, ...] | None:
    """The constant sections of `op` when it is `torch.split_with_sizes(stack,
    sizes, 0)` (what `lower-to-fx` makes of a split along dim 0); None for any
    other reader."""
    if not isinstance(op, fx.CallFunctionOp) or op.target.data != _SPLIT_WITH_SIZES or op.kwargs.data:
        return None
    args = op.args.data
    if len(args) not in (2, 3) or not isinstance(args[0], fx.RefAttr) or op.operands[args[0].index.data] is not stack:
        return None
    if len(args) == 3 and not (isinstance(args[2], IntAttr) and args[2].data == 0):
        return None
    sizes = args[1]
    if not isinstance(sizes, ArrayAttr) or not all(isinstance(size, IntAttr) for size in sizes.data):
        return None
    return tuple(size.data for size in sizes.data)  # type: ignore[union-attr]


def _piece_index(op: Operation, pieces: SSAValue) -> int | None:
    """`k` when `op` is `pieces[k]` (a getitem of a split's tuple with an
    int literal); None otherwise."""
    if not isinstance(op, fx.CallFunctionOp) or op.target.data != _GETITEM or op.kwargs.data:
        return None
    args = op.args.data
    if len(args) != 2 or not isinstance(args[0], fx.RefAttr) or op.operands[args[0].index.data] is not pieces:
        return None
    return args[1].data if isinstance(args[1], IntAttr) else None


def stack_of_rows(x: SSAValue) -> SSAValue | None:
    """The stack `x` views constant rows of along dim 0: `x = stack[a:b]`
    (`leading_rows`), or `x = pieces[k]` of `pieces =
    torch.split_with_sizes(stack, sizes, 0)`; None otherwise. (Which rows
    is `_readers_view_disjoint_rows`'s business, once per stack.)"""
    owner = x.owner
    if not isinstance(owner, fx.CallFunctionOp) or owner.target.data != _GETITEM or not owner.operands:
        return None
    source = owner.operands[0]
    if leading_rows(owner, source) is not None:
        return source
    split = source.owner
    if isinstance(source, BlockArgument) or not isinstance(split, fx.CallFunctionOp) or not split.operands:
        return None
    stack = split.operands[0]
    sections = _row_split_sections(split, stack)
    k = _piece_index(owner, source)
    if sections is None or k is None or not 0 <= k < len(sections):
        return None
    return stack


def is_private_rows(x: SSAValue, owned: set[SSAValue], disjoint: dict[SSAValue, bool] | None = None) -> bool:
    """`x` is rows of a stack nobody else sees them in: `x = stack[a:b]` or
    a split piece of it along dim 0 (`stack_of_rows`) of fresh storage of this
    graph (or of a value this pass owns), and every reader of the stack
    views constant rows of it, no two readers' rows meeting. A write into
    `x` then reaches no other value: the stacked result of a fused group,
    cut into its consumers' slices (`y = act(stack[0:2])`, `act2(stack[2:4])`,
    ...), is written in place slice by slice, its activations into its own
    storage. `disjoint` caches the test of a stack's readers (one sort per
    stack, not a scan of its readers per slice)."""
    stack = stack_of_rows(x)
    if stack is None:
        return False
    if isinstance(stack, BlockArgument) or (stack not in owned and not result_is_fresh(stack.owner)):
        return False
    known = disjoint.get(stack) if disjoint is not None else None
    if known is None:
        known = _readers_view_disjoint_rows(stack)
        if disjoint is not None:
            disjoint[stack] = known
    return known


def _readers_view_disjoint_rows(stack: SSAValue) -> bool:
    """Every reader of `stack` views constant rows of it along dim 0 (a
    slice, or a split whose tuple is read only by getitems, each piece by
    one at most), and no two of those rows meet."""
    ranges = []
    for use in stack.uses:
        rows = leading_rows(use.operation, stack)
        if rows is not None:
            ranges.append(rows)
            continue
        sections = _row_split_sections(use.operation, stack)
        if sections is None:
            return False
        starts = [0, *itertools.accumulate(sections)]
        pieces = use.operation.results[0]
        taken: set[int] = set()
        for piece_use in pieces.uses:
            k = _piece_index(piece_use.operation, pieces)
            if k is None or not 0 <= k < len(sections) or k in taken:
                return False  # the tuple escapes, or one piece has two readers sharing its rows
            taken.add(k)
            ranges.append((starts[k], starts[k] + sections[k]))
    ranges.sort()
    return all(earlier[1] <= later[0] for earlier, later in zip(ranges, ranges[1:]))


def can_reinplace(
    op: fx.NodeOp,
    x: SSAValue,
    position: dict[Operation, int],
    owned: set[SSAValue],
    shared: set[SSAValue] | None = None,
    disjoint: dict[SSAValue, bool] | None = None,
) -> bool:
    """Whether writing `x` in place at `op` is invisible (module docstring).
    `owned`: results of calls this pass made in place, whose storage (their
    written operand's, dead but for them) is theirs alone, or, for those
    also in `shared`, rows of a stack no other value sees (`is_private_rows`),
    which must not reach an output (the outputs would share a storage).
    `disjoint`: `is_private_rows`'s cache, one per walk of a block."""
    if isinstance(x, BlockArgument):
        return False
    fresh = x in owned or result_is_fresh(x.owner)
    rows_of_stack = not fresh and is_private_rows(x, owned, disjoint)
    if not fresh and not rows_of_stack:
        return False  # inputs, parameters, views, calls that may alias
    if rows_of_stack or (shared is not None and x in shared):
        # rows along dim 0 of a row-major stack are contiguous (no strides of
        # each slice to derive)
        laid_out = known_contiguous(stack_of_rows(x)) if rows_of_stack else known_contiguous(x)  # type: ignore[arg-type]
        if not laid_out or reaches_output(view_closure(op.results[0])):
            return False  # the in-place result would not be laid out as the out-of-place one
    ty = x.type
    if not isinstance(ty, TensorType) or op.results[0].type != ty:
        return False
    if reads_of(op, x) != 1:
        return False
    if any(o is not x and isinstance(o.type, TensorType) for o in op.operands) and DYNAMIC in ty.get_shape():
        return False  # a dynamic dim of 1 could broadcast against the other operand's
    at = position[op]
    for use in x.uses:
        reader = use.operation
        if reader is op:
            continue
        where = position.get(reader)
        if where is None or where > at:
            return False
        if may_alias_operands(reader) or may_write_operands(reader):
            return False
    return True


def reinplace(block: Block) -> int:
    """Rewrite every out-of-place call of `block` whose first operand dies
    there into its grad-guarded in-place form; the number rewritten."""
    return reinplace_counting_bytes(block)[0]


def reinplace_counting_bytes(block: Block) -> tuple[int, int]:
    """`reinplace(block)`, and the bytes the rewritten calls no longer
    allocate per call (their results' sizes, `?` dims at their hints)."""
    position = {op: i for i, op in enumerate(block.ops)}
    owned: set[SSAValue] = set()
    shared: set[SSAValue] = set()  # owned results that are rows of a stack
    disjoint: dict[SSAValue, bool] = {}  # is_private_rows's test per stack
    per_call: set[Operation] = set()  # ops whose value depends on an input
    rewritten = saved = 0
    dims = SymbolicDims(block)
    for op in list(block.ops):
        if isinstance(op, fx.PlaceholderOp) or any(
            isinstance(v, BlockArgument) or v.owner in per_call for v in op.operands
        ):
            per_call.add(op)
        else:
            continue  # parameters and constants alone: `freeze` computes them once
        form = inplace_form(op)
        if form is None:
            continue
        assert isinstance(op, fx.NodeOp)
        x = written_operand(op)
        if x is None or not can_reinplace(op, x, position, owned, shared, disjoint):
            continue
        # rows of a stack (is_private_rows), or a chain of writes into them
        into_rows = x in shared or not (x in owned or result_is_fresh(x.owner))
        new = fx.CallFunctionOp(form, op.args.data, dict(op.kwargs.data), op.operands, op.results[0].type)
        new.location = op.location
        new.results[0].name_hint = op.results[0].name_hint
        block.insert_op_before(new, op)
        position[new] = position[op]
        op.results[0].replace_all_uses_with(new.results[0])
        block.erase_op(op)
        owned.add(new.results[0])
        if into_rows:
            shared.add(new.results[0])
        per_call.add(new)
        rewritten += 1
        saved += tensor_bytes(new.results[0], dims)
    return rewritten, saved


@dataclass(frozen=True)
class ReinplacePass(ModulePass):
    """Write out-of-place calls in place where their first operand dies.

    After `lower-to-fx`: `torch.relu(h)`, `h + b`, `h.mul(2.0)`, `F.relu(h)`
    whose `h` is fresh storage of this graph that nothing reads, views or
    returns afterwards become grad-guarded in-place calls
    (`optimus_ir.kernels.inplace`: in place without autograd, as before with
    it). Restores the model's own in-place writes that value semantics took
    out of place and no fusion consumed, and lowers the peak where the user
    wrote out-of-place calls on dead values. `target=inductor` (the
    torch.compile backend sets it) leaves the graph alone: Inductor
    functionalizes and re-inplaces itself.
    """

    name = PASS_NAME

    target: FusionTarget = "eager"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target == "inductor":
            return
        record = current_pass_context(self.name).record
        for graph in list(op.ops):
            if isinstance(graph, fx.GraphOp):
                calls, saved = reinplace_counting_bytes(graph.block)
                record.bump("calls made in place", calls)
                record.bump("bytes not allocated", saved)


__all__ = [
    "ReinplacePass",
    "can_reinplace",
    "inplace_form",
    "is_private_rows",
    "stack_of_rows",
    "leading_rows",
    "reads_of",
    "reinplace",
    "reinplace_counting_bytes",
    "written_operand",
]
