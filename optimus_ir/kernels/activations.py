"""The unary program steps in Triton: the activations a fused kernel may
apply in its epilogue, and every other unary step of `multi_pointwise`.

The steps, their codes and their torch references are one table
(`programs.STEPS`). `apply_activation` / `activation_grad` are
`triton.jit` functions that select a step by a `tl.constexpr` code, so each
compiled kernel holds only its own steps; the grouped GEMM and the layer
norm take the epilogue activations (`ACTIVATIONS`: the steps marked
`epilogue`), `multi_pointwise` (`pointwise.py`) every unary step.

Every branch keeps torch's special values (CPU, fp32): NaN, +-inf, -0.0 and
denormals give what the torch function gives, and so do the derivatives
(tests/test_kernel_activations.py, tests/test_kernel_pointwise.py).
"""

from __future__ import annotations

import triton
import triton.language as tl

# The names live where Triton is not needed (the custom ops, the lowering).
from optimus_ir.kernels.programs import (
    ACTIVATIONS,
    STEP_CODES,
    activation_code,
    torch_activation,
)

_NONE = tl.constexpr(0)
_RELU = tl.constexpr(STEP_CODES["relu"])
_GELU = tl.constexpr(STEP_CODES["gelu"])
_GELU_TANH = tl.constexpr(STEP_CODES["gelu_tanh"])
_SILU = tl.constexpr(STEP_CODES["silu"])
_SIGMOID = tl.constexpr(STEP_CODES["sigmoid"])
_TANH = tl.constexpr(STEP_CODES["tanh"])
_NEG = tl.constexpr(STEP_CODES["neg"])
_EXP = tl.constexpr(STEP_CODES["exp"])
_ABS = tl.constexpr(STEP_CODES["abs"])
_LOG = tl.constexpr(STEP_CODES["log"])
_ERF = tl.constexpr(STEP_CODES["erf"])
_SOFTPLUS = tl.constexpr(STEP_CODES["softplus"])
_HARDSWISH = tl.constexpr(STEP_CODES["hardswish"])
_HARDSIGMOID = tl.constexpr(STEP_CODES["hardsigmoid"])
_MISH = tl.constexpr(STEP_CODES["mish"])
_ELU = tl.constexpr(STEP_CODES["elu"])
_SQRT = tl.constexpr(STEP_CODES["sqrt"])
_RSQRT = tl.constexpr(STEP_CODES["rsqrt"])
_RECIPROCAL = tl.constexpr(STEP_CODES["reciprocal"])
_SIN = tl.constexpr(STEP_CODES["sin"])
_COS = tl.constexpr(STEP_CODES["cos"])
_LOG1P = tl.constexpr(STEP_CODES["log1p"])
_EXPM1 = tl.constexpr(STEP_CODES["expm1"])


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
def _log1p(x):
    # tl.math has no log1p. Goldberg's form: with u = 1 + x rounded,
    # log(u) * (x / (u - 1)) is within a few ulps of log1p(x); u == 1 (tiny
    # x, -0.0, denormals) gives x itself, u == inf gives inf (the form
    # would be inf / inf). x < -1 and -inf give NaN through log, -1 gives -inf.
    u = 1.0 + x
    safe = tl.where(u == 1.0, 2.0, u)
    y = tl.log(safe) * (x / (safe - 1.0))
    return tl.where(u == 1.0, x, tl.where(u == float("inf"), u, y))


@triton.jit
def _expm1(x):
    # tl.math has no expm1. Kahan's form: with u = exp(x) rounded,
    # (u - 1) * (x / log(u)) is within a few ulps of expm1(x); u == 1 gives
    # x (keeps -0.0 and denormals), u - 1 == -1 gives -1 (-inf included),
    # u == inf gives inf.
    u = tl.exp(x)
    um1 = u - 1.0
    safe = tl.where((u == 1.0) | (um1 == -1.0) | (u == float("inf")), 2.0, u)
    y = (safe - 1.0) * (x / tl.log(safe))
    return tl.where(u == 1.0, x, tl.where(um1 == -1.0, um1, tl.where(u == float("inf"), u, y)))


@triton.jit
def _softplus(x):
    # torch's formula (beta 1, threshold 20): x where x > 20, else
    # log1p(exp(x)); NaN stays NaN, -inf gives 0, -0.0 gives log(2).
    return tl.where(x > 20.0, x, _log1p(tl.exp(x)))


@triton.jit
def _clamp_0_6(c):
    # min(max(c, 0), 6) with NaN propagated (torch's vectorized clamp).
    return tl.where(c > 6.0, 6.0, tl.where(c < 0.0, 0.0, c))


@triton.jit
def apply_activation(x, ACTIVATION: tl.constexpr):
    """`x` (fp32 values) through the unary step of code `ACTIVATION`
    (`programs.STEPS`; 0: unchanged), with torch's special values: NaN
    stays NaN, +-inf and -0.0 give what the torch function gives on CPU,
    denormals are not flushed by the formulas."""
    if ACTIVATION == _RELU:
        # Not tl.maximum(x, 0): without propagate_nan it returns 0 for NaN.
        # torch.relu is clamp_min(x, 0) = `x < 0 ? 0 : x`: NaN and -0.0 stay.
        x = tl.where(x < 0.0, 0.0, x)
    elif ACTIVATION == _GELU:
        # torch's formula: -inf gives -inf * 0 = NaN, as in torch.
        x = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    elif ACTIVATION == _GELU_TANH:
        # torch's formula too: NaN at -inf, as torch.
        x = 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif ACTIVATION == _SILU:
        # torch's silu formula: x * sigmoid(x) rounds twice (a denormal
        # sigmoid far left); -inf gives NaN as in torch.
        x = x / (1.0 + tl.exp(-x))
    elif ACTIVATION == _SIGMOID:
        x = tl.sigmoid(x)
    elif ACTIVATION == _TANH:
        x = _tanh(x)
    elif ACTIVATION == _NEG:
        x = -x
    elif ACTIVATION == _EXP:
        x = tl.exp(x)
    elif ACTIVATION == _ABS:
        x = tl.abs(x)
    elif ACTIVATION == _LOG:
        x = tl.log(x)
    elif ACTIVATION == _ERF:
        x = tl.math.erf(x)
    elif ACTIVATION == _SOFTPLUS:
        x = _softplus(x)
    elif ACTIVATION == _HARDSWISH:
        # torch: x * min(max(x + 3, 0), 6) / 6 in this order (-3 gives -0.0,
        # -inf gives -inf * 0 = NaN).
        x = x * _clamp_0_6(x + 3.0) / 6.0
    elif ACTIVATION == _HARDSIGMOID:
        x = _clamp_0_6(x + 3.0) / 6.0
    elif ACTIVATION == _MISH:
        # torch: x * tanh(log1p(exp(x))) (no threshold): NaN at -inf.
        x = x * _tanh(_log1p(tl.exp(x)))
    elif ACTIVATION == _ELU:
        # torch (alpha 1): x <= 0 ? expm1(x) : x; -0.0 stays -0.0.
        x = tl.where(x <= 0.0, _expm1(x), x)
    elif ACTIVATION == _SQRT:
        x = tl.sqrt_rn(x)  # correctly rounded, as torch's CPU sqrt
    elif ACTIVATION == _RSQRT:
        x = 1.0 / tl.sqrt_rn(x)  # torch's CPU rsqrt: 1 / sqrt(x), -0.0 -> -inf
    elif ACTIVATION == _RECIPROCAL:
        x = 1.0 / x
    elif ACTIVATION == _SIN:
        x = tl.sin(x)
    elif ACTIVATION == _COS:
        x = tl.cos(x)
    elif ACTIVATION == _LOG1P:
        x = _log1p(x)
    elif ACTIVATION == _EXPM1:
        x = _expm1(x)
    else:
        tl.static_assert(ACTIVATION == _NONE, "unknown unary step code")
    return x


@triton.jit
def activation_grad(x, ACTIVATION: tl.constexpr):
    """d step(x) / dx at the inputs `x` (fp32) of the unary step of code
    `ACTIVATION` (0: the identity), as torch's derivative formulas give it,
    special values included."""
    if ACTIVATION == _NONE:
        g = tl.zeros_like(x) + 1.0  # not x * 0 + 1: NaN at NaN and +-inf
    elif ACTIVATION == _RELU:
        # torch: threshold_backward(grad, relu(x), 0), `relu(x) <= 0 ? 0 : grad`,
        # so a NaN input passes the gradient through.
        g = tl.where(x <= 0.0, 0.0, 1.0)
    elif ACTIVATION == _GELU:
        cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
        pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
        g = cdf + x * pdf
    elif ACTIVATION == _GELU_TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        t = _tanh(inner)
        g = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (
            1.0 + 3.0 * 0.044715 * x * x
        )
    elif ACTIVATION == _SILU:
        s = tl.sigmoid(x)
        g = s * (1.0 + x * (1.0 - s))
    elif ACTIVATION == _SIGMOID:
        s = tl.sigmoid(x)
        g = s * (1.0 - s)
    elif ACTIVATION == _TANH:
        t = _tanh(x)
        g = 1.0 - t * t
    elif ACTIVATION == _NEG:
        g = tl.zeros_like(x) - 1.0
    elif ACTIVATION == _EXP:
        g = tl.exp(x)
    elif ACTIVATION == _ABS:
        g = tl.where(x > 0.0, 1.0, tl.where(x < 0.0, -1.0, 0.0))  # sign(x), 0 at NaN
    elif ACTIVATION == _LOG:
        g = 1.0 / x
    elif ACTIVATION == _ERF:
        g = 1.1283791670955126 * tl.exp(-(x * x))  # 2 / sqrt(pi) * exp(-x^2)
    elif ACTIVATION == _SOFTPLUS:
        z = tl.exp(x)
        g = tl.where(x > 20.0, 1.0, z / (z + 1.0))
    elif ACTIVATION == _HARDSWISH:
        # torch's vectorized formula: x <= -3 ? 0 : x >= 3 ? 1 : x / 3 + 0.5,
        # and 1 at NaN as torch's scalar loop, CUDA kernel and AVX512 lanes
        # give (only AVX2 lanes give NaN there).
        g = tl.where(x <= -3.0, 0.0, tl.where(x < 3.0, x / 3.0 + 0.5, 1.0))
    elif ACTIVATION == _HARDSIGMOID:
        # torch: -3 < x < 3 ? 1/6 : 0 (0 at NaN).
        g = tl.where((x > -3.0) & (x < 3.0), 1.0 / 6.0, 0.0)
    elif ACTIVATION == _MISH:
        # torch: tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2), sp = log1p(exp(x));
        # NaN at +-inf, as torch.
        t = _tanh(_log1p(tl.exp(x)))
        g = t + x * tl.sigmoid(x) * (1.0 - t * t)
    elif ACTIVATION == _ELU:
        # torch's formula (alpha 1): x > 0 ? 1 : exp(x), and 1 at NaN as
        # torch's scalar loop, CUDA kernel and AVX512 lanes give (only AVX2
        # lanes give NaN there).
        g = tl.where(x <= 0.0, tl.exp(x), 1.0)
    elif ACTIVATION == _SQRT:
        g = 1.0 / (2.0 * tl.sqrt_rn(x))
    elif ACTIVATION == _RSQRT:
        r = 1.0 / tl.sqrt_rn(x)
        g = -0.5 * (r * r * r)
    elif ACTIVATION == _RECIPROCAL:
        r = 1.0 / x
        g = -(r * r)
    elif ACTIVATION == _SIN:
        g = tl.cos(x)
    elif ACTIVATION == _COS:
        g = -tl.sin(x)
    elif ACTIVATION == _LOG1P:
        g = 1.0 / (x + 1.0)
    elif ACTIVATION == _EXPM1:
        g = _expm1(x) + 1.0  # torch: result + 1 (0 where expm1 rounds to -1)
    else:
        tl.static_assert(False, "unknown unary step code")
    return g


__all__ = [
    "ACTIVATIONS",
    "activation_code",
    "activation_grad",
    "apply_activation",
    "torch_activation",
]
