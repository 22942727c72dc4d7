"""Smoke test of benchmarks/bench_roundtrip.py: the generated graph is what
the docstring says, and it survives the round trip (with and without the
raise-fx/lower-to-fx passes) with identical outputs."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from benchmark_scripts import load_benchmark


def _bench():
    return load_benchmark("bench_roundtrip")


def test_generated_graph_shape_and_metadata() -> None:
    bench = _bench()
    gm, (x,) = bench.build_graph(600, towers=8, width=4, batch=3)
    nodes = list(gm.graph.nodes)
    per_block = 8 * bench.NODES_PER_TOWER + bench.NODES_PER_BLOCK_EXTRA
    assert (len(nodes) - 2) % per_block == 0
    assert abs(len(nodes) - 600) <= per_block
    assert all("val" in n.meta for n in nodes if n.op != "output")
    assert gm(x).shape == (3, 32)


def test_benchmark_main_writes_json(tmp_path: Path) -> None:
    bench = _bench()
    out = tmp_path / "bench.json"
    assert bench.main(["--sizes", "300", "--check", "--print", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    (row,) = report["rows"]
    assert row["checked"] is True
    assert row["exported_nodes"] == row["nodes"]
    for phase in ("import", "print", "export"):
        assert row[f"{phase}_s"] >= 0
    assert report["torch"] == torch.__version__
