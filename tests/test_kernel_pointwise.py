"""Multi-tensor pointwise kernels (`optimus_ir.kernels.pointwise`) against
the chain in fp64 torch, forward and backward (grads vs torch autograd), under
the Triton interpreter on CPU (tests/conftest.py).

The kernel computes the whole chain in fp32 and rounds once; tolerances vs
fp64: fp32 rtol=atol=1e-5; fp16 2e-3/2e-3; bf16 1.6e-2/1.6e-2 (inputs O(1),
chains kept well conditioned: divisors bounded away from 0)."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from optimus_ir.kernels import pointwise as pw

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
    reason="needs the Triton interpreter or a CUDA device",
)
DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}

_UNARY = {
    "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "neg": torch.neg,
    "exp": torch.exp, "abs": torch.abs,
}
_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum,
}


def _reference(xs, others, program):
    steps, n = pw.parse_program(program), len(xs)
    outs = []
    for i, x in enumerate(xs):
        v, j = x, 0
        for s in steps:
            if s.operand == "none":
                v = _UNARY[s.name](v)
            elif s.operand == "scalar":
                v = _BINARY[s.name](v, torch.tensor(s.scalar, dtype=v.dtype, device=v.device))
            else:
                v = _BINARY[s.name](v, others[j * n + i])
                j += 1
        outs.append(v)
    return outs


def _members(dtype, seed=0):
    """Ragged shapes (numel 1, 3, not multiples of the block), a split piece
    of a wider tensor (strided rows), leading batch dims."""
    g = torch.Generator().manual_seed(seed)
    wide = torch.randn(3, 7, 150, generator=g).to(DEVICE, dtype)
    return [
        torch.randn(1, generator=g).to(DEVICE, dtype),
        torch.randn(3, generator=g).to(DEVICE, dtype),
        wide[..., :65],
        torch.randn(9, 130, generator=g).to(DEVICE, dtype),
        torch.randn(2, 5, 64, generator=g).to(DEVICE, dtype),
    ]


def _others(xs, program, broadcast, seed=1, positive=()):
    """Step-major others: per tensor step j and member i, full-shape or (when
    `broadcast(j, i)`) 1-D of the last dim; tensor steps in `positive` get
    values in [1, 2] (divisors)."""
    g = torch.Generator().manual_seed(seed)
    k = sum(1 for s in pw.parse_program(program) if s.operand == "tensor")
    out = []
    for j in range(k):
        for i, x in enumerate(xs):
            shape = (x.shape[-1],) if broadcast(j, i) else x.shape
            if j in positive:
                o = torch.rand(shape, generator=g) + 1.0
            else:
                o = torch.randn(shape, generator=g)
            out.append(o.to(DEVICE, x.dtype))
    # A strided full-shape other: the split piece of a wider tensor.
    for idx, o in enumerate(out):
        if o.dim() >= 2:
            padded = torch.zeros(*o.shape[:-1], o.shape[-1] + 3, device=DEVICE, dtype=o.dtype)
            padded[..., : o.shape[-1]] = o
            out[idx] = padded[..., : o.shape[-1]]
            break
    return out


def _check(xs, others, program, dtype):
    rtol, atol = TOL[dtype]
    outs = pw.multi_pointwise_forward(xs, others, program)
    lx = [x.detach().double().requires_grad_() for x in xs]
    lo = [o.detach().double().requires_grad_() for o in others]
    expected = _reference(lx, lo, program)
    for out, exp, x in zip(outs, expected, xs):
        assert out.dtype == x.dtype and out.shape == x.shape
        torch.testing.assert_close(out.double(), exp.detach(), rtol=rtol, atol=atol)
    g = torch.Generator().manual_seed(2)
    grads = [torch.randn(x.shape, generator=g).to(DEVICE, dtype) for x in xs]
    torch.autograd.backward(expected, [gy.double() for gy in grads])
    gx, go = pw.multi_pointwise_backward(grads, xs, others, program)
    for got, leaf in zip(gx, lx):
        assert got.dtype == dtype and got.shape == leaf.shape
        torch.testing.assert_close(got.double(), leaf.grad, rtol=rtol * 2, atol=atol * 2)
    assert len(go) == len(others)
    for got, leaf in zip(go, lo):
        assert got.shape == leaf.shape and got.dtype == dtype
        # Broadcast others' grads sum over rows (up to 42 here).
        scale = 1 if leaf.dim() > 1 or len(xs) == 0 else 10
        torch.testing.assert_close(got.double(), leaf.grad, rtol=rtol * 2, atol=atol * 2 * scale)


@pytest.mark.parametrize("program", [
    "relu", "gelu;tanh", "gelu_tanh;silu;sigmoid", "neg;exp;abs", "abs;relu;neg;tanh",
])
def test_unary_chains(program: str) -> None:
    xs = _members(torch.float32)
    _check(xs, [], program, torch.float32)


def test_binary_with_tensors_and_broadcast_others() -> None:
    program = "mul(other);add(other);maximum(other);div(other);minimum(other);sub(other)"
    xs = _members(torch.float32)
    others = _others(xs, program, broadcast=lambda j, i: (i + j) % 2 == 1, positive=(3,))
    _check(xs, others, program, torch.float32)


def test_scalar_steps_and_mixed_chain() -> None:
    program = "mul(0.5);add(-1.25e0);silu;div(2);maximum(-0.1);minimum(.75);mul(other)"
    xs = _members(torch.float32)
    _check(xs, _others(xs, program, broadcast=lambda j, i: i == 3), program, torch.float32)


def test_maximum_minimum_ties_split_the_gradient() -> None:
    x = torch.tensor([1.0, 2.0, 3.0], device=DEVICE)
    other = torch.tensor([1.0, 0.0, 3.0], device=DEVICE)
    _check([x], [other], "maximum(other)", torch.float32)
    _check([x], [other], "minimum(other)", torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_dtypes(dtype: torch.dtype) -> None:
    program = "mul(other);add(other);gelu;mul(0.5)"
    xs = _members(dtype)
    _check(xs, _others(xs, program, broadcast=lambda j, i: j == 1), program, dtype)


def test_one_and_many_members() -> None:
    program = "add(other);tanh"
    xs = _members(torch.float32)[3:4]
    _check(xs, _others(xs, program, broadcast=lambda j, i: True), program, torch.float32)
    g = torch.Generator().manual_seed(4)
    many = [torch.randn(1 + i % 4, 1 + 7 * i, generator=g).to(DEVICE) for i in range(17)]
    _check(many, _others(many, program, broadcast=lambda j, i: i % 3 == 0), program,
           torch.float32)


def test_programs_longer_than_one_launch() -> None:
    program = ";".join(["mul(other)", "tanh", "add(0.25)"] * 4)  # 12 steps: 2 launches
    assert len(pw.parse_program(program)) > pw.MAX_STEPS
    xs = _members(torch.float32)
    _check(xs, _others(xs, program, broadcast=lambda j, i: j % 2 == 1), program, torch.float32)


def test_parse_program() -> None:
    steps = pw.parse_program(" relu ; mul(other);add( 1.5e-3 )")
    assert steps == (pw.Step("relu", "none"), pw.Step("mul", "tensor"),
                     pw.Step("add", "scalar", 1.5e-3))


@pytest.mark.parametrize("program, message", [
    ("", "empty"),
    ("relu;;tanh", "step 1 ''"),
    ("relu;swish", "step 1 'swish': unknown unary op"),
    ("add", "step 0 'add': unknown unary op \\(a binary step needs an operand\\)"),
    ("relu(other)", "step 0 'relu\\(other\\)': unknown binary op"),
    ("mul(x)", "step 0 'mul\\(x\\)': operand must be 'other' or a float literal"),
    ("mul(1e)", "step 0"),
    ("mul(nan)", "step 0"),
    ("relu tanh", "step 0 'relu tanh'"),
])
def test_invalid_programs_name_the_step(program: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pw.parse_program(program)


def test_others_are_checked() -> None:
    x = torch.randn(2, 4, device=DEVICE)
    with pytest.raises(ValueError, match="0 others for 1 tensor steps"):
        pw.multi_pointwise_forward([x], [], "add(other)")
    with pytest.raises(ValueError, match="has shape \\(3,\\)"):
        pw.multi_pointwise_forward([x], [torch.randn(3, device=DEVICE)], "add(other)")
    with pytest.raises(ValueError, match="torch.float16"):
        pw.multi_pointwise_forward([x], [x.half()], "add(other)")
