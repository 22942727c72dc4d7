"""Grouped GEMM: `y_i = act(x_i @ W_i.T + b_i)` for N members of possibly
different shapes in one persistent Triton launch, and its backward.

Design (why it is shaped like this):

* No stacking. Each member's operands are read where they lie: the launcher
  passes one small int64 device tensor of per-member metadata (the
  `data_ptr()` of every operand, the sizes and the strides, `_META_COLS`
  columns a row) and the kernel turns the addresses back into typed pointers
  with `.to(tl.pointer_type(DTYPE))`. That works both compiled and in
  Triton's interpreter on CPU tensors (where an address is a host address);
  it does NOT work in the interpreter on CUDA tensors (the interpreter copies
  only the tensor arguments to the host, not tensors reached through
  addresses), so the launcher refuses that combination. The table comes
  from the device-table cache (`metadata.py`): a launch whose table was
  built before (steady state, CUDA graph replays) copies nothing, and a
  capture never sees a pageable copy. Inside a capture an autotuner key
  not tuned in an eager call takes the first config (tuning synchronises).
* One tile schedule over all members. Member i has
  `cdiv(M_i, BLOCK_M) * cdiv(N_i, BLOCK_N)` output tiles; the exclusive prefix
  sum of those counts (computed on the host, in the same device table as
  the metadata) maps a global tile id to its member. The prefix
  depends on the tile shape, which the autotuner picks after the launcher
  ran, so there is one prefix row per distinct (BLOCK_M, BLOCK_N) of the
  config set and each config names its row (`TILE_ROW`). A persistent grid
  (one program per SM on CUDA, capped by the tile count) strides over the
  tile ids; since a program's tile ids only grow, it finds each tile's member
  by walking the prefix forward, never by searching from the start.
* Any strides. A GEMM operand is a 2-D view with its own two strides, so
  transposes are stride swaps: the backward's `dX = dZ @ W` and
  `dW = dZ^T @ X` are the same kernel on `W` and `dZ.t()` views, no copies.
  Because the compiler cannot know strides loaded from memory, a launch is
  specialised (constexpr `*_LAYOUT`) on which dimension of each operand has
  unit stride, so the usual row-major and column-major operands still get
  contiguous (vectorisable) accesses; members whose layouts differ go to
  separate launches (in the forward of ordinary tensors there is one).
  `ALIGNED` adds 16-byte alignment hints when every address and non-unit
  stride of the launch allows them, `SIZES_ALIGNED` when every M and N is a
  multiple of 16 bytes' worth of elements (the masks along a unit-stride
  dimension then come in 16-byte runs); the K loop runs its full blocks
  without a K mask and the ragged tail once.
* Epilogue in fp32: bias, then the activation (`apply_activation`), or, for
  the backward, `dY * act'(Z)` (`activation_grad`) at the recomputed
  pre-activation `Z`; stored in the operands' dtype.
* Autotuning over a small config set keyed by the launch's bucketed shape
  class (power-of-two buckets of the largest M, N, K and of the member count;
  the autotuner adds the dtype through `DTYPE_CLASS`, an int: the key is
  written to Triton's cache as JSON), results cached on disk where
  the installed Triton has `cache_results`. Under `TRITON_INTERPRET=1` there
  is a single small config (the interpreter is for numerics, never timed).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from optimus_ir.kernels.activations import activation_code, activation_grad, apply_activation
from optimus_ir.foundation.environment import environment
from optimus_ir.kernels.layout import aligned_parts
from optimus_ir.kernels.metadata import stream_capturing, tables
from optimus_ir.kernels.ops import check_member_counts

_INTERPRET = environment().triton_interpret  # as triton.jit reads it: once, at import

# Metadata columns of one GEMM problem (a row of the int64 metadata tensor).
_A, _B, _C, _BIAS, _D = 0, 1, 2, 3, 4  # addresses (bias/D: 0 when absent)
_M, _N, _K = 5, 6, 7
_SAM, _SAK, _SBK, _SBN, _SCM, _SCN, _SDM, _SDN, _SBIAS = 8, 9, 10, 11, 12, 13, 14, 15, 16
_META_COLS = 17

# Operand layouts (constexpr): which dimension of a 2-D operand [R, C] has
# unit stride, so the compiler sees contiguity it cannot infer from strides
# loaded at run time.
_GENERIC, _COL_UNIT, _ROW_UNIT = 0, 1, 2

_EPILOGUE_ACTIVATION, _EPILOGUE_ACTIVATION_GRAD = 0, 1

_TORCH_TO_TL = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}
# The autotuner's key names the dtype by this code, never by `DTYPE` itself:
# Triton writes the key to its on-disk cache as JSON (`cache_results`), and a
# `tl.dtype` is not JSON-serialisable (the first GPU run failed so; the
# interpreter never caches, so CI could not see it).
_DTYPE_CODES = {dtype: code for code, dtype in enumerate(_TORCH_TO_TL)}
AUTOTUNE_KEY = ["M_CLASS", "N_CLASS", "K_CLASS", "G_CLASS", "DTYPE_CLASS"]
"""The autotuner's key arguments: plain ints, so the key is JSON-serialisable."""


def _config(bm: int, bn: int, bk: int, warps: int, stages: int) -> triton.Config:
    return triton.Config(
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=warps, num_stages=stages
    )


# Hopper-sized tiles for large members, and small ones so that many small
# members (the grouped case this kernel exists for) still fill the SMs.
_GPU_CONFIGS = [
    _config(128, 128, 64, 8, 3),
    _config(128, 64, 64, 4, 4),
    _config(64, 128, 64, 4, 4),
    _config(64, 64, 64, 4, 4),
    _config(64, 64, 32, 4, 5),
    _config(32, 64, 64, 4, 4),
]
# Interpreter: one config (no benchmarking), small enough that the tests'
# 17..70-sized members span several tiles and hit the masked edges.
_INTERPRETER_CONFIGS = [_config(32, 32, 32, 4, 1)]

_TILE_SHAPES: list[tuple[int, int]] = sorted(
    {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) for c in _GPU_CONFIGS + _INTERPRETER_CONFIGS}
)
for _c in _GPU_CONFIGS + _INTERPRETER_CONFIGS:
    _c.kwargs["TILE_ROW"] = _TILE_SHAPES.index((_c.kwargs["BLOCK_M"], _c.kwargs["BLOCK_N"]))

CONFIGS: list[triton.Config] = _INTERPRETER_CONFIGS if _INTERPRET else _GPU_CONFIGS
"""The autotuner's config set in this process."""

_AUTOTUNE_OPTIONS = (
    {"cache_results": True}
    if "cache_results" in inspect.signature(triton.autotune).parameters
    else {}
)


@triton.jit
def _offsets(rows, cols, stride_r, stride_c, LAYOUT: tl.constexpr):
    """2-D element offsets `rows[:, None] * stride_r + cols[None, :] * stride_c`,
    with the unit stride of `LAYOUT` left out so the compiler sees it."""
    if LAYOUT == 1:
        off = rows[:, None] * stride_r + cols[None, :]
    elif LAYOUT == 2:
        off = rows[:, None] + cols[None, :] * stride_c
    else:
        off = rows[:, None] * stride_r + cols[None, :] * stride_c
    return off


@triton.jit
def _stride(row, col, ALIGNED: tl.constexpr, VEC: tl.constexpr):
    """The int64 stride in metadata column `col`, hinted as a multiple of
    `VEC` elements (16 bytes) when the launch is `ALIGNED`."""
    s = tl.load(row + col)
    if ALIGNED:
        s = tl.multiple_of(s, VEC)
    return s


@triton.jit
def _address(row, col, DTYPE: tl.constexpr, ALIGNED: tl.constexpr):
    """The typed pointer whose address is in metadata column `col`."""
    p = tl.load(row + col).to(tl.pointer_type(DTYPE))
    if ALIGNED:
        p = tl.multiple_of(p, 16)
    return p


@triton.jit
def _dot(a, b, acc, INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """`acc + a @ b` in fp32. `UPCAST` (set only under the interpreter, for
    bf16) multiplies fp32 copies: Triton 3.9's interpreter holds bf16 as
    uint16 and its `tl.dot` multiplies those integers. bf16 products are
    exact in fp32 and the accumulation is fp32 either way, so the result is
    the one a GPU's bf16 MMA gives."""
    if UPCAST:
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    return acc


@triton.jit(
    do_not_specialize=["num_groups", "M_CLASS", "N_CLASS", "K_CLASS", "G_CLASS", "DTYPE_CLASS"]
)
def _grouped_gemm_kernel(
    meta,
    tile_starts,
    num_groups,
    M_CLASS,
    N_CLASS,
    K_CLASS,
    G_CLASS,
    DTYPE_CLASS,
    DTYPE: tl.constexpr,
    ACTIVATION: tl.constexpr,
    EPILOGUE: tl.constexpr,
    A_LAYOUT: tl.constexpr,
    B_LAYOUT: tl.constexpr,
    D_LAYOUT: tl.constexpr,
    ALIGNED: tl.constexpr,
    SIZES_ALIGNED: tl.constexpr,
    VEC: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
    META_COLS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    TILE_ROW: tl.constexpr,
):
    """Persistent grouped GEMM: for every problem g (a row of `meta`),
    `C_g = epilogue(A_g @ B_g + bias_g)` with A_g `[M, K]`, B_g `[K, N]`,
    C_g `[M, N]` (C row-major). `*_CLASS` are the autotuner's key only
    (`AUTOTUNE_KEY`)."""
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    starts = tile_starts + TILE_ROW * (num_groups + 1)
    total_tiles = tl.load(starts + num_groups).to(tl.int32)
    g = pid * 0  # an int32 tensor: the loop-carried member index keeps one type
    group_end = tl.load(starts + 1).to(tl.int32)
    for tile in range(pid, total_tiles, num_programs):
        # Tile ids of one program only grow: advance to the member holding it.
        while tile >= group_end:
            g += 1
            group_end = tl.load(starts + g + 1).to(tl.int32)
        local = tile - tl.load(starts + g).to(tl.int32)
        row = meta + g.to(tl.int64) * META_COLS

        M = tl.load(row + 5).to(tl.int32)
        N = tl.load(row + 6).to(tl.int32)
        K = tl.load(row + 7).to(tl.int32)
        if SIZES_ALIGNED:
            # Masks along a unit-stride dimension then stay constant over
            # 16-byte runs, so those accesses can be vectorised.
            M = tl.multiple_of(M, VEC)
            N = tl.multiple_of(N, VEC)
        tiles_n = tl.cdiv(N, BLOCK_N)
        offs_m = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        mask_m = offs_m < M
        mask_n = offs_n < N

        s_am = _stride(row, 8, ALIGNED, VEC)
        s_ak = _stride(row, 9, ALIGNED, VEC)
        s_bk = _stride(row, 10, ALIGNED, VEC)
        s_bn = _stride(row, 11, ALIGNED, VEC)
        a_ptrs = _address(row, 0, DTYPE, ALIGNED) + _offsets(offs_m, offs_k, s_am, s_ak, A_LAYOUT)
        b_ptrs = _address(row, 1, DTYPE, ALIGNED) + _offsets(offs_k, offs_n, s_bk, s_bn, B_LAYOUT)
        if A_LAYOUT == 1:
            a_step = BLOCK_K
        else:
            a_step = BLOCK_K * s_ak
        if B_LAYOUT == 2:
            b_step = BLOCK_K
        else:
            b_step = BLOCK_K * s_bk

        # Full K blocks first, masked only along M/N (masks constant along
        # K keep the K-contiguous loads vectorised and pipelined), then the
        # ragged K tail.
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        full_k = K // BLOCK_K
        for _ in range(0, full_k):
            a = tl.load(a_ptrs, mask=mask_m[:, None], other=0.0)
            b = tl.load(b_ptrs, mask=mask_n[None, :], other=0.0)
            acc = _dot(a, b, acc, INPUT_PRECISION, UPCAST_DOT)
            a_ptrs += a_step
            b_ptrs += b_step
        if full_k * BLOCK_K < K:
            mask_k = offs_k < K - full_k * BLOCK_K
            a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
            acc = _dot(a, b, acc, INPUT_PRECISION, UPCAST_DOT)

        bias_address = tl.load(row + 3)
        if bias_address != 0:
            bias_ptr = bias_address.to(tl.pointer_type(DTYPE))
            bias = tl.load(bias_ptr + offs_n * tl.load(row + 16), mask=mask_n, other=0.0)
            acc += bias.to(tl.float32)[None, :]

        mask = mask_m[:, None] & mask_n[None, :]
        if EPILOGUE == 1:
            d_ptrs = _address(row, 4, DTYPE, False) + _offsets(
                offs_m, offs_n, tl.load(row + 14), tl.load(row + 15), D_LAYOUT
            )
            d = tl.load(d_ptrs, mask=mask, other=0.0).to(tl.float32)
            out = d * activation_grad(acc, ACTIVATION)
        else:
            out = apply_activation(acc, ACTIVATION)
        c_ptrs = _address(row, 2, DTYPE, ALIGNED) + _offsets(
            offs_m, offs_n, _stride(row, 12, ALIGNED, VEC), 1, 1
        )
        tl.store(c_ptrs, out.to(DTYPE), mask=mask)


_autotuned_kernel = triton.autotune(
    configs=CONFIGS, key=AUTOTUNE_KEY, **_AUTOTUNE_OPTIONS
)(_grouped_gemm_kernel)


@dataclass(frozen=True, slots=True)
class _Problem:
    """One GEMM of a launch: `c = epilogue(a @ b + bias)`; a `[M, K]`, b
    `[K, N]`, c `[M, N]` row-major, bias `[N]` or None, d (the backward's
    `dY`) `[M, N]` or None. All 2-D views, any strides.

    Only the operands' addresses reach the kernel (the metadata tensor), so a
    problem holds its operands, copies made for it included (`_rows` copies
    leading dims that do not merge), and the caller holds its problems until
    every launch has been queued; on a GPU that is long enough, since CUDA's
    caching allocator frees stream-ordered: a freed block is reused only by
    work queued on the stream after the kernel."""

    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    bias: torch.Tensor | None = None
    d: torch.Tensor | None = None


def _strides(t: torch.Tensor) -> tuple[int, int]:
    # A size-1 dimension is never stepped along: any stride is right, and 1
    # keeps the layout classes (and the alignment test) from seeing a
    # meaningless stride.
    return tuple(s if n > 1 else 1 for n, s in zip(t.shape, t.stride()))  # type: ignore[return-value]


def _layout(strides: tuple[int, int]) -> int:
    if strides[1] == 1:
        return _COL_UNIT
    if strides[0] == 1:
        return _ROW_UNIT
    return _GENERIC


def _bucket(n: int) -> int:
    """The autotuner's shape class of a size: the next power of two."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


_NUM_SMS: dict[int, int] = {}

_TUNED_KEYS: set[tuple] = set()
"""Autotuner keys launched outside capture in this process (tuned by then)."""


def _num_programs(device: torch.device) -> int:
    if device.type != "cuda":
        return 3  # the interpreter: a few programs, each walking several tiles
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _NUM_SMS:
        _NUM_SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _NUM_SMS[index]


def _input_precision(dtype: torch.dtype) -> str:
    # fp32 follows torch's own matmul precision setting ("highest", the
    # default, is IEEE fp32), so results match torch.nn.functional.linear.
    if dtype == torch.float32 and torch.get_float32_matmul_precision() == "highest":
        return "ieee"
    return "tf32"


def _launch(
    problems: Sequence[_Problem],
    activation: str,
    epilogue: int,
    config: triton.Config | None = None,
) -> None:
    """Run `problems` (all of one dtype and device), one launch per layout
    class; `config` bypasses the autotuner (tests run every GPU config)."""
    classes: dict[tuple[int, int, int], list[tuple[_Problem, bool]]] = {}
    for p in problems:
        if p.a.shape[0] == 0 or p.b.shape[1] == 0:
            continue  # no output tiles
        sa, sb = _strides(p.a), _strides(p.b)
        key = (_layout(sa), _layout(sb), _layout(_strides(p.d)) if p.d is not None else _COL_UNIT)
        classes.setdefault(key, []).append((p, _problem_aligned(p, sa, sb)))
    for (a_layout, b_layout, d_layout), members in classes.items():
        # Members at odd offsets (split pieces) would take the alignment
        # hints off the whole launch: the aligned ones launch apart where
        # that pays (`layout.aligned_parts`).
        esize = members[0][0].c.element_size()
        vec = 16 // esize
        flags = [vec if aligned else 1 for _, aligned in members]
        moved = [
            (p.a.shape[0] * p.a.shape[1] + p.b.shape[0] * p.b.shape[1] + p.c.numel()) * esize
            for p, _ in members
        ]
        for part in aligned_parts(range(len(members)), flags, moved, esize):
            _launch_class(
                [members[i][0] for i in part], all(members[i][1] for i in part), activation,
                epilogue, a_layout, b_layout, d_layout, config,
            )


def _problem_aligned(p: _Problem, sa: tuple[int, int], sb: tuple[int, int]) -> bool:
    """Whether every address of `p` is 16-byte aligned and every non-unit
    stride of its A (`sa`), B (`sb`) and C a multiple of 16 bytes' worth of
    elements: what `ALIGNED` lets the kernel assume."""
    vec = 16 // p.c.element_size()
    if p.a.data_ptr() % 16 or p.b.data_ptr() % 16 or p.c.data_ptr() % 16:
        return False
    scm = p.c.stride(0) if p.c.shape[0] > 1 else 1
    return all(s == 1 or s % vec == 0 for s in (*sa, *sb, scm))


def _launch_class(
    problems: list[_Problem],
    aligned: bool,
    activation: str,
    epilogue: int,
    a_layout: int,
    b_layout: int,
    d_layout: int,
    config: triton.Config | None,
) -> None:
    first = problems[0]
    device, dtype = first.c.device, first.c.dtype
    if _INTERPRET and device.type == "cuda":
        raise RuntimeError(
            "grouped GEMM under TRITON_INTERPRET=1 needs CPU tensors: the interpreter "
            "cannot follow device addresses held in the metadata tensor"
        )
    rows: list[list[int]] = []
    vec = 16 // first.c.element_size()
    sizes_aligned = True
    max_m = max_n = max_k = 0
    for p in problems:
        (m, k), n = p.a.shape, p.b.shape[1]
        sam, sak = _strides(p.a)
        sbk, sbn = _strides(p.b)
        scm, scn = _strides(p.c)
        sdm, sdn = _strides(p.d) if p.d is not None else (0, 0)
        addresses = [p.a.data_ptr(), p.b.data_ptr(), p.c.data_ptr()]
        sizes_aligned = sizes_aligned and m % vec == 0 and n % vec == 0
        rows.append(
            addresses
            + [
                p.bias.data_ptr() if p.bias is not None else 0,
                p.d.data_ptr() if p.d is not None else 0,
                m, n, k,
                sam, sak, sbk, sbn, scm, scn, sdm, sdn,
                p.bias.stride(0) if p.bias is not None else 0,
            ]
        )  # fmt: skip
        max_m, max_n, max_k = max(max_m, m), max(max_n, n), max(max_k, k)
    num_groups = len(rows)
    # The metadata rows, then one row of tile prefix sums per tile shape, as
    # one cached device table (`metadata.py`: no copy or allocation when the
    # same table was built before, and capture-safe when it was not).
    values = [v for r in rows for v in r]
    totals = []
    for bm, bn in _TILE_SHAPES:
        total = 0
        values.append(0)
        for r in rows:
            total += -(-r[_M] // bm) * -(-r[_N] // bn)
            values.append(total)
        totals.append(total)
    buffer = tables().table(values, device)
    split = num_groups * _META_COLS
    meta, tile_starts = buffer[:split], buffer[split:]
    num_programs = _num_programs(device)

    def grid(meta_args: dict) -> tuple[int]:
        return (max(1, min(num_programs, totals[meta_args["TILE_ROW"]])),)

    args = dict(
        num_groups=num_groups,
        M_CLASS=_bucket(max_m),
        N_CLASS=_bucket(max_n),
        K_CLASS=_bucket(max_k),
        G_CLASS=_bucket(num_groups),
        DTYPE_CLASS=_DTYPE_CODES[dtype],
        DTYPE=_TORCH_TO_TL[dtype],
        ACTIVATION=activation_code(activation),
        EPILOGUE=epilogue,
        A_LAYOUT=a_layout,
        B_LAYOUT=b_layout,
        D_LAYOUT=d_layout,
        ALIGNED=aligned,
        SIZES_ALIGNED=sizes_aligned,
        VEC=vec,
        INPUT_PRECISION=_input_precision(dtype),
        UPCAST_DOT=_INTERPRET and dtype == torch.bfloat16,
        META_COLS=_META_COLS,
    )
    if config is None and stream_capturing(device):
        # The autotuner benchmarks (and synchronises) on a key it has not
        # seen: never inside a capture. A key tuned in an eager (warm-up)
        # call keeps its tuned config; an unseen one takes the first config.
        key = (device, dtype, args["M_CLASS"], args["N_CLASS"], args["K_CLASS"], args["G_CLASS"])
        if key not in _TUNED_KEYS:
            config = CONFIGS[0]
    if config is None:
        _TUNED_KEYS.add(
            (device, dtype, args["M_CLASS"], args["N_CLASS"], args["K_CLASS"], args["G_CLASS"])
        )
        _autotuned_kernel[grid](meta, tile_starts, **args)
    else:
        _grouped_gemm_kernel[grid(config.kwargs)](
            meta,
            tile_starts,
            **args,
            **config.kwargs,
            num_warps=config.num_warps,
            num_stages=config.num_stages,
        )


def _rows(t: torch.Tensor) -> torch.Tensor:
    """`t` `[*, C]` as `[M, C]`: a view whenever the leading dims merge into
    one stride (contiguous tensors, split pieces, 2-D transposed views), a
    copy otherwise (reshape's rule)."""
    return t.reshape(math.prod(t.shape[:-1]), t.shape[-1])  # not -1: K may be 0


def _check(
    inputs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor | None],
) -> None:
    check_member_counts("grouped linear", inputs, weights, biases)
    for i, (x, w, b) in enumerate(zip(inputs, weights, biases)):
        if x.dim() < 1 or w.dim() != 2 or x.shape[-1] != w.shape[1]:
            raise ValueError(
                f"grouped linear member {i}: input {tuple(x.shape)} and weight "
                f"{tuple(w.shape)} do not match (weight is [out_features, in_features])"
            )
        if b is not None and tuple(b.shape) != (w.shape[0],):
            raise ValueError(f"grouped linear member {i}: bias {tuple(b.shape)}, weight {tuple(w.shape)}")
        for t in (w, b):
            if t is not None and (t.dtype != x.dtype or t.device != x.device):
                raise ValueError(
                    f"grouped linear member {i}: operands must share the input's dtype and "
                    f"device ({x.dtype}, {x.device})"
                )
        if x.dtype not in _TORCH_TO_TL:
            raise ValueError(f"grouped linear member {i}: unsupported dtype {x.dtype}")


def _by_dtype_and_device(problems: list[_Problem]) -> list[list[_Problem]]:
    groups: dict[tuple[torch.dtype, torch.device], list[_Problem]] = {}
    for p in problems:
        groups.setdefault((p.c.dtype, p.c.device), []).append(p)
    return list(groups.values())


def grouped_linear_forward(
    inputs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor | None],
    activation: str = "none",
) -> list[torch.Tensor]:
    """`[act(x_i @ W_i.T + b_i) for each member]`: x_i `[*, K_i]` (any
    strides), W_i `[N_i, K_i]`, b_i `[N_i]` or None; fresh outputs `[*, N_i]`
    in x_i's dtype, fp32 accumulation, one persistent launch for all members
    (one per dtype or operand-layout class where those differ)."""
    activation_code(activation)
    _check(inputs, weights, biases)
    outputs: list[torch.Tensor] = []
    problems: list[_Problem] = []
    for x, w, b in zip(inputs, weights, biases):
        x2 = _rows(x)
        y = torch.empty(x2.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
        problems.append(_Problem(x2, w.t(), y, b))
        outputs.append(y.view(*x.shape[:-1], w.shape[0]))
    for members in _by_dtype_and_device(problems):
        _launch(members, activation, _EPILOGUE_ACTIVATION)
    return outputs


def grouped_linear_backward(
    grad_outputs: Sequence[torch.Tensor | None],
    inputs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor | None],
    activation: str = "none",
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor | None]]:
    """Gradients of `grouped_linear_forward` for `grad_outputs` (dY_i, any
    strides; None counts as zeros): `(dX_i, dW_i, db_i)`, db_i None where b_i
    is None.

    With an activation, `dZ_i = dY_i * act'(Z_i)` comes from one grouped
    launch that recomputes the pre-activation `Z_i = x_i W_i^T + b_i` in its
    epilogue: recomputing costs one forward GEMM but keeps the forward's
    interface (it returns only `y_i`) and needs no `[M_i, N_i]` buffer kept
    alive between forward and backward. Without one, dZ_i is dY_i itself.
    Then `dX_i = dZ_i @ W_i` and `dW_i = dZ_i^T @ X_i` run through the same
    kernel on stride-swapped views, and `db_i = dZ_i.sum(0)` in fp32."""
    activation_code(activation)
    _check(inputs, weights, biases)
    if len(grad_outputs) != len(inputs):
        raise ValueError(f"grouped linear backward: {len(grad_outputs)} grads, {len(inputs)} inputs")
    code = activation_code(activation)
    grad_z: list[torch.Tensor | None] = []
    z_problems: list[_Problem] = []
    for dy, x, w, b in zip(grad_outputs, inputs, weights, biases):
        if dy is None:
            grad_z.append(None)
            continue
        dy2 = _rows(dy)
        if code == 0:
            grad_z.append(dy2)
            continue
        x2 = _rows(x)
        dz = torch.empty(x2.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
        z_problems.append(_Problem(x2, w.t(), dz, b, dy2))
        grad_z.append(dz)
    for members in _by_dtype_and_device(z_problems):
        _launch(members, activation, _EPILOGUE_ACTIVATION_GRAD)

    grad_inputs: list[torch.Tensor] = []
    grad_weights: list[torch.Tensor] = []
    grad_biases: list[torch.Tensor | None] = []
    problems: list[_Problem] = []
    for dz, x, w, b in zip(grad_z, inputs, weights, biases):
        if dz is None:
            grad_inputs.append(torch.zeros_like(x))
            grad_weights.append(torch.zeros_like(w))
            grad_biases.append(torch.zeros_like(b) if b is not None else None)
            continue
        x2 = _rows(x)
        dx = torch.empty(x2.shape[0], w.shape[1], dtype=x.dtype, device=x.device)
        dw = torch.empty(w.shape, dtype=w.dtype, device=w.device)
        problems.append(_Problem(dz, w, dx))
        problems.append(_Problem(dz.t(), x2, dw))
        grad_inputs.append(dx.view(x.shape))
        grad_weights.append(dw)
        grad_biases.append(dz.sum(0, dtype=torch.float32).to(b.dtype) if b is not None else None)
    for members in _by_dtype_and_device(problems):
        _launch(members, "none", _EPILOGUE_ACTIVATION)
    return grad_inputs, grad_weights, grad_biases
