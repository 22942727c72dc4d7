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

Variants (keyword options of `make_recsys_model`): ``tower_width`` may be a
sequence cycled over the towers (``(16, 32, 64)``: mixed widths, so the input
has their sum of features), ``tower_hidden`` sets the width the tower linears
produce, ``activations`` is cycled over the towers (tanh, relu, sigmoid, gelu,
silu), and ``tower_depth=2`` adds a second linear + activation per tower.
``split_groups=G`` nests the plumbing: the input is first split into G
equal groups of towers, each group is split again into its towers, each
group's tower outputs are concatenated, and the G group outputs are
concatenated before the MLP::

    x -> split(group widths) -> per group: split(tower widths) -> towers
      -> cat (per group) -> cat (of the groups) -> MLP

It computes the same function with the same parameters as ``split_groups=1``
(only the split/cat plumbing differs), which split/cat elimination should
flatten back. The defaults give exactly the original model and parameters.

Run as written, such a model launches ~3 small kernels per tower and spends
its time in launch and framework overhead. Optimus-style batch fusion turns
the N linears into one batched matmul (and likewise for the layer norms and
activations), and split/cat elimination removes the plumbing around them.

The forward pass iterates over the split pieces with a Python ``for`` loop.
That is how such models are usually written, and it matters for capture:
``torch.fx.symbolic_trace`` cannot iterate over a traced value, so the model
must be captured with Dynamo (``torch._dynamo.export`` or ``torch.export``)::

    import torch
    from optimus_ir.examples.recsys import make_recsys_model
    from optimus_ir.translate.importer import import_graph
    from optimus_ir.translate.exporter import export_graph

    model, inputs = make_recsys_model(num_towers=4)
    gm, _guards = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)
    imported = import_graph(gm)        # FX graph -> fx dialect (xDSL IR)
    print(imported.module)             # the textual IR
    rebuilt = export_graph(imported)   # fx dialect -> FX graph
    torch.testing.assert_close(rebuilt(*inputs), gm(*inputs), rtol=0, atol=0)

Running this file does exactly that and prints the IR.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from optimus_ir.examples.builders import mlp, seeded_example

__all__ = ["ACTIVATIONS", "VARIANTS", "RecsysModel", "make_recsys_model"]

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "gelu": F.gelu,
    "silu": F.silu,
}
"""The tower activations by name (what `activations=` accepts)."""

VARIANTS: dict[str, dict[str, object]] = {
    "uniform": {
        "tower_width": 16,
        "tower_hidden": 16,
        "activations": ("tanh", "relu"),
        "tower_depth": 2,
    },
    "mixed": {
        "tower_width": (16, 32, 64),
        "tower_hidden": 32,
        "activations": ("tanh", "relu", "sigmoid"),
        "tower_depth": 2,
    },
}
"""The named variants the benchmarks and the demo use (keyword options of
`make_recsys_model`): uniform 16-wide towers, and mixed widths 16/32/64 into
32-wide towers; both depth 2."""


def _tower_widths(num_towers: int, tower_width: int | Sequence[int]) -> tuple[int, ...]:
    """Each tower's input width: an int for all, or a sequence cycled over the towers."""
    if isinstance(tower_width, int):
        return (tower_width,) * num_towers
    widths = tuple(int(w) for w in tower_width)
    if not widths or any(w <= 0 for w in widths):
        raise ValueError(f"tower widths must be positive, got {tower_width!r}")
    return tuple(widths[i % len(widths)] for i in range(num_towers))


class RecsysModel(nn.Module):
    """`num_towers` parallel split -> linear -> layernorm -> activation towers,
    concatenated and followed by a two-layer MLP.

    Tower ``i`` reads ``w_i`` input features (``tower_width``: one int for all
    towers, or a sequence cycled over them: ``(16, 32, 64)`` gives tower ``i``
    width ``(16, 32, 64)[i % 3]``; the input has ``sum(w_i)`` features) and
    computes ``Linear(w_i, h) -> LayerNorm(h) -> act_i`` with ``h =
    tower_hidden`` (default: ``tower_width``, which must then be an int) and
    ``act_i = activations[i % len(activations)]``. With ``tower_depth=2`` a
    second ``Linear(h, h) -> act_i`` follows. The defaults give the original
    model: 16-wide towers, alternating tanh and relu, depth 1.

    Attributes:
        towers: one ``nn.Linear(w_i, h)`` per tower.
        norms: one ``nn.LayerNorm(h)`` per tower.
        second_towers: with ``tower_depth=2`` only, one ``nn.Linear(h, h)`` per tower.
        mlp: ``Linear(num_towers * h, hidden) -> ReLU -> Linear(hidden, 1)``.
        widths: the input width of every tower.
        split_groups: the number of tower groups the input is split into
            first (1: one flat split, the original model).
        activations: the activation name of every tower.
    """

    def __init__(
        self,
        num_towers: int = 8,
        tower_width: int | Sequence[int] = 16,
        hidden: int = 64,
        *,
        tower_hidden: int | None = None,
        activations: Sequence[str] = ("tanh", "relu"),
        tower_depth: int = 1,
        split_groups: int = 1,
    ) -> None:
        super().__init__()
        if split_groups < 1 or num_towers % split_groups:
            raise ValueError(
                f"split_groups must be a positive divisor of num_towers={num_towers}, "
                f"got {split_groups}"
            )
        if tower_hidden is None:
            if not isinstance(tower_width, int):
                raise ValueError("tower_hidden is required when the tower widths differ")
            tower_hidden = tower_width
        if tower_depth not in (1, 2):
            raise ValueError(f"tower_depth must be 1 or 2, got {tower_depth}")
        names = tuple(activations)
        unknown = [name for name in names if name not in ACTIVATIONS]
        if not names or unknown:
            raise ValueError(
                f"unknown activations {unknown or names!r}; choose from {sorted(ACTIVATIONS)}"
            )
        self.num_towers = num_towers
        self.tower_width = tower_width if isinstance(tower_width, int) else tuple(tower_width)
        self.tower_hidden = tower_hidden
        self.tower_depth = tower_depth
        self.widths = _tower_widths(num_towers, tower_width)
        self.activations = tuple(names[i % len(names)] for i in range(num_towers))
        self.split_groups = split_groups
        # Creation order fixes the seeded parameters: towers, norms, (second
        # linears,) mlp -- the defaults must reproduce the original model.
        self.towers = nn.ModuleList(nn.Linear(w, tower_hidden) for w in self.widths)
        self.norms = nn.ModuleList(nn.LayerNorm(tower_hidden) for _ in range(num_towers))
        if tower_depth == 2:
            self.second_towers = nn.ModuleList(
                nn.Linear(tower_hidden, tower_hidden) for _ in range(num_towers)
            )
        self.mlp = mlp((num_towers * tower_hidden, hidden, 1), last_activation=False)
        self._acts = [ACTIVATIONS[name] for name in self.activations]

    @property
    def in_features(self) -> int:
        """The width of the model's input (the sum of the tower widths)."""
        return sum(self.widths)

    def _split_sizes(self, widths: Sequence[int]) -> int | list[int]:
        """The split sizes for towers of `widths`: one int when all towers
        are as wide as an int `tower_width` (as the original model splits),
        else the list of widths."""
        return self.tower_width if isinstance(self.tower_width, int) else list(widths)

    def _towers(self, x: torch.Tensor, first: int, widths: Sequence[int]) -> list[torch.Tensor]:
        """Split `x` into the towers ``first, first + 1, ...`` of `widths`
        and run each tower on its piece."""
        pieces = torch.split(x, self._split_sizes(widths), dim=1)
        outputs = []
        # A Python loop over the pieces of a split: fine for Dynamo, fatal for
        # symbolic_trace (a Proxy cannot be iterated).
        for i, piece in enumerate(pieces, start=first):
            act = self._acts[i]
            y = act(self.norms[i](self.towers[i](piece)))
            if self.tower_depth == 2:
                y = act(self.second_towers[i](y))
            outputs.append(y)
        return outputs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The towers on their pieces of `x`, concatenated, through the MLP: ``[B, 1]``."""
        if self.split_groups == 1:
            return self.mlp(torch.cat(self._towers(x, 0, self.widths), dim=1))
        per_group = self.num_towers // self.split_groups
        group_widths = [
            self.widths[g * per_group : (g + 1) * per_group] for g in range(self.split_groups)
        ]
        groups = torch.split(x, [sum(widths) for widths in group_widths], dim=1)
        group_outputs = [
            torch.cat(self._towers(group, g * per_group, widths), dim=1)
            for g, (group, widths) in enumerate(zip(groups, group_widths))
        ]
        return self.mlp(torch.cat(group_outputs, dim=1))


def make_recsys_model(
    num_towers: int = 8,
    tower_width: int | Sequence[int] = 16,
    hidden: int = 64,
    batch: int = 32,
    seed: int = 0,
    *,
    tower_hidden: int | None = None,
    activations: Sequence[str] = ("tanh", "relu"),
    tower_depth: int = 1,
    split_groups: int = 1,
) -> tuple[RecsysModel, tuple[torch.Tensor]]:
    """Build a seeded `RecsysModel` in eval mode and an example input.

    Args:
        num_towers: number of parallel towers (the width Optimus fuses over).
        tower_width: features per tower (the split size and linear input
            width): one int, or a sequence cycled over the towers.
        hidden: width of the MLP's hidden layer.
        batch: batch size of the example input.
        seed: seeds both the parameters and the example input, so two calls
            with the same arguments give identical models and inputs.
        tower_hidden: output width of every tower's linear (and layer norm);
            None means `tower_width`, which must then be an int.
        activations: activation names cycled over the towers (`ACTIVATIONS`).
        tower_depth: 1, or 2 for a second linear + activation per tower.
        split_groups: split the input into this many equal groups of towers
            first, each group into its towers, and concatenate per group and
            then the groups (a divisor of `num_towers`; 1: one flat split).
            The parameters and the outputs do not depend on it.

    Returns:
        ``(model, (x,))`` with ``x`` of shape ``[batch, model.in_features]``
        (`seeded_example`: the caller's random numbers stay as they were).
    """

    def build() -> RecsysModel:
        return RecsysModel(
            num_towers,
            tower_width,
            hidden,
            tower_hidden=tower_hidden,
            activations=activations,
            tower_depth=tower_depth,
            split_groups=split_groups,
        )

    return seeded_example(seed, build, lambda model: (torch.randn(batch, model.in_features),))


def main() -> None:
    from optimus_ir.translate.exporter import export_graph
    from optimus_ir.translate.importer import import_graph

    model, inputs = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=4)
    gm, _guards = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)
    imported = import_graph(gm)
    print(imported.module)
    rebuilt = export_graph(imported)
    torch.testing.assert_close(rebuilt(*inputs), gm(*inputs), rtol=0, atol=0)
    print("round trip: outputs identical")


if __name__ == "__main__":
    main()
