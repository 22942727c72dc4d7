"""The cases of tests/test_distributed.py, run in each of the processes it
spawns (a module of its own: `torch.multiprocessing` imports it in every
child, and the test module's fixtures need not come along).

Every case trains the same model two ways on one gloo process group, from
the same seed and on the same per-rank data, and records what the parent
asserts (JSON, one file per case and rank): the largest difference between
the two ways' parameters, the backend's outcome per graph (its name, the
groups it fused), and the case's own checks. An exception is recorded with
its traceback, so the parent reports it instead of a bare exit code."""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import socket
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

WIDTH = 512
PIECE = 16
STAGES = 3
BATCH = 32
STEPS = 5
LEARNING_RATE = 0.1
BUCKET_CAP_MB = 1
"""DDP's bucket size: the smallest DDPOptimizer takes (its first bucket is
1 MiB, `torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`, and no bucket may be
smaller); each stage's mixer (512 x 512 fp32) fills one, so the graph is
split in a bucket per stage with the stage's towers in it."""


class Stage(nn.Module):
    """`WIDTH // PIECE` narrow towers (`Linear(PIECE, PIECE)` + ReLU) over the
    pieces of the input, concatenated, then a wide mixer: batch fusion fuses
    the towers; the mixer's 1 MiB of weight makes the stage a DDP bucket."""

    def __init__(self) -> None:
        super().__init__()
        self.towers = nn.ModuleList(nn.Linear(PIECE, PIECE) for _ in range(WIDTH // PIECE))
        self.mixer = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = x.split(PIECE, dim=1)
        h = torch.cat([torch.relu(tower(p)) for tower, p in zip(self.towers, pieces)], dim=1)
        return torch.tanh(self.mixer(h))


class Staged(nn.Module):
    """`STAGES` stages in a row: a small wide model with several DDP buckets."""

    def __init__(self) -> None:
        super().__init__()
        self.stages = nn.ModuleList(Stage() for _ in range(STAGES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for stage in self.stages:
            x = stage(x)
        return x


def make_model(seed: int = 0) -> Staged:
    """The model, seeded the same on every rank, in training mode."""
    torch.manual_seed(seed)
    return Staged().train()


def batches(rank: int, steps: int = STEPS) -> list[torch.Tensor]:
    """This rank's inputs (each rank its own: the gradients must be reduced)."""
    generator = torch.Generator().manual_seed(1000 + rank)
    return [torch.randn(BATCH, WIDTH, generator=generator) for _ in range(steps)]


def train(module: Callable[..., torch.Tensor], parameters: Any, inputs: list[torch.Tensor]) -> None:
    """`len(inputs)` SGD steps of `module` on the mean square of its output."""
    optimizer = torch.optim.SGD(list(parameters), lr=LEARNING_RATE)
    for x in inputs:
        optimizer.zero_grad(set_to_none=True)
        module(x).square().mean().backward()
        optimizer.step()


def max_difference(ours: list[torch.Tensor], theirs: list[torch.Tensor]) -> float:
    assert len(ours) == len(theirs)
    return max(float((a.detach() - b.detach()).abs().max()) for a, b in zip(ours, theirs))


def describe_outcomes(backend: Any) -> list[dict[str, Any]]:
    """What the optimus backend did with each graph it was handed."""
    return [
        {"name": o.name, "subgraph": o.subgraph, "fusions": o.fusions, "ops_before": o.ops_before,
         "ops_after": o.ops_after, "optimized": o.optimized, "line": o.describe()}
        for o in backend.outcomes
    ]


def parameter_checksum(parameters: Any) -> float:
    return float(sum(p.detach().double().sum() for p in parameters))


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------


def ddp_compiled(rank: int, out: Path, inner: str = "eager") -> dict[str, Any]:
    """DDP with buckets of `BUCKET_CAP_MB` under `torch.compile(backend=optimus)`
    (DDPOptimizer hands the backend one subgraph per bucket) against DDP
    eager; the optimized subgraphs run as they are (`inner="eager"`) or go
    on to Inductor (the backend's default)."""
    import optimus_ir
    from torch.nn.parallel import DistributedDataParallel as DDP

    model, reference = make_model(), make_model()
    backend = optimus_ir.backend(inner=inner)
    compiled = torch.compile(DDP(model, bucket_cap_mb=BUCKET_CAP_MB), backend=backend)
    eager = DDP(reference, bucket_cap_mb=BUCKET_CAP_MB)
    inputs = batches(rank)
    train(compiled, model.parameters(), inputs)
    train(eager, reference.parameters(), inputs)
    return {
        "difference": max_difference(list(model.parameters()), list(reference.parameters())),
        "checksum": parameter_checksum(model.parameters()),
        "outcomes": describe_outcomes(backend),
    }


def fsdp2_compiled(rank: int, out: Path) -> dict[str, Any]:
    """FSDP2 (`fully_shard` per stage and at the root) under
    `torch.compile(backend=optimus)` against FSDP2 eager: the full
    (gathered) parameters after the steps."""
    import optimus_ir
    from torch.distributed.fsdp import fully_shard

    model, reference = make_model(), make_model()
    for module in (model, reference):
        for stage in module.stages:
            fully_shard(stage)
        fully_shard(module)
    backend = optimus_ir.backend(inner="eager")
    compiled = torch.compile(model, backend=backend)
    inputs = batches(rank)
    train(compiled, model.parameters(), inputs)
    train(reference, reference.parameters(), inputs)
    full = [p.full_tensor() for p in model.parameters()]
    full_reference = [p.full_tensor() for p in reference.parameters()]
    return {
        "difference": max_difference(full, full_reference),
        "checksum": parameter_checksum(full),
        "outcomes": describe_outcomes(backend),
    }


def ddp_of_optimized(rank: int, out: Path) -> dict[str, Any]:
    """`DDP(optimize(model))` against `DDP(model)` eager, then a checkpoint
    round trip: rank 0 saves `ddp.module.state_dict()`; every rank loads it
    into a fresh model and into a fresh optimized module."""
    import optimus_ir
    from torch.nn.parallel import DistributedDataParallel as DDP

    model, reference = make_model(), make_model()
    inputs = batches(rank)
    optimized = optimus_ir.optimize(model, (inputs[0],))
    ddp = DDP(optimized)
    train(ddp, ddp.parameters(), inputs)
    train(DDP(reference), reference.parameters(), inputs)
    checkpoint = out / "ddp-of-optimized.pt"
    if rank == 0:
        torch.save(ddp.module.state_dict(), checkpoint)
    dist.barrier()
    state = torch.load(checkpoint, weights_only=True)
    fresh = make_model(seed=123)
    fresh.load_state_dict(state)  # strict: every name is the model's
    other = make_model(seed=321)
    fresh_optimized = optimus_ir.optimize(other, (inputs[0],))
    fresh_optimized.load_state_dict(state)
    x = batches(rank + 7, steps=1)[0]
    with torch.no_grad():
        expected = reference(x)
        outputs = [fresh(x), fresh_optimized(x), ddp.module(x)]
    return {
        "difference": max_difference(list(model.parameters()), list(reference.parameters())),
        "checksum": parameter_checksum(model.parameters()),
        "state_names_are_the_models": list(state) == list(model.state_dict()),
        "loaded_state_difference": max_difference(list(fresh.state_dict().values()), list(model.state_dict().values())),
        "loaded_output_difference": max(float((o - expected).abs().max()) for o in outputs),
        "groups_fused": optimized.optimus_report.groups_fused,
        "own_state_unchanged": not optimized.__dict__["_optimus_own_state"].changed,
    }


def ddp_compiled_inductor(rank: int, out: Path) -> dict[str, Any]:
    """`ddp_compiled` with the backend's default: Inductor compiles each
    optimized bucket subgraph (forward and backward)."""
    return ddp_compiled(rank, out, inner="inductor")


def make_dlrm(device: torch.device, batch: int = 16, seed: int = 0) -> tuple[nn.Module, tuple[Any, Any]]:
    """TorchRec's DLRM (8 tables of 16-wide embedding bags, dense MLP 13 ->
    32 -> 16, over MLP -> 1) and a batch of dense features and a
    KeyedJaggedTensor of sparse ids (`seed`: the batch)."""
    from torchrec.models.dlrm import DLRM
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    torch.manual_seed(0)
    features = [f"f{i}" for i in range(8)]
    tables = [
        EmbeddingBagConfig(name=f"t{i}", embedding_dim=16, num_embeddings=100, feature_names=[name])
        for i, name in enumerate(features)
    ]
    model = DLRM(
        embedding_bag_collection=EmbeddingBagCollection(tables=tables, device=device),
        dense_in_features=13,
        dense_arch_layer_sizes=[32, 16],
        over_arch_layer_sizes=[32, 1],
    )
    generator = torch.Generator().manual_seed(seed)
    dense = torch.randn(batch, 13, generator=generator)
    lengths = torch.randint(1, 3, (len(features) * batch,), generator=generator)
    values = torch.randint(0, 100, (int(lengths.sum()),), generator=generator)
    sparse = KeyedJaggedTensor.from_lengths_sync(keys=features, values=values, lengths=lengths)
    return model, (dense, sparse)


def torchrec_sharded(rank: int, out: Path) -> dict[str, Any]:
    """TorchRec's DLRM sharded by `DistributedModelParallel` on the CPU under
    `torch.compile(backend=optimus)`: forward and backward against the same
    sharded model run eagerly."""
    import optimus_ir
    from torchrec.distributed.model_parallel import DistributedModelParallel

    model, inputs = make_dlrm(torch.device("meta"), seed=rank)
    sharded = DistributedModelParallel(module=model, device=torch.device("cpu"))
    expected = sharded(*inputs)
    backend = optimus_ir.backend(inner="eager")
    compiled = torch.compile(sharded, backend=backend)
    output = compiled(*inputs)
    output.sum().backward()
    return {
        "difference": float((output.detach() - expected.detach()).abs().max()),
        "checksum": 0.0,
        "outcomes": describe_outcomes(backend),
    }


CASES: dict[str, Callable[[int, Path], dict[str, Any]]] = {
    "ddp_compiled": ddp_compiled,
    "ddp_compiled_inductor": ddp_compiled_inductor,
    "fsdp2_compiled": fsdp2_compiled,
    "ddp_of_optimized": ddp_of_optimized,
}
if importlib.util.find_spec("torchrec") is not None:  # installed by `make` with the third-party models
    CASES["torchrec_sharded"] = torchrec_sharded


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the rendezvous of the process group)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_cases(rank: int, world_size: int, port: int, out: str, names: list[str]) -> None:
    """One process: join the gloo group, run each case (torch.compile's
    caches reset between them), write each case's result."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    directory = Path(out)
    # a case that fails on one rank must not leave the other waiting for 30 minutes
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=120))
    try:
        for name in names:
            torch._dynamo.reset()  # noqa: SLF001 - each case compiles from scratch
            try:
                result = {"ok": True, **CASES[name](rank, directory)}
            except Exception:  # noqa: BLE001 - reported by the parent
                result = {"ok": False, "error": traceback.format_exc()}
            (directory / f"{name}-{rank}.json").write_text(json.dumps(result, indent=1))
            dist.barrier()
    finally:
        dist.destroy_process_group()
