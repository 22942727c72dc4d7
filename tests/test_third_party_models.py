"""Third-party model definitions (deepctr-torch 0.3.0's MMOE and PLE, issue
21) through optimize(): the outputs equal the model's, and the result never
has more ops than the captured graph. Skipped only when deepctr_torch is
not importable (`pip install -e '.[thirdparty]'`; `make test` installs it)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("deepctr_torch")

from benchmark_scripts import load_benchmark  # noqa: E402
from optimus_ir import optimize  # noqa: E402
from optimus_ir.api import capture, count_fx_ops  # noqa: E402

bench = load_benchmark("bench_third_party")


@pytest.mark.parametrize(
    ("name", "freeze"),
    [("MMOE", False), ("MMOE", True), ("PLE", True)],  # PLE live adds CI time, not coverage
    ids=["MMOE-live", "MMOE-frozen", "PLE-frozen"],
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
