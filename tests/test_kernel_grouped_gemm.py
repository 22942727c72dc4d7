"""The grouped-GEMM kernel (`optimus_ir.kernels.grouped_gemm`) against a loop
of `torch.nn.functional.linear` + activation in fp64, forward and backward
(gradients from torch autograd through the reference), under the Triton
interpreter on CPU (tests/conftest.py sets TRITON_INTERPRET=1 where there is
no CUDA device) or compiled on a CUDA device.

The reference sees exactly the kernel's operand values (the low-precision
tensors upcast to fp64), so the tolerances bound the kernel's own rounding:
fp32 rtol 2e-5 (fp32 accumulation over K <= 70), bf16 rtol 1.6e-2 and fp16
rtol 2e-3 (about four units in the last place: the output rounding and, in
the backward, the rounding of the intermediate dZ to the operand dtype, as
torch's own autograd does), each with an absolute tolerance of the same size
times the reference's largest magnitude (for results that cancel to near
zero). Observed errors are below a fifth of these.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from optimus_ir.kernels.activations import ACTIVATIONS, torch_activation
from torch_paths import scalar_path, torch_reference

pytestmark = [
    pytest.mark.gpu,  # the GPU check runs it on the device (`pytest -m gpu`)
    pytest.mark.skipif(
        os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
        reason="needs the Triton interpreter or a CUDA device",
    ),
]

DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
_TOLERANCE = {torch.float32: 2e-5, torch.bfloat16: 1.6e-2, torch.float16: 2e-3}

Shape = tuple[int, int, int]  # (M, K, N)


def _gemm():  # imported lazily, as the custom ops do
    from optimus_ir.kernels import grouped_gemm

    return grouped_gemm


def _assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    assert actual.dtype == dtype and actual.shape == expected.shape
    tol = _TOLERANCE[dtype]
    scale = max(1.0, expected.abs().max().item()) if expected.numel() else 1.0
    torch.testing.assert_close(
        actual.double().cpu(), expected.cpu(), rtol=tol, atol=tol * scale
    )


def _operands(
    shapes: list[Shape], dtype: torch.dtype, with_bias: Callable[[int], bool], seed: int = 0
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor | None]]:
    generator = torch.Generator().manual_seed(seed)

    def randn(*size: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*size, generator=generator) * scale).to(dtype).to(DEVICE)

    inputs = [randn(m, k) for m, k, _ in shapes]
    # 1/sqrt(K) keeps pre-activations O(1), where the activations bend.
    weights = [randn(n, k, scale=max(k, 1) ** -0.5) for _, k, n in shapes]
    biases = [randn(n) if with_bias(i) else None for i, (_, _, n) in enumerate(shapes)]
    return inputs, weights, biases


def _reference(inputs, weights, biases, activation, grad_outputs=None):
    """Outputs (and, with `grad_outputs`, input/weight/bias grads) of the
    fp64 loop of F.linear + activation, through torch autograd."""
    act = torch_activation(activation)
    leaves = []
    outputs = []
    for x, w, b in zip(inputs, weights, biases):
        xl = x.detach().double().requires_grad_()
        wl = w.detach().double().requires_grad_()
        bl = b.detach().double().requires_grad_() if b is not None else None
        leaves.append((xl, wl, bl))
        outputs.append(act(F.linear(xl, wl, bl)))
    if grad_outputs is None:
        return outputs
    torch.autograd.backward(outputs, [g.double() for g in grad_outputs])
    return (
        outputs,
        [xl.grad for xl, _, _ in leaves],
        [wl.grad for _, wl, _ in leaves],
        [bl.grad if bl is not None else None for _, _, bl in leaves],
    )


def _check_forward_backward(inputs, weights, biases, activation, dtypes=None, seed=1) -> None:
    gemm = _gemm()
    outputs = gemm.grouped_linear_forward(inputs, weights, biases, activation)
    generator = torch.Generator().manual_seed(seed)
    grad_outputs = [
        torch.randn(y.shape, generator=generator).to(y.dtype).to(y.device) for y in outputs
    ]
    ref_y, ref_dx, ref_dw, ref_db = _reference(inputs, weights, biases, activation, grad_outputs)
    dx, dw, db = gemm.grouped_linear_backward(grad_outputs, inputs, weights, biases, activation)
    assert len(outputs) == len(dx) == len(dw) == len(db) == len(inputs)
    for i, x in enumerate(inputs):
        dtype = x.dtype
        _assert_close(outputs[i], ref_y[i], dtype)
        _assert_close(dx[i], ref_dx[i], dtype)
        _assert_close(dw[i], ref_dw[i], dtype)
        if biases[i] is None:
            assert db[i] is None
        else:
            _assert_close(db[i], ref_db[i], dtype)


RAGGED: list[Shape] = [(7, 17, 65), (65, 1, 7), (1, 65, 17), (17, 7, 1), (33, 70, 40)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_same_shape_groups_are_a_batched_linear(dtype: torch.dtype) -> None:
    inputs, weights, biases = _operands([(17, 33, 20)] * 4, dtype, lambda i: True)
    _check_forward_backward(inputs, weights, biases, "relu")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ragged_groups_with_mixed_bias(dtype: torch.dtype) -> None:
    # M/N/K of 1, 7, 17, 65, 70: none a multiple of the blocks, several
    # spanning more than one tile; every other member without bias.
    inputs, weights, biases = _operands(RAGGED, dtype, lambda i: i % 2 == 0)
    _check_forward_backward(inputs, weights, biases, "gelu")


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_every_activation(activation: str) -> None:
    inputs, weights, biases = _operands(
        [(7, 17, 65), (33, 40, 9), (1, 3, 2)], torch.float32, lambda i: i != 1
    )
    _check_forward_backward(inputs, weights, biases, activation)


def test_one_group() -> None:
    inputs, weights, biases = _operands([(65, 17, 33)], torch.float32, lambda i: True)
    _check_forward_backward(inputs, weights, biases, "silu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_many_groups(dtype: torch.dtype) -> None:
    # 33 members: more than the persistent programs, tiles of many members
    # per program, and members of one and of several tiles.
    sizes = [1, 2, 7, 17, 33, 40]
    shapes = [(sizes[i % 6], sizes[(i * 5 + 1) % 6], sizes[(i * 7 + 2) % 6]) for i in range(33)]
    inputs, weights, biases = _operands(shapes, dtype, lambda i: i % 3 != 0)
    _check_forward_backward(inputs, weights, biases, "tanh")


def test_leading_batch_dims() -> None:
    inputs, weights, biases = _operands([(6, 17, 9), (10, 33, 5)], torch.float32, lambda i: True)
    inputs = [inputs[0].view(2, 3, 17), inputs[1].view(5, 2, 33)]
    outputs = _gemm().grouped_linear_forward(inputs, weights, biases, "sigmoid")
    assert [tuple(y.shape) for y in outputs] == [(2, 3, 9), (5, 2, 5)]
    _check_forward_backward(inputs, weights, biases, "sigmoid")
    # Leading dims that cannot merge into one stride (a permuted [B, T, K]).
    permuted = [x.transpose(0, 1) for x in inputs]
    _check_forward_backward(permuted, weights, biases, "relu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_non_contiguous_operands(dtype: torch.dtype) -> None:
    inputs, weights, biases = _operands(
        [(20, 40, 17), (17, 9, 33), (20, 20, 7)], dtype, lambda i: True
    )
    # x0, x2: split pieces of one [20, 60] buffer along the feature dim (row
    # stride 60, the second piece at an offset); x1: a column-major
    # (transposed) view.
    buffer, _, _ = _operands([(20, 60, 1)], dtype, lambda i: False, seed=5)
    x0, x2 = buffer[0].split([40, 20], dim=1)
    x1 = inputs[1].t().contiguous().t()
    # W1 transposed storage, W2 a strided slice; b0 a strided view.
    w1 = weights[1].t().contiguous().t()
    w2 = torch.cat([weights[2], weights[2]], dim=1)[:, ::2]
    b0 = torch.stack([biases[0], biases[0]], dim=1)[:, 0]
    for t in (x0, x1, x2, w1, w2, b0):
        assert not t.is_contiguous()
    _check_forward_backward([x0, x1, x2], [weights[0], w1, w2], [b0, biases[1], biases[2]], "gelu_tanh")


def test_non_contiguous_and_broadcast_grad_outputs() -> None:
    gemm = _gemm()
    inputs, weights, biases = _operands([(17, 9, 33), (7, 20, 5)], torch.float32, lambda i: True)
    grads = [
        torch.randn(33, 17).to(DEVICE).t(),  # transposed
        torch.tensor(0.5).to(DEVICE).expand(7, 5),  # all strides 0, as from y.sum()
    ]
    _, ref_dx, ref_dw, ref_db = _reference(inputs, weights, biases, "silu", grads)
    dx, dw, db = gemm.grouped_linear_backward(grads, inputs, weights, biases, "silu")
    for i in range(2):
        _assert_close(dx[i], ref_dx[i], torch.float32)
        _assert_close(dw[i], ref_dw[i], torch.float32)
        _assert_close(db[i], ref_db[i], torch.float32)


def test_mixed_dtypes_in_one_call() -> None:
    a = _operands([(7, 17, 9)], torch.float32, lambda i: True)
    b = _operands([(17, 7, 33)], torch.bfloat16, lambda i: False, seed=3)
    inputs, weights, biases = (a[j] + b[j] for j in range(3))
    _check_forward_backward(inputs, weights, biases, "relu")


def test_empty_members() -> None:
    # No rows (M = 0), no features in (K = 0: the output is act(bias)), no
    # features out (N = 0), next to an ordinary member.
    inputs, weights, biases = _operands(
        [(0, 7, 5), (6, 0, 9), (4, 7, 0), (7, 17, 9)], torch.float32, lambda i: True
    )
    _check_forward_backward(inputs, weights, biases, "gelu")


def test_missing_grad_outputs_count_as_zeros() -> None:
    inputs, weights, biases = _operands([(7, 17, 9), (5, 9, 17)], torch.float32, lambda i: True)
    dy = torch.randn(5, 17).to(DEVICE)
    dx, dw, db = _gemm().grouped_linear_backward([None, dy], inputs, weights, biases, "relu")
    assert not dx[0].any() and not dw[0].any() and not db[0].any()
    _, ref_dx, ref_dw, ref_db = _reference(inputs[1:], weights[1:], biases[1:], "relu", [dy])
    _assert_close(dx[1], ref_dx[0], torch.float32)
    _assert_close(dw[1], ref_dw[0], torch.float32)
    _assert_close(db[1], ref_db[0], torch.float32)


class _OperandOps(TorchDispatchMode):
    """Records every torch op applied to a tensor sharing storage with
    `operands`, and whether it returned a view (an alias) or new data."""

    def __init__(self, operands: list[torch.Tensor]) -> None:
        super().__init__()
        self.storages = {t.untyped_storage().data_ptr() for t in operands}
        self.copies: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        touched = any(
            isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() in self.storages
            for a in [*args, *kwargs.values()]
            for a in (a if isinstance(a, (list, tuple)) else [a])
        )
        returns_alias = all(r.alias_info is not None for r in func._schema.returns)
        if touched and not returns_alias:
            self.copies.append(str(func))
        return func(*args, **kwargs)


def test_operands_are_read_in_place_not_stacked() -> None:
    # Members that are views into one larger buffer (as split pieces are):
    # results right, and no torch op copies or stacks operand data (every op
    # the launcher applies to an operand only makes a view of it).
    gemm = _gemm()
    buffer = torch.randn(40, 64).to(DEVICE)
    weight_buffer = torch.randn(50, 64).to(DEVICE) / 8
    inputs = [buffer[:17, :33], buffer[17:, 33:], buffer[5:12, 10:50]]
    weights = [weight_buffer[:9, :33], weight_buffer[9:30, 33:], weight_buffer[30:, 24:]]
    biases = [weight_buffer[0, :9], None, weight_buffer[1, :20]]
    with _OperandOps([buffer, weight_buffer]) as ops:
        outputs = gemm.grouped_linear_forward(inputs, weights, biases, "relu")
    assert ops.copies == []
    for y, ref in zip(outputs, _reference(inputs, weights, biases, "relu")):
        _assert_close(y, ref, torch.float32)
    # The backward too: dX = dZ W and dW = dZ^T X on views of the operands.
    grads = [torch.randn(y.shape).to(DEVICE) for y in outputs]
    with _OperandOps([buffer, weight_buffer]) as ops:
        gemm.grouped_linear_backward(grads, inputs, weights, biases, "relu")
    assert ops.copies == []


def test_every_gpu_config_computes_the_same() -> None:
    # The GPU autotuner's configs differ in tile shape (each has its own row
    # of the tile prefix sums); under the interpreter only one is autotuned,
    # so run each directly on ragged members spanning several of its tiles.
    gemm = _gemm()
    shapes = [(130, 17, 65), (7, 70, 140), (1, 9, 1)]
    inputs, weights, biases = _operands(shapes, torch.float32, lambda i: i != 1)
    expected = _reference(inputs, weights, biases, "gelu")
    for config in gemm._GPU_CONFIGS:
        outputs = []
        problems = []
        for x, w, b in zip(inputs, weights, biases):
            outputs.append(torch.empty(x.shape[0], w.shape[0], device=DEVICE))
            problems.append(gemm._Problem(x, w.t(), outputs[-1], b))
        gemm._launch(problems, "gelu", gemm._EPILOGUE_ACTIVATION, config=config)
        for y, ref in zip(outputs, expected):
            _assert_close(y, ref, torch.float32)


def test_bad_members_raise() -> None:
    gemm = _gemm()
    x, w = torch.randn(3, 4), torch.randn(5, 4)
    with pytest.raises(ValueError, match="member 0: input .* do not match"):
        gemm.grouped_linear_forward([x], [w.t()], [None])
    with pytest.raises(ValueError, match="member 0: bias"):
        gemm.grouped_linear_forward([x], [w], [torch.randn(4)])
    with pytest.raises(ValueError, match="share the input's dtype"):
        gemm.grouped_linear_forward([x], [w.half()], [None])
    with pytest.raises(ValueError, match="1 inputs, 2 weights"):
        gemm.grouped_linear_forward([x], [w, w], [None])
    with pytest.raises(ValueError, match="unknown activation"):
        gemm.grouped_linear_forward([x], [w], [None], "swish")


_COMPILE_FOR_HOPPER = r"""
import json, sys
import triton, triton.language as tl
from triton.backends import backends
if "nvidia" not in backends:
    sys.exit(77)
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from optimus_ir.kernels import grouped_gemm as gg

fn = gg._grouped_gemm_kernel
results = []
for dtype, epilogue, layouts, aligned, config in [
    (tl.bfloat16, 0, (1, 2, 1), True, gg._GPU_CONFIGS[0]),  # forward, x @ W.T
    (tl.float16, 1, (1, 2, 0), False, gg._GPU_CONFIGS[3]),  # dZ epilogue, ragged
    (tl.float32, 0, (2, 1, 1), True, gg._GPU_CONFIGS[5]),  # dW = dZ^T X
]:
    constants = dict(
        DTYPE=dtype, ACTIVATION=2, EPILOGUE=epilogue, A_LAYOUT=layouts[0],
        B_LAYOUT=layouts[1], D_LAYOUT=layouts[2], ALIGNED=aligned, SIZES_ALIGNED=aligned,
        VEC=4 if dtype == tl.float32 else 8, INPUT_PRECISION="ieee" if dtype == tl.float32 else "tf32",
        UPCAST_DOT=False, META_COLS=gg._META_COLS, **config.kwargs,
    )
    signature = {"meta": "*i64", "tile_starts": "*i64", "num_groups": "i32", "M_CLASS": "i32",
                 "N_CLASS": "i32", "K_CLASS": "i32", "G_CLASS": "i32", "DTYPE_CLASS": "i32"}
    signature.update({name: "constexpr" for name in constants})
    source = ASTSource(fn, signature, constexprs={(fn.arg_names.index(k),): v for k, v in constants.items()})
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": config.num_warps, "num_stages": config.num_stages})
    ptx = kernel.asm["ptx"]
    results.append({"cubin": "cubin" in kernel.asm, "mma": "wgmma" in ptx or "mma.sync" in ptx})
print(json.dumps(results))
"""


@pytest.mark.slow
def test_kernel_compiles_for_hopper() -> None:
    # The interpreter accepts code the compiler rejects (types of loop-carried
    # values, pointer casts): compile the real kernel for sm_90 (no GPU
    # needed, Triton ships ptxas) in a process without TRITON_INTERPRET.
    import json
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # silences Triton 3.9's notice
    done = subprocess.run(
        [sys.executable, "-c", _COMPILE_FOR_HOPPER], env=env, capture_output=True, text=True
    )
    if done.returncode == 77:
        pytest.skip("this Triton has no NVIDIA backend")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(r["cubin"] for r in results)
    assert results[0]["mma"]  # bf16 runs on tensor cores


# ---------------------------------------------------------------------------
# Issue 19: operands of every layout, special values through the epilogue

SPECIALS = [
    float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40, -1e-40, 1e-30, -1e-30,
    3e-5, -3e-5, 0.3, -0.3, 5.0, -5.0, 30.0, -30.0, 100.0, -100.0,
]


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_epilogue_keeps_torchs_special_values(activation: str) -> None:
    # Issue 19 point 4: relu in the epilogue turned NaN into 0. With x = 0
    # the accumulator is exactly the bias, so the bias carries the special
    # values into the activation (torch's linear gives exactly the bias too).
    bias = torch.tensor(SPECIALS, device=DEVICE)
    x = torch.zeros(2, 3, device=DEVICE)
    w = torch.randn(len(SPECIALS), 3).to(DEVICE)
    (got,) = _gemm().grouped_linear_forward([x], [w], [bias], activation)
    pre = F.linear(x, w, bias)
    want = torch_activation(activation)(pre)
    want = torch_reference(got, want, scalar_path(torch_activation(activation), pre))
    assert torch.equal(got.isnan(), want.isnan()), (got, want)
    exact = want.isinf() | (want == 0) | ((bias.abs() < 1e-20) & (bias != 0))
    torch.testing.assert_close(got[exact], want[exact], rtol=1.3e-6, atol=0)
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)
    # A NaN input row is NaN through every activation, relu included.
    x_nan = torch.randn(3, 3).to(DEVICE)
    x_nan[1, 0] = float("nan")
    (got,) = _gemm().grouped_linear_forward([x_nan], [w[:4]], [None], activation)
    assert got[1].isnan().all() and not got[[0, 2]].isnan().any()


def test_operands_of_every_layout_live_until_the_launch() -> None:
    # Issue 19 point 3 (audit): transposed, expanded (stride 0, also leading
    # dims that do not merge: copied by reshape), sliced and stepped operands,
    # several of one shape in one launch; forward and backward with
    # transposed and expanded grad outputs.
    g = torch.Generator().manual_seed(11)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(DEVICE)

    inputs = [
        r(9, 6).t(), r(9, 6).t(),                 # [6, 9] column-major
        r(1, 9).expand(6, 9),                      # stride-0 rows
        r(6, 1).expand(6, 9),                      # stride-0 columns
        r(3, 1, 9).expand(3, 2, 9),                # leading dims that need a copy
        r(6, 14)[:, 3:12],                         # a slice
        r(2, 6, 9).transpose(0, 1),                # permuted leading dims
    ]
    weights = [r(5, 9) if i % 2 else r(9, 5).t() for i in range(len(inputs))]
    weights[3] = r(10, 9)[::2]                     # stepped rows
    biases = [r(5), r(1).expand(5), r(10)[::2], None, r(5), r(5), r(5)]
    gemm = _gemm()
    outputs = gemm.grouped_linear_forward(inputs, weights, biases, "tanh")
    grads = [r(*y.shape[::-1]).permute(*range(y.dim() - 1, -1, -1)) for y in outputs]
    grads[2] = r(1, 5).expand(6, 5)
    ref_y, ref_dx, ref_dw, ref_db = _reference(inputs, weights, biases, "tanh", grads)
    dx, dw, db = gemm.grouped_linear_backward(grads, inputs, weights, biases, "tanh")
    for i in range(len(inputs)):
        _assert_close(outputs[i], ref_y[i], torch.float32)
        _assert_close(dx[i], ref_dx[i], torch.float32)
        _assert_close(dw[i], ref_dw[i], torch.float32)
        if biases[i] is not None:
            _assert_close(db[i], ref_db[i], torch.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_autotuning_key_can_be_cached_on_disk(dtype: torch.dtype, monkeypatch) -> None:
    # Triton writes the autotuner's key values to its on-disk cache as JSON
    # (`cache_results`); the interpreter never caches, so this checks the
    # values the launch passes for the key. A `tl.dtype` in the key made
    # every compiled launch fall back to the torch reference on the GPU.
    import json

    gemm = _gemm()
    seen: list[dict] = []
    original_run = gemm._autotuned_kernel.run

    def recording_run(*args, **kwargs):
        seen.append(kwargs)
        return original_run(*args, **kwargs)

    monkeypatch.setattr(gemm._autotuned_kernel, "run", recording_run)
    inputs, weights, biases = _operands([(17, 33, 20)] * 2, dtype, lambda i: True)
    gemm.grouped_linear_forward(inputs, weights, biases, "none")
    assert seen, "the launch did not go through the autotuner"
    for kwargs in seen:
        key = [kwargs[name] for name in gemm._autotuned_kernel.keys]
        assert json.loads(json.dumps(key)) == key
