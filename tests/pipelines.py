"""Pipelines the tests share."""

from __future__ import annotations

from typing import Any

import torch

from optimus_ir.passes.registry import DEFAULT_PIPELINE_STAGES

FUSE_ALL = ",".join(
    "batch-fusion{cost-model=none}" if stage == "batch-fusion" else stage for stage in DEFAULT_PIPELINE_STAGES
)
"""The default pipeline with every group the search finds fused, whatever
the cost model says: small test models still fuse, and under torch.compile
(where parameters are graph inputs, their stacks priced as per-call copies)
the default cost model would decline most groups."""

TRITON_FUSE_ALL = FUSE_ALL.replace("lower-batch", "lower-batch{kernels=triton}", 1)
"""FUSE_ALL with the batch ops lowered to the Triton kernels
(`torch.ops.optimus.*`); on a CPU they run the reference unless
`OPTIMUS_TRITON_ON_CPU=1` and `TRITON_INTERPRET=1` send them to Triton's
interpreter."""


def dynamo_graph(model: torch.nn.Module, *inputs: Any) -> tuple[torch.fx.GraphModule, list[Any]]:
    """The graph (and example inputs) Dynamo hands a backend for `model`,
    captured under no_grad (Dynamo's caches reset first)."""
    captured: list[tuple[torch.fx.GraphModule, list[Any]]] = []

    def capture(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        captured.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=capture)(*inputs)
    assert len(captured) == 1
    return captured[0]
