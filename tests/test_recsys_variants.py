"""The model variants of examples/recsys.py: shapes, the activations and depth
asked for, and defaults that give exactly the original model (same parameters
in the same order, same forward), which the other tests and the demo rely on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

from optimus_ir.examples.recsys import RecsysModel, make_recsys_model  # noqa: E402


class _OriginalRecsys(nn.Module):
    """The model as it was written before the variants (the reference)."""

    def __init__(self, num_towers: int, tower_width: int, hidden: int) -> None:
        super().__init__()
        self.tower_width = tower_width
        self.towers = nn.ModuleList(
            nn.Linear(tower_width, tower_width) for _ in range(num_towers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(tower_width) for _ in range(num_towers))
        self.mlp = nn.Sequential(
            nn.Linear(num_towers * tower_width, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = []
        for i, piece in enumerate(torch.split(x, self.tower_width, dim=1)):
            y = self.norms[i](self.towers[i](piece))
            outputs.append(torch.tanh(y) if i % 2 == 0 else torch.relu(y))
        return self.mlp(torch.cat(outputs, dim=1))


def _reference(num_towers: int, tower_width: int, hidden: int, batch: int, seed: int):
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = _OriginalRecsys(num_towers, tower_width, hidden).eval()
        x = torch.randn(batch, num_towers * tower_width)
    finally:
        torch.random.set_rng_state(state)
    return model, x


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"num_towers": 4, "tower_width": 8, "hidden": 16, "batch": 5, "seed": 3}],
    ids=["defaults", "small"],
)
def test_defaults_give_the_original_model(kwargs) -> None:
    model, (x,) = make_recsys_model(**kwargs)
    full = {"num_towers": 8, "tower_width": 16, "hidden": 64, "batch": 32, "seed": 0, **kwargs}
    reference, ref_x = _reference(**full)
    ours, theirs = model.state_dict(), reference.state_dict()
    assert list(ours) == list(theirs)
    for key in theirs:
        torch.testing.assert_close(ours[key], theirs[key], rtol=0, atol=0)
    torch.testing.assert_close(x, ref_x, rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference(x), rtol=0, atol=0)
    assert not model.training


def test_defaults_capture_the_original_graph() -> None:
    model, (x,) = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=3)
    reference, _ = _reference(4, 8, 16, 3, 0)

    def targets(module: nn.Module) -> list[str]:
        gm, _ = torch._dynamo.export(module, assume_static_by_default=True)(x)  # noqa: SLF001
        return [str(n.target) for n in gm.graph.nodes if n.op.startswith("call")]

    assert targets(model) == targets(reference)


def test_mixed_widths_hidden_activations_and_depth() -> None:
    model, (x,) = make_recsys_model(
        num_towers=5,
        tower_width=(16, 32, 64),
        tower_hidden=32,
        activations=("tanh", "relu", "sigmoid"),
        tower_depth=2,
        hidden=8,
        batch=6,
    )
    assert model.widths == (16, 32, 64, 16, 32)
    assert x.shape == (6, 16 + 32 + 64 + 16 + 32)
    assert model.activations == ("tanh", "relu", "sigmoid", "tanh", "relu")
    assert [tuple(t.weight.shape) for t in model.towers] == [(32, w) for w in model.widths]
    assert [tuple(t.weight.shape) for t in model.second_towers] == [(32, 32)] * 5
    assert model.mlp[0].in_features == 5 * 32
    with torch.no_grad():
        out = model(x)
    assert out.shape == (6, 1)

    # The forward computes what the description says, tower by tower.
    with torch.no_grad():
        acts = [torch.tanh, torch.relu, torch.sigmoid, torch.tanh, torch.relu]
        pieces = torch.split(x, list(model.widths), dim=1)
        ys = []
        for i, piece in enumerate(pieces):
            y = acts[i](model.norms[i](model.towers[i](piece)))
            ys.append(acts[i](model.second_towers[i](y)))
        torch.testing.assert_close(out, model.mlp(torch.cat(ys, dim=1)), rtol=0, atol=0)


def test_uniform_variant_and_other_activations() -> None:
    model, (x,) = make_recsys_model(
        num_towers=3, tower_width=4, tower_hidden=6, activations=("gelu", "silu"), batch=2
    )
    assert x.shape == (2, 12)
    assert [tuple(t.weight.shape) for t in model.towers] == [(6, 4)] * 3
    assert not hasattr(model, "second_towers")
    assert model(x).shape == (2, 1)


def test_seeded_variants_are_reproducible() -> None:
    kwargs = {"num_towers": 3, "tower_width": (4, 8), "tower_hidden": 4, "tower_depth": 2}
    (a, (xa,)), (b, (xb,)) = make_recsys_model(**kwargs), make_recsys_model(**kwargs)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        torch.testing.assert_close(va, vb, rtol=0, atol=0)
    torch.testing.assert_close(xa, xb, rtol=0, atol=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tower_width": (4, 8)}, "tower_hidden"),
        ({"activations": ("tanh", "swish")}, "unknown activations"),
        ({"tower_depth": 3}, "tower_depth"),
    ],
)
def test_bad_options_are_rejected(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        RecsysModel(2, **kwargs)
