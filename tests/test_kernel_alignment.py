"""Alignment hints of the kernels (`tl.multiple_of`, `ALIGNED`): given only
when true, and split pieces at odd offsets do not take them off the aligned
members of a launch (`layout.aligned_parts`).

The interpreter ignores the hints, so numerics alone cannot catch a wrong
one: these tests spy on every launch and check each hinted value (addresses,
row strides, sizes read from the metadata table) against the hint, and
check the numerics of members at odd offsets as well.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from optimus_ir.kernels import layout

pytestmark = [
    pytest.mark.gpu,  # the GPU check runs it on the device (`pytest -m gpu`)
    pytest.mark.skipif(
        os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
        reason="needs the Triton interpreter or a CUDA device",
    ),
]
DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"


class _Spy:
    """Stands in for a Triton kernel object: records each launch's arguments."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.calls: list[tuple[tuple, dict]] = []

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.calls.append((args, kwargs))
            return self.kernel[grid](*args, **kwargs)

        return run


def _fields(meta: torch.Tensor, n: int) -> list[list[int]]:
    """A field-major metadata table as `[field][member]`."""
    return meta.cpu().view(-1, n).tolist()


def _wide(width: int, rows: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, width, generator=torch.Generator().manual_seed(seed)).to(DEVICE)


def _mixed_members():
    """Two aligned members (offset 0 and 16 of a width-64 tensor) and two
    pieces at odd offsets (3 and 21 of a width-45 tensor), fp32."""
    aligned, odd = _wide(64), _wide(45, seed=1)
    return [aligned[:, :16], odd[:, 3:21], aligned[:, 16:], odd[:, 21:]]


def test_aligned_parts_split_only_where_it_pays(monkeypatch) -> None:
    monkeypatch.setattr(layout, "ALIGNED_SPLIT_BYTES", 100)
    assert layout.aligned_parts([5, 6, 7], [4, 1, 4], [60, 10, 60], 4) == [[5, 7], [6]]
    assert layout.aligned_parts([5, 6, 7], [4, 1, 4], [40, 10, 40], 4) == [[5, 6, 7]]
    assert layout.aligned_parts([5, 6], [4, 4], [999, 999], 4) == [[5, 6]]
    assert layout.aligned_parts([5, 6], [1, 2], [999, 999], 4) == [[5, 6]]
    assert layout.aligned_parts([5, 6], [8, 2], [999, 999], 2) == [[5], [6]]  # bf16: 8 elements


@pytest.mark.parametrize("split", [True, False])
def test_layer_norm_hints_are_true_and_odd_pieces_are_right(monkeypatch, split: bool) -> None:
    from optimus_ir.kernels import layer_norm as ln

    monkeypatch.setattr(layout, "ALIGNED_SPLIT_BYTES", 0 if split else 1 << 60)
    fwd = _Spy(ln._layer_norm_fwd_kernel)
    bwd = _Spy(ln._layer_norm_bwd_kernel)
    monkeypatch.setattr(ln, "_layer_norm_fwd_kernel", fwd)
    monkeypatch.setattr(ln, "_layer_norm_bwd_kernel", bwd)
    xs = _mixed_members()
    ws = [_wide(x.shape[-1], 1, seed=2 + i)[0] for i, x in enumerate(xs)]
    bs = [None, _wide(50, 1, seed=9)[0, 1 : 1 + xs[1].shape[-1]], None, None]  # a bias at an odd offset
    outs, means, rstds = ln.batched_layer_norm_forward(xs, ws, bs, 1e-5, "none")
    for x, w, b, y in zip(xs, ws, bs, outs):
        torch.testing.assert_close(y, F.layer_norm(x, (x.shape[-1],), w, b, 1e-5))
    dys = [torch.randn(y.shape).to(DEVICE) for y in outs]
    dx, dw, _ = ln.batched_layer_norm_backward(dys, xs, ws, bs, means, rstds, "none")
    leaves = [x.detach().requires_grad_() for x in xs]
    wl = [w.detach().requires_grad_() for w in ws]
    ref = [F.layer_norm(x, (x.shape[-1],), w, b, 1e-5) for x, w, b in zip(leaves, wl, bs)]
    torch.autograd.backward(ref, dys)
    for got, want in zip([*dx, *dw], [*(x.grad for x in leaves), *(w.grad for w in wl)]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)

    aligns = []
    for (meta, _x, _w, n, *_), kw in fwd.calls:
        f = _fields(meta, n)
        align, ptr_align = kw["ALIGN"], kw["PTR_ALIGN"]
        aligns.append(align)
        for field in (ln._X, ln._Y, ln._W, ln._B):
            assert all(p % ptr_align == 0 for p in f[field]), (field, ptr_align)
        assert all(v % align == 0 for v in f[ln._SX] + f[ln._D])
    for (meta, _x, _w, _pdw, _pdb, n, *_), kw in bwd.calls:
        f = _fields(meta, n)
        for field in (ln._X, ln._DY, ln._DX, ln._W, ln._B):
            assert all(p % kw["PTR_ALIGN"] == 0 for p in f[field])
        assert all(v % kw["ALIGN"] == 0 for v in f[ln._SX] + f[ln._SDY] + f[ln._D])
    # Split: the aligned members launch with 16-byte hints (4 fp32
    # elements), the odd pieces without; not split: one unhinted launch.
    assert sorted(aligns) == ([1, 4] if split else [1])
    assert len(bwd.calls) == len(fwd.calls)


@pytest.mark.parametrize("split", [True, False])
def test_pointwise_hints_are_true_and_odd_pieces_are_right(monkeypatch, split: bool) -> None:
    from optimus_ir.kernels import pointwise

    monkeypatch.setattr(layout, "ALIGNED_SPLIT_BYTES", 0 if split else 1 << 60)
    fwd = _Spy(pointwise._multi_pointwise_kernel)
    monkeypatch.setattr(pointwise, "_multi_pointwise_kernel", fwd)
    xs = _mixed_members()
    others = [_wide(x.shape[-1], 1, seed=5 + i)[0] for i, x in enumerate(xs)]
    others += [_wide(x.shape[-1] + 2, x.shape[0], seed=9 + i)[:, 1:-1] for i, x in enumerate(xs)]
    program = "add(other);mul(other);tanh"
    ys = pointwise.multi_pointwise_forward(xs, others, program)
    n = len(xs)
    for i, (x, y) in enumerate(zip(xs, ys)):
        torch.testing.assert_close(y, torch.tanh((x + others[i]) * others[n + i]))
    aligns = []
    for (meta, _x, members, *_), kw in fwd.calls:
        f = _fields(meta, members)
        aligns.append(kw["ALIGN"])
        pointers = [pointwise._F_X, pointwise._F_Y, pointwise._F_OTHERS, pointwise._F_OTHERS + 3]
        for field in pointers:
            assert all(p % kw["PTR_ALIGN"] == 0 for p in f[field]), field
        values = f[pointwise._F_NUMEL] + f[pointwise._F_D] + f[pointwise._F_SX]
        values += f[pointwise._F_OTHERS + 1] + f[pointwise._F_OTHERS + 4]
        assert all(v % kw["ALIGN"] == 0 for v in values)
    # Here the others of the aligned members sit at odd offsets too (column
    # 1 of a wider tensor): no member is fully aligned, so one launch.
    assert aligns == [1]


def test_pointwise_aligned_members_keep_their_hints(monkeypatch) -> None:
    from optimus_ir.kernels import pointwise

    monkeypatch.setattr(layout, "ALIGNED_SPLIT_BYTES", 0)
    fwd = _Spy(pointwise._multi_pointwise_kernel)
    monkeypatch.setattr(pointwise, "_multi_pointwise_kernel", fwd)
    xs = _mixed_members()
    ys = pointwise.multi_pointwise_forward(xs, [], "sigmoid;mul(3.0)")
    for x, y in zip(xs, ys):
        torch.testing.assert_close(y, torch.sigmoid(x) * 3.0)
    assert sorted(kw["ALIGN"] for _, kw in fwd.calls) == [1, 4]
    for (meta, _x, members, *_), kw in fwd.calls:
        f = _fields(meta, members)
        assert all(p % kw["PTR_ALIGN"] == 0 for p in f[pointwise._F_X] + f[pointwise._F_Y])
        assert all(v % kw["ALIGN"] == 0 for v in f[pointwise._F_SX] + f[pointwise._F_D])


@pytest.mark.parametrize("split", [True, False])
def test_grouped_gemm_aligned_flag_is_true_and_odd_pieces_are_right(monkeypatch, split) -> None:
    from optimus_ir.kernels import grouped_gemm as gemm

    monkeypatch.setattr(layout, "ALIGNED_SPLIT_BYTES", 0 if split else 1 << 60)
    spy = _Spy(gemm._autotuned_kernel)
    monkeypatch.setattr(gemm, "_autotuned_kernel", spy)
    xs = _mixed_members()
    ws = [_wide(x.shape[-1], 8, seed=3 + i) for i, x in enumerate(xs)]
    ys = gemm.grouped_linear_forward(xs, ws, [None] * 4, "none")
    for x, w, y in zip(xs, ws, ys):
        torch.testing.assert_close(y, F.linear(x, w), rtol=2e-5, atol=2e-5)
    flags = []
    for (meta, _starts), kw in spy.calls:
        rows = meta.cpu().view(-1, gemm._META_COLS).tolist()
        flags.append(kw["ALIGNED"])
        if kw["ALIGNED"]:
            for r in rows:
                assert all(r[c] % 16 == 0 for c in (gemm._A, gemm._B, gemm._C))
                strides = (r[gemm._SAM], r[gemm._SAK], r[gemm._SBK], r[gemm._SBN], r[gemm._SCM])
                assert all(s == 1 or s % kw["VEC"] == 0 for s in strides)
        if kw["SIZES_ALIGNED"]:
            assert all(r[gemm._M] % kw["VEC"] == 0 and r[gemm._N] % kw["VEC"] == 0 for r in rows)
    assert sorted(flags) == ([False, True] if split else [False])
