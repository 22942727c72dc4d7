"""Lowering forms per target (issue 23): `lower-batch{target=inductor}`
lowers a small layer norm whose parameters are graph inputs per member and
keeps the rest batched (`optimus_ir.analysis.cost_model.layer_norm_lowering`,
`linear_lowering`), with a remark per lowered op.

The graphs are the ones Dynamo hands the torch.compile backend (parameters
lifted to graph inputs), optimized as the backend does for Inductor
(`optimize_dynamo_graph`, which sets both passes' target) with every group
fused (`cost-model=none`: the forms are the point, not the pricing), then
run on the real inputs against the model."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from optimus_ir.backend import optimize_dynamo_graph, pipeline_for_target
from optimus_ir.analysis.cost_model import (
    INDUCTOR_PER_MEMBER_LAYER_NORM_MAX,
    LoweringForm,
    layer_norm_lowering,
    linear_lowering,
)
from optimus_ir.options import OptimizeOptions
from pipelines import dynamo_graph
from optimus_ir.pipeline import parse_pipeline

PIPELINE = (
    "raise-fx,canonicalize,split-cat-simplify,batch-fusion{cost-model=none},"
    "lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
)


class Towers(torch.nn.Module):
    """`n` towers on one input: linear -> layer norm -> relu, concatenated."""

    def __init__(self, n: int, dim: int = 16) -> None:
        super().__init__()
        self.linears = torch.nn.ModuleList(torch.nn.Linear(dim, dim) for _ in range(n))
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(dim) for _ in range(n))
        with torch.no_grad():  # affine parameters that differ per member
            for norm in self.norms:
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat([torch.relu(norm(lin(x))) for x, lin, norm in zip(xs, self.linears, self.norms)], dim=1)


def _optimized(n: int, inner: str) -> tuple[torch.fx.GraphModule, list[str]]:
    """The `n`-tower model optimized for `inner`, checked against the model
    on its inputs; the optimized graph and the remarks."""
    torch.manual_seed(0)
    model = Towers(n).eval()
    xs = [torch.randn(8, 16) for _ in range(n)]
    gm, example_inputs = dynamo_graph(model, xs)
    optimized, outcome = optimize_dynamo_graph(
        gm, example_inputs, OptimizeOptions(pipeline=PIPELINE, inner=inner, strict=True), cache_parameters=False,
    )
    assert outcome.optimized, outcome.reason
    with torch.no_grad():
        torch.testing.assert_close(optimized(*example_inputs)[0], model(xs), rtol=1e-5, atol=1e-5)
    return optimized, [r.message for r in outcome.report.remarks]


def _layer_norms(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and "layer_norm" in str(n.target)]


def test_a_small_layer_norm_of_input_parameters_is_lowered_per_member_under_inductor() -> None:
    optimized, remarks = _optimized(4, "inductor")
    norms = _layer_norms(optimized)
    assert len(norms) == 4  # one per member, each with its own weight and bias
    assert all(len(node.args) + len(node.kwargs) >= 3 for node in norms), [n.format_node() for n in norms]
    assert any("target inductor: layer norm of 4 members lowered per member" in m for m in remarks), remarks
    assert any("target inductor: linear of 4 members lowered batched (baddbmm)" in m for m in remarks), remarks


def test_a_wide_layer_norm_stays_batched_under_inductor() -> None:
    n = INDUCTOR_PER_MEMBER_LAYER_NORM_MAX + 2
    optimized, remarks = _optimized(n, "inductor")
    assert len(_layer_norms(optimized)) == 1
    assert any(f"target inductor: layer norm of {n} members lowered batched" in m for m in remarks), remarks


def test_the_eager_target_keeps_the_batched_lowering_without_remarks() -> None:
    optimized, remarks = _optimized(4, "eager")
    assert len(_layer_norms(optimized)) == 1
    assert not any("target inductor" in m for m in remarks), remarks


def test_the_inductor_pipeline_sets_lower_batch_target() -> None:
    passes = [p for p in parse_pipeline(pipeline_for_target(PIPELINE, "inductor")) if p.name == "lower-batch"]
    assert [p.target for p in passes] == ["inductor"]
    assert pipeline_for_target(PIPELINE, "eager") == PIPELINE


@pytest.mark.parametrize(
    ("target", "members", "inputs", "form"),
    [
        ("inductor", 2, True, LoweringForm.PER_MEMBER),
        ("inductor", INDUCTOR_PER_MEMBER_LAYER_NORM_MAX, True, LoweringForm.PER_MEMBER),
        ("inductor", INDUCTOR_PER_MEMBER_LAYER_NORM_MAX + 1, True, LoweringForm.BATCHED),
        ("inductor", 4, False, LoweringForm.BATCHED),  # frozen / constant parameters
        ("eager", 4, True, LoweringForm.BATCHED),
    ],
)
def test_layer_norm_form_choice(target: str, members: int, inputs: bool, form: LoweringForm) -> None:
    choice = layer_norm_lowering(target, members, inputs)  # type: ignore[arg-type]
    assert choice.form is form
    assert choice.remark().startswith(f"target {target}: layer norm of {members} members lowered {form.value}")


def test_linears_stay_batched_for_every_target() -> None:
    for target in ("eager", "inductor"):
        assert linear_lowering(target, 64, "baddbmm").form is LoweringForm.BATCHED  # type: ignore[arg-type]
