"""Distributed training with optimus-ir, two processes on gloo (issue 34,
required 7; the cases are in tests/distributed_cases.py):

* DDP with small buckets under `torch.compile(ddp, backend=optimus)`:
  DDPOptimizer splits Dynamo's graph per bucket and hands the backend each
  piece; groups are fused inside the bucket subgraphs (named apart in the
  backend's outcomes: `0/0 submod_1`), and after 5 SGD steps the parameters
  equal DDP eager's within fp32 tolerance, on both ranks alike; with the
  optimized subgraphs run as they are (`inner="eager"`) and compiled by
  Inductor (the default);
* FSDP2 (`fully_shard`) under `torch.compile(backend=optimus)`: the full
  parameters equal FSDP2 eager's;
* `DDP(optimize(model))`: equal to `DDP(model)` eager, and its
  `ddp.module.state_dict()` (the model's names) loads into a fresh model and
  into a fresh optimized module.

The two processes are spawned once for the module (a few seconds each to
start), on a free port of 127.0.0.1, and run every case."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import distributed_cases

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
        reason="torch.distributed with gloo is not built",
    ),
]

WORLD_SIZE = 2
TIMEOUT_S = 600
TOLERANCE = {"rtol": 1.3e-6, "atol": 1e-5}
"""fp32: the fused and the per-tower matmuls sum in other orders."""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Every case's result on each rank (`distributed_cases.run_cases`)."""
    import torch.multiprocessing as mp

    out = tmp_path_factory.mktemp("distributed")
    names = list(distributed_cases.CASES)
    context = mp.start_processes(
        distributed_cases.run_cases,
        args=(WORLD_SIZE, distributed_cases.free_port(), str(out), names),
        nprocs=WORLD_SIZE,
        join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while not context.join(timeout=5):
            if time.monotonic() > deadline:
                raise AssertionError(f"the {WORLD_SIZE} processes did not finish in {TIMEOUT_S} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
    return {
        name: [_read(out / f"{name}-{rank}.json") for rank in range(WORLD_SIZE)] for name in names
    }


def _read(path: Path) -> dict[str, Any]:
    assert path.exists(), f"{path.name}: the case did not finish"
    result = json.loads(path.read_text())
    assert result["ok"], f"{path.name}:\n{result.get('error')}"
    return result


def _assert_trained_alike(ranks: list[dict[str, Any]]) -> None:
    """Both ranks equal the eager reference and each other (the gradients
    were reduced across ranks)."""
    for rank, result in enumerate(ranks):
        assert result["difference"] <= TOLERANCE["atol"], (rank, result["difference"])
    assert ranks[0]["checksum"] == pytest.approx(ranks[1]["checksum"], rel=1e-9)


@pytest.mark.parametrize("case", ["ddp_compiled", "ddp_compiled_inductor"], ids=["eager", "inductor"])
def test_ddp_compiled_fuses_inside_bucket_subgraphs(results, case: str) -> None:
    ranks = results[case]
    _assert_trained_alike(ranks)
    for result in ranks:
        outcomes = result["outcomes"]
        names = [o["name"] for o in outcomes]
        assert len(set(names)) == len(names), names  # every subgraph named apart
        buckets = [o for o in outcomes if o["subgraph"] is not None]
        assert len(buckets) >= distributed_cases.STAGES, names  # DDPOptimizer split the graph per bucket
        assert [o["subgraph"] for o in buckets] == [f"submod_{i}" for i in range(len(buckets))]
        fused = [o for o in buckets if o["fusions"] > 0 and o["ops_after"] < o["ops_before"]]
        assert len(fused) >= distributed_cases.STAGES, outcomes  # each stage's towers, in its bucket


def test_fsdp2_compiled_matches_fsdp2_eager(results) -> None:
    ranks = results["fsdp2_compiled"]
    _assert_trained_alike(ranks)
    for result in ranks:
        assert any(o["fusions"] > 0 for o in result["outcomes"]), result["outcomes"]


def test_ddp_of_optimized_trains_like_ddp_and_its_checkpoint_loads(results) -> None:
    ranks = results["ddp_of_optimized"]
    _assert_trained_alike(ranks)
    for result in ranks:
        assert result["state_names_are_the_models"]
        assert result["loaded_state_difference"] == 0.0
        assert result["loaded_output_difference"] <= TOLERANCE["atol"]
        assert result["own_state_unchanged"]  # DDP changed nothing on the module: the fast reads stayed


needs_torchrec = pytest.mark.skipif(
    "torchrec_sharded" not in distributed_cases.CASES, reason="torchrec is not installed"
)


@needs_torchrec
def test_torchrec_dlrm_sharded_runs_under_the_backend(results) -> None:
    """`DistributedModelParallel(DLRM)` on the CPU compiles with the backend
    and computes what it computes eagerly; Dynamo breaks its graph at the
    sharded embedding bags' collectives, and the pieces hold nothing to
    fuse (docs/using-on-your-model.md, 'Distributed training')."""
    for result in results["torchrec_sharded"]:
        assert result["difference"] <= TOLERANCE["atol"]
        outcomes = result["outcomes"]
        assert len(outcomes) > 1
        assert all(o["optimized"] or o["ops_before"] == 0 for o in outcomes), outcomes  # nothing failed
        assert sum(o["fusions"] for o in outcomes) == 0


@needs_torchrec
def test_torchrec_dlrm_compiles_as_one_graph_under_the_backend() -> None:
    """Unsharded, TorchRec's DLRM is one Dynamo graph (recompiled once): the backend removes
    the split/cat plumbing around the embedding bags' outputs (no batch
    fusion: the embedding bags are TorchRec's own fused op, the MLPs are
    chains); training steps equal eager ones. `optimize()` takes it too (its
    capture is torch.compile's), and equals the model on the batch."""
    import copy

    import optimus_ir

    model, inputs = distributed_cases.make_dlrm(torch.device("cpu"))
    reference = copy.deepcopy(model)
    backend = optimus_ir.backend(inner="eager")
    compiled = torch.compile(model, backend=backend)
    for module, parameters in ((compiled, model.parameters()), (reference, reference.parameters())):
        optimizer = torch.optim.SGD(list(parameters), lr=0.1)
        for step in range(3):
            optimizer.zero_grad()
            module(*inputs).square().mean().backward()
            optimizer.step()
    for ours, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, **TOLERANCE)
    # one graph (and one recompile, once the KeyedJaggedTensor has cached its offsets)
    assert 1 <= len(backend.outcomes) <= 2
    for outcome in backend.outcomes:
        assert outcome.optimized and outcome.rewrites > 0 and outcome.ops_after < outcome.ops_before
        assert outcome.fusions == 0
    optimized = optimus_ir.optimize(reference, inputs)
    with torch.no_grad():
        torch.testing.assert_close(optimized(*inputs), reference(*inputs), **TOLERANCE)


@needs_torchrec
def test_torchrec_dlrm_optimizes_on_keyed_jagged_tensors_without_synced_lengths() -> None:
    """A KeyedJaggedTensor built from values and lengths alone (as a data
    loader makes it) has its per-key lengths computed in the graph with
    `.item()`: the capture imports (Dynamo leaves the values before each
    `.item()` without metadata; the importer computes them in Dynamo's fake
    mode, strict=True raises otherwise), and each later batch equals the model."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    import optimus_ir

    def unsynced(batch: tuple[Any, Any]) -> tuple[Any, Any]:
        dense, sparse = batch
        return dense, KeyedJaggedTensor(keys=sparse.keys(), values=sparse.values(), lengths=sparse.lengths())

    model, inputs = distributed_cases.make_dlrm(torch.device("cpu"))
    model.eval()
    optimized = optimus_ir.optimize(model, unsynced(inputs), strict=True)
    with torch.no_grad():
        for seed in (1, 2, 3):
            batch = unsynced(distributed_cases.make_dlrm(torch.device("cpu"), seed=seed)[1])
            want = model(*unsynced(distributed_cases.make_dlrm(torch.device("cpu"), seed=seed)[1]))
            torch.testing.assert_close(optimized(*batch), want, **TOLERANCE)
