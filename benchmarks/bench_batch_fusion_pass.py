"""Time batch fusion on very wide graphs: is the pass near-linear?

The model is the recommendation tower pattern at scale: `split(x, W, 1)`
into T pieces, per piece `linear -> layer_norm -> tanh|relu`, `cat`. Traced
with `torch.fx.symbolic_trace` (so T can be thousands), imported, raised,
and run through `split-cat-simplify,batch-fusion,lower-batch` with the
default cost model (documented constants: the decisions do not depend on
the machine's load). A graph of T towers has 4 T + 4 nodes (a getitem and
three calls per tower; the parameters live in the modules), so T = 25000 is
a 100k-node graph.

Printed per size: nodes, the seconds of each pass (`PassStatistics`), the
groups fused, and the growth of batch-fusion's time against the previous
size (near-linear: about the size ratio).

Usage::

    python benchmarks/bench_batch_fusion_pass.py                 # T = 6250, 12500, 25000
    python benchmarks/bench_batch_fusion_pass.py --towers 200    # quick
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import torch
import torch.fx
from torch import nn

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from optimus_ir.translate.importer import import_graph  # noqa: E402
from optimus_ir.pipeline import run_pipeline  # noqa: E402

PIPELINE = "raise-fx,split-cat-simplify,batch-fusion{cost-model=default},lower-batch"


class Towers(nn.Module):
    """T towers of width `width` on the pieces of one split."""

    def __init__(self, towers: int, width: int = 8) -> None:
        super().__init__()
        self.towers, self.width = towers, width
        self.linears = nn.ModuleList(nn.Linear(width, width) for _ in range(towers))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(towers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.width, 1)
        outs = []
        for i in range(self.towers):
            y = self.norms[i](self.linears[i](pieces[i]))
            outs.append(torch.tanh(y) if i % 2 == 0 else torch.relu(y))
        return torch.cat(outs, 1)


def measure(towers: int) -> dict[str, float]:
    """Build, import and optimize a T-tower graph; the seconds per pass."""
    model = Towers(towers).eval()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(4, towers * model.width)
    program = import_graph(gm, (x,))
    nodes = len(gm.graph.nodes)
    gc.collect()
    started = time.perf_counter()
    stats = run_pipeline(program.module, PIPELINE, verify_each=False)
    total = time.perf_counter() - started
    row: dict[str, float] = {"towers": towers, "nodes": nodes, "total": total}
    for record in stats.passes:
        row[record.name] = row.get(record.name, 0.0) + record.seconds
    fusion = stats.by_pass("batch-fusion")
    row["groups"] = sum(r.counters.get("groups fused", 0) for r in fusion)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towers", default="6250,12500,25000", help="comma-separated tower counts")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPTIMUS_COST_MODEL", "default")
    sizes = [int(s) for s in args.towers.split(",") if s.strip()]
    passes = ("raise-fx", "split-cat-simplify", "batch-fusion", "lower-batch")
    print("| towers | nodes | " + " | ".join(f"{p} s" for p in passes) + " | groups fused | batch-fusion growth |")
    print("| ---: | ---: | " + " | ".join("---:" for _ in passes) + " | ---: | ---: |")
    previous = None
    for towers in sizes:
        row = measure(towers)
        growth = ""
        if previous is not None:
            growth = f"{row['batch-fusion'] / previous['batch-fusion']:.2f}x for {row['nodes'] / previous['nodes']:.2f}x nodes"
        cells = " | ".join(f"{row.get(p, 0.0):.2f}" for p in passes)
        print(f"| {towers} | {row['nodes']} | {cells} | {row['groups']:.0f} | {growth} |", flush=True)
        previous = row
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
