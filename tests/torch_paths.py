"""Torch's own CPU values on both of its elementwise code paths.

ATen's CPU elementwise kernels run a vectorized body over full vector lanes
and a scalar loop over the rest, and what they give at special points
depends on which of the two ran and on the vector ISA the machine has
(AVX2 or AVX512): on an AVX512 machine `F.gelu` of +inf is NaN in a vector
lane and +inf in the scalar loop; on an AVX2 machine `hardswish`'s and
`elu`'s derivatives are NaN at NaN in a vector lane and 1 in the scalar
loop. A 1-element tensor always takes the scalar loop. One of our kernels
keeps torch's semantics at an element when it gives what one of torch's
own paths gives there; `torch_reference` picks that value per element, so
the tests' exact checks (NaN where torch has NaN, infinities and zeros
exactly) hold against it on every machine.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Unary = Callable[[torch.Tensor], torch.Tensor]


def scalar_path(fn: Unary, x: torch.Tensor) -> torch.Tensor:
    """`fn` applied to each element of `x` alone (torch's scalar loop)."""
    flat = x.reshape(-1)
    values = [fn(flat[i : i + 1].clone()) for i in range(flat.numel())]
    return torch.cat(values).reshape(x.shape)


def scalar_path_grad(fn: Unary, x: torch.Tensor) -> torch.Tensor:
    """The derivative of `fn` at each element of `x` alone (the backward's
    scalar loop)."""
    flat = x.detach().reshape(-1)
    grads = []
    for i in range(flat.numel()):
        leaf = flat[i : i + 1].clone().requires_grad_()
        fn(leaf).backward(torch.ones_like(leaf))
        grads.append(leaf.grad)
    return torch.cat(grads).reshape(x.shape)


def _same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: both NaN, or equal with the same sign (zeros too)."""
    return (a.isnan() & b.isnan()) | ((a == b) & (a.signbit() == b.signbit()))


def torch_reference(got: torch.Tensor, vectorized: torch.Tensor, scalar: torch.Tensor) -> torch.Tensor:
    """Per element, torch's scalar-loop value where `got` equals it and the
    vectorized value does not; the vectorized value everywhere else."""
    got, scalar = got.to(vectorized.dtype), scalar.to(vectorized.device)
    use_scalar = _same(got, scalar) & ~_same(got, vectorized)
    return torch.where(use_scalar, scalar, vectorized)
