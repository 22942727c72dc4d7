"""A multi-gate mixture-of-experts (MMoE) multi-task ranking model, seeded.

Multi-task rankers (Ma et al., KDD 2018) predict several labels at once
(click, like, share, ...). ``experts`` expert MLPs all read the shared input;
every task has its own softmax gate over the experts, mixes the expert
outputs with its gate's weights, and feeds the mixture to its own tower::

                         x: [B, features]
       +-----------+--------+------------+------------------+
       |           |                     |                  |
    expert_0    expert_1   ...      expert_{E-1}      gate_k = softmax(Linear(x))
    (linear -> relu) per expert_hidden width             [B, E], one per task
       |           |                     |                  |
       +-----------+---------------------+                  |
                   |                                        |
                 stack(dim=1)   [B, E, H]                   |
                   |                                        |
         per task k: sum(stack * gate_k[..., None], dim=1) -+   [B, H]
                   |
         tower_k: linear(H, tower_hidden) -> relu -> linear(1) -> sigmoid
                   |
                 cat over the tasks   [B, tasks]

What Optimus-style fusion should do with it: everything here is wide. The
E experts' linears at each depth form one group (same input and weight
shapes; at depth 0 they even share their input), and so do their ReLUs; the
``tasks`` gate linears and softmaxes, the mixing multiplies and sums, and
each layer of the task towers are groups of ``tasks`` equal members. Batch
fusion turns each group into one batched op, and the stack of the expert
outputs should read the batched result directly.

What optimus-ir does today: the expert, mixing and tower groups fuse (the
small gate group only where the cost model finds it profitable); softmax
and the per-task ``sum`` are not batch-fusion candidates, so the batched
multiply is unpacked for the sums and restacked for the towers, and the
expert stack stays an ``unbind`` -> ``stack(dim=1)`` of the batched result.
At the default sizes the graph still ends with fewer call ops; with 4
experts and 3 tasks that plumbing outweighs the saving
(tests/test_example_models.py records it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from optimus_ir.examples.builders import mlp, seeded_example

__all__ = ["MMoE", "make_mmoe_model"]


class MMoE(nn.Module):
    """`experts` shared expert MLPs, one softmax gate and one tower per task.

    ``forward(x)`` with ``x`` ``[B, features]`` returns the per-task
    probabilities ``[B, tasks]`` (column ``k`` is task ``k``).

    Args:
        features: width of the shared input.
        experts: number of expert MLPs.
        tasks: number of tasks (gates and towers).
        expert_hidden: widths of each expert's linears.
        tower_hidden: hidden width of each task tower.

    Attributes:
        experts: one ``Linear -> ReLU`` stack per expert (``expert_hidden``
            widths); each outputs ``expert_hidden[-1]`` features.
        gates: one ``nn.Linear(features, experts)`` per task (softmax-ed in
            forward).
        towers: one ``Linear(expert_hidden[-1], tower_hidden) -> ReLU ->
            Linear(tower_hidden, 1)`` per task.
    """

    def __init__(
        self,
        features: int = 64,
        experts: int = 8,
        tasks: int = 4,
        expert_hidden: Sequence[int] = (64, 32),
        tower_hidden: int = 16,
    ) -> None:
        super().__init__()
        widths = tuple(int(w) for w in expert_hidden)
        if not widths:
            raise ValueError("expert_hidden needs at least one width")
        if experts < 1 or tasks < 1:
            raise ValueError(f"need at least one expert and one task, got {experts} and {tasks}")
        self.features = features
        self.num_experts = experts
        self.num_tasks = tasks
        # Creation order fixes the seeded parameters: experts, gates, towers.
        self.experts = nn.ModuleList(
            mlp((features, *widths), last_activation=True) for _ in range(experts)
        )
        self.gates = nn.ModuleList(nn.Linear(features, experts) for _ in range(tasks))
        self.towers = nn.ModuleList(
            mlp((widths[-1], tower_hidden, 1), last_activation=False) for _ in range(tasks)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The probability of every task, ``[B, tasks]``."""
        expert_out = torch.stack([expert(x) for expert in self.experts], dim=1)  # [B, E, H]
        logits = []
        for gate, tower in zip(self.gates, self.towers):
            weights = torch.softmax(gate(x), dim=-1).unsqueeze(-1)  # [B, E, 1]
            mixed = (expert_out * weights).sum(dim=1)  # [B, H]
            logits.append(tower(mixed))
        return torch.sigmoid(torch.cat(logits, dim=1))


def make_mmoe_model(batch: int = 64, seed: int = 0, **sizes: Any) -> tuple[MMoE, tuple[torch.Tensor]]:
    """Build a seeded `MMoE` in eval mode and an example input
    (`seeded_example`: the caller's random numbers stay as they were).

    Args:
        batch: batch size of the example input.
        seed: seeds the parameters, then the input: two calls with the
            same arguments give identical models and inputs.
        **sizes: keyword arguments of `MMoE` (``features``, ``experts``,
            ``tasks``, ``expert_hidden``, ``tower_hidden``).

    Returns:
        ``(model, (x,))`` with ``x`` ``[batch, features]`` float32.
    """
    return seeded_example(seed, lambda: MMoE(**sizes), lambda model: (torch.randn(batch, model.features),))
