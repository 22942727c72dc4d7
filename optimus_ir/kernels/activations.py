"""The activations a fused kernel may apply in its epilogue.

One table (`programs.ACTIVATIONS`), shared by the Triton kernels
(`apply_activation`, a `triton.jit` function that selects by a
`tl.constexpr` code, so each compiled kernel holds only its own activation)
and by the torch reference implementations (`torch_activation`), so both
agree on the names.

Names are those of the batch dialect's pointwise members: `none`, `relu`,
`gelu` (erf), `gelu_tanh` (gelu's `approximate="tanh"`), `silu`,
`sigmoid`, `tanh`.
"""

from __future__ import annotations

import triton
import triton.language as tl

# The names live where Triton is not needed (the custom ops, the lowering).
from optimus_ir.kernels.programs import ACTIVATIONS, activation_code, torch_activation

@triton.jit
def _tanh(x):
    # tl.math has no tanh in every Triton release. For |x| >= 1/8,
    # (1 - e) / (1 + e) with e = exp(-2|x|) (a few ulps; e -> 0 gives exactly
    # +-1, NaN stays NaN); below, the odd Taylor polynomial to x**9 (error
    # < 1e-11 relative), which keeps -0.0 and denormals as torch.tanh does
    # (2 * sigmoid(2x) - 1 turned them into +0.0 and lost precision near 0).
    a = tl.abs(x)
    e = tl.exp(-2.0 * a)
    t = (1.0 - e) / (1.0 + e)
    x2 = x * x
    # x * (1 + ...), not x + x * (...): -0.0 + +0.0 would be +0.0.
    small = x * (1.0 + x2 * (
        -0.3333333333333333
        + x2 * (0.13333333333333333 + x2 * (-0.05396825396825397 + x2 * 0.021869488536155203))
    ))
    return tl.where(a < 0.125, small, tl.where(x < 0.0, -t, t))


@triton.jit
def apply_activation(x, ACTIVATION: tl.constexpr):
    """`x` (fp32 accumulator values) through the activation of code
    `ACTIVATION` (`ACTIVATIONS`), with torch's special values: NaN stays
    NaN, +-inf and -0.0 give what the torch function gives on CPU, denormals
    are not flushed by the formulas (tests/test_kernel_activations.py)."""
    if ACTIVATION == 1:
        # Not tl.maximum(x, 0): without propagate_nan it returns 0 for NaN.
        # torch.relu is clamp_min(x, 0) = `x < 0 ? 0 : x`: NaN and -0.0 stay.
        x = tl.where(x < 0.0, 0.0, x)
    elif ACTIVATION == 2:
        # torch's formula: -inf gives -inf * 0 = NaN, as in torch.
        x = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    elif ACTIVATION == 3:
        # torch's formula too: NaN at -inf, as torch.
        x = 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif ACTIVATION == 4:
        # torch's silu formula: x * sigmoid(x) rounds twice (a denormal
        # sigmoid far left); -inf gives NaN as in torch.
        x = x / (1.0 + tl.exp(-x))
    elif ACTIVATION == 5:
        x = tl.sigmoid(x)
    elif ACTIVATION == 6:
        x = _tanh(x)
    return x


@triton.jit
def activation_grad(x, ACTIVATION: tl.constexpr):
    """d activation(x) / dx at the pre-activation values `x` (fp32)."""
    if ACTIVATION == 0:
        g = tl.zeros_like(x) + 1.0  # not x * 0 + 1: NaN at NaN and +-inf
    elif ACTIVATION == 1:
        # torch: threshold_backward(grad, relu(x), 0), `relu(x) <= 0 ? 0 : grad`,
        # so a NaN input passes the gradient through.
        g = tl.where(x <= 0.0, 0.0, 1.0)
    elif ACTIVATION == 2:
        cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
        pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
        g = cdf + x * pdf
    elif ACTIVATION == 3:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        t = _tanh(inner)
        g = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (
            1.0 + 3.0 * 0.044715 * x * x
        )
    elif ACTIVATION == 4:
        s = tl.sigmoid(x)
        g = s * (1.0 + x * (1.0 - s))
    elif ACTIVATION == 5:
        s = tl.sigmoid(x)
        g = s * (1.0 - s)
    else:
        t = _tanh(x)
        g = 1.0 - t * t
    return g


__all__ = [
    "ACTIVATIONS",
    "activation_code",
    "activation_grad",
    "apply_activation",
    "torch_activation",
]
