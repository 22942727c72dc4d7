"""Tests of the example plugin, run with the package importable (installed,
or on PYTHONPATH). optimus-ir's own test suite installs the package into a
temporary directory and runs these (tests/test_example_plugin_package.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import optimus_ir
import optimus_example_plugin  # noqa: F401  (registers the pass and the replacements)
from optimus_example_plugin.replacements import silu, swish

FOLD_PIPELINE = "maximize-value-semantics,raise-fx,fold-idempotent-activations,canonicalize,dce,lower-to-fx"


class Swish(nn.Module):
    """A block written before nn.SiLU: swish by hand, both operand orders."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(16, 32)
        self.second = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.first(x)
        h = torch.sigmoid(h) * h
        y = self.second(h)
        return y * torch.sigmoid(y)


class DoubleRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(16, 16), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.block(x))


def targets(module: torch.nn.Module) -> list[str]:
    return [str(node.target) for node in module.graph.nodes if node.op in ("call_function", "call_method")]


def test_swish_becomes_silu_in_the_default_pipeline() -> None:
    model = Swish().eval()
    x = torch.randn(4, 16)
    optimized = optimus_ir.optimize(model, (x,))
    names = targets(optimized)
    assert not any("sigmoid" in name for name in names), names
    assert sum("silu" in name for name in names) == 2, names
    torch.testing.assert_close(optimized(x), model(x))
    other = torch.randn(64, 16)  # another batch size: the replacement is not shape-specific
    torch.testing.assert_close(optimized(other), model(other))


def test_fold_idempotent_activations_in_a_pipeline() -> None:
    model = DoubleRelu().eval()
    x = torch.randn(4, 16)
    optimized = optimus_ir.optimize(model, (x,), pipeline=FOLD_PIPELINE)
    assert sum("relu" in name for name in targets(optimized)) == 1, targets(optimized)
    torch.testing.assert_close(optimized(x), model(x), rtol=0, atol=0)


def test_a_wrong_replacement_is_refused() -> None:
    def wrong(x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)  # forgot the `* x`

    with pytest.raises(ValueError, match="wrong-silu"):
        optimus_ir.register_replacement("wrong-silu", swish, wrong, (torch.randn(8, 16),))


def test_the_replacement_agrees_with_its_pattern_on_special_values() -> None:
    x = torch.tensor([0.0, -0.0, 1e-30, -1e4, 1e4, 3.0, -3.0])
    torch.testing.assert_close(silu(x), swish(x))
