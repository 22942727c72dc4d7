"""Layer norm through the fastest torch kernel path for its arguments.

PyTorch's CPU layer norm kernel takes a slower path when it has no weight:
fp32, one thread, `F.layer_norm(x, [256])` over 512 rows runs in 89 us,
with a weight of ones in 51 us (64 rows: 13.2 against 8.6 us), and the values are the same bit for
bit (the kernel multiplies by the weight; times one is exact). With a bias
and no weight the two paths round differently, and so can the input's
gradient (one ulp, on a normalized shape of several dims): both are left
alone, so the faster path is taken only where no gradient flows. A batched
layer norm over a stack of members has no weight of its own (each member's
affine parameters are applied after it, `lower-batch`), so it always took
the slow path; so did every user layer norm without affine parameters.

`layer_norm` (what `lower-to-fx` emits for a layer norm without a weight)
passes a cached weight of ones on CPU fp32 tensors, and calls
`F.layer_norm` unchanged everywhere else (bf16 and fp16 are faster without
the weight; other devices were not measured). The ones are cached per
shape, dtype and device, made outside inference mode (so that a later
autograd call may save them), and never cached while a dispatch mode or a
compiler traces the call (fake tensors, `make_fx`, Dynamo): there it is
`input.new_ones(...)`, which traces as the constant it is. A dispatch mode
that only observes real tensors (`OBSERVER_ATTRIBUTE`: the memory
tracker) gets the cached weight, as an untracked call does.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from optimus_ir.foundation.effects import register_pure_function

_UNIT_WEIGHTS: dict[tuple[tuple[int, ...], torch.device], torch.Tensor] = {}
"""The fp32 weights of ones per normalized shape and device."""

_dispatch_modes = torch._C._len_torch_dispatch_stack
_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled

OBSERVER_ATTRIBUTE = "optimus_observes_only"
"""A dispatch mode whose class sets this true only watches real tensors
(`optimus_ir.memory`'s allocation tracker): under it the cached weight is
used, so that the tracker sees the allocations a call makes without it."""


def _tracing() -> bool:
    """A compiler or a dispatch mode that is not an observer sees the call."""
    if _compiling():
        return True
    if not _dispatch_modes():
        return False
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return not all(getattr(mode, OBSERVER_ATTRIBUTE, False) for mode in _get_current_dispatch_mode_stack())


def _unit_weight(input: torch.Tensor, normalized_shape: tuple[int, ...]) -> torch.Tensor:
    if type(input) is not torch.Tensor or _tracing():
        return input.new_ones(normalized_shape)
    key = (normalized_shape, input.device)
    weight = _UNIT_WEIGHTS.get(key)
    if weight is None:
        with torch.inference_mode(False), torch.no_grad():
            weight = torch.ones(normalized_shape, dtype=torch.float32, device=input.device)
        _UNIT_WEIGHTS[key] = weight
    return weight


def layer_norm(
    input: torch.Tensor,
    normalized_shape: Sequence[int],
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> torch.Tensor:
    """`F.layer_norm(input, normalized_shape, weight, bias, eps)`, the same
    values bit for bit; without affine parameters on a CPU fp32 tensor it
    passes a weight of ones, which takes the kernel's faster path, where no
    gradient is taken (with a bias, or in the backward, the two paths can
    round differently: unchanged there)."""
    if input.requires_grad and _grad_enabled():
        return F.layer_norm(input, normalized_shape, weight, bias, eps)
    return stacked_layer_norm(input, normalized_shape, weight, bias, eps)


def stacked_layer_norm(
    input: torch.Tensor,
    normalized_shape: Sequence[int],
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> torch.Tensor:
    """`layer_norm` for a batched layer norm over stacked members (`lower-batch`
    emits it; their affine parameters follow as a multiply and an add): the
    weight of ones on CPU fp32 under autograd too. Its forward is the same
    bit for bit; the input's gradient can round one ulp differently on a
    normalized shape of several dims, which the batched form's tolerance
    (it reassociates the affine step anyway) covers. Measured at batch 512
    on the 64-tower model: a step's fused layer norms ran ~1.9 ms forward and
    ~1.6 ms backward without a weight against ~1.5 and ~1.4 ms for the 64
    members' affine kernels."""
    if weight is None and bias is None and input.dtype is torch.float32 and input.device.type == "cpu":
        weight = _unit_weight(input, tuple(normalized_shape))
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


LAYER_NORM_TARGET = f"{__name__}.layer_norm"
"""`layer_norm`'s qualified name, the target an FX graph calls: pure (it
reads its inputs, writes nothing, returns fresh storage)."""

STACKED_LAYER_NORM_TARGET = f"{__name__}.stacked_layer_norm"
"""`stacked_layer_norm`'s qualified name: pure, like `LAYER_NORM_TARGET`."""

COUNTS_AS_ATTRIBUTE = "optimus_counts_as"
"""The attribute naming the op a helper of this package computes, for the
report's op counts (`op_counts.op_kind`): both helpers are layer norms."""

layer_norm.optimus_counts_as = "layer_norm"  # type: ignore[attr-defined]
stacked_layer_norm.optimus_counts_as = "layer_norm"  # type: ignore[attr-defined]

STACKED_LAYER_NORM_ATTR = "optimus.stacked"
"""The unit attribute `lower-batch` puts on the `torch.layer_norm` over a
batched layer norm's stacked members: `lower-to-fx` lowers it (without
affine parameters) to `stacked_layer_norm`."""

register_pure_function(LAYER_NORM_TARGET)
register_pure_function(STACKED_LAYER_NORM_TARGET)

__all__ = ["COUNTS_AS_ATTRIBUTE", "LAYER_NORM_TARGET", "OBSERVER_ATTRIBUTE", "STACKED_LAYER_NORM_ATTR", "STACKED_LAYER_NORM_TARGET", "layer_norm", "stacked_layer_norm"]
