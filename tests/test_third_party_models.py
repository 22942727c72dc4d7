"""Third-party model definitions (deepctr-torch 0.3.0's models of
`benchmarks/bench_third_party.py`, issues 21 and 23) through optimize() and
through the torch.compile backend: the outputs equal the model's, and
optimize()'s result never has more ops than the captured graph. AutoInt
assigns an attribute in forward: optimize() refuses to capture it (with the
reason, running the model itself) while torch.compile, which replays the
write, optimizes it. Skipped only when deepctr_torch is not importable
(`pip install -e '.[thirdparty]'`; `make test` installs it)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("deepctr_torch")

from benchmark_scripts import load_benchmark  # noqa: E402
import optimus_ir  # noqa: E402
from optimus_ir import optimize  # noqa: E402
from optimus_ir.api import AttributeAssignmentError, capture, count_fx_ops  # noqa: E402
from optimus_ir.foundation.diagnostics import OptimusFallbackWarning  # noqa: E402

bench = load_benchmark("bench_third_party")


@pytest.mark.parametrize(
    ("name", "freeze"),
    [("MMOE", False), ("MMOE", True), ("PLE", True)]  # PLE live adds CI time, not coverage
    + [(name, True) for name in ("NFM", "WDL", "ESMM", "SharedBottom", "FiBiNET", "DCNMix", "ONN")],
    ids=lambda value: {False: "live", True: "frozen"}.get(value, value) if isinstance(value, bool) else value,
)
def test_third_party_model_is_equal_and_never_grows(name: str, freeze: bool) -> None:
    model, inputs = bench.build(name, batch=16)
    with torch.no_grad():
        want = model(*inputs)
    assert want.std().item() > 1e-3  # re-initialised: the outputs are not constant
    gm = optimize(model, list(inputs), freeze=freeze)
    report = gm.optimus_report
    captured = sum(count_fx_ops(capture(model, inputs)).values())
    assert sum(report.ops_before.values()) == captured
    assert sum((report.ops_per_call or report.ops_after).values()) <= captured
    with torch.no_grad():
        got = gm(*inputs)
    torch.testing.assert_close(got, want, rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("name", bench.MODELS)
def test_third_party_model_runs_through_the_backend_with_equal_outputs(name: str) -> None:
    """torch.compile(backend=optimus, inner eager): every graph Dynamo hands
    over is optimized (none passed through), the outputs equal eager's.
    AutoInt included: Dynamo replays its attribute write after the graph."""
    model, inputs = bench.build(name, batch=16)
    with torch.no_grad():
        want = model(*inputs)
        ours = optimus_ir.backend(inner="eager", strict=True)
        got = torch.compile(model, backend=ours)(*inputs)
    torch.testing.assert_close(got, want, rtol=1.3e-6, atol=1e-5)
    assert ours.outcomes and all(o.optimized for o in ours.outcomes)


def test_autoint_is_refused_by_optimize_with_the_reason_and_reported_so() -> None:
    """AutoInt's InteractingLayer stores its attention scores on itself in
    forward: capture() raises naming the attribute, optimize() warns and
    returns a module running the model (equal outputs, the write happens),
    and the benchmark's row says refused with that reason instead of
    crashing."""
    model, inputs = bench.build("AutoInt", batch=16)
    with pytest.raises(AttributeAssignmentError, match="normalized_att_scores"):
        capture(model, inputs)
    with pytest.warns(OptimusFallbackWarning, match="normalized_att_scores"):
        gm = optimize(model, list(inputs), freeze=True)
    assert "normalized_att_scores" in gm.optimus_report.fallback
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), model(*inputs), rtol=0, atol=0)
    row = bench.bench_row("AutoInt", 16, repeats=1, sample_ms=1.0, options={}, clock=bench.CLOCKS["cpu"])
    assert row.refused is not None and "AttributeAssignmentError" in row.refused
    assert "normalized_att_scores" in row.refused and not row.median_ms
    table = bench.format_table([row])
    assert "| AutoInt | 16 | refused" in table and "refused, not captured: AttributeAssignmentError" in table


@pytest.mark.slow
def test_a_third_party_model_compiles_through_inductor_with_equal_outputs() -> None:
    """The path `benchmarks/bench_compile_time.py` measures: our stage, then
    Inductor (ESMM, the smallest; seconds to a minute of C++ compilation,
    depending on what the machine's Inductor caches hold)."""
    model, inputs = bench.build("ESMM", batch=16)
    with torch.no_grad():
        want = model(*inputs)
        ours = optimus_ir.backend(strict=True)
        got = torch.compile(model, backend=ours)(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert ours.outcomes and all(o.optimized for o in ours.outcomes)
