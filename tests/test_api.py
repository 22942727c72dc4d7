"""The public API: optimize(), the torch.compile backend, and the report."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.examples.recsys import make_recsys_model
from optimus_ir.api import CaptureError, count_fx_ops


class Plumbed(nn.Module):
    """A Python loop over split pieces (Dynamo-only) with removable plumbing."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 4, dim=1)
        return torch.cat([p for p in pieces], dim=1) * 2 + torch.cat(list(pieces[1:]), dim=1).sum()


def test_optimize_keeps_results_and_signature() -> None:
    model, inputs = make_recsys_model(num_towers=4)
    optimized = optimus_ir.optimize(model, inputs)
    assert isinstance(optimized, torch.fx.GraphModule)
    torch.testing.assert_close(optimized(*inputs), model(*inputs), rtol=0, atol=0)
    # the result references the model's parameters instead of copying them
    model_params = {p.data_ptr() for p in model.parameters()}
    assert {p.data_ptr() for p in optimized.parameters()} <= model_params


def test_optimize_removes_plumbing_and_reports_it() -> None:
    model = Plumbed()
    x = torch.randn(3, 12)
    optimized = optimus_ir.optimize(model, [x])
    torch.testing.assert_close(optimized(x), model(x), rtol=0, atol=0)
    report = optimized.optimus_report
    assert sum(report.ops_after.values()) < sum(report.ops_before.values())
    assert report.pipeline.startswith("maximize-value-semantics,raise-fx")
    assert set(report.phase_seconds) >= {"capture", "import", "passes", "export"}
    text = report.format()
    assert "before" in text and "total" in text
    assert report.statistics.by_pass("raise-fx")


def test_report_shows_speed_then_compute_and_view_ops_apart() -> None:
    """Issue 25: `total 45 -> 45` hid 16 linears fused into 2 behind the
    views and stacks the fusion adds. The first lines are the measured speed,
    the compute ops and the view/metadata ops (the classification of the
    op-count guard and the benchmarks, `PLUMBING_KINDS`), each before -> after."""
    from collections import Counter

    from optimus_ir.api import OptimizeReport, SpeedCheck

    report = OptimizeReport(
        ops_before=Counter({"linear": 16, "layer_norm": 6, "getitem": 16, "split": 1, "cat": 1, "size": 5}),
        ops_after=Counter({"linear": 2, "layer_norm": 1, "stack": 3, "getitem": 30, "view": 7, "cat": 1}),
        pipeline="raise-fx,lower-to-fx",
        speed_check=SpeedCheck(fused_ms=0.69, captured_ms=0.91, fell_back=False),
    )
    lines = report.format().splitlines()
    assert lines[0] == "speed: 1.32x faster than the captured graph (0.910 -> 0.690 ms per call)"
    assert lines[1] == "compute ops 23 -> 7 per call (linear 16 -> 2, layer_norm 6 -> 1, stack 0 -> 3)"
    assert lines[2] == (
        "view and metadata ops 22 -> 37 per call (getitem 16 -> 30, view 0 -> 7, size 5 -> 0, split 1 -> 0)"
    )
    assert lines[3] == "pipeline: raise-fx,lower-to-fx"
    assert any(line.split() == ["total", "45", "44"] for line in lines)

    slower = OptimizeReport(ops_before=Counter({"relu": 1}), ops_after=Counter({"relu": 1}),
                            speed_check=SpeedCheck(fused_ms=2.0, captured_ms=1.0, fell_back=False))
    assert slower.format().splitlines()[0].startswith("speed: 2.00x slower than the captured graph")
    vetoed = OptimizeReport(speed_check=SpeedCheck(fused_ms=2.0, captured_ms=1.0, fell_back=True))
    assert "made without batch fusion (not timed)" in vetoed.format().splitlines()[0]
    faulting = OptimizeReport(speed_check=SpeedCheck(fused_ms=12.4, captured_ms=11.5, fell_back=False,
                                                     fused_faults=2049.0, captured_faults=0.0))
    assert faulting.format().splitlines()[0] == (
        "speed: 1.08x slower than the captured graph (11.500 -> 12.400 ms per call); it faulted 2049 fresh pages "
        "per call (the captured graph 0): the C allocator returned the memory the last call freed; "
        "optimus_ir.retain_freed_memory() keeps it (process-wide)"
    )
    assert "page faults per call: fused 2049, captured 0" in faulting.format()
    # under a MiB of pages more than the captured graph: no note
    few = SpeedCheck(fused_ms=1.0, captured_ms=1.1, fell_back=False, fused_faults=300.0, captured_faults=45.0)
    assert few.fresh_pages_note() is None and few.headline() == "speed: 1.10x faster than the captured graph (1.100 -> 1.000 ms per call)"
    unmeasured = OptimizeReport(ops_before=Counter({"relu": 2}), ops_after=Counter({"relu": 1}))
    assert unmeasured.format().splitlines()[:2] == [
        "compute ops 2 -> 1 per call (relu 2 -> 1)", "view and metadata ops 0 -> 0 per call"
    ]


REPORT_LINE = re.compile(
    r"^(compute|view and metadata) ops (\d+) -> (\d+) per call(?: \([^;]*\))?"
    r"(?:; (\d+) more on parameters alone, (.*) \(.*\))?$"
)


def report_counts(text: str) -> dict[str, tuple[int, int, int]]:
    """{"compute"/"view and metadata": (before, per call, once)} of a
    report's two count lines, and the table's total row as "total"."""
    counts = {}
    for line in text.splitlines():
        match = REPORT_LINE.match(line)
        if match:
            counts[match[1]] = (int(match[2]), int(match[3]), int(match[4] or 0))
        elif line.split()[:1] == ["total"]:
            numbers = [int(n) for n in line.split()[1:]]
            counts["total"] = (numbers[0], numbers[1], numbers[2] if len(numbers) > 2 else 0)
    return counts


def test_report_of_a_frozen_multi_task_model_tells_one_story() -> None:
    """Issue 34: a `freeze=True` report said `compute ops 71 -> 48` and
    `ops per call: 52`. Every count of the report is of the ops the module
    runs per call, the ops on parameters alone that freeze computed once
    apart, and they agree with each other, with the table and with
    `count_fx_ops`/`count_per_call_ops`."""
    from models import multi_task_dict

    from optimus_ir.api import capture, count_compute_ops, count_per_call_ops

    model, batch = multi_task_dict()
    result = optimus_ir.optimize(model, [batch], freeze=True)
    for task, value in model(batch).items():
        torch.testing.assert_close(result(batch)[task], value)
    report = result.optimus_report
    assert report.cached_parameter_values > 0  # something was frozen: the case of the issue
    text = report.format()
    assert "ops per call:" not in text  # the second story is gone
    counts = report_counts(text)
    captured = count_fx_ops(capture(model, [batch]))
    per_call = count_per_call_ops(result)
    once = report.ops_after - per_call
    assert counts["compute"] == (
        count_compute_ops(captured), count_compute_ops(per_call), count_compute_ops(once)
    ), text
    views = lambda c: sum(c.values()) - count_compute_ops(c)  # noqa: E731
    assert counts["view and metadata"] == (views(captured), views(per_call), views(once)), text
    assert counts["compute"][2] > 0  # the stacked weights, computed once
    assert counts["total"] == tuple(a + b for a, b in zip(counts["compute"], counts["view and metadata"])), text
    assert counts["total"] == (sum(captured.values()), sum(per_call.values()), sum(once.values()))
    assert f"more on parameters alone, {report.computed_once_by}" in text
    # the op-count guard and the report count the same: no more compute ops per call
    assert counts["compute"][1] <= counts["compute"][0]
    assert report.op_counts().why_more() is None  # fewer ops per call, and fewer in all
    assert "more ops than captured" not in text


def test_a_result_with_more_ops_says_why() -> None:
    """Where the result runs more ops than the captured graph, a line says
    why, with numbers that agree with the count lines."""
    from collections import Counter

    from optimus_ir.api import OpCounts, OptimizeReport

    report = OptimizeReport(
        ops_before=Counter({"linear": 2, "add": 1}),
        ops_after=Counter({"stack": 3, "baddbmm": 1, "add": 1, "getitem": 2, "unbind": 1, "transpose": 1}),
        parameter_ops_per_call=2,
    )
    counts = report.op_counts()
    assert counts == OpCounts(
        3, 5, 0, 4, once_by=report.computed_once_by, compute_grown=(("baddbmm", 0, 1), ("stack", 0, 3)),
        parameter_compute_per_call=2,
    )
    why = counts.why_more()
    assert why == (
        "more ops than captured: 2 more compute ops per call (baddbmm 0 -> 1, stack 0 -> 3): 2 of them on "
        "parameters alone (stacks of weights), made on every call from the current parameters (freeze=True "
        "computes them once); 4 more view and metadata ops per call, which compute nothing (views of the "
        "fused ops' stacked operands and results, getitems of their unbinds)"
    )
    assert why in report.format().splitlines()
    # fused in parts, and ops computed once that make the whole count larger
    chunked = OpCounts(10, 12, 2, 2, compute_grown=(("stack", 0, 4),), groups_chunked=2)
    assert chunked.why_more() == (
        "more ops than captured: 2 more compute ops per call (stack 0 -> 4): 2 group(s) fused in several parts "
        "(chunks within the memory budget, or parts by source), each part its own op and copies"
    )
    frozen = OpCounts(10, 8, 2, 2, compute_once=6, once_by="computed once, at optimize time, by freeze")
    assert frozen.why_more() == (
        "more ops than captured: 6 ops on parameters alone, computed once, at optimize time, by freeze, not per call"
    )
    assert OpCounts(10, 8, 2, 4).why_more() is None  # views up, fewer ops in all: nothing runs more


def test_optimize_accepts_a_graph_module_and_a_pipeline() -> None:
    model, inputs = make_recsys_model(num_towers=3)
    gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)
    before = count_fx_ops(gm)
    optimized = optimus_ir.optimize(gm, inputs, pipeline="raise-fx")  # lower-to-fx is appended
    assert optimized.optimus_report.pipeline == "raise-fx,lower-to-fx"
    before["split_with_sizes"] = before.pop("split")  # lower-to-fx's spelling of split
    assert count_fx_ops(optimized) == before
    torch.testing.assert_close(optimized(*inputs), model(*inputs), rtol=0, atol=0)


def test_optimize_reports_a_bad_pipeline() -> None:
    model, inputs = make_recsys_model(num_towers=2)
    with pytest.raises(Exception, match="no-such-pass"):
        optimus_ir.optimize(model, inputs, pipeline="no-such-pass")


def test_capture_failure_is_a_clear_error() -> None:
    class DataDependent(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.sum() > 0:  # data-dependent control flow: no single graph
                return x
            return -x

    with pytest.raises(CaptureError, match="DataDependent"):
        optimus_ir.optimize(DataDependent(), [torch.randn(3)])


def test_torch_compile_backend_eager() -> None:
    torch._dynamo.reset()
    model, inputs = make_recsys_model(num_towers=4)
    compiled = torch.compile(model, backend="optimus", options={"inner": "eager"})
    torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=0, atol=0)


def test_torch_compile_backend_rejects_unknown_options() -> None:
    torch._dynamo.reset()
    model, inputs = make_recsys_model(num_towers=2)
    compiled = torch.compile(model, backend="optimus", options={"bogus": 1})
    with pytest.raises(Exception, match="bogus"):
        compiled(*inputs)


@pytest.mark.slow  # Inductor compile (make test-all, CI)
def test_torch_compile_backend_hands_over_to_inductor() -> None:
    torch._dynamo.reset()
    model, inputs = make_recsys_model(num_towers=2)
    compiled = torch.compile(model, backend="optimus")
    torch.testing.assert_close(compiled(*inputs), model(*inputs))
