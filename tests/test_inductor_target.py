"""Batch fusion priced for Inductor (issue 23): `batch-fusion{target=inductor}`,
which the torch.compile backend sets when Inductor runs the result, and
`freeze=True` under Inductor folding the stacked weights into constants.

The graphs are the ones Dynamo hands the backend (parameters lifted to graph
inputs), optimized with `optimize_dynamo_graph` as the backend does, without
running Inductor except where its output code is the point (freezing)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import torch

import optimus_ir
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model
from optimus_ir.backend import optimize_dynamo_graph, pipeline_for_target
from optimus_ir.analysis.cost_model import INDUCTOR_COSTS, default_cost_model
from optimus_ir.options import OptimizeOptions
from optimus_ir.passes.registry import DEFAULT_PIPELINE
from optimus_ir.pipeline import parse_pipeline
from pipelines import dynamo_graph


def _batch_fusion(text: str | None) -> Any:
    passes = [p for p in parse_pipeline(DEFAULT_PIPELINE if text is None else text) if p.name == "batch-fusion"]
    assert len(passes) == 1
    return passes[0]


def test_the_backend_prices_for_its_inner_compiler() -> None:
    assert pipeline_for_target(None, "eager") is None
    inductor = _batch_fusion(pipeline_for_target(None, "inductor"))
    assert (inductor.target, inductor.constant_parameters) == ("inductor", False)
    frozen = _batch_fusion(pipeline_for_target(None, "inductor", frozen=True))
    assert (frozen.target, frozen.constant_parameters) == ("inductor", True)
    # the other options of a given pipeline are kept
    kept = _batch_fusion(pipeline_for_target("batch-fusion{min-size=3},lower-batch", "inductor"))
    assert (kept.target, kept.min_size) == ("inductor", 3)


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(Exception, match="target"):
        optimus_ir.optimize(*_small_model(), pipeline="raise-fx,batch-fusion{target=\"tpu\"},lower-batch,lower-to-fx")


def _small_model() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return make_recsys_model(num_towers=8, batch=64, **VARIANTS["mixed"])


def _outcome(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], **options: Any) -> tuple[Any, Any]:
    gm, example_inputs = dynamo_graph(model, *inputs)
    optimized, outcome = optimize_dynamo_graph(
        gm, example_inputs, OptimizeOptions(**options), cache_parameters=options.get("inner") == "eager"
    )
    assert outcome.optimized, outcome.reason
    with torch.no_grad():
        torch.testing.assert_close(optimized(*example_inputs)[0], model(*inputs), rtol=1e-5, atol=1e-6)
    return optimized, outcome


def test_groups_that_do_not_pay_under_inductor_are_declined_with_the_target_named() -> None:
    """8 mixed towers: under Inductor the restack of 8 extern matmul outputs
    and the 8-input weight concatenations Inductor generates cost more than
    7 kernel calls (on the reference machine's calibration the eager
    pricing fused them, and the result measured 0.65-0.93x of Inductor)."""
    model, inputs = _small_model()
    _inductor, inductor = _outcome(model, inputs)
    messages = [r.message for r in inductor.report.remarks]
    declined = [m for m in messages if "torch.layer_norm" in m and "not fused: unprofitable" in m]
    assert declined and all("target inductor:" in m for m in declined), messages
    assert not any(m.startswith("batch-fusion: fused") and "layer_norm" in m for m in messages)


@pytest.mark.slow  # Inductor compile (make test-all, CI)
def test_wide_groups_still_fuse_under_inductor() -> None:
    """64 uniform towers: the linears (extern calls under Inductor) fuse,
    and the activations on their stacked results stay stacked (copy-free
    pointwise groups). (The layer norms are marginal with the tests' default
    constants; calibrated on the reference machine they fuse too.)"""
    model, inputs = make_recsys_model(num_towers=64, batch=64, **VARIANTS["uniform"])
    _optimized, outcome = _outcome(model, inputs)
    fused = [r.message for r in outcome.report.remarks if r.message.startswith("batch-fusion: fused")]
    assert any("batch.linear" in m for m in fused)
    assert any("batch.pointwise" in m and "copies nothing" in m for m in fused)
    assert all("target inductor:" in m for m in fused)


def test_inductor_pricing_of_pointwise_groups() -> None:
    """Under Inductor a pointwise op costs its data wherever it runs: a
    copy-free group gains only the fused-op tie-breaker, never a call."""
    model = default_cost_model("cpu")
    costs = INDUCTOR_COSTS["cpu"]
    assert costs.fused_op_s < costs.kernel_call_s
    assert model.data_seconds("pointwise", 64 * 2048) == pytest.approx(64 * model.data_seconds("pointwise", 2048))
    assert model.data_seconds("stack", 0) >= 0


@pytest.mark.slow
def test_freeze_under_inductor_folds_the_weight_stacks() -> None:
    """`freeze=True`: the compiled code takes the input only (parameters
    and every stack of them are constants) and computes what eager does."""
    from torch._inductor.utils import run_and_get_code

    model, (x,) = make_recsys_model(num_towers=16, batch=64, **VARIANTS["uniform"])
    backend = optimus_ir.backend(freeze=True)
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(copy.deepcopy(model), backend=backend)
        out, codes = run_and_get_code(compiled, x)
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    code = "\n".join(codes)
    header = re.search(r"def call\(self, args\):\n\s*(.*?) = args", code)
    assert header is not None
    assert len([a for a in header.group(1).split(",") if a.strip()]) == 1, header.group(1)
    assert "optimus.stack" not in code
    assert backend.outcomes[0].fusions > 0


def test_inference_graphs_get_the_stack_without_autograd() -> None:
    """Compiled under no_grad (Dynamo guards on grad mode), wide stacks of
    graph inputs become `optimus.stack_inference` (no Python autograd
    kernel per call); with grad on, the differentiable `optimus.stack`."""
    from optimus_ir.inductor_handoff import (
        INFERENCE_STACK_TARGET,
        OPAQUE_STACK_TARGET,
        make_wide_input_stacks_opaque,
    )

    model, inputs = make_recsys_model(num_towers=16, batch=8, **VARIANTS["uniform"])
    for inference, target in ((True, INFERENCE_STACK_TARGET), (False, OPAQUE_STACK_TARGET)):
        gm, example_inputs = dynamo_graph(model, *inputs)
        optimized, _outcome = optimize_dynamo_graph(gm, example_inputs, OptimizeOptions(), cache_parameters=False)
        assert make_wide_input_stacks_opaque(optimized, inference=inference) > 0
        targets = {node.target for node in optimized.graph.nodes}
        assert target in targets and ({INFERENCE_STACK_TARGET, OPAQUE_STACK_TARGET} - {target}).isdisjoint(targets)
        with torch.no_grad():
            torch.testing.assert_close(optimized(*example_inputs)[0], model(*inputs), rtol=1e-5, atol=1e-6)
    torch.library.opcheck(INFERENCE_STACK_TARGET, ([torch.randn(3, 4) for _ in range(10)], 1),
                          test_utils=("test_schema", "test_faketensor"))


def test_a_graph_the_pipeline_leaves_alone_goes_to_inductor_as_dynamo_made_it() -> None:
    """Nothing fused, nothing rewritten: Inductor gets Dynamo's graph itself
    (its code is then exactly Inductor alone's: never slower)."""
    received: list[torch.fx.GraphModule] = []
    import torch._inductor.compile_fx as compile_fx_module

    class Tiny(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) * 2

    original = compile_fx_module.compile_fx

    def spy(gm: torch.fx.GraphModule, inputs: Any, **kw: Any) -> Any:
        received.append(gm)
        return gm.forward

    backend = optimus_ir.backend()
    torch._dynamo.reset()
    compile_fx_module.compile_fx = spy
    try:
        x = torch.randn(4, 4)
        with torch.no_grad():
            torch.testing.assert_close(torch.compile(Tiny(), backend=backend)(x), torch.relu(x) * 2)
    finally:
        compile_fx_module.compile_fx = original
    outcome = backend.outcomes[0]
    assert outcome.optimized and outcome.unchanged and outcome.fusions == 0
    assert len(received) == 1 and "dynamo_compile_id" in received[0].meta


def test_irregular_parts_of_a_stack_are_a_gather() -> None:
    """A pointwise group's operand that is a part of one earlier stack is a
    view when it is a strided slice of it, a gather when it is not (then
    the Inductor target prices the regather of its results)."""
    from optimus_ir.passes.batch_fusion import _part_of_a_stack, _Provenance

    values = [object() for _ in range(6)]
    provenance = _Provenance()
    provenance.record(values)  # type: ignore[arg-type]
    assert not _part_of_a_stack([values], provenance)  # the whole stack
    assert not _part_of_a_stack([values[0::2]], provenance)  # every other member: a strided slice
    assert not _part_of_a_stack([[values[4], values[1]]], provenance)  # two members: always a slice
    assert _part_of_a_stack([[values[0], values[1], values[3]]], provenance)


@pytest.mark.slow  # Inductor compile (make test-all, CI)
def test_activations_cycled_over_mixed_widths_are_not_fused_as_gathers() -> None:
    """recsys-activations-64 (five activations cycled over towers of three
    widths): activation groups that would read an irregular part of a fused
    linear's or layer norm's stack are declined under Inductor (measured:
    0.95x of Inductor alone with them fused, 1.07x after); the regular
    parts of uniform-64 (tanh/relu on every other tower) still fuse."""
    model, inputs = make_recsys_model(
        num_towers=64, batch=64, **{**VARIANTS["mixed"], "activations": ("tanh", "relu", "sigmoid", "gelu", "silu")}
    )
    _optimized, outcome = _outcome(model, inputs)
    messages = [r.message for r in outcome.report.remarks]
    declined = [m for m in messages if "torch.gelu" in m and "not fused: unprofitable: target inductor:" in m]
    assert declined, messages
    assert any(m.startswith("batch-fusion: fused") and "batch.linear" in m for m in messages)
    uniform, uniform_inputs = make_recsys_model(num_towers=64, batch=64, **VARIANTS["uniform"])
    _optimized, outcome = _outcome(uniform, uniform_inputs)
    fused = [r.message for r in outcome.report.remarks if r.message.startswith("batch-fusion: fused")]
    assert any("32 torch.tanh" in m for m in fused), fused
