"""Time the `user-replacements` pass on wide graphs: a no-op when nothing is
registered, linear in the graph when something is.

The graph: `split(x, 8, 1)` into T pieces, per piece `linear`, then
`sigmoid(h) * h` on even towers and `tanh(h) * h` on odd ones, `cat`
(6 T + 4 nodes). It is imported and raised once per configuration, then
`user-replacements` runs alone, timed (best of `--repeat`):

* `none`: no replacement registered;
* `silu`: `sigmoid(x) * x -> F.silu(x)` (T/2 matches, rewritten);
* `silu+9`: the same plus nine replacements rooted at `torch.mul` that
  never match (`sigmoid(x) * k` for nine literals k): each mul is walked by
  ten matchers;
* `silu-view`: `sigmoid(x) * x -> F.silu(x.view(-1)).view(4, 8)`, whose
  `view` raised on a transposed input at registration: the input needs a
  contiguous layout, which each match proves (`known_contiguous`).

Usage::

    python benchmarks/bench_user_replacements.py                  # T = 2500, 10000, 25000
    python benchmarks/bench_user_replacements.py --towers 500     # quick
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from optimus_ir.translate.importer import import_graph  # noqa: E402
from optimus_ir.pipeline import run_pipeline  # noqa: E402
from optimus_ir.replacements import register_replacement, registered_replacements, unregister_replacement  # noqa: E402


class Swishes(nn.Module):
    """T towers: linear, then sigmoid(h) * h or tanh(h) * h."""

    def __init__(self, towers: int, width: int = 8) -> None:
        super().__init__()
        self.towers, self.width = towers, width
        self.linears = nn.ModuleList(nn.Linear(width, width) for _ in range(towers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.width, 1)
        outs = []
        for i in range(self.towers):
            h = self.linears[i](pieces[i])
            outs.append(torch.sigmoid(h) * h if i % 2 == 0 else torch.tanh(h) * h)
        return torch.cat(outs, 1)


def _configure(kind: str) -> None:
    for name in registered_replacements():
        unregister_replacement(name)
    if kind == "none":
        return
    if kind == "silu-view":
        register_replacement(
            "bench-silu-view", lambda x: torch.sigmoid(x) * x, lambda x: F.silu(x.view(-1)).view(4, 8),
            [torch.randn(4, 8)],
        )
        return
    register_replacement("bench-silu", lambda x: torch.sigmoid(x) * x, lambda x: F.silu(x), [torch.randn(4, 8)])
    if kind == "silu+9":
        for k in range(2, 11):
            register_replacement(f"bench-never-{k}", *_scaled_sigmoid(float(k)), [torch.randn(4, 8)])


def _scaled_sigmoid(k: float):
    """`sigmoid(x) * k` and `k * sigmoid(x)` (closures: the literal is not a
    traced argument)."""
    return (lambda x: torch.sigmoid(x) * k), (lambda x: k * torch.sigmoid(x))


def measure(towers: int, kind: str, repeat: int) -> dict[str, float]:
    _configure(kind)
    model = Swishes(towers).eval()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(4, towers * model.width)
    best = float("inf")
    rewrites = 0
    nodes = len(gm.graph.nodes)
    for _ in range(repeat):
        program = import_graph(gm, (x,))
        run_pipeline(program.module, "raise-fx", verify_each=False)
        gc.collect()
        started = time.perf_counter()
        stats = run_pipeline(program.module, "user-replacements", verify_each=False)
        best = min(best, time.perf_counter() - started)
        rewrites = stats.total_rewrites
    return {"towers": towers, "nodes": nodes, "seconds": best, "rewrites": rewrites}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towers", type=int, nargs="*", default=[2500, 10000, 25000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'config':>8} {'towers':>7} {'nodes':>7} {'ms':>9} {'us/node':>8} {'rewrites':>8}")
    for kind in ("none", "silu", "silu+9", "silu-view"):
        for towers in args.towers:
            row = measure(towers, kind, args.repeat)
            print(
                f"{kind:>8} {towers:>7} {row['nodes']:>7} {row['seconds'] * 1e3:>9.2f} "
                f"{row['seconds'] / row['nodes'] * 1e6:>8.2f} {row['rewrites']:>8}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
