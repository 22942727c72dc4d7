"""A synthetic recommendation model: the workload optimus-ir is built for.

Start here if you are new to the project. Industrial ranking models are
*wide*: the input features are cut into many small groups, each group goes
through its own small "tower" (linear -> layer norm -> activation), and the
tower outputs are glued back together and fed to an MLP::

    x: [batch, num_towers * tower_width]
      |
      split(tower_width, dim=1)            one piece per tower
      |        |              |
    linear   linear   ...   linear         num_towers independent towers
    layernorm layernorm ... layernorm
    tanh     relu     ...   tanh           (activations alternate)
      |        |              |
      cat(dim=1)
      |
    MLP: linear(hidden) -> relu -> linear(1)

Run as written, such a model launches ~3 small kernels per tower and spends
its time in launch and framework overhead. Optimus-style batch fusion turns
the N linears into one batched matmul (and likewise for the layer norms and
activations), and split/cat elimination removes the plumbing around them.

The forward pass iterates over the split pieces with a Python ``for`` loop.
That is how such models are usually written, and it matters for capture:
``torch.fx.symbolic_trace`` cannot iterate over a traced value, so the model
must be captured with Dynamo (``torch._dynamo.export`` or ``torch.export``)::

    import torch
    from examples.recsys import make_recsys_model        # or: from recsys import ...
    from optimus_ir.importer import import_graph
    from optimus_ir.exporter import export_graph

    model, inputs = make_recsys_model(num_towers=4)
    gm, _guards = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)
    imported = import_graph(gm)        # FX graph -> fx dialect (xDSL IR)
    print(imported.module)             # the textual IR
    rebuilt = export_graph(imported)   # fx dialect -> FX graph
    torch.testing.assert_close(rebuilt(*inputs), gm(*inputs), rtol=0, atol=0)

Running this file does exactly that and prints the IR.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["RecsysModel", "make_recsys_model"]


class RecsysModel(nn.Module):
    """`num_towers` parallel split -> linear -> layernorm -> activation towers,
    concatenated and followed by a two-layer MLP.

    Attributes:
        towers: one ``nn.Linear(tower_width, tower_width)`` per tower.
        norms: one ``nn.LayerNorm(tower_width)`` per tower.
        mlp: ``Linear(num_towers * tower_width, hidden) -> ReLU -> Linear(hidden, 1)``.
    """

    def __init__(self, num_towers: int = 8, tower_width: int = 16, hidden: int = 64) -> None:
        super().__init__()
        self.num_towers = num_towers
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
        pieces = torch.split(x, self.tower_width, dim=1)
        outputs = []
        # A Python loop over the pieces of a split: fine for Dynamo, fatal for
        # symbolic_trace (a Proxy cannot be iterated).
        for i, piece in enumerate(pieces):
            y = self.norms[i](self.towers[i](piece))
            y = torch.tanh(y) if i % 2 == 0 else torch.relu(y)
            outputs.append(y)
        return self.mlp(torch.cat(outputs, dim=1))


def make_recsys_model(
    num_towers: int = 8,
    tower_width: int = 16,
    hidden: int = 64,
    batch: int = 32,
    seed: int = 0,
) -> tuple[RecsysModel, tuple[torch.Tensor]]:
    """Build a seeded `RecsysModel` in eval mode and an example input.

    Args:
        num_towers: number of parallel towers (the width Optimus fuses over).
        tower_width: features per tower (the split size and linear width).
        hidden: width of the MLP's hidden layer.
        batch: batch size of the example input.
        seed: seeds both the parameters and the example input, so two calls
            with the same arguments give identical models and inputs.

    Returns:
        ``(model, (x,))`` with ``x`` of shape ``[batch, num_towers * tower_width]``.
    """
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = RecsysModel(num_towers, tower_width, hidden).eval()
        x = torch.randn(batch, num_towers * tower_width)
    finally:
        torch.random.set_rng_state(generator_state)
    return model, (x,)


def main() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from optimus_ir.exporter import export_graph
    from optimus_ir.importer import import_graph

    model, inputs = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=4)
    gm, _guards = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)
    imported = import_graph(gm)
    print(imported.module)
    rebuilt = export_graph(imported)
    torch.testing.assert_close(rebuilt(*inputs), gm(*inputs), rtol=0, atol=0)
    print("round trip: outputs identical")


if __name__ == "__main__":
    main()
