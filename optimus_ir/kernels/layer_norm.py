"""Batched layer norm (+ per-member affine, + activation epilogue) in one
Triton launch over all rows of all members, and its backward.

Design
------
* Members are read where they are: each member's input is viewed as
  `[M_i, D_i]` rows with a row stride (split pieces of a wider tensor,
  leading batch dims) and unit last stride; only layouts that no such view
  describes are copied.
* A small int64 metadata tensor, field-major `[F, N]`, holds per member its
  base pointers (cast in the kernel with `.to(<pointer dtype>)`, which the
  Triton interpreter supports as well), row strides, `D_i`, `M_i`, whether
  it has a weight/bias, and the prefix sum of its programs. A program finds
  its member by counting the prefix entries `<= program_id` (one vector
  load, no per-tile host table, so the host work is O(N), not O(rows)).
* Forward, `D <= _MAX_FUSED_D_FWD`: one pass. A program owns `ROWS` rows of
  one member (many rows for small D, so each program still moves ~4096
  elements) as a `[ROWS, BLOCK_D]` tile, `BLOCK_D` the next power of two of
  the largest D; x is read once and y written once, statistics in fp32.
  Larger D: a looped two-pass variant (sum and shifted sum of squares over
  chunks, then normalise), reading x twice.
* Backward: dx per row; dw/db per member as fp32 partial sums, one row of
  partials per program (each program loops over a run of rows of one member,
  accumulating in registers), then a reduce kernel over each member's
  partials. Deterministic (no atomics).
* Vectorised loads need the compiler to know the strides and D are multiples
  of the vector width; they come from memory here, so the launcher computes
  the alignment every member shares and the kernel states it with
  `tl.multiple_of` (`ALIGN`, in elements).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from optimus_ir.kernels.activations import activation_code, activation_grad, apply_activation
from optimus_ir.kernels.layout import aligned_parts, alignment, indices_by_dtype, row_view
from optimus_ir.kernels.member_table import find_member, member_pointer, member_value
from optimus_ir.kernels.metadata import tables
from optimus_ir.kernels.ops import check_member_counts

_MAX_FUSED_D_FWD = 16384
"""Largest D the forward keeps in registers in one pass; above, it loops."""
_MAX_FUSED_D_BWD = 8192
"""The same for the backward, which holds about twice as many live values."""
_LOOP_CHUNK = 4096
"""Columns per iteration of the looped (large D) variants."""
_TILE_FWD = 4096
_TILE_BWD = 2048
"""Elements per program tile the row count per program aims at."""

# Metadata fields (rows of the field-major [F, N] int64 table): the fields
# both directions read, in the same rows (`_member_fields`), then the
# forward's output or the backward's gradients and dy's row stride.
_X, _W, _B, _MEAN, _RSTD, _SX, _D, _M, _START, _HAS_W, _HAS_B = range(11)
_Y = 11
_FWD_FIELDS = 12
_DY, _DX, _SDY, _DW, _DB = range(11, 16)
_BWD_FIELDS = 16


@triton.jit
def _member_fields(meta, N, pid, x_ref, w_ref, BLOCK_N: tl.constexpr, ALIGN: tl.constexpr,
                   PTR_ALIGN: tl.constexpr):
    """Program `pid`'s member `m`, its index among the member's programs,
    and the member's fields of both tables (`_X` .. `_HAS_B`): x, weight,
    bias, mean and rstd pointers, x's row stride, D, M, has weight, has bias."""
    m = find_member(meta, N, pid, 8, BLOCK_N)
    local = pid - tl.load(meta + 8 * N + m)
    x_ptr = member_pointer(meta, N, m, 0, x_ref, PTR_ALIGN)
    w_ptr = member_pointer(meta, N, m, 1, w_ref, PTR_ALIGN)
    b_ptr = member_pointer(meta, N, m, 2, w_ref, PTR_ALIGN)
    mean_ptr = tl.load(meta + 3 * N + m).to(tl.pointer_type(tl.float32))
    rstd_ptr = tl.load(meta + 4 * N + m).to(tl.pointer_type(tl.float32))
    sx = member_value(meta, N, m, 5, ALIGN)
    D = member_value(meta, N, m, 6, ALIGN)
    M = tl.load(meta + 7 * N + m)
    has_w = tl.load(meta + 9 * N + m)
    has_b = tl.load(meta + 10 * N + m)
    return m, local, x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, sx, D, M, has_w, has_b


@triton.jit
def _layer_norm_fwd_kernel(
    meta, x_ref, w_ref, N, eps,
    ACTIVATION: tl.constexpr, ROWS: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr, ALIGN: tl.constexpr, PTR_ALIGN: tl.constexpr,
    LOOPED: tl.constexpr,
):
    """Forward of every member's rows: program -> (member, ROWS rows)."""
    m, tile, x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, sx, D, M, has_w, has_b = _member_fields(
        meta, N, tl.program_id(0), x_ref, w_ref, BLOCK_N, ALIGN, PTR_ALIGN)
    y_ptr = member_pointer(meta, N, m, 11, x_ref, PTR_ALIGN)
    cols = tl.arange(0, BLOCK_D)
    if not LOOPED:
        rows = tile * ROWS + tl.arange(0, ROWS)
        rmask = rows < M
        cmask = cols < D
        mask = rmask[:, None] & cmask[None, :]
        rows64 = rows.to(tl.int64)
        x = tl.load(x_ptr + rows64[:, None] * sx + cols[None, :], mask=mask, other=0.0)
        x = x.to(tl.float32)
        mean = tl.sum(x, axis=1) / D
        xc = tl.where(mask, x - mean[:, None], 0.0)
        rstd = tl.math.rsqrt(tl.sum(xc * xc, axis=1) / D + eps)
        y = xc * rstd[:, None]
        if has_w != 0:
            w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
            y = y * w[None, :]
        if has_b != 0:
            b = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
            y = y + b[None, :]
        y = apply_activation(y, ACTIVATION)
        tl.store(y_ptr + rows64[:, None] * D + cols[None, :], y.to(x_ref.dtype.element_ty),
                 mask=mask)
        tl.store(mean_ptr + rows, mean, mask=rmask)
        tl.store(rstd_ptr + rows, rstd, mask=rmask)
    else:
        # One row per program; a shift by the row's first element keeps the
        # one-pass sum of squares from cancelling when |mean| >> std.
        row = tile.to(tl.int64)
        x_row = x_ptr + row * sx
        y_row = y_ptr + row * D
        shift = tl.load(x_row).to(tl.float32)
        acc = tl.zeros([BLOCK_D], dtype=tl.float32)
        acc_sq = tl.zeros([BLOCK_D], dtype=tl.float32)
        for start in range(0, D, BLOCK_D):
            cmask = start + cols < D
            v = tl.load(x_row + start + cols, mask=cmask, other=0.0).to(tl.float32)
            v = tl.where(cmask, v - shift, 0.0)
            acc += v
            acc_sq += v * v
        shifted_mean = tl.sum(acc, axis=0) / D
        var = tl.maximum(tl.sum(acc_sq, axis=0) / D - shifted_mean * shifted_mean, 0.0)
        mean = shift + shifted_mean
        rstd = tl.math.rsqrt(var + eps)
        for start in range(0, D, BLOCK_D):
            cmask = start + cols < D
            v = tl.load(x_row + start + cols, mask=cmask, other=0.0).to(tl.float32)
            y = (v - mean) * rstd
            if has_w != 0:
                y = y * tl.load(w_ptr + start + cols, mask=cmask, other=0.0).to(tl.float32)
            if has_b != 0:
                y = y + tl.load(b_ptr + start + cols, mask=cmask, other=0.0).to(tl.float32)
            y = apply_activation(y, ACTIVATION)
            tl.store(y_row + start + cols, y.to(x_ref.dtype.element_ty), mask=cmask)
        tl.store(mean_ptr + row, mean)
        tl.store(rstd_ptr + row, rstd)


@triton.jit
def _row_chunk_terms(
    x_row, dy_row, w_ptr, b_ptr, start, cols, D, mean, rstd, has_w, has_b,
    BLOCK_D: tl.constexpr, ACTIVATION: tl.constexpr,
):
    """Columns `start + cols` of one row for the looped backward's two
    passes: the mask, xhat, dz = dy * act'(xhat * w + b) (0 off the row) and
    w (1 without affine), all fp32."""
    cmask = start + cols < D
    x = tl.load(x_row + start + cols, mask=cmask, other=0.0)
    dy = tl.load(dy_row + start + cols, mask=cmask, other=0.0)
    w = tl.full([BLOCK_D], 1.0, tl.float32)
    b = tl.zeros([BLOCK_D], dtype=tl.float32)
    if has_w != 0:
        w = tl.load(w_ptr + start + cols, mask=cmask, other=0.0).to(tl.float32)
    if has_b != 0:
        b = tl.load(b_ptr + start + cols, mask=cmask, other=0.0).to(tl.float32)
    xhat = tl.where(cmask, (x.to(tl.float32) - mean) * rstd, 0.0)
    dz = dy.to(tl.float32)
    if ACTIVATION != 0:
        dz = dz * activation_grad(xhat * w + b, ACTIVATION)
    return cmask, xhat, tl.where(cmask, dz, 0.0), w


@triton.jit
def _layer_norm_bwd_kernel(
    meta, x_ref, w_ref, partial_dw, partial_db, N, rows_per_program, partial_width,
    ACTIVATION: tl.constexpr, ROWS: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr, ALIGN: tl.constexpr, PTR_ALIGN: tl.constexpr,
    LOOPED: tl.constexpr,
):
    """dx of a run of rows of one member, and that run's dw/db partial sums
    (row `program_id` of `partial_dw`/`partial_db`)."""
    pid = tl.program_id(0)
    m, run, x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, sx, D, M, has_w, has_b = _member_fields(
        meta, N, pid, x_ref, w_ref, BLOCK_N, ALIGN, PTR_ALIGN)
    dy_ptr = member_pointer(meta, N, m, 11, x_ref, PTR_ALIGN)
    dx_ptr = member_pointer(meta, N, m, 12, x_ref, PTR_ALIGN)
    sdy = member_value(meta, N, m, 13, ALIGN)
    row_begin = run.to(tl.int32) * rows_per_program
    row_end = tl.minimum(row_begin + rows_per_program, M.to(tl.int32))
    cols = tl.arange(0, BLOCK_D)
    partial_row = pid.to(tl.int64) * partial_width
    if not LOOPED:
        cmask = cols < D
        w = tl.full([BLOCK_D], 1.0, tl.float32)
        b = tl.zeros([BLOCK_D], dtype=tl.float32)
        if has_w != 0:
            w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        if has_b != 0:
            b = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        acc_dw = tl.zeros([BLOCK_D], dtype=tl.float32)
        acc_db = tl.zeros([BLOCK_D], dtype=tl.float32)
        for r0 in range(row_begin, row_end, ROWS):
            rows = r0 + tl.arange(0, ROWS)
            rmask = rows < row_end
            mask = rmask[:, None] & cmask[None, :]
            rows64 = rows.to(tl.int64)
            x = tl.load(x_ptr + rows64[:, None] * sx + cols[None, :], mask=mask, other=0.0)
            dy = tl.load(dy_ptr + rows64[:, None] * sdy + cols[None, :], mask=mask, other=0.0)
            mean = tl.load(mean_ptr + rows, mask=rmask, other=0.0)
            rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
            xhat = tl.where(mask, (x.to(tl.float32) - mean[:, None]) * rstd[:, None], 0.0)
            dz = dy.to(tl.float32)
            if ACTIVATION != 0:
                dz = dz * activation_grad(xhat * w[None, :] + b[None, :], ACTIVATION)
            dz = tl.where(mask, dz, 0.0)
            acc_dw += tl.sum(dz * xhat, axis=0)
            acc_db += tl.sum(dz, axis=0)
            g = dz * w[None, :]
            c1 = tl.sum(g * xhat, axis=1) / D
            c2 = tl.sum(g, axis=1) / D
            dx = (g - xhat * c1[:, None] - c2[:, None]) * rstd[:, None]
            tl.store(dx_ptr + rows64[:, None] * D + cols[None, :],
                     dx.to(x_ref.dtype.element_ty), mask=mask)
        tl.store(partial_dw + partial_row + cols, acc_dw, mask=cmask)
        tl.store(partial_db + partial_row + cols, acc_db, mask=cmask)
    else:
        # Rows one at a time, columns in chunks: a pass for the two row
        # reductions, then one writing dx and adding this row's dw/db terms to
        # the program's own partial row (no other program touches it). The
        # partial row is zeroed by the launcher.
        for r in range(row_begin, row_end):
            # int64 row offsets (the strides are int64): no overflow past 2**31 elements.
            x_row = x_ptr + sx * r
            dy_row = dy_ptr + sdy * r
            dx_row = dx_ptr + D * r
            mean = tl.load(mean_ptr + r)
            rstd = tl.load(rstd_ptr + r)
            acc1 = tl.zeros([BLOCK_D], dtype=tl.float32)
            acc2 = tl.zeros([BLOCK_D], dtype=tl.float32)
            for start in range(0, D, BLOCK_D):
                cmask, xhat, dz, w = _row_chunk_terms(
                    x_row, dy_row, w_ptr, b_ptr, start, cols, D, mean, rstd,
                    has_w, has_b, BLOCK_D, ACTIVATION,
                )
                g = dz * w
                acc1 += g * xhat
                acc2 += g
            c1 = tl.sum(acc1, axis=0) / D
            c2 = tl.sum(acc2, axis=0) / D
            for start in range(0, D, BLOCK_D):
                cmask, xhat, dz, w = _row_chunk_terms(
                    x_row, dy_row, w_ptr, b_ptr, start, cols, D, mean, rstd,
                    has_w, has_b, BLOCK_D, ACTIVATION,
                )
                g = dz * w
                dx = (g - xhat * c1 - c2) * rstd
                tl.store(dx_row + start + cols, dx.to(x_ref.dtype.element_ty),
                         mask=cmask)
                p = partial_row + start + cols
                tl.store(partial_dw + p, tl.load(partial_dw + p, mask=cmask) + dz * xhat,
                         mask=cmask)
                tl.store(partial_db + p, tl.load(partial_db + p, mask=cmask) + dz, mask=cmask)


@triton.jit
def _partial_reduce_kernel(
    meta, w_ref, partial_dw, partial_db, N, partial_width,
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """dw/db of member `program_id(0)`, columns block `program_id(1)`: the sum
    of that member's partial rows, stored in the weight's dtype."""
    m = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    D = tl.load(meta + 6 * N + m)
    has_w = tl.load(meta + 9 * N + m)
    has_b = tl.load(meta + 10 * N + m)
    first = tl.load(meta + 8 * N + m).to(tl.int32)
    last = tl.load(meta + 8 * N + m + 1).to(tl.int32)
    cmask = cols < D
    acc_dw = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    acc_db = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    for p0 in range(first, last, BLOCK_P):
        prow = p0 + tl.arange(0, BLOCK_P)
        mask = (prow < last)[:, None] & cmask[None, :]
        offsets = prow.to(tl.int64)[:, None] * partial_width + cols[None, :]
        acc_dw += tl.load(partial_dw + offsets, mask=mask, other=0.0)
        acc_db += tl.load(partial_db + offsets, mask=mask, other=0.0)
    if has_w != 0:
        dw_ptr = tl.load(meta + 14 * N + m).to(w_ref.dtype)
        tl.store(dw_ptr + cols, tl.sum(acc_dw, axis=0).to(w_ref.dtype.element_ty), mask=cmask)
    if has_b != 0:
        db_ptr = tl.load(meta + 15 * N + m).to(w_ref.dtype)
        tl.store(db_ptr + cols, tl.sum(acc_db, axis=0).to(w_ref.dtype.element_ty), mask=cmask)


def _norm_rows(t: torch.Tensor) -> torch.Tensor:
    if t.dim() == 0:
        raise ValueError("layer norm needs tensors of at least one dimension")
    return row_view(t)


def _num_warps(elements: int) -> int:
    # ~32 elements per thread: enough independent 16-byte loads in flight.
    return max(1, min(16, elements // 1024))


def _meta(columns: list[list[int]], device: torch.device) -> torch.Tensor:
    """The field-major int64 table `[F, N]` on `device`, flat, from the
    device-table cache (`metadata.py`: no copy when built before, capture-safe)."""
    return tables().table([v for column in columns for v in column], device)


def _tiling(max_d: int, max_fused_d: int, tile: int) -> tuple[bool, int, int]:
    """`(looped, BLOCK_D, ROWS)` of a launch whose widest member has `max_d`
    columns: looped in `_LOOP_CHUNK` chunks, one row a program, above
    `max_fused_d`; else the whole row in registers, with as many rows a
    program as fill `tile` elements."""
    looped = max_d > max_fused_d
    block_d = min(_LOOP_CHUNK, triton.next_power_of_2(max_d)) if looped else triton.next_power_of_2(max_d)
    return looped, block_d, 1 if looped else max(1, tile // block_d)


def _hints(align_values: list[int], params: Sequence[torch.Tensor | None],
           x0: torch.Tensor) -> tuple[int, int, torch.Tensor]:
    """`(ALIGN, PTR_ALIGN, w_ref)` of a launch: the alignment every value of
    `align_values` shares (in elements of `x0`), the pointer hint in bytes,
    and the tensor whose type the parameter pointers take (the first weight
    or bias, else `x0`)."""
    esize = x0.element_size()
    align = alignment(align_values, esize)
    w_ref = next((p for p in params if p is not None), x0)
    # Weight loads use the same column offsets: their pointers must be
    # aligned to ALIGN of their own elements too (the pointer hint is in bytes).
    ptr_align = align * min(esize, w_ref.element_size())
    if any(p is not None and p.data_ptr() % (align * p.element_size()) != 0 for p in params):
        align, ptr_align = 1, 1
    return align, ptr_align, w_ref


def _common_weight_dtype(weights: Sequence[torch.Tensor | None], fallback: torch.dtype) -> torch.dtype:
    present = [w.dtype for w in weights if w is not None]
    if not present:
        return fallback
    return present[0] if all(d == present[0] for d in present) else torch.float32


def _check(inputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor | None],
           biases: Sequence[torch.Tensor | None]) -> None:
    check_member_counts("batched layer norm", inputs, weights, biases)
    for i, (x, w, b) in enumerate(zip(inputs, weights, biases)):
        for name, p in (("weight", w), ("bias", b)):
            if p is not None and tuple(p.shape) != (x.shape[-1],):
                raise ValueError(
                    f"batched layer norm: member {i}'s {name} has shape {tuple(p.shape)}, "
                    f"expected ({x.shape[-1]},)"
                )


def batched_layer_norm_forward(
    inputs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor | None],
    biases: Sequence[torch.Tensor | None],
    eps: float,
    activation: str = "none",
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Layer norm of each member over its last dim, then its affine
    (`weights[i]`/`biases[i]` of shape `[D_i]`, or None), then `activation`.

    Returns `(outputs, means, rstds)`: outputs fresh, contiguous, of each
    input's shape and dtype; means/rstds fp32 of shape `x.shape[:-1]` (the
    statistics the backward takes). One launch per input dtype."""
    _check(inputs, weights, biases)
    code = activation_code(activation)
    n = len(inputs)
    outputs: list[torch.Tensor] = [torch.empty(0)] * n
    means: list[torch.Tensor] = [torch.empty(0)] * n
    rstds: list[torch.Tensor] = [torch.empty(0)] * n
    for group in indices_by_dtype(inputs):
        views = {i: _norm_rows(inputs[i]) for i in group}
        for part in _parts(group, views, inputs[group[0]].element_size()):
            _forward_group(part, views, inputs, weights, biases, eps, code, outputs, means, rstds)
    return outputs, means, rstds


def _parts(group: list[int], views: dict[int, torch.Tensor], esize: int) -> list[list[int]]:
    """`group` split into its 16-byte-aligned members and the pieces at odd
    offsets where a second launch pays (`layout.aligned_parts`); each launch
    then hints only the alignment its own members share."""
    aligns, moved = [], []
    for i in group:
        r = views[i]
        m, d = r.shape
        values = [d, r.stride(0) if m > 1 else d, r.data_ptr() // esize]
        if r.data_ptr() % esize:
            values.append(1)
        aligns.append(alignment(values, esize))
        moved.append(2 * r.numel() * esize)
    return aligned_parts(group, aligns, moved, esize)


def _forward_group(group, views, inputs, weights, biases, eps, code, outputs, means, rstds) -> None:
    # Only addresses reach the kernel (the metadata tensor): `rows`, `ws` and
    # `bs` hold the row views and the copies made for it (a transposed or
    # expanded member, a cast or strided parameter) until the launch has been
    # queued. On a GPU that is long enough: CUDA's caching allocator frees
    # stream-ordered, so their memory is reused only by work queued on the
    # stream after the kernel.
    x0 = inputs[group[0]]
    device, dtype = x0.device, x0.dtype
    w_dtype = _common_weight_dtype([weights[i] for i in group] + [biases[i] for i in group], dtype)
    rows, ws, bs = [], [], []
    for i in group:
        x = inputs[i]
        outputs[i] = torch.empty(x.shape, dtype=dtype, device=device)
        means[i] = torch.empty(x.shape[:-1], dtype=torch.float32, device=device)
        rstds[i] = torch.empty(x.shape[:-1], dtype=torch.float32, device=device)
        rows.append(views[i])
        ws.append(None if weights[i] is None else weights[i].to(w_dtype).contiguous())
        bs.append(None if biases[i] is None else biases[i].to(w_dtype).contiguous())
    max_d = max(r.shape[1] for r in rows)
    looped, block_d, row_block = _tiling(max_d, _MAX_FUSED_D_FWD, _TILE_FWD)
    esize = x0.element_size()
    columns: list[list[int]] = [[] for _ in range(_FWD_FIELDS)]
    align_values: list[int] = []
    start = 0
    for k, i in enumerate(group):
        r, w, b = rows[k], ws[k], bs[k]
        m, d = r.shape
        tiles = triton.cdiv(m, row_block) if d > 0 else 0
        y = outputs[i]
        for field, value in (
            (_X, r.data_ptr()), (_Y, y.data_ptr()), (_W, 0 if w is None else w.data_ptr()),
            (_B, 0 if b is None else b.data_ptr()), (_MEAN, means[i].data_ptr()),
            (_RSTD, rstds[i].data_ptr()), (_SX, r.stride(0)), (_D, d), (_M, m),
            (_START, start), (_HAS_W, int(w is not None)), (_HAS_B, int(b is not None)),
        ):
            columns[field].append(value)
        start += tiles
        align_values += [d, r.stride(0) if m > 1 else d, r.data_ptr() // esize, y.data_ptr() // esize]
        if r.data_ptr() % esize:
            align_values.append(1)
    if start == 0:
        return
    align, ptr_align, w_ref = _hints(align_values, ws + bs, x0)
    meta = _meta(columns, device)
    _layer_norm_fwd_kernel[(start,)](
        meta, x0, w_ref, len(group), float(eps),
        ACTIVATION=code, ROWS=row_block, BLOCK_D=block_d,
        BLOCK_N=triton.next_power_of_2(len(group)), ALIGN=align, PTR_ALIGN=ptr_align,
        LOOPED=looped, num_warps=_num_warps(row_block * block_d),
    )


_SM_COUNTS: dict[int | None, int] = {}


def _target_programs(device: torch.device) -> int:
    if device.type != "cuda":
        return 8
    if device.index not in _SM_COUNTS:
        _SM_COUNTS[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    return 4 * _SM_COUNTS[device.index]


def batched_layer_norm_backward(
    grad_outputs: Sequence[torch.Tensor | None],
    inputs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor | None],
    biases: Sequence[torch.Tensor | None],
    means: Sequence[torch.Tensor],
    rstds: Sequence[torch.Tensor],
    activation: str = "none",
) -> tuple[list[torch.Tensor], list[torch.Tensor | None], list[torch.Tensor | None]]:
    """Gradients of `batched_layer_norm_forward` with the statistics it
    returned: `(grad_inputs, grad_weights, grad_biases)`, a grad weight/bias
    None where the member has none. A None grad output counts as zeros.
    dw/db are reduced over rows in fp32 (partials per program, then a reduce
    kernel), deterministic."""
    _check(inputs, weights, biases)
    code = activation_code(activation)
    n = len(inputs)
    grad_inputs: list[torch.Tensor] = [torch.empty(0)] * n
    grad_weights: list[torch.Tensor | None] = [None] * n
    grad_biases: list[torch.Tensor | None] = [None] * n
    for group in indices_by_dtype(inputs):
        views = {i: _norm_rows(inputs[i]) for i in group}
        for part in _parts(group, views, inputs[group[0]].element_size()):
            _backward_group(part, views, grad_outputs, inputs, weights, biases, means, rstds,
                            code, grad_inputs, grad_weights, grad_biases)
    return grad_inputs, grad_weights, grad_biases


def _backward_group(group, views, grad_outputs, inputs, weights, biases, means, rstds, code,
                    grad_inputs, grad_weights, grad_biases) -> None:
    # `members` holds every view and copy whose address enters the metadata
    # until both launches are queued (see `_forward_group`).
    x0 = inputs[group[0]]
    device, dtype = x0.device, x0.dtype
    w_dtype = _common_weight_dtype([weights[i] for i in group] + [biases[i] for i in group], dtype)
    esize = x0.element_size()
    members = []
    for i in group:
        x = inputs[i]
        dy = grad_outputs[i]
        dy = torch.zeros_like(x) if dy is None else dy.to(dtype)
        grad_inputs[i] = torch.empty(x.shape, dtype=dtype, device=device)
        w = None if weights[i] is None else weights[i].to(w_dtype).contiguous()
        b = None if biases[i] is None else biases[i].to(w_dtype).contiguous()
        if weights[i] is not None:
            grad_weights[i] = torch.empty(weights[i].shape, dtype=w_dtype, device=device)
        if biases[i] is not None:
            grad_biases[i] = torch.empty(biases[i].shape, dtype=w_dtype, device=device)
        mean = means[i].to(torch.float32).contiguous()
        rstd = rstds[i].to(torch.float32).contiguous()
        members.append((i, views[i], row_view(dy.expand(x.shape)), w, b, mean, rstd))
    max_d = max(m[1].shape[1] for m in members)
    looped, block_d, row_block = _tiling(max_d, _MAX_FUSED_D_BWD, _TILE_BWD)
    total_rows = sum(m[1].shape[0] for m in members)
    per_program = triton.cdiv(max(total_rows, 1), _target_programs(device))
    rows_per_program = max(row_block, triton.cdiv(per_program, row_block) * row_block)
    columns: list[list[int]] = [[] for _ in range(_BWD_FIELDS)]
    align_values: list[int] = []
    start = 0
    for i, xr, dyr, w, b, mean, rstd in members:
        m, d = xr.shape
        programs = triton.cdiv(m, rows_per_program) if d > 0 else 0
        dx = grad_inputs[i]
        dw, db = grad_weights[i], grad_biases[i]
        if d == 0 or m == 0:
            # Nothing to normalise: the parameter grads are sums over no rows.
            for g in (dw, db):
                if g is not None:
                    g.zero_()
        for field, value in (
            (_X, xr.data_ptr()), (_DY, dyr.data_ptr()), (_DX, dx.data_ptr()),
            (_W, 0 if w is None else w.data_ptr()), (_B, 0 if b is None else b.data_ptr()),
            (_MEAN, mean.data_ptr()), (_RSTD, rstd.data_ptr()), (_SX, xr.stride(0)),
            (_SDY, dyr.stride(0)), (_D, d), (_M, m), (_START, start),
            (_HAS_W, int(w is not None)), (_HAS_B, int(b is not None)),
            (_DW, 0 if dw is None else dw.data_ptr()), (_DB, 0 if db is None else db.data_ptr()),
        ):
            columns[field].append(value)
        start += programs
        align_values += [d, xr.stride(0) if m > 1 else d, dyr.stride(0) if m > 1 else d,
                         xr.data_ptr() // esize, dyr.data_ptr() // esize, dx.data_ptr() // esize]
        if xr.data_ptr() % esize or dyr.data_ptr() % esize:
            align_values.append(1)
    # The reduce kernel reads member m's partial rows up to START[m + 1].
    columns[_START].append(start)
    for field in range(_BWD_FIELDS):
        if field != _START:
            columns[field].append(0)
    if start == 0:
        return
    params = [m[3] for m in members] + [m[4] for m in members]
    align, ptr_align, w_ref = _hints(align_values, params, x0)
    # The table has N + 1 columns (the closing START); the kernels index it
    # with stride N + 1.
    meta = _meta(columns, device)
    n_cols = len(group) + 1
    partial_width = triton.next_power_of_2(max_d) if looped else block_d
    alloc = torch.zeros if looped else torch.empty
    partial_dw = alloc((start, partial_width), dtype=torch.float32, device=device)
    partial_db = alloc((start, partial_width), dtype=torch.float32, device=device)
    _layer_norm_bwd_kernel[(start,)](
        meta, x0, w_ref, partial_dw, partial_db, n_cols, rows_per_program, partial_width,
        ACTIVATION=code, ROWS=row_block, BLOCK_D=block_d,
        BLOCK_N=triton.next_power_of_2(n_cols), ALIGN=align, PTR_ALIGN=ptr_align,
        LOOPED=looped, num_warps=_num_warps(2 * row_block * block_d),
    )
    if any(p is not None for p in params):
        block_c = min(256, triton.next_power_of_2(max_d))
        _partial_reduce_kernel[(len(group), triton.cdiv(max_d, block_c))](
            meta, w_ref, partial_dw, partial_db, n_cols, partial_width,
            BLOCK_P=16, BLOCK_C=block_c, num_warps=4,
        )
