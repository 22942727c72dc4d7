"""Seeded values of the generated FX programs (`fx_graph_strategies`): the
tensors, parameters and modules the programs' builder source calls
(`fx_graph_strategies.tensor(...)`, `parameter`, `linear_module`,
`layer_norm_module`, `input_tensor` for inputs in a memory layout), the two
module-level functions the compiler knows nothing about (`fuzz_helper`,
`fuzz_scale_`) and the dtypes drawn. Used by the strategies and by the
regression tests (`tests/test_fuzz_regressions.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

# ---------------------------------------------------------------------------
# Seeded values (used by the strategy and by the regression tests)
# ---------------------------------------------------------------------------

FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
INT_DTYPES = (torch.int64, torch.int32)


def tensor(shape: Sequence[int], dtype: torch.dtype = torch.float32, seed: int = 0,
           special: bool = False) -> torch.Tensor:
    """A seeded tensor: standard normal for floats, -5..5 for ints; with
    `special`, a few elements are nan/inf/-inf (for nan_to_num and friends)."""
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        value = torch.randn(tuple(shape), generator=generator, dtype=torch.float64)
        if special and value.numel() >= 3:
            flat = value.view(-1)
            flat[0], flat[value.numel() // 2], flat[-1] = math.nan, math.inf, -math.inf
        return value.to(dtype)
    return torch.randint(-5, 6, tuple(shape), generator=generator, dtype=dtype)


def parameter(shape: Sequence[int], dtype: torch.dtype = torch.float32, seed: int = 0,
              requires_grad: bool = True) -> nn.Parameter:
    """A seeded parameter (scaled like a default init, so layers stay tame)."""
    value = tensor(shape, dtype, seed) / math.sqrt(max(1, shape[-1] if shape else 1))
    return nn.Parameter(value, requires_grad=requires_grad)


def linear_module(in_features: int, out_features: int, bias: bool = True,
                  dtype: torch.dtype = torch.float32, seed: int = 0,
                  requires_grad: bool = True) -> nn.Linear:
    """An `nn.Linear` with seeded weights."""
    module = nn.Linear(in_features, out_features, bias=bias, dtype=dtype)
    module.weight = parameter((out_features, in_features), dtype, seed, requires_grad)
    if bias:
        module.bias = parameter((out_features,), dtype, seed + 1, requires_grad)
    return module


def layer_norm_module(shape: Sequence[int], affine: bool = True, eps: float = 1e-5,
                      dtype: torch.dtype = torch.float32, seed: int = 0,
                      requires_grad: bool = True) -> nn.LayerNorm:
    """An `nn.LayerNorm` with seeded weight and bias."""
    module = nn.LayerNorm(list(shape), eps=eps, elementwise_affine=affine, dtype=dtype)
    if affine:
        module.weight = parameter(tuple(shape), dtype, seed, requires_grad)
        module.bias = parameter(tuple(shape), dtype, seed + 1, requires_grad)
    return module


def fuzz_helper(x: torch.Tensor) -> torch.Tensor:
    """A module-level function the compiler knows nothing about (an unknown call)."""
    return x * 2 - 1


def fuzz_scale_(x: torch.Tensor) -> torch.Tensor:
    """Unknown code that writes its argument in place."""
    return x.mul_(0.5)


def input_tensor(shape: Sequence[int], dtype: torch.dtype = torch.float32, seed: int = 0,
                 special: bool = False, layout: str = "contiguous") -> torch.Tensor:
    """A seeded input of `shape` in a memory layout: `contiguous`;
    `transposed` (the last two dims swapped on a contiguous tensor: dense
    but not contiguous); `expanded` (dim 0 broadcast from size 1: stride 0).
    With `special` (floats), the values include nan, inf, -inf, -0.0, +0.0
    and a denormal."""
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        base = (*shape[:-2], shape[-1], shape[-2])
    elif layout == "expanded" and len(shape) >= 1:
        base = (1, *shape[1:])
    else:
        base = shape
    value = tensor(base, dtype, seed)
    if special and dtype.is_floating_point and value.numel() >= 2:
        flat = value.view(-1)
        specials = [math.nan, -0.0, math.inf, 0.0, -math.inf, torch.finfo(dtype).tiny / 4]
        for i, v in enumerate(specials[: flat.numel()]):
            flat[(i * 7) % flat.numel()] = v
    if layout == "transposed" and len(shape) >= 2:
        return value.transpose(-1, -2)
    if layout == "expanded" and len(shape) >= 1:
        return value.expand(shape)
    return value
