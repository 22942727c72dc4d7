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
    # tl.math has no tanh in every Triton release; 2*sigmoid(2x)-1 is exact
    # enough in fp32 and never overflows (sigmoid saturates).
    return 2.0 * tl.sigmoid(2.0 * x) - 1.0


@triton.jit
def apply_activation(x, ACTIVATION: tl.constexpr):
    """`x` (fp32 accumulator values) through the activation of code
    `ACTIVATION` (`ACTIVATIONS`)."""
    if ACTIVATION == 1:
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == 2:
        x = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    elif ACTIVATION == 3:
        x = 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif ACTIVATION == 4:
        x = x * tl.sigmoid(x)
    elif ACTIVATION == 5:
        x = tl.sigmoid(x)
    elif ACTIVATION == 6:
        x = _tanh(x)
    return x


@triton.jit
def activation_grad(x, ACTIVATION: tl.constexpr):
    """d activation(x) / dx at the pre-activation values `x` (fp32)."""
    if ACTIVATION == 0:
        g = x * 0.0 + 1.0
    elif ACTIVATION == 1:
        g = tl.where(x > 0.0, 1.0, 0.0)
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
