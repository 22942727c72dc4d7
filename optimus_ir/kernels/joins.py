"""Joins whose pieces are computed in their slots (`write-into-join`).

`torch.cat(pieces, dim)` copies every piece into a new tensor, so at the
join the pieces and the result are live at once: on a wide model the
largest tensor of the call twice over (the 64-tower model's tower outputs
and their concatenation). The `write-into-join` pass (`passes/write_into_join.py`)
allocates the result first and splits it into slots (`join_slots`: the
buffer and its views), and has the op that makes each piece write into its
slot (`linear_into(slot, x, w, b)`: `linear(x, w, b, out=slot)`; a
`torch.stack` whose result the join reads through a reshape stacks into the
slot seen in the stack's shape, `stack_into`); the join then only copies
what was not written in place (`written_join`).

Like `reinplace`'s forms (`optimus_ir.kernels.inplace`) every call here is
grad-guarded: with gradients recorded, torch refuses `out=` on tensors that
require grad, and the pieces may be saved for a backward, so no buffer is
allocated (`join_slots` gives Nones), each writer computes its fresh result
as before and the join is `torch.cat` of the pieces. Both paths compute the
same values with the same kernels (an `out=` call of a matmul writes
through the leading dimension of its slot; the arithmetic is the same).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from optimus_ir.kernels.norms import COUNTS_AS_ATTRIBUTE
from optimus_ir.kernels.tracing import traced_as_leaf

_grad_enabled = torch.is_grad_enabled


def _writer(function: Callable[..., torch.Tensor], name: str, kind: str) -> Callable[..., torch.Tensor]:
    def write(slot: torch.Tensor | None, *args: Any, **kwargs: Any) -> torch.Tensor:
        if _grad_enabled() or slot is None:
            return function(*args, **kwargs)
        return function(*args, **kwargs, out=slot)

    write.__name__ = write.__qualname__ = name
    write.__module__ = __name__
    write.__doc__ = (
        f"`{function.__module__}.{function.__name__}(*args, out=slot)` unless gradients are recorded "
        "(then the fresh result): the piece of a join computed in its slot."
    )
    leaf = traced_as_leaf(write)
    setattr(leaf, COUNTS_AS_ATTRIBUTE, kind)  # the report counts the op it computes
    return leaf


linear_into = _writer(torch._C._nn.linear, "linear_into", "linear")
addmm_into = _writer(torch.addmm, "addmm_into", "addmm")
mm_into = _writer(torch.mm, "mm_into", "mm")
baddbmm_into = _writer(torch.baddbmm, "baddbmm_into", "baddbmm")
bmm_into = _writer(torch.bmm, "bmm_into", "bmm")

def stack_into(
    slot: torch.Tensor | None, tensors: Sequence[torch.Tensor], dim: int = 0, *, shape: Sequence[int]
) -> torch.Tensor:
    """`torch.stack(tensors, dim, out=slot.view(shape))` unless gradients are
    recorded (then the fresh stack): a stack whose result the join reads
    through a reshape (a fused group's members interleaved into the join:
    `lower-batch`'s stack of moved dims, then a flatten), computed in its
    slot seen in the stack's shape (`shape`, -1 for rows that follow the
    input). The slot's last dims are contiguous, so the view exists; the
    reshape of the result is then the slot itself."""
    if _grad_enabled() or slot is None:
        return torch.stack(tensors, dim)
    return torch.stack(tensors, dim, out=slot.view(shape))


stack_into = traced_as_leaf(stack_into)
setattr(stack_into, COUNTS_AS_ATTRIBUTE, "stack")

WRITERS: dict[str, str] = {
    "torch._C._nn.linear": f"{__name__}.linear_into",
    "torch.nn.functional.linear": f"{__name__}.linear_into",
    "torch.addmm": f"{__name__}.addmm_into",
    "torch.mm": f"{__name__}.mm_into",
    "torch.stack": f"{__name__}.stack_into",
    "torch.baddbmm": f"{__name__}.baddbmm_into",
    "torch.bmm": f"{__name__}.bmm_into",
}
"""Call targets whose result can be written into a given tensor, and the
writer that does (its first argument the slot, then the call's own;
`stack_into` also takes the stack's `shape`)."""


def join_slots(
    reference: torch.Tensor,
    shape: Sequence[int],
    dtype: torch.dtype,
    sizes: Sequence[int],
    dim: int,
    rows_like_reference: bool | Sequence[int] = False,
) -> tuple[torch.Tensor | None, tuple[torch.Tensor | None, ...]]:
    """`(buffer, slots)`: an uninitialized tensor of `shape` and `dtype` on
    `reference`'s device, and its split along `dim` into `sizes`; with
    `rows_like_reference`, dim 0 is `reference`'s (a join along dim 1 of
    pieces whose rows are their makers' first operand's), or, given dims,
    each of those dims is `reference`'s (a join along dim 0 of batched
    matmuls: their rows are dim 1): the code runs at any batch size. With
    gradients recorded, Nones: the writers then return fresh results and
    the join is `torch.cat`, so nothing is allocated."""
    if _grad_enabled():
        return None, (None,) * len(sizes)
    if rows_like_reference:
        following = (0,) if rows_like_reference is True else rows_like_reference
        shape = list(shape)
        for d in following:
            shape[d] = reference.shape[d]
    buffer = reference.new_empty(shape, dtype=dtype)
    return buffer, torch.split_with_sizes(buffer, sizes, dim)


def written_join(
    buffer: torch.Tensor | None, slots: Sequence[torch.Tensor | None], pieces: Sequence[torch.Tensor], dim: int
) -> torch.Tensor:
    """`torch.cat(pieces, dim)`, where `buffer` is a tensor of the result's
    shape and `slots` its split along `dim` into the pieces' sizes: each
    piece that is not its slot already (written in place, or a view of
    exactly the slot: a reshape of what `stack_into` wrote) is copied into
    it, and `buffer` is the result. With gradients recorded: `torch.cat`."""
    if _grad_enabled() or buffer is None:
        return torch.cat(pieces, dim)
    for slot, piece in zip(slots, pieces, strict=True):
        if piece is not slot and not _views_exactly(piece, slot):
            slot.copy_(piece)
    return buffer


def _views_exactly(piece: torch.Tensor, slot: torch.Tensor | None) -> bool:
    """`piece` reads exactly `slot`'s elements in `slot`'s order (same
    storage, offset, sizes and strides): copying it there changes nothing.
    Only plain tensors are asked (fake tensors have no data pointer: they
    are copied, which is the same)."""
    return (
        slot is not None
        and type(piece) is torch.Tensor
        and type(slot) is torch.Tensor
        and piece.data_ptr() == slot.data_ptr()
        and piece.untyped_storage().data_ptr() == slot.untyped_storage().data_ptr()
        and piece.shape == slot.shape
        and piece.stride() == slot.stride()
    )


join_slots = traced_as_leaf(join_slots)
written_join = traced_as_leaf(written_join)
setattr(written_join, COUNTS_AS_ATTRIBUTE, "cat")
setattr(join_slots, COUNTS_AS_ATTRIBUTE, "empty")  # an uninitialized allocation and its views

WRITTEN_JOIN_TARGET = f"{__name__}.written_join"
JOIN_SLOTS_TARGET = f"{__name__}.join_slots"

OWN_WRITES_PREFIX = f"{__name__}."
"""The qualified-name prefix of every call this module's forms make: each
writes only its first argument (a slot or the buffer of a join, storage the
pass allocated for this call)."""

__all__ = [
    "OWN_WRITES_PREFIX",
    "WRITERS",
    "JOIN_SLOTS_TARGET",
    "WRITTEN_JOIN_TARGET",
    "addmm_into",
    "baddbmm_into",
    "bmm_into",
    "join_slots",
    "linear_into",
    "mm_into",
    "stack_into",
    "written_join",
]
