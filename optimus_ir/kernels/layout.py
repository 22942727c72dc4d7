"""Launch-side layout helpers the row-wise kernels share (no Triton)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def row_view(t: torch.Tensor) -> torch.Tensor:
    """`t` as `[rows, D]` over its last dim with unit column stride: a view
    where one exists (split pieces, leading dims), a contiguous copy
    otherwise; a 0-d tensor is one row of one element."""
    d = t.shape[-1] if t.dim() else 1
    try:
        rows = t.view(-1, d) if d > 0 else t.reshape(-1, 0)
    except RuntimeError:
        rows = t.reshape(-1, d).contiguous()
    if d > 1 and rows.stride(1) != 1:
        rows = rows.contiguous()
    return rows


def alignment(values: Sequence[int], element_size: int) -> int:
    """The largest power of two (at most 16 bytes' worth of elements)
    dividing every value (element counts or element-unit addresses): what
    the kernels may declare with `tl.multiple_of` for vector loads."""
    cap = max(1, 16 // element_size)
    g = 0
    for v in values:
        g = math.gcd(g, int(v))
    return cap if g == 0 else min(cap, g & -g)


ALIGNED_SPLIT_BYTES = 8 << 20
"""A launch whose members mix 16-byte-aligned ones with pieces at odd
offsets (split pieces of a wider tensor) runs as two launches, the aligned
members with alignment hints (vector loads), the others without, when the
aligned members move at least this many bytes; below, one unhinted launch
(a second launch costs more than the vector loads save). A documented
default: `make bench-triton` times both sides of it on the device."""


def aligned_parts(
    positions: Sequence[int], member_alignment: Sequence[int], member_bytes: Sequence[int],
    element_size: int,
) -> list[list[int]]:
    """`positions` (members of one launch) split into the fully aligned ones
    and the rest where that pays (`ALIGNED_SPLIT_BYTES`), else one part.
    `member_alignment[k]` is member k's own `alignment(...)`, in elements.
    Only a partition: each launch still computes the hints its own members
    share, so a hint is never wrong whatever the split."""
    full = max(1, 16 // element_size)
    aligned = [p for p, a in zip(positions, member_alignment) if a >= full]
    if not aligned or len(aligned) == len(positions):
        return [list(positions)]
    moved = sum(b for p, b, a in zip(positions, member_bytes, member_alignment) if a >= full)
    if moved < ALIGNED_SPLIT_BYTES:
        return [list(positions)]
    rest = [p for p, a in zip(positions, member_alignment) if a < full]
    return [aligned, rest]


def indices_by_dtype(inputs: Sequence[torch.Tensor]) -> list[list[int]]:
    """Member indices grouped by dtype, in first-seen order: one launch per
    dtype, since a kernel's pointer element type is a compile-time constant."""
    groups: dict[torch.dtype, list[int]] = {}
    for i, x in enumerate(inputs):
        groups.setdefault(x.dtype, []).append(i)
    return list(groups.values())
