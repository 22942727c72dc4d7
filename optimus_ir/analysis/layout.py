"""Memory layout (strides): what a value's strides provably are at run time.

Replacing a contiguous copy by a strided view changes *numerics* downstream:
a sum, matmul, layer_norm or a CPU transcendental rounds differently on a
strided input. Rewrites therefore need to know strides (`strides_of`,
`same_layout`, `known_contiguous`) or that no user cares
(`layout_insensitive`).

Graph inputs and parameters are assumed contiguous (Dynamo's static-shape
capture guards on their strides).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType, TupleType
from xdsl.ir import Operation, SSAValue

from optimus_ir.analysis import alias_facts
from optimus_ir.analysis.aliasing import is_graph_input
from optimus_ir.analysis.op_classes import (
    has_contiguous_result,
    is_elementwise_op,
    is_join_op,
    is_layout_exact_elementwise,
    is_view_op,
)
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as t
from optimus_ir.foundation.traits import returns_input
from optimus_ir.foundation.types import DYNAMIC
from optimus_ir.kernels import inplace as inplace_forms

_INPLACE_FORM_PREFIX = inplace_forms.__name__ + "."
_GETITEM = "_operator.getitem"
_SPLIT_CALLS = frozenset({"torch.split_with_sizes"})
"""The fx calls `lower-to-fx` makes of `torch.split`: their pieces view the
input with its strides (only the size of the split dim and the offset
differ), as `t.SplitOp`'s do on the torch dialect."""


def shape(value: SSAValue) -> tuple[int, ...] | None:
    """The value's shape (`DYNAMIC` for `?`), or None when it is not a tensor."""
    ty = value.type
    return tuple(ty.get_shape()) if isinstance(ty, TensorType) else None


def all_static(sizes: Sequence[int] | None) -> bool:
    """True when `sizes` is known and holds no dynamic (`?`) size."""
    return sizes is not None and all(s != DYNAMIC and s >= 0 for s in sizes)


contiguous_strides = fx.row_major_strides
"""Row-major strides of `sizes` (the fx dialect's, which the recorded input
strides are compared with)."""


def view_strides(
    old: Sequence[int], old_strides: Sequence[int], new: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides of `view(new)` of a tensor with `old` sizes and strides, or
    None when it cannot be a view (torch's `computeStride`)."""
    if not old or not new or 0 in old:
        return contiguous_strides(new)
    new_strides = [0] * len(new)
    view_d = len(new) - 1
    chunk = old_strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                new_strides[view_d] = view_numel * chunk
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk = old_strides[d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None


def strides_of(value: SSAValue, depth: int = 32) -> tuple[int, ...] | None:
    """The strides `value` provably has at run time, or None (unknown,
    dynamic sizes). Graph inputs and parameters have the strides recorded
    at import (`fx.input_strides`: contiguous when none are recorded; the
    module `optimize` returns checks them at call time); matmul/linear/
    layer_norm/reduction results, cat/stack results of rank < 4 and
    pointwise results (dropout included) of contiguous operands are contiguous; views follow
    their input (reshape/flatten: a contiguous copy when no view exists).
    At most `depth` defining ops are followed."""
    sizes = shape(value)
    if sizes is None or not all_static(sizes) or depth <= 0:
        return None
    owner = value.owner
    if is_graph_input(value):
        # block arguments (hand-written IR) are taken as contiguous
        recorded = fx.input_strides(owner) if isinstance(owner, Operation) else None
        return recorded if recorded is not None else contiguous_strides(sizes)
    if has_contiguous_result(owner):  # type: ignore[arg-type]
        return contiguous_strides(sizes)
    if isinstance(owner, fx.CallFunctionOp | fx.CallMethodOp):
        return _fx_call_strides(owner, sizes, depth)
    if is_join_op(owner):  # type: ignore[arg-type]
        if len(sizes) < 4 or all(known_contiguous(v, depth - 1) for v in owner.inputs):  # type: ignore[union-attr]
            return contiguous_strides(sizes)
        return None
    if returns_input(owner):  # type: ignore[arg-type]
        # torch returns the input itself (an eval-mode dropout)
        return strides_of(owner.operands[0], depth - 1)  # type: ignore[union-attr]
    if is_elementwise_op(owner):  # type: ignore[arg-type]
        # a dropout too: in eval mode (or p = 0) it is its input, in training
        # its input times a mask laid out like the input (its *values*
        # depend on the layout, not its strides)
        tensors = [v for v in owner.operands if isinstance(v.type, TensorType)]  # type: ignore[union-attr]
        if all(known_contiguous(v, depth - 1) for v in tensors):
            return contiguous_strides(sizes)
        if _operands_order_dims_row_major(owner, sizes, depth - 1):  # type: ignore[arg-type]
            return contiguous_strides(sizes)
        return None
    if not is_view_op(owner):  # type: ignore[arg-type]
        return None
    source = owner.input  # type: ignore[union-attr]
    base = strides_of(source, depth - 1)
    src_sizes = shape(source)
    if base is None or src_sizes is None:
        return None
    base_list = list(base)
    if isinstance(owner, t.SplitOp | t.DetachOp):
        return base
    if isinstance(owner, t.SliceOp):
        base_list[owner.dim.data] *= owner.step.data
        return tuple(base_list)
    if isinstance(owner, t.UnbindOp | t.SelectOp):
        del base_list[owner.dim.data]
        return tuple(base_list)
    if isinstance(owner, t.SqueezeOp):
        dropped = set(t.ints(owner.dims))
        return tuple(st for d, st in enumerate(base_list) if d not in dropped)
    if isinstance(owner, t.UnsqueezeOp):
        d = owner.dim.data
        inner = base_list[d] * src_sizes[d] if d < len(src_sizes) else 1
        return tuple(base_list[:d] + [inner] + base_list[d:])
    if isinstance(owner, t.PermuteOp):
        return tuple(base_list[d] for d in t.ints(owner.dims))
    if isinstance(owner, t.TransposeOp):
        a, b = owner.dim0.data, owner.dim1.data
        base_list[a], base_list[b] = base_list[b], base_list[a]
        return tuple(base_list)
    if isinstance(owner, t.MovedimOp):
        order = t.movedim_permutation(
            len(base_list), t.ints(owner.source), t.ints(owner.destination)
        )
        return tuple(base_list[d] for d in order)
    viewed = view_strides(src_sizes, base_list, sizes)
    if viewed is not None:
        return viewed
    if isinstance(owner, t.ReshapeOp | t.FlattenOp):
        return contiguous_strides(sizes)  # reshape copies
    return None


def _fx_call_strides(owner: Operation, sizes: tuple[int, ...], depth: int) -> tuple[int, ...] | None:
    """The strides of an fx call's result as torch lays it out: the call is
    run on fake tensors with the strides its tensor operands provably have
    (`alias_facts.call_result_strides`, cached per call kind and layouts):
    a factory's row-major result, an in-place call's operand (`logit +=
    ...` of DeepFM's `x.new_zeros(...)`), a cast or `1 / t` laid out like
    its operand. None when an operand's strides are unknown or the call
    cannot be run (an unknown function). A grad-guarded in-place form
    (`optimus_ir.kernels.inplace`) of a row-major first operand of its
    result's shape is row-major: in place it is that operand, out of place
    TensorIterator lays its result out by that first operand."""
    if owner.target.data.startswith(_INPLACE_FORM_PREFIX):  # type: ignore[attr-defined]
        return _inplace_form_strides(owner, sizes, depth)
    if owner.target.data == _GETITEM and owner.operands and isinstance(owner.operands[0].type, TupleType):
        return _split_piece_strides(owner, sizes, depth)
    layouts: list[tuple[int, ...] | None] = []
    for operand in owner.operands:
        if isinstance(operand.type, TensorType):
            known = strides_of(operand, depth - 1)
            if known is None:
                return None
            layouts.append(tuple(known))
        elif isinstance(operand.type, TupleType):
            return None  # the pieces' layouts are not followed
        else:
            layouts.append(None)
    strides = alias_facts.call_result_strides(owner, tuple(layouts))  # type: ignore[arg-type]
    if strides is None or len(strides) != len(sizes):
        return None
    return strides


def _split_piece_strides(owner: Operation, sizes: tuple[int, ...], depth: int) -> tuple[int, ...] | None:
    """The strides of `pieces[k]`, a getitem of a split call's tuple
    (`_SPLIT_CALLS`): the split input's; None for a getitem of any other
    tuple."""
    args = owner.args.data  # type: ignore[attr-defined]
    if len(args) != 2 or not isinstance(args[0], fx.RefAttr):
        return None
    pieces = owner.operands[args[0].index.data]
    split = pieces.owner
    if not isinstance(pieces.type, TupleType) or not isinstance(split, fx.CallFunctionOp):
        return None
    split_args = split.args.data
    if split.target.data not in _SPLIT_CALLS or not split_args or not isinstance(split_args[0], fx.RefAttr):
        return None
    strides = strides_of(split.operands[split_args[0].index.data], depth - 1)
    return strides if strides is not None and len(strides) == len(sizes) else None


def _inplace_form_strides(owner: Operation, sizes: tuple[int, ...], depth: int) -> tuple[int, ...] | None:
    args = owner.args.data  # type: ignore[attr-defined]
    if not args or not isinstance(args[0], fx.RefAttr):
        return None
    written = owner.operands[args[0].index.data]
    if shape(written) != sizes or not known_contiguous(written, depth - 1):
        return None
    return contiguous_strides(sizes)


def _operands_order_dims_row_major(owner: Operation, sizes: Sequence[int], depth: int) -> bool:
    """Every tensor operand of the elementwise op `owner` has known strides
    that decrease outwards (size-1 and broadcast dims aside): TensorIterator
    then keeps the dims in order and allocates the result row-major (a
    pointwise op of strided slices of a stack, for instance)."""
    for operand in owner.operands:
        osizes = shape(operand)
        if osizes is None:
            continue
        if len(osizes) > len(sizes):
            return False
        ostrides = strides_of(operand, depth)
        if ostrides is None:
            return False
        significant = [st for st, n in zip(ostrides, osizes) if n != 1 and st != 0]
        if any(a <= b for a, b in zip(significant, significant[1:])):
            return False
    return True


def same_layout(a: SSAValue, b: SSAValue) -> bool:
    """`a` and `b` provably have the same shape and strides (strides of
    size-1 dims ignored): computations on them round identically."""
    sa, sb = shape(a), shape(b)
    if sa is None or sa != sb:
        return False
    ta, tb = strides_of(a), strides_of(b)
    if ta is None or tb is None:
        return False
    if any(s == 0 for s in sa):
        return True
    return all(x == y for x, y, n in zip(ta, tb, sa) if n != 1)


def is_row_major(strides: Sequence[int], sizes: Sequence[int]) -> bool:
    """`strides` lay out a tensor of `sizes` contiguously (row-major, dense;
    the strides of size-1 dims do not matter, an empty tensor is trivially
    contiguous)."""
    if len(strides) != len(sizes):
        return False
    if any(s == 0 for s in sizes):
        return True
    want = contiguous_strides(sizes)
    return all(x == y for x, y, n in zip(strides, want, sizes) if n != 1)


def known_contiguous(value: SSAValue, depth: int = 32) -> bool:
    """`value` is provably laid out contiguously (row-major, dense); see
    `strides_of` for what is known."""
    sizes = shape(value)
    strides = strides_of(value, depth)
    if sizes is None or strides is None:
        return False
    return is_row_major(strides, sizes)


def provably_row_major(value: SSAValue, depth: int = 16) -> bool:
    """`value` is laid out row-major at run time: `strides_of` says so, or
    it is the result of a layout-following pointwise op whose tensor
    operands all order their dims row-major (strides decreasing outwards,
    broadcast and size-1 dims aside), so that TensorIterator allocates it
    row-major (a pointwise op of a split piece, for instance)."""
    sizes = shape(value)
    if not all_static(sizes):
        return False
    if strides_of(value) is not None:
        return known_contiguous(value)
    owner = value.owner
    if depth <= 0 or not is_elementwise_op(owner) or isinstance(owner, t.DropoutOp):  # type: ignore[arg-type]
        return False
    for operand in owner.operands:  # type: ignore[union-attr]
        osizes = shape(operand)
        if osizes is None:
            continue
        if len(osizes) > len(sizes):  # type: ignore[arg-type]
            return False
        ostrides = strides_of(operand)
        if ostrides is None:
            if not provably_row_major(operand, depth - 1):
                return False
            continue
        significant = [st for st, n in zip(ostrides, osizes) if n != 1 and st != 0]
        if any(a <= b for a, b in zip(significant, significant[1:])):
            return False
    return True


def leading_ones(value: SSAValue, dim: int) -> bool:
    """Every dim of `value` before `dim` has static size 1: a slice, split
    piece or select along `dim` of a contiguous tensor is contiguous."""
    sizes = shape(value)
    return sizes is not None and all(s == 1 for s in sizes[:dim])


def contiguous_part(source: SSAValue, dim: int) -> bool:
    """A slice/select/piece of `source` along `dim` is provably contiguous."""
    return known_contiguous(source) and leading_ones(source, dim)


def layout_insensitive(value: SSAValue) -> bool:
    """No result computed from `value` depends on its strides: following
    users through views and pointwise ops (whose output layout follows their
    input), only pointwise ops, views (not `torch.view`, which may fail on a
    strided input), copies (cat, stack) and the graph output are found.
    Reductions, matmuls, layer_norm and fx ops are layout sensitive (a
    strided sum rounds differently from a contiguous one). A returned
    pointwise result may get other strides, never other values (a view
    reaching the output directly is refused by `can_forward_as_alias`)."""
    seen: set[SSAValue] = {value}
    stack = [value]
    while stack:
        v = stack.pop()
        for use in v.uses:
            op = use.operation
            if is_join_op(op) or isinstance(op, fx.OutputOp):
                continue  # copies; a returned value (its values are exact)
            if isinstance(op, t.ViewOp):
                return False
            if is_view_op(op) or is_layout_exact_elementwise(op):
                for r in op.results:
                    if r not in seen:
                        seen.add(r)
                        stack.append(r)
                continue
            return False
    return True


__all__ = [
    "is_row_major",
    "provably_row_major",
    "all_static",
    "contiguous_part",
    "contiguous_strides",
    "known_contiguous",
    "layout_insensitive",
    "leading_ones",
    "same_layout",
    "shape",
    "strides_of",
    "view_strides",
]
