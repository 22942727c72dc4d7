"""Multi-tensor pointwise: one Triton launch applies a chain of unary/binary
steps (`programs.STEPS`; the binary ones computed here, the unary ones by
`activations.apply_activation`) to every member, in registers, and its
backward.

Design
------
* `parse_program` turns the program text into `Step`s. A compiled kernel
  holds the chain as compile-time step codes `OP0..OP7` (and, per step, where
  its second operand comes from: a tensor of the member's others or an fp32
  scalar argument, so a new scalar value does not recompile). Unused steps
  compile to nothing. Longer programs run in chunks of `MAX_STEPS` steps
  (the intermediate is materialised between chunks).
* Members are covered by a block table: per member the prefix sum of its
  `BLOCK`-element blocks in an int64 metadata table (field-major `[F, N]`,
  with base pointers cast in the kernel, row strides, numel, last dim); a
  program finds its member by counting prefix entries `<= program_id`.
* Addressing: when every input and every full-shape other is contiguous and
  no other broadcasts, offsets are the flat element index (`ROWS=False`);
  otherwise element `e` is at `(e // D) * row_stride + e % D`, and a 1-D other
  broadcast over rows is the same formula with row stride 0. Inputs no such
  `[rows, D]` view describes are copied (the launcher keeps the copies alive
  until the kernel is queued: only their addresses are in the metadata).
* Results have eager's strides (`ops.multi_pointwise_strides`): a member
  whose eager result is a permuted layout (`f(x.t())`) runs on permuted
  views of its operands and writes the contiguous permuted view of its
  result; the gradients are contiguous.
* Backward in Triton too: the kernel recomputes the forward intermediates of
  the chain in registers, then walks the steps back (chain rule). Gradients
  of full-shape others are written directly; those of broadcast 1-D others
  are written per element in fp32 and summed over rows with torch (one
  `sum` per such member).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from optimus_ir.kernels.activations import activation_grad, apply_activation
from optimus_ir.kernels.layout import aligned_parts, alignment, indices_by_dtype, row_view
from optimus_ir.kernels.member_table import find_member, member_pointer, member_value
from optimus_ir.kernels.metadata import tables
from optimus_ir.kernels.ops import multi_pointwise_strides
from optimus_ir.kernels.programs import STEP_CODES, Step, parse_program

_NONE, _TENSOR, _SCALAR = 0, 1, 2

_ADD = tl.constexpr(STEP_CODES["add"])
_SUB = tl.constexpr(STEP_CODES["sub"])
_MUL = tl.constexpr(STEP_CODES["mul"])
_DIV = tl.constexpr(STEP_CODES["div"])
_MAXIMUM = tl.constexpr(STEP_CODES["maximum"])
_MINIMUM = tl.constexpr(STEP_CODES["minimum"])

MAX_STEPS = 8
"""Steps one launch applies; longer programs run in chunks."""
_BLOCK = 1024
_NUM_WARPS = 4

# ---------------------------------------------------------------------------
# Kernels

_F_X, _F_Y, _F_NUMEL, _F_D, _F_SX, _F_START, _F_GX = range(7)
_F_OTHERS = 7
"""Per tensor step j: fields 7 + 3j (pointer), 8 + 3j (row stride, 0 when it
broadcasts), 9 + 3j (its gradient's pointer, backward only)."""


@triton.jit
def _operand(meta, N, m, e, row, col, mask, s, x_ref, SRC: tl.constexpr, J: tl.constexpr,
             ROWS: tl.constexpr, ALIGN: tl.constexpr, PTR_ALIGN: tl.constexpr):
    """The second operand of a step: tensor step J's other, scalar `s`, or 0.
    The launch's alignment covers the others' addresses and row strides too."""
    if SRC == 1:
        ptr = member_pointer(meta, N, m, 7 + 3 * J, x_ref, PTR_ALIGN)
        if ROWS:
            stride = member_value(meta, N, m, 8 + 3 * J, ALIGN)
            v = tl.load(ptr + row * stride + col, mask=mask, other=1.0)
        else:
            v = tl.load(ptr + e, mask=mask, other=1.0)
        v = v.to(tl.float32)
    elif SRC == 2:
        # from -0.0, not 0.0: -0.0 + s is s for every s, 0.0 + -0.0 is +0.0
        v = tl.full(e.shape, -0.0, tl.float32) + s
    else:
        v = tl.zeros_like(e).to(tl.float32)
    return v


@triton.jit
def _forward_step(v, o, OP: tl.constexpr):
    """`v` through step code `OP` with operand `o` (0: no step; the unary
    steps are `activations.apply_activation`'s)."""
    if OP == _ADD:
        v = v + o
    elif OP == _SUB:
        v = v - o
    elif OP == _MUL:
        v = v * o
    elif OP == _DIV:
        v = v / o
    elif OP == _MAXIMUM:
        # torch.maximum / clamp_min bit for bit: NaN from either side, and
        # `v` itself at ties (maximum(-0.0, 0.0) is -0.0), which
        # tl.maximum does not promise.
        v = tl.where(v != v, v, tl.where(o != o, o, tl.where(v < o, o, v)))
    elif OP == _MINIMUM:
        v = tl.where(v != v, v, tl.where(o != o, o, tl.where(o < v, o, v)))
    else:
        v = apply_activation(v, OP)
    return v


@triton.jit
def _backward_step(v, o, g, OP: tl.constexpr, SRC: tl.constexpr):
    """(d/dv, d/do) of step `OP` at input `v`, operand `o` (a scalar when
    `SRC` is 2), times upstream `g`, as torch's derivatives: maximum/minimum
    of tensors split ties in halves and pass the whole gradient to both
    sides at a NaN; of a scalar (clamp_min/clamp_max) the input gets it
    where `v >= o` (`v <= o`), not at NaN."""
    go = g * 0.0
    if OP == 0:
        gv = g
    elif OP == _ADD:
        gv = g
        go = g
    elif OP == _SUB:
        gv = g
        go = -g
    elif OP == _MUL:
        gv = g * o
        go = g * v
    elif OP == _DIV:
        gv = g / o
        go = -g * v / (o * o)
    elif OP == _MAXIMUM:
        if SRC == 2:
            gv = tl.where(v >= o, g, 0.0)
        else:
            gv = tl.where(v == o, 0.5 * g, tl.where(v < o, 0.0, g))
            go = tl.where(v == o, 0.5 * g, tl.where(v > o, 0.0, g))
    elif OP == _MINIMUM:
        if SRC == 2:
            gv = tl.where(v <= o, g, 0.0)
        else:
            gv = tl.where(v == o, 0.5 * g, tl.where(v > o, 0.0, g))
            go = tl.where(v == o, 0.5 * g, tl.where(v < o, 0.0, g))
    else:
        gv = g * activation_grad(v, OP)
    return gv, go


@triton.jit
def _step_back(meta, N, m, e, mask, v, o, g, x_ref, OP: tl.constexpr, SRC: tl.constexpr,
               J: tl.constexpr):
    """Upstream gradient `g` back through step `OP` at input `v`, operand
    `o`: the gradient of `v`, returned, and, for a tensor step, its other's,
    written."""
    gv, go = _backward_step(v, o, g, OP, SRC)
    if SRC == 1:
        ptr = tl.load(meta + (9 + 3 * J) * N + m)
        # A broadcast other (row stride 0) gets fp32 per-element terms the
        # launcher sums over rows; a full one its gradient in its dtype.
        if tl.load(meta + (8 + 3 * J) * N + m) == 0:
            tl.store(ptr.to(tl.pointer_type(tl.float32)) + e, go, mask=mask)
        else:
            tl.store(ptr.to(x_ref.dtype) + e, go.to(x_ref.dtype.element_ty), mask=mask)
    return gv


@triton.jit
def _address(meta, N, BLOCK: tl.constexpr, BLOCK_N: tl.constexpr, ALIGN: tl.constexpr,
             ROWS: tl.constexpr):
    """This program's member, element indices, their rows/cols and mask."""
    pid = tl.program_id(0)
    m = find_member(meta, N, pid, 5, BLOCK_N)
    block = pid - tl.load(meta + 5 * N + m)
    numel = member_value(meta, N, m, 2, ALIGN)
    e = block * BLOCK + tl.arange(0, BLOCK)
    mask = e < numel
    if ROWS:
        d = member_value(meta, N, m, 3, ALIGN)
        row = e // d
        col = e - row * d
    else:
        row = e
        col = e
    return m, e, row, col, mask


@triton.jit
def _multi_pointwise_kernel(
    meta, x_ref, N, S0, S1, S2, S3, S4, S5, S6, S7,
    OP0: tl.constexpr, OP1: tl.constexpr, OP2: tl.constexpr, OP3: tl.constexpr,
    OP4: tl.constexpr, OP5: tl.constexpr, OP6: tl.constexpr, OP7: tl.constexpr,
    SRC0: tl.constexpr, SRC1: tl.constexpr, SRC2: tl.constexpr, SRC3: tl.constexpr,
    SRC4: tl.constexpr, SRC5: tl.constexpr, SRC6: tl.constexpr, SRC7: tl.constexpr,
    J0: tl.constexpr, J1: tl.constexpr, J2: tl.constexpr, J3: tl.constexpr,
    J4: tl.constexpr, J5: tl.constexpr, J6: tl.constexpr, J7: tl.constexpr,
    BLOCK: tl.constexpr, BLOCK_N: tl.constexpr, ALIGN: tl.constexpr, PTR_ALIGN: tl.constexpr,
    ROWS: tl.constexpr, BACKWARD: tl.constexpr,
):
    """One BLOCK of one member: y = chain(x) into field Y; with `BACKWARD`,
    dx into field GX (contiguous) and the others' gradients instead, field Y
    holding dy (same addressing as dx), the chain's intermediates recomputed."""
    m, e, row, col, mask = _address(meta, N, BLOCK, BLOCK_N, ALIGN, ROWS)
    x_ptr = member_pointer(meta, N, m, 0, x_ref, PTR_ALIGN)
    y_ptr = member_pointer(meta, N, m, 1, x_ref, PTR_ALIGN)
    if ROWS:
        sx = member_value(meta, N, m, 4, ALIGN)
        v0 = tl.load(x_ptr + row * sx + col, mask=mask, other=0.0).to(tl.float32)
    else:
        v0 = tl.load(x_ptr + e, mask=mask, other=0.0).to(tl.float32)
    o0 = _operand(meta, N, m, e, row, col, mask, S0, x_ref, SRC0, J0, ROWS, ALIGN, PTR_ALIGN)
    o1 = _operand(meta, N, m, e, row, col, mask, S1, x_ref, SRC1, J1, ROWS, ALIGN, PTR_ALIGN)
    o2 = _operand(meta, N, m, e, row, col, mask, S2, x_ref, SRC2, J2, ROWS, ALIGN, PTR_ALIGN)
    o3 = _operand(meta, N, m, e, row, col, mask, S3, x_ref, SRC3, J3, ROWS, ALIGN, PTR_ALIGN)
    o4 = _operand(meta, N, m, e, row, col, mask, S4, x_ref, SRC4, J4, ROWS, ALIGN, PTR_ALIGN)
    o5 = _operand(meta, N, m, e, row, col, mask, S5, x_ref, SRC5, J5, ROWS, ALIGN, PTR_ALIGN)
    o6 = _operand(meta, N, m, e, row, col, mask, S6, x_ref, SRC6, J6, ROWS, ALIGN, PTR_ALIGN)
    o7 = _operand(meta, N, m, e, row, col, mask, S7, x_ref, SRC7, J7, ROWS, ALIGN, PTR_ALIGN)
    v1 = _forward_step(v0, o0, OP0)
    v2 = _forward_step(v1, o1, OP1)
    v3 = _forward_step(v2, o2, OP2)
    v4 = _forward_step(v3, o3, OP3)
    v5 = _forward_step(v4, o4, OP4)
    v6 = _forward_step(v5, o5, OP5)
    v7 = _forward_step(v6, o6, OP6)
    if BACKWARD:
        # dy is made contiguous by the launcher.
        g = tl.load(y_ptr + e, mask=mask, other=0.0).to(tl.float32)
        g = _step_back(meta, N, m, e, mask, v7, o7, g, x_ref, OP7, SRC7, J7)
        g = _step_back(meta, N, m, e, mask, v6, o6, g, x_ref, OP6, SRC6, J6)
        g = _step_back(meta, N, m, e, mask, v5, o5, g, x_ref, OP5, SRC5, J5)
        g = _step_back(meta, N, m, e, mask, v4, o4, g, x_ref, OP4, SRC4, J4)
        g = _step_back(meta, N, m, e, mask, v3, o3, g, x_ref, OP3, SRC3, J3)
        g = _step_back(meta, N, m, e, mask, v2, o2, g, x_ref, OP2, SRC2, J2)
        g = _step_back(meta, N, m, e, mask, v1, o1, g, x_ref, OP1, SRC1, J1)
        g = _step_back(meta, N, m, e, mask, v0, o0, g, x_ref, OP0, SRC0, J0)
        dx_ptr = member_pointer(meta, N, m, 6, x_ref, PTR_ALIGN)
        tl.store(dx_ptr + e, g.to(x_ref.dtype.element_ty), mask=mask)
    else:
        y = _forward_step(v7, o7, OP7)
        tl.store(y_ptr + e, y.to(x_ref.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------
# Launchers


def _tensor_steps(steps: Sequence[Step]) -> int:
    return sum(1 for s in steps if s.operand == "tensor")


def _check(inputs: Sequence[torch.Tensor], others: Sequence[torch.Tensor],
           steps: Sequence[Step]) -> list[list[tuple[torch.Tensor, bool]]]:
    """others as `[tensor step][member] -> (tensor, broadcasts)`, validated."""
    n, k = len(inputs), _tensor_steps(steps)
    if len(others) != k * n:
        raise ValueError(
            f"multi pointwise: {len(others)} others for {k} tensor steps and {n} members "
            f"(expected {k * n}, step-major)"
        )
    table: list[list[tuple[torch.Tensor, bool]]] = []
    for j in range(k):
        column = []
        for i, x in enumerate(inputs):
            o = others[j * n + i]
            d = x.shape[-1] if x.dim() else 1
            if o.dtype != x.dtype:
                raise ValueError(
                    f"multi pointwise: other {j} of member {i} is {o.dtype}, its input {x.dtype}"
                )
            if o.shape == x.shape:
                column.append((o, False))
            elif o.dim() == 1 and o.shape[0] == d:
                column.append((o.contiguous(), True))
            else:
                raise ValueError(
                    f"multi pointwise: other {j} of member {i} has shape {tuple(o.shape)}; "
                    f"expected {tuple(x.shape)} or ({d},)"
                )
        table.append(column)
    return table


def _chunks(steps: Sequence[Step]) -> list[tuple[tuple[Step, ...], int]]:
    """The program in launches of at most MAX_STEPS steps, each with the index
    of its first tensor step."""
    out, first = [], 0
    for c in range(0, len(steps), MAX_STEPS):
        chunk = tuple(steps[c:c + MAX_STEPS])
        out.append((chunk, first))
        first += _tensor_steps(chunk)
    return out


def _step_args(steps: Sequence[Step]) -> tuple[list[float], dict[str, int]]:
    scalars = [0.0] * MAX_STEPS
    const: dict[str, int] = {}
    j = 0
    for k in range(MAX_STEPS):
        if k < len(steps):
            s = steps[k]
            const[f"OP{k}"] = s.code
            const[f"SRC{k}"] = {"none": _NONE, "tensor": _TENSOR, "scalar": _SCALAR}[s.operand]
            const[f"J{k}"] = j if s.operand == "tensor" else 0
            if s.operand == "tensor":
                j += 1
            if s.scalar is not None:
                scalars[k] = s.scalar
        else:
            const[f"OP{k}"], const[f"SRC{k}"], const[f"J{k}"] = 0, _NONE, 0
    return scalars, const


def _launch(group: list[int], xs: Sequence[torch.Tensor], second: Sequence[torch.Tensor],
            third: Sequence[torch.Tensor | None], others: list[list[tuple[torch.Tensor, bool]]],
            other_grads: list[list[torch.Tensor | None]] | None, steps: tuple[Step, ...],
            first_tensor: int, *, backward: bool) -> None:
    """One launch of the kernel, forward or `backward`, over the members
    `group`: x, then y (forward) or dy (backward), then dx (backward); others
    of this chunk's tensor steps."""
    x0 = xs[group[0]]
    device, esize = x0.device, x0.element_size()
    k = _tensor_steps(steps)
    columns: list[list[int]] = [[] for _ in range(_F_OTHERS + 3 * k)]
    align_values: list[int] = []
    rows_mode = False
    start = 0
    # Every `[rows, D]` view may be a copy (a transposed, expanded or
    # otherwise unaddressable member): only its address enters `meta`, so the
    # copies are held here until the kernel has been launched. On a GPU that
    # is also long enough: CUDA's caching allocator frees stream-ordered, so
    # their memory is reused only by work queued on the stream after this
    # kernel.
    keep_alive: list[torch.Tensor] = []
    for i in group:
        xr = row_view(xs[i])
        keep_alive.append(xr)
        n_el = xs[i].numel()
        d = xr.shape[1]
        if not xs[i].is_contiguous() or xr.data_ptr() % esize:
            rows_mode = True
        values = [xr.data_ptr(), second[i].data_ptr(), n_el, d, xr.stride(0), start,
                  0 if third[i] is None else third[i].data_ptr()]
        align_values += [n_el, d, xr.stride(0) if xr.shape[0] > 1 else d]
        align_values += [t.data_ptr() // esize for t in (xr, second[i], third[i]) if t is not None]
        for j in range(k):
            o, broadcast = others[first_tensor + j][i]
            orows = o if broadcast else row_view(o)
            keep_alive.append(orows)
            if broadcast or not o.is_contiguous():
                rows_mode = True
            stride = 0 if broadcast else orows.stride(0)
            grad = None if other_grads is None else other_grads[first_tensor + j][i]
            values += [orows.data_ptr(), stride, 0 if grad is None else grad.data_ptr()]
            align_values += [orows.data_ptr() // esize, stride if orows.shape[0] > 1 else d]
            if orows.data_ptr() % esize:
                align_values.append(1)
        for field, value in enumerate(values):
            columns[field].append(value)
        start += triton.cdiv(n_el, _BLOCK)
    if start == 0:
        return
    align = alignment(align_values, esize)
    scalars, const = _step_args(steps)
    # Field-major, flat, from the device-table cache (no copy when built
    # before; capture-safe).
    meta = tables().table([v for column in columns for v in column], device)
    _multi_pointwise_kernel[(start,)](
        meta, x0, len(group), *scalars, **const, BLOCK=_BLOCK,
        BLOCK_N=triton.next_power_of_2(len(group)), ALIGN=align, PTR_ALIGN=align * esize,
        ROWS=rows_mode, BACKWARD=backward, num_warps=_NUM_WARPS,
    )
    del keep_alive  # only now may the copies go (see above)


def _parts(group: list[int], xs: Sequence[torch.Tensor],
           others: list[list[tuple[torch.Tensor, bool]]], first_tensor: int,
           k: int) -> list[list[int]]:
    """`group` split into its 16-byte-aligned members and the pieces at odd
    offsets where a second launch pays (`layout.aligned_parts`). A member's
    alignment here is a cheap estimate from its own layout (the launch
    computes the hints its members really share)."""
    esize = xs[group[0]].element_size()
    aligns, moved = [], []
    for i in group:
        x = xs[i]
        d = x.shape[-1] if x.dim() else 1
        values = [x.numel(), d, x.data_ptr() // esize]
        if x.dim() >= 2 and x.shape[-2] > 1:
            values.append(x.stride(-2))
        if x.dim() and d > 1 and x.stride(-1) != 1:
            values.append(1)  # copied to rows by the launch; do not count it aligned
        addresses = [x.data_ptr()]
        for j in range(k):
            o, broadcast = others[first_tensor + j][i]
            addresses.append(o.data_ptr())
            values.append(o.data_ptr() // esize)
            if not broadcast and o.dim() >= 2 and o.shape[-2] > 1:
                values.append(o.stride(-2))
        if any(a % esize for a in addresses):
            values.append(1)
        aligns.append(alignment(values, esize))
        moved.append((2 + k) * x.numel() * esize)
    return aligned_parts(group, aligns, moved, esize)


def _forward_chunks(inputs, table, chunks, final=None) -> list[list[torch.Tensor]]:
    """The values entering each chunk and the final outputs: [chunk][member].
    The last chunk writes into `final` (contiguous tensors of the inputs'
    shapes) where given."""
    values = [list(inputs)]
    for c, (steps, first) in enumerate(chunks):
        current = values[-1]
        if final is not None and c == len(chunks) - 1:
            outputs = list(final)
        else:
            outputs = [torch.empty(x.shape, dtype=x.dtype, device=x.device) for x in current]
        for group in indices_by_dtype(current):
            for part in _parts(group, current, table, first, _tensor_steps(steps)):
                _launch(part, current, outputs, [None] * len(current), table, None, steps,
                        first, backward=False)
        values.append(outputs)
    return values


def _dense_order(y: torch.Tensor) -> list[int] | None:
    """The dims of `y` from outermost to innermost in memory, where `y` is a
    permutation of a contiguous tensor (`y.permute(order)` is contiguous);
    None when `y` is contiguous itself."""
    if y.is_contiguous():
        return None
    # Where size-1 dims land does not matter (contiguity ignores them).
    return sorted(range(y.dim()), key=lambda d: (-y.stride(d), d))


def multi_pointwise_forward(inputs: Sequence[torch.Tensor], others: Sequence[torch.Tensor],
                            program: str) -> list[torch.Tensor]:
    """`program` applied to every member in one launch (per input dtype, per
    `MAX_STEPS` steps): results fresh, of each input's shape and dtype and of
    the strides eager torch gives them (`ops.multi_pointwise_strides`: a
    transposed member's result is transposed), computed in fp32.
    `others[j * N + i]` is member i's operand of the j-th tensor step: of the
    member's shape, or 1-D of its last dim.

    A pointwise program commutes with permuting dims, so a member whose
    eager result is a permuted layout runs on the permuted views of its
    operands and writes the (then contiguous) permuted view of its result."""
    steps = parse_program(program)
    _check(inputs, others, steps)
    if not inputs:
        return []
    n, k = len(inputs), _tensor_steps(steps)
    outputs = [
        torch.empty(x.shape, dtype=x.dtype, device=x.device) if stride is None
        else torch.empty_strided(x.shape, stride, dtype=x.dtype, device=x.device)
        for x, stride in zip(inputs, multi_pointwise_strides(inputs, others, program))
    ]
    xs, member_others, targets = list(inputs), list(others), list(outputs)
    copies: list[tuple[torch.Tensor, torch.Tensor]] = []
    for i, (x, y) in enumerate(zip(inputs, outputs)):
        order = _dense_order(y)  # None for the (usual) contiguous results
        if order is None:
            continue
        target = y.permute(order)
        if not target.is_contiguous():
            # Not a permuted dense layout (eager never allocates one): compute
            # contiguous, then copy into place.
            target = torch.empty(x.shape, dtype=x.dtype, device=x.device)
            copies.append((y, target))
            targets[i] = target
            continue
        targets[i] = target
        xs[i] = x.permute(order)
        for j in range(k):
            o = others[j * n + i]
            if o.shape == x.shape:
                member_others[j * n + i] = o.permute(order)
            elif order[-1] != x.dim() - 1:
                # A 1-D other over the last dim, which is no longer last.
                member_others[j * n + i] = o.expand(x.shape).permute(order)
    table = _check(xs, member_others, steps)
    _forward_chunks(xs, table, _chunks(steps), final=targets)
    for y, computed in copies:
        y.copy_(computed)
    return outputs


def multi_pointwise_backward(
    grad_outputs: Sequence[torch.Tensor | None], inputs: Sequence[torch.Tensor],
    others: Sequence[torch.Tensor], program: str,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Gradients of `multi_pointwise_forward`: `(grad_inputs, grad_others)`,
    grad_others flat and step-major like `others`, each of its other's shape
    and dtype (broadcast 1-D others get the sum over rows, in fp32 then cast).
    The kernel recomputes the chain's intermediates; a None grad output
    counts as zeros."""
    steps = parse_program(program)
    table = _check(inputs, others, steps)
    n, k = len(inputs), len(table)
    if not inputs:
        return [], []
    chunks = _chunks(steps)
    values = _forward_chunks(inputs, table, chunks[:-1]) if len(chunks) > 1 else [list(inputs)]
    grads = [
        torch.zeros(x.shape, dtype=x.dtype, device=x.device) if g is None
        else g.to(x.dtype).expand(x.shape).contiguous()
        for g, x in zip(grad_outputs, inputs)
    ]
    # Per element gradient buffers of others: fp32 for the broadcast ones.
    other_grads: list[list[torch.Tensor]] = [
        [torch.empty(x.shape, dtype=torch.float32 if b else x.dtype, device=x.device)
         for (o, b), x in zip(table[j], inputs)]
        for j in range(k)
    ]
    for c in range(len(chunks) - 1, -1, -1):
        steps_c, first = chunks[c]
        current = values[c]
        dxs = [torch.empty(x.shape, dtype=x.dtype, device=x.device) for x in current]
        for group in indices_by_dtype(current):
            for part in _parts(group, current, table, first, _tensor_steps(steps_c)):
                _launch(part, current, grads, dxs, table, other_grads, steps_c, first,
                        backward=True)
        grads = dxs
    grad_others: list[torch.Tensor] = []
    for j in range(k):
        for i in range(n):
            o, broadcast = table[j][i]
            g = other_grads[j][i]
            if broadcast:
                g = g.reshape(-1, o.shape[0]).sum(0).to(o.dtype)
            grad_others.append(g)
    return grads, grad_others
