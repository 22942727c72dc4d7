"""Batched layer norm kernels (`optimus_ir.kernels.layer_norm`) against fp64
torch references (`layer_norm` + affine + activation per member), forward and
backward, under the Triton interpreter on CPU (tests/conftest.py).

Tolerances (outputs and grads compared to the fp64 result, then rounded to the
tested dtype): fp32 rtol=atol=2e-5; fp16 2e-3/5e-3; bf16 1.6e-2/3e-2 (values
are O(1): normalised, affine ~N(0, 1)). Parameter grads sum over rows, so
their atol scales with the row count."""

from __future__ import annotations

import os

import pytest
import torch

from optimus_ir.kernels import layer_norm as ln
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
TOL = {torch.float32: (2e-5, 2e-5), torch.float16: (2e-3, 5e-3), torch.bfloat16: (1.6e-2, 3e-2)}
EPS = 1e-5


def _reference(xs, ws, bs, activation):
    return [
        torch_activation(activation)(
            torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)
        )
        for x, w, b in zip(xs, ws, bs)
    ]


def _members(dtype, seed=0):
    """Ragged D (1, 3, 64, 65, 130), split pieces of a wider tensor (rows with
    a stride), leading batch dims, affine mixed (both, weight only, bias
    only, none)."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=g).to(DEVICE, dtype)

    wide = rand(2, 5, 64 + 65 + 7)
    xs = [rand(4, 1), rand(3, 2, 3) * 3 + 2, wide[..., :64], wide[..., 64:129], rand(7, 130)]
    ws = [rand(1), None, rand(64), rand(65), None]
    bs = [rand(1), rand(3), None, rand(65), None]
    return xs, ws, bs


def _check_forward_backward(xs, ws, bs, activation, dtype):
    rtol, atol = TOL[dtype]
    outs, means, rstds = ln.batched_layer_norm_forward(xs, ws, bs, EPS, activation)
    leaves = [x.detach().double().requires_grad_() for x in xs]
    wl = [None if w is None else w.detach().double().requires_grad_() for w in ws]
    bl = [None if b is None else b.detach().double().requires_grad_() for b in bs]
    expected = _reference(leaves, wl, bl, activation)
    for out, exp, x in zip(outs, expected, xs):
        assert out.dtype == x.dtype and out.shape == x.shape
        torch.testing.assert_close(out.double(), exp.detach(), rtol=rtol, atol=atol)
    for mean, rstd, x in zip(means, rstds, xs):
        assert mean.dtype == torch.float32 and mean.shape == x.shape[:-1]
        xd = x.double()
        torch.testing.assert_close(mean.double(), xd.mean(-1), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(
            rstd.double(), (xd.var(-1, unbiased=False) + EPS).rsqrt(), rtol=1e-4, atol=1e-4
        )
    g = torch.Generator().manual_seed(1)
    grads = [torch.randn(x.shape, generator=g).to(DEVICE, dtype) for x in xs]
    torch.autograd.backward(expected, [gy.double() for gy in grads])
    gx, gw, gb = ln.batched_layer_norm_backward(grads, xs, ws, bs, means, rstds, activation)
    for got, leaf in zip(gx, leaves):
        assert got.dtype == dtype and got.shape == leaf.shape
        torch.testing.assert_close(got.double(), leaf.grad, rtol=rtol, atol=atol * 4)
    for got, leaf in zip(gw + gb, wl + bl):
        if leaf is None:
            assert got is None
        else:
            # A sum over up to ~40 rows of O(1) terms.
            torch.testing.assert_close(got.double(), leaf.grad, rtol=rtol * 4, atol=atol * 10)


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_every_activation_fp32_ragged_strided_mixed_affine(activation: str) -> None:
    xs, ws, bs = _members(torch.float32)
    _check_forward_backward(xs, ws, bs, activation, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_dtypes(dtype: torch.dtype) -> None:
    xs, ws, bs = _members(dtype)
    _check_forward_backward(xs, ws, bs, "silu", dtype)


def test_one_member() -> None:
    xs, ws, bs = _members(torch.float32)
    _check_forward_backward(xs[4:], [torch.rand(130).to(DEVICE)], [None], "relu", torch.float32)


def test_many_members_of_mixed_shapes() -> None:
    g = torch.Generator().manual_seed(3)
    dims = [1, 3, 64, 65, 130, 8, 17]
    xs, ws, bs = [], [], []
    for i in range(17):
        d = dims[i % len(dims)]
        xs.append(torch.randn(1 + i % 5, d, generator=g).to(DEVICE))
        ws.append(torch.randn(d, generator=g).to(DEVICE) if i % 3 else None)
        bs.append(torch.randn(d, generator=g).to(DEVICE) if i % 2 else None)
    _check_forward_backward(xs, ws, bs, "gelu", torch.float32)


@pytest.mark.slow  # a large kernel in Triton's interpreter (make test-all, CI)
def test_looped_large_d_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    # The looped two-pass kernels, exercised at small D (chunks of 16
    # columns, D up to 130: several chunks and a ragged last one).
    monkeypatch.setattr(ln, "_MAX_FUSED_D_FWD", 32)
    monkeypatch.setattr(ln, "_MAX_FUSED_D_BWD", 32)
    monkeypatch.setattr(ln, "_LOOP_CHUNK", 16)
    xs, ws, bs = _members(torch.float32)
    xs[4] = xs[4] + 100.0  # |mean| >> std: the shifted sums must not cancel
    _check_forward_backward(xs, ws, bs, "tanh", torch.float32)
    xs, ws, bs = _members(torch.bfloat16)
    _check_forward_backward(xs, ws, bs, "none", torch.bfloat16)


def test_many_row_runs_per_member_reduce_partials(monkeypatch: pytest.MonkeyPatch) -> None:
    # Few rows per backward program: dw/db come from several partial rows
    # per member, summed by the reduce kernel.
    monkeypatch.setattr(ln, "_target_programs", lambda device: 64)
    g = torch.Generator().manual_seed(5)
    xs = [torch.randn(40, 33, generator=g), torch.randn(3, 7, 5, generator=g)]
    ws = [torch.randn(33, generator=g), torch.randn(5, generator=g)]
    bs = [torch.randn(33, generator=g), None]
    _check_forward_backward([x.to(DEVICE) for x in xs], [w.to(DEVICE) for w in ws],
                            [None if b is None else b.to(DEVICE) for b in bs], "sigmoid",
                            torch.float32)


def test_mixed_input_dtypes_and_empty_member() -> None:
    g = torch.Generator().manual_seed(6)
    xs = [torch.randn(3, 5, generator=g).to(DEVICE),
          torch.randn(2, 6, generator=g).to(DEVICE, torch.float16),
          torch.randn(0, 4, generator=g).to(DEVICE)]
    ws = [torch.randn(5, generator=g).to(DEVICE), None, torch.randn(4, generator=g).to(DEVICE)]
    bs = [None, torch.randn(6, generator=g).to(DEVICE, torch.float16), None]
    outs, means, rstds = ln.batched_layer_norm_forward(xs, ws, bs, EPS, "relu")
    expected = _reference([x.double() for x in xs], [None if w is None else w.double() for w in ws],
                          [None if b is None else b.double() for b in bs], "relu")
    for out, exp, x in zip(outs, expected, xs):
        rtol, atol = TOL[x.dtype]
        assert out.dtype == x.dtype
        torch.testing.assert_close(out.double(), exp, rtol=rtol, atol=atol)
    gx, gw, gb = ln.batched_layer_norm_backward([torch.ones_like(x) for x in xs], xs, ws, bs,
                                                means, rstds, "relu")
    assert gx[2].shape == (0, 4) and torch.equal(gw[2], torch.zeros(4, device=DEVICE))


def test_bad_affine_shape_is_named() -> None:
    with pytest.raises(ValueError, match="member 0's weight has shape"):
        ln.batched_layer_norm_forward([torch.randn(2, 4)], [torch.randn(3)], [None], EPS)


# ---------------------------------------------------------------------------
# Issue 19: members of every layout, special values through the epilogue

SPECIALS = [
    float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40, -1e-40, 1e-30, -1e-30,
    3e-5, -3e-5, 0.3, -0.3, 5.0, -5.0, 30.0, -30.0, 100.0, -100.0,
]


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_epilogue_keeps_torchs_special_values(activation: str) -> None:
    # Issue 19 point 4: relu in the epilogue turned NaN into 0. A zero weight
    # makes the affine result exactly the bias (0 * xhat + b, the same two
    # roundings in torch), so the bias carries the special values into the
    # activation.
    d = len(SPECIALS)
    x = torch.randn(3, d, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    w = torch.zeros(d, device=DEVICE)
    b = torch.tensor(SPECIALS, device=DEVICE)
    (got,), _, _ = ln.batched_layer_norm_forward([x], [w], [b], EPS, activation)
    pre = torch.nn.functional.layer_norm(x, (d,)) * w + b
    want = torch_activation(activation)(pre)
    want = torch_reference(got, want, scalar_path(torch_activation(activation), pre))
    assert torch.equal(got.isnan(), want.isnan()), (got, want)
    exact = want.isinf() | (want == 0) | ((b.abs() < 1e-20) & (b != 0))
    torch.testing.assert_close(got[exact], want[exact], rtol=1.3e-6, atol=0)
    if activation != "gelu":  # torch's fp32 gelu: +0.0 or -0.0 by vector lane
        zeros = want == 0
        assert torch.equal(got[zeros].signbit(), want[zeros].signbit()), (got, want)
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)
    # A NaN in a row makes the row NaN through every activation.
    x[1, 4] = float("nan")
    (got,), _, _ = ln.batched_layer_norm_forward([x], [None], [None], EPS, activation)
    assert got[1].isnan().all() and not got[[0, 2]].isnan().any()


def test_members_of_every_layout_live_until_the_launch() -> None:
    # Issue 19 point 3 (audit): transposed (copied), expanded leading dims
    # (copied), expanded rows (read in place, row stride 0), sliced, permuted
    # 3-D members, several copies in one launch; stepped (copied) affine
    # parameters; transposed and expanded grad outputs.
    g = torch.Generator().manual_seed(12)

    def rand(*shape):
        return torch.randn(*shape, generator=g).to(DEVICE)

    xs = [
        rand(7, 5).t(), rand(7, 5).t(),
        # (Expanded columns would be constant rows, which layer norm turns
        # into rounding noise / sqrt(eps).)
        rand(2, 1, 7).expand(2, 3, 7), rand(2, 1, 7).expand(2, 3, 7),
        rand(1, 7).expand(5, 7),
        rand(5, 12)[:, 2:9],
        rand(3, 7, 2).transpose(1, 2),
    ]
    ws = [rand(14)[::2] if i % 2 else rand(7) for i in range(len(xs))]
    bs = [rand(7) if i % 3 else rand(14)[1::2] for i in range(len(xs))]
    _check_forward_backward(xs, ws, bs, "tanh", torch.float32)
    outs, means, rstds = ln.batched_layer_norm_forward(xs, ws, bs, EPS, "relu")
    grads = [rand(*x.shape[::-1]).permute(*range(x.dim() - 1, -1, -1)) for x in xs]
    grads[4] = rand(1, 7).expand(5, 7)
    leaves = [x.detach().double().requires_grad_() for x in xs]
    wl = [w.detach().double().requires_grad_() for w in ws]
    bl = [b.detach().double().requires_grad_() for b in bs]
    expected = _reference(leaves, wl, bl, "relu")
    torch.autograd.backward(expected, [gy.double() for gy in grads])
    gx, gw, gb = ln.batched_layer_norm_backward(grads, xs, ws, bs, means, rstds, "relu")
    for got, want in zip(outs + gx + gw + gb, expected + [l.grad for l in leaves + wl + bl]):
        torch.testing.assert_close(got.double(), want.detach(), rtol=1e-4, atol=1e-4)
