"""The Triton epilogue activations (`optimus_ir.kernels.activations`) against
torch, values and derivatives, under the Triton interpreter on CPU (tests/conftest.py sets
TRITON_INTERPRET=1 where there is no CUDA device)."""

from __future__ import annotations

import os

import pytest
import torch
import triton
import triton.language as tl

from optimus_ir.kernels.activations import (
    ACTIVATIONS,
    activation_code,
    activation_grad,
    apply_activation,
    torch_activation,
)
from torch_paths import scalar_path, scalar_path_grad, torch_reference

pytestmark = [
    pytest.mark.gpu,  # the GPU check runs it on the device (`pytest -m gpu`)
    pytest.mark.skipif(
        os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
        reason="needs the Triton interpreter or a CUDA device",
    ),
]


@triton.jit
def _activation_kernel(x, y, grad, n, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    values = tl.load(x + offsets, mask=mask)
    tl.store(y + offsets, apply_activation(values, ACTIVATION), mask=mask)
    tl.store(grad + offsets, activation_grad(values, ACTIVATION), mask=mask)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_and_its_derivative_match_torch(name: str) -> None:
    device = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
    x = torch.cat([torch.linspace(-8, 8, 997), torch.tensor([0.0, -0.0, 1e-6, 30.0, -30.0])])
    x = x.to(device)
    y, grad = torch.empty_like(x), torch.empty_like(x)
    _activation_kernel[(triton.cdiv(x.numel(), 256),)](
        x, y, grad, x.numel(), ACTIVATION=activation_code(name), BLOCK=256
    )
    leaf = x.clone().requires_grad_()
    expected = torch_activation(name)(leaf)
    expected.sum().backward()
    torch.testing.assert_close(y, expected.detach(), rtol=1.3e-6, atol=2e-6)
    torch.testing.assert_close(grad, leaf.grad, rtol=1.3e-6, atol=4e-6)


def test_unknown_activation_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown activation 'swish'.*relu"):
        activation_code("swish")


SPECIALS = [
    float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40, -1e-40, 1e-30, -1e-30,
    3e-5, -3e-5, 0.3, -0.3, 5.0, -5.0, 30.0, -30.0, 100.0, -100.0,
]


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_special_values_match_torch(name: str) -> None:
    # Issue 19 point 4: NaN, +-inf, -0.0 and denormals as torch (fp32, on
    # CPU) gives them, for the activation and its derivative. relu kept NaN
    # as 0 (tl.maximum without NaN propagation) and its derivative 0 at NaN
    # (torch passes the gradient: relu(NaN) <= 0 is false); tanh gave +0.0
    # for -0.0 and 0 for denormals; `none`'s derivative was NaN at NaN/inf.
    device = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
    x = torch.tensor(SPECIALS, device=device)
    y, grad = torch.empty_like(x), torch.empty_like(x)
    _activation_kernel[(1,)](x, y, grad, x.numel(), ACTIVATION=activation_code(name), BLOCK=32)
    leaf = x.clone().requires_grad_()
    expected = torch_activation(name)(leaf)
    expected.sum().backward()
    fn = torch_activation(name)
    for got, want in (
        (y, torch_reference(y, expected.detach(), scalar_path(fn, x))),
        (grad, torch_reference(grad, leaf.grad, scalar_path_grad(fn, x))),
    ):
        assert torch.equal(got.isnan(), want.isnan()), (name, got, want)
        special = want.isinf() | (want == 0)
        assert torch.equal(got[special], want[special]), (name, got, want)
        tiny = (x.abs() < 1e-20) & (x != 0)
        torch.testing.assert_close(got[tiny], want[tiny], rtol=1.3e-6, atol=0)
        # gelu_tanh's derivative cancels near -5 (torch's formula is another).
        torch.testing.assert_close(got, want, rtol=1.3e-6, atol=2e-6, equal_nan=True)
    zeros = expected.detach() == 0
    if name != "gelu":  # torch's fp32 gelu gives +0.0 for -0.0 in vector lanes
        assert torch.equal(y[zeros].signbit(), expected.detach()[zeros].signbit()), (name, y)


# ---------------------------------------------------------------------------
# Issue 20: every unary program step (programs.STEPS), one table


from optimus_ir.kernels.programs import STEPS, UNARY, unary_reference  # noqa: E402

_DEFAULT_ONLY = {"softplus", "elu"}
"""Steps that compute torch's defaults only (beta 1 / threshold 20, alpha 1)."""


@pytest.mark.parametrize("name", list(UNARY))
def test_every_unary_step_and_its_derivative_match_torch_at_special_values(name: str) -> None:
    # The steps added for issue 20 (log, erf, softplus, hardswish, ...) keep
    # torch's CPU values at NaN, +-inf, signed zeros, denormals and where
    # they bend (hardswish at +-3, softplus at its threshold 20), and their
    # derivatives are torch's (hardswish passes the gradient at NaN, mish
    # gives NaN at +-inf, elu 1 at NaN...).
    device = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
    values = SPECIALS + [-3.0, 3.0, -1.0, 1.0, 20.0, 20.5, -20.0, 88.0, 2.5, -2.5]
    x = torch.tensor(values, device=device)
    y, grad = torch.empty_like(x), torch.empty_like(x)
    _activation_kernel[(1,)](x, y, grad, x.numel(), ACTIVATION=UNARY[name], BLOCK=32)
    leaf = x.clone().requires_grad_()
    expected = unary_reference(name)(leaf)
    expected.backward(torch.ones_like(expected))
    fn = unary_reference(name)
    for what, got, want in (
        ("value", y, torch_reference(y, expected.detach(), scalar_path(fn, x))),
        ("derivative", grad, torch_reference(grad, leaf.grad, scalar_path_grad(fn, x))),
    ):
        assert torch.equal(got.isnan(), want.isnan()), (name, what, x, got, want)
        special = want.isinf() | (want == 0)
        assert torch.equal(got[special], want[special]), (name, what, x, got, want)
        tiny = (x.abs() < 1e-20) & (x != 0)
        torch.testing.assert_close(got[tiny], want[tiny], rtol=2e-6, atol=0, equal_nan=True)
        torch.testing.assert_close(got, want, rtol=2e-6, atol=2e-6, equal_nan=True)
    zeros = expected.detach() == 0
    if name != "gelu":  # torch's fp32 gelu gives +0.0 for -0.0 in vector lanes
        assert torch.equal(y[zeros].signbit(), expected.detach()[zeros].signbit()), (name, y)


def test_one_table_names_every_step_once() -> None:
    names = [s.name for s in STEPS]
    codes = [s.code for s in STEPS]
    assert len(set(names)) == len(names) and len(set(codes)) == len(codes)
    assert set(ACTIVATIONS) - {"none"} <= set(UNARY)
    for name in ("log", "erf", "softplus", "hardswish", "hardsigmoid", "mish", "elu", "sqrt",
                 "rsqrt", "reciprocal", "sin", "cos", "log1p", "expm1"):
        assert name in UNARY and name not in ACTIVATIONS  # program steps, not epilogues
