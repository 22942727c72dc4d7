"""`match-output-strides` (passes/output_layout.py) is a registered pass that
`optimize()` runs through the pass manager (its record and counter are in
the report), with typed options a `-p` pipeline can spell; the speed check
falls back to the named pipeline `unfused`."""

from __future__ import annotations

import torch
from torch import nn

from optimus_ir.examples.recsys import make_recsys_model
from optimus_ir.api import SPEED_CHECK_FALLBACK, optimize
from optimus_ir.passes.output_layout import RESTORES_ADDED, MatchOutputStrides
from optimus_ir.passes.registry import (
    BATCH_FUSION_STAGES,
    DEFAULT_PIPELINE_STAGES,
    PIPELINES,
    get_pass_class,
)
from optimus_ir.pipeline import parse_pipeline
from pipelines import FUSE_ALL


class TransposedMembers(nn.Module):
    """`sigmoid(tanh(piece).t())`: (1, 4)-strided in eager; fused, each member
    is a row of a contiguous stack, so the outputs need a restore."""

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.sigmoid(torch.tanh(p).t()) for p in x.split(4, dim=1)]


def test_the_pass_is_registered_with_text_options() -> None:
    assert get_pass_class("match-output-strides") is MatchOutputStrides
    expected = ((4, 1), None, (1, 6))
    built = MatchOutputStrides.expecting(expected, rewritten=False)
    assert (built.ranks, built.strides, built.rewritten) == ((2, -1, 2), (4, 1, 1, 6), False)
    assert built.expected() == expected
    (parsed,) = parse_pipeline("match-output-strides{ranks=2,-1,2 strides=4,1,1,6 rewritten=false}")
    assert parsed == built


def test_optimize_runs_the_pass_through_the_pass_manager() -> None:
    model, x = TransposedMembers(), torch.randn(4, 16)
    gm = optimize(model, (x,), pipeline=FUSE_ALL)
    (record,) = gm.optimus_report.statistics.by_pass("match-output-strides")
    assert record.counters[RESTORES_ADDED] == 4  # one per transposed member
    with torch.no_grad():
        for got, want in zip(gm(x), model(x)):
            # two ulps: ATen's tanh/sigmoid differ by an ulp between its
            # vector lanes and its scalar loop, which the layouts choose
            torch.testing.assert_close(got, want, rtol=2.5e-7, atol=0)
            assert got.stride() == want.stride()


def test_the_unfused_pipeline_is_the_default_without_batch_fusion() -> None:
    assert SPEED_CHECK_FALLBACK == "unfused"
    stages = [p.name for p in parse_pipeline("unfused")]
    assert stages == [s for s in DEFAULT_PIPELINE_STAGES if s not in BATCH_FUSION_STAGES]
    assert "batch-fusion" in DEFAULT_PIPELINE_STAGES and "batch-fusion" not in stages
    assert PIPELINES["unfused"] == ",".join(stages)


def test_speed_check_falls_back_to_the_named_pipeline(monkeypatch) -> None:
    """The timing is simulated (the fused module measures slower), so the
    test does not depend on the machine."""
    from optimus_ir.api import speed_check

    monkeypatch.setattr(speed_check, "_per_call_rounds", lambda modules, args, kwargs: [[2.0, 1.0]] * 7)
    model, (x,) = make_recsys_model(batch=8, num_towers=4)
    gm = optimize(model, (x,), check_speed=True, freeze=True)
    report = gm.optimus_report
    assert report.speed_check is not None and report.speed_check.fell_back
    assert report.pipeline == "unfused"
    assert report.statistics.by_pass("batch-fusion") == []
