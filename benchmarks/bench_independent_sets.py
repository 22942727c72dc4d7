"""Time the grouping search of batch fusion (`find_independent_groups`) on
generated graphs, to show it is near-linear in graph size.

Graphs (``n`` is the node count asked for; the real count is printed):

* `wide`      -- one input, ``n // 3`` towers of depth 3 (linear, relu,
                 linear: 3 keys), one cat of every tower at the end;
* `chain`     -- a chain of ``n`` same-key nodes, each on the previous one
                 (every node opens a group: the quadratic trap of bitsets);
* `many_keys` -- a backbone of ``n // 3`` steps; each step hangs a pair of
                 candidates with a key of their own on the backbone and the
                 next step reads both (``n // 3`` keys: the keys x nodes trap);
* `towers`    -- ``n // 10`` towers of depth 10 over one input, the tower
                 widths cycling through 3 values (one key per layer and width),
                 then a cat;
* `ragged`    -- towers of depth 1 to 40 (so groups span levels: the
                 acyclicity check cannot take the level shortcut), then a cat;
* `crossed`   -- ``n // 4`` pairs of groups tied crosswise (``a1 -> b2``,
                 ``b1 -> a2``): every pair needs the repair.

Each configuration is timed ``--repeats`` times; the medians of the wall and
the CPU time are printed, and the growth of the CPU time against the previous
size (linear: the size ratio, 2.0x for the default sizes; CPU time because
wall time is noisy on a shared machine).

Usage::

    python benchmarks/bench_independent_sets.py                  # 25k, 50k, 100k
    python benchmarks/bench_independent_sets.py --sizes 1000,2000 --repeats 1
    python benchmarks/bench_independent_sets.py --graphs chain,towers --max-size 64
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Hashable
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from optimus_ir.analysis.independent_sets import find_independent_groups  # noqa: E402

Graph = tuple[list[list[int]], list[Hashable | None]]


class _Builder:
    """Appends nodes in topological order."""

    def __init__(self) -> None:
        self.preds: list[list[int]] = []
        self.keys: list[Hashable | None] = []

    def add(self, preds: list[int], key: Hashable | None = None) -> int:
        self.preds.append(preds)
        self.keys.append(key)
        return len(self.preds) - 1

    def graph(self) -> Graph:
        return self.preds, self.keys


def wide(n: int) -> Graph:
    b = _Builder()
    x = b.add([])
    outs = []
    for _ in range(max(1, n // 3)):
        h = b.add([x], ("linear", 16, 32))
        h = b.add([h], ("relu", 32))
        outs.append(b.add([h], ("linear", 32, 8)))
    b.add(outs, None)
    return b.graph()


def chain(n: int) -> Graph:
    b = _Builder()
    prev = b.add([], "tanh")
    for _ in range(n - 1):
        prev = b.add([prev], "tanh")
    return b.graph()


def many_keys(n: int) -> Graph:
    b = _Builder()
    x = b.add([])
    for step in range(max(1, n // 3 - 1)):
        p = b.add([x], ("op", step))
        q = b.add([x], ("op", step))
        x = b.add([x, p, q])
    return b.graph()


def towers(n: int, depth: int = 10) -> Graph:
    b = _Builder()
    x = b.add([])
    outs = []
    for t in range(max(1, n // depth)):
        width = (16, 32, 64)[t % 3]
        h = x
        for layer in range(depth):
            h = b.add([h], ("layer", layer, width))
        outs.append(h)
    b.add(outs)
    return b.graph()


def ragged(n: int) -> Graph:
    b = _Builder()
    x = b.add([])
    outs = []
    t = 0
    while len(b.preds) < n:
        h = x
        for layer in range(1 + t % 40):
            h = b.add([h], ("layer", layer % 4))
        outs.append(h)
        t += 1
    b.add(outs)
    return b.graph()


def crossed(n: int) -> Graph:
    b = _Builder()
    for r in range(max(1, n // 4)):
        a1 = b.add([], ("A", r % 7))
        b1 = b.add([], ("B", r % 7))
        b.add([b1], ("A", r % 7))
        b.add([a1], ("B", r % 7))
    return b.graph()


GRAPHS: dict[str, Callable[[int], Graph]] = {
    "wide": wide,
    "chain": chain,
    "many_keys": many_keys,
    "towers": towers,
    "ragged": ragged,
    "crossed": crossed,
}


def _time(graph: Graph, repeats: int, max_size: int | None) -> tuple[float, float, int, int]:
    """Median wall and CPU seconds of the search, groups and rejected counts."""
    preds, keys = graph
    walls: list[float] = []
    cpus: list[float] = []
    result = None
    for _ in range(repeats):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = find_independent_groups(preds, keys, max_size=max_size)
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    assert result is not None
    return statistics.median(walls), statistics.median(cpus), len(result.groups), len(result.rejected)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="25000,50000,100000", help="node counts, comma-separated")
    parser.add_argument("--graphs", default=",".join(GRAPHS), help="graphs, comma-separated")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per configuration")
    parser.add_argument("--max-size", type=int, default=None, help="max group size (default: none)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    names = args.graphs.split(",")
    unknown = [name for name in names if name not in GRAPHS]
    if unknown:
        parser.error(f"unknown graphs {unknown}; known: {sorted(GRAPHS)}")

    print(
        f"{'graph':<10} {'nodes':>8} {'edges':>8} {'groups':>7} {'rejected':>8} "
        f"{'wall s':>8} {'cpu s':>8} {'growth':>7}"
    )
    for name in names:
        previous: float | None = None
        for size in sizes:
            graph = GRAPHS[name](size)
            edges = sum(len(p) for p in graph[0])
            wall, cpu, groups, rejected = _time(graph, args.repeats, args.max_size)
            growth = f"{cpu / previous:6.2f}x" if previous else ""
            print(
                f"{name:<10} {len(graph[0]):>8} {edges:>8} {groups:>7} {rejected:>8} "
                f"{wall:>8.3f} {cpu:>8.3f} {growth:>7}"
            )
            previous = cpu
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
