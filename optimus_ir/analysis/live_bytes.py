"""Live tensor bytes of a block, statically: what one call holds at each op.

`batch-fusion`'s memory budget (issue 24) compares what a fused group would
hold at once against the peak of the graph as captured, so it needs that
peak without running anything. `live_bytes(block)` walks the ops once in
block order, as the exported module runs them:

* an op *allocates* its tensor results unless it may return a view of an
  operand (`op_classes.may_alias_operands`: views, fx getitem, unknown or
  impure calls -- those are counted as aliases, never as new storage);
  a result holds numel x itemsize bytes of its `TensorType` (a `?` dim at
  its example size, `SymbolicDims.size_hints`, else
  `DEFAULT_SYMBOLIC_SIZE`);
* storage is freed after the last op that reads any value of its alias
  class (`AliasAnalysis`: a view keeps its base alive); a class returned by
  `fx.output` is read by it, the last op, so it lives to the end;
* graph inputs and parameters (`fx.placeholder`, `fx.get_attr`) are not
  counted: they exist before the call and after it, like the measurement
  of `optimus_ir.memory` (bytes above what was live before the call).

While op `i` runs, its operands whose last reader it is are still held and
its results are already allocated (`live[i]` counts both), as an eager
kernel holds its inputs while it writes its output. The kernels' own
temporaries (oneDNN scratch, the statistics `native_layer_norm` returns)
are not seen; `optimus_ir.memory`'s "dispatch" method measures the same
things, so the two agree on graphs of operator ops.

Linear in the ops and uses: one pass for the last readers (per alias class),
one for the allocations, one prefix sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from optimus_ir.analysis.aliasing import AliasAnalysis
from optimus_ir.analysis.op_classes import may_alias_operands
from optimus_ir.analysis.symbolic_dims import SymbolicDims
from optimus_ir.dialects import fx
from optimus_ir.foundation.types import DYNAMIC

DEFAULT_SYMBOLIC_SIZE = 64
"""The size assumed for a symbolic dim without an example size (hand-written
IR; Dynamo's graphs record the SymInt's hint on the placeholder, which is
used instead): by the cost model and by the live-bytes estimate."""


def tensor_elements(value: SSAValue, dims: SymbolicDims | None = None) -> int:
    """Elements of a tensor value; a `?` dim counts as its example size
    (`dims`' hint) or `DEFAULT_SYMBOLIC_SIZE`. 1 for a non-tensor."""
    ty = value.type
    count = 1
    if isinstance(ty, TensorType):
        sizes = ty.get_shape()
        if DYNAMIC in sizes:
            sizes = (
                dims.size_hints(value, DEFAULT_SYMBOLIC_SIZE) if dims is not None
                else tuple(DEFAULT_SYMBOLIC_SIZE if d == DYNAMIC else d for d in sizes)
            )
        for d in sizes:
            count *= max(d, 1)
    return count


def tensor_bytes(value: SSAValue, dims: SymbolicDims | None = None) -> int:
    """Bytes of a tensor value: `tensor_elements` x the element's byte
    width (at least one byte: a bool is stored in one)."""
    width = getattr(value.type.element_type, "bitwidth", 32)  # type: ignore[union-attr]
    return tensor_elements(value, dims) * max(int(width) // 8, 1)


def allocated_bytes(op: Operation, dims: SymbolicDims | None = None) -> int:
    """The bytes of new storage `op` allocates when it runs: its tensor
    results, unless it may return views of its operands (or is a graph
    input or parameter, which the caller owns)."""
    if isinstance(op, fx.PlaceholderOp | fx.GetAttrOp) or may_alias_operands(op):
        return 0
    return sum(tensor_bytes(r, dims) for r in op.results if isinstance(r.type, TensorType))


@dataclass(frozen=True)
class LiveBytes:
    """The live tensor bytes of one block (see the module docstring)."""

    ops: tuple[Operation, ...]
    """The block's ops, in order (positions index `live`)."""
    live: tuple[int, ...]
    """Bytes held while the op at each position runs."""
    peak: int
    """The largest of `live` (0 for a block that allocates nothing)."""
    peak_position: int
    """Where `peak` is first reached (-1 for an empty block)."""
    position: dict[Operation, int]
    """Each op's position."""
    last_read: dict[SSAValue, int]
    """Per alias class (its `AliasAnalysis` representative): the position
    of the last op that reads a value of it."""
    aliases: AliasAnalysis

    def at(self, op: Operation) -> int:
        """Bytes held while `op` runs."""
        return self.live[self.position[op]]

    def held_at(self, value: SSAValue, position: int) -> bool:
        """Whether `value`'s storage is still held while the op at
        `position` runs: it is produced at or before it and some value of
        its alias class is read there or later."""
        owner = value.owner
        made = self.position.get(owner, -1) if isinstance(owner, Operation) else -1
        return made <= position <= self.last_read.get(self.aliases.find(value), made)


def live_bytes(
    block: Block | Sequence[Operation],
    aliases: AliasAnalysis | None = None,
    dims: SymbolicDims | None = None,
) -> LiveBytes:
    """The live tensor bytes at each op of `block` (or of the ops given, a
    whole block in order) and their peak. `aliases` and `dims` are built
    from the block when not given (pass the pass's own to share them)."""
    ops = tuple(block.ops) if isinstance(block, Block) else tuple(block)
    if aliases is None:
        aliases = AliasAnalysis()
        for op in ops:
            aliases.register(op)
    if dims is None and isinstance(block, Block):
        dims = SymbolicDims(block)
    position = {op: i for i, op in enumerate(ops)}
    last_read: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for operand in op.operands:
            last_read[aliases.find(operand)] = i  # ops in order: the last write wins
    delta = [0] * (len(ops) + 1)
    for i, op in enumerate(ops):
        size = allocated_bytes(op, dims)
        if not size:
            continue
        # freed after the last reader of any result's class (unread: right after the op)
        end = max((last_read.get(aliases.find(r), i) for r in op.results), default=i)
        delta[i] += size
        delta[max(end, i) + 1] -= size
    live: list[int] = []
    running = 0
    for i in range(len(ops)):
        running += delta[i]
        live.append(running)
    peak = max(live, default=0)
    return LiveBytes(
        ops=ops,
        live=tuple(live),
        peak=peak,
        peak_position=live.index(peak) if live else -1,
        position=position,
        last_read=last_read,
        aliases=aliases,
    )


__all__ = [
    "DEFAULT_SYMBOLIC_SIZE",
    "LiveBytes",
    "allocated_bytes",
    "live_bytes",
    "tensor_bytes",
    "tensor_elements",
]
