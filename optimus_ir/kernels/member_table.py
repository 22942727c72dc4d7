"""Triton helpers for the field-major member tables of the row-wise kernels
(`layer_norm.py`, `pointwise.py`).

Those launchers pass one flat int64 table `[F, N]` (`metadata.py`): row `f`
holds field `f` of each of the N members (addresses, strides, sizes, the
prefix sum of the members' programs), so field `f` of member `m` is at
`meta + f * N + m`. The field numbers are each kernel's own; these helpers
read one field the way every such kernel does, inlined where they are
called (no change to the compiled code).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def find_member(meta, N, pid, FIELD: tl.constexpr, BLOCK_N: tl.constexpr):
    """The member whose program range holds program `pid`: row `FIELD` holds
    each member's first program (a prefix sum), so the member is the count
    of entries `<= pid`, less one (one vector load, no search)."""
    idx = tl.arange(0, BLOCK_N)
    starts = tl.load(meta + FIELD * N + idx, mask=idx < N, other=0)
    return tl.sum(((starts <= pid) & (idx < N)).to(tl.int32), axis=0) - 1


@triton.jit
def member_pointer(meta, N, m, FIELD: tl.constexpr, ref, PTR_ALIGN: tl.constexpr):
    """Member `m`'s address in field `FIELD` as a pointer of `ref`'s type,
    declared a multiple of `PTR_ALIGN` bytes (the launch's alignment)."""
    return tl.multiple_of(tl.load(meta + FIELD * N + m).to(ref.dtype), PTR_ALIGN)


@triton.jit
def member_value(meta, N, m, FIELD: tl.constexpr, ALIGN: tl.constexpr):
    """Member `m`'s integer field `FIELD` (a size or a stride), declared a
    multiple of `ALIGN` elements (the launch's alignment)."""
    return tl.multiple_of(tl.load(meta + FIELD * N + m), ALIGN)
