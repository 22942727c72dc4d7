"""What the example models and their factories share: the ``Linear -> ReLU``
stack (`mlp`) and the seeded construction of a model and its example inputs
(`seeded_example`).

`make_recsys_model`, `make_dlrm_model`, `make_mmoe_model` and
`make_wide_deep_model` each build their model and inputs with
`seeded_example`; `RecsysModel`, `DLRM`, `MMoE` and `WideAndDeep` build their
MLPs, towers, experts and projections with `mlp`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
from torch import nn

__all__ = ["mlp", "seeded_example"]

ModelT = TypeVar("ModelT", bound=nn.Module)
InputsT = TypeVar("InputsT")


def mlp(widths: Sequence[int], *, last_activation: bool) -> nn.Sequential:
    """``Linear(widths[0], widths[1]) -> ReLU -> ... -> Linear(widths[-2],
    widths[-1])``, with a ReLU after the last linear too only with
    `last_activation`.

    The linears are created in order, so a seeded model's parameters follow
    the widths, and the layers are numbered from 0 in the ``nn.Sequential``
    (``0`` the first linear, ``1`` its ReLU, ...): the module names in the
    models' state dicts.

    Raises:
        ValueError: fewer than two widths (no linear).
    """
    if len(widths) < 2:
        raise ValueError(f"an MLP needs an input and at least one output width, got {tuple(widths)!r}")
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if last_activation or i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def seeded_example(
    seed: int,
    build: Callable[[], ModelT],
    example_inputs: Callable[[ModelT], InputsT],
) -> tuple[ModelT, InputsT]:
    """The model `build()` in eval mode and its `example_inputs(model)`,
    drawn in that order after ``torch.manual_seed(seed)``.

    The global RNG state is saved and restored around both, so calling this
    does not change the random numbers the caller draws next; two calls with
    the same seed, model and inputs give identical parameters and inputs.
    """
    with torch.random.fork_rng(devices=()):  # the caller's random numbers stay as they were
        torch.manual_seed(seed)
        model = build().eval()
        inputs = example_inputs(model)
    return model, inputs
