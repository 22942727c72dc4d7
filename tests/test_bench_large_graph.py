"""`benchmarks/bench_large_graph.py`: its smoke mode runs end to end (the
phases are measured and the optimized module computes what the captured
graph does; timings are not judged), and its direct builder makes the graph
Dynamo's capture makes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

from benchmark_scripts import BENCHMARKS, load_benchmark

bench = load_benchmark("bench_large_graph")


def test_help_runs() -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_large_graph.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--smoke" in done.stdout and "--capture" in done.stdout
    assert "--profile" in done.stdout and "optimize" in done.stdout


def test_profile_of_all_of_optimize(capsys) -> None:
    """`--profile optimize` profiles the whole call: the guard's installation
    (where the module's code is generated, once) is in it."""
    row = bench.measure(bench.SMOKE_NODES[0], "direct", profile="optimize", top=400)
    err = capsys.readouterr().err
    assert "install_guard" in err and "finish_code" in err and "export_graph" in err
    # the deferred code generation is counted in the export's CPU time
    assert row["export_cpu_s"] > 0


def test_smoke_measures_every_phase(tmp_path: Path, capsys) -> None:
    out = tmp_path / "rows.json"
    assert bench.main(["--smoke", "--capture", "direct", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "growth exponent, CPU" in text and "largest:" in text
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert [r["towers"] for r in rows] == [bench.towers_for(n) for n in bench.SMOKE_NODES]
    for row in rows:
        assert row["nodes"] == 8 * row["towers"] + 4
        assert row["groups_fused"] > 0  # the towers were fused
        for phase in ("import", "passes", "export"):
            assert row[f"{phase}_s"] > 0 and row[f"{phase}_cpu_s"] >= 0
        assert row["optimize_s"] >= row["import_s"] + row["passes_s"] + row["export_s"]
    assert set(data["exponents_cpu"]) == {"import", "passes", "export", "other", "optimize"}


def test_fitted_exponent() -> None:
    nodes = [1e3, 1e4, 1e5]
    assert abs(bench.fitted_exponent(nodes, [n**1.1 / 1e3 for n in nodes]) - 1.1) < 1e-9
    assert bench.fitted_exponent([10], [1.0]) is None


def test_direct_builder_makes_the_graph_dynamo_captures() -> None:
    dynamo, x = bench.capture_dynamo(3)
    direct, y = bench.capture_direct(3)

    def shape_of(value):
        if isinstance(value, tuple):
            return [(t.shape, t.stride(), t.dtype) for t in value]
        return None if value is None else (value.shape, value.stride(), value.dtype)

    def signature(gm):
        return [
            (n.op, n.target if n.op != "placeholder" else None, shape_of(n.meta.get("example_value")))
            for n in gm.graph.nodes
        ]

    assert signature(direct) == signature(dynamo)
    assert {k: v.shape for k, v in direct.named_parameters()} == {k: v.shape for k, v in dynamo.named_parameters()}
    with torch.no_grad():  # the same computation (parameters differ: fresh models)
        direct_params = dict(direct.named_parameters())
        for name, p in dynamo.named_parameters():
            direct_params[name].copy_(p)
        # (Dynamo's pytree codegen unpacks the one-output list)
        torch.testing.assert_close(direct(x)[0], dynamo(x))
