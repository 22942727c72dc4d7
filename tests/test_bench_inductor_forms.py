"""Smoke test of benchmarks/bench_inductor_forms.py: `--smoke` compiles both
forms of every kind (batched as `lower-batch` lowers it, and per member)
with Inductor on tiny sizes, checks them against eager and prints the table
and the `torch._grouped_mm` note; it does not judge timings."""

from __future__ import annotations

import pytest

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_inductor_forms")


def test_help_describes_the_benchmark(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        _bench().main(["--help"])
    assert done.value.code == 0
    assert "--freeze" in capsys.readouterr().out


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kind 'conv'"):
        _bench().main(["--kinds", "conv"])


def test_the_forms_of_a_kind_compute_the_same() -> None:
    """The batched and the per-member module of each kind, eagerly."""
    import torch

    bench = _bench()
    x = torch.randn(3, bench.ROWS, 8)
    for kind in bench.KINDS:
        torch.manual_seed(0)
        batched = bench.make(kind, 3, 8, True)
        per_member = bench.make(kind, 3, 8, False)
        per_member.load_state_dict(batched.state_dict())
        with torch.no_grad():
            for a, b in zip(batched(x), per_member(x), strict=True):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_smoke_run_compiles_every_form_and_checks_results(capsys) -> None:
    assert _bench().main(["--smoke"]) == 0
    out = capsys.readouterr().out
    for kind in _bench().KINDS:
        assert f"| {kind} | 2 |" in out
    assert "torch._grouped_mm on fp32 CPU" in out
    assert "WRONG RESULTS" not in out
    assert "smoke run" in out
