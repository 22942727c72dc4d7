"""Time the default pipeline on wide sibling sets and deep split chains.

Batch fusion works on wide sets of sibling ops; the passes before it must
stay near-linear in graph size there. Each model is built with
`torch.fx.symbolic_trace` for a width K (pieces) or depth D (levels):

* `pairs`       -- `split(x[4, 2K], 2, 1)`, neighbouring pieces re-catted in
                   pairs, relu, `stack` (the issue-7 reproducer);
* `one_by_one`  -- every piece used on its own (`relu`), then `cat`;
* `unsqueeze_cat` -- every piece unsqueezed on dim 0, then `cat` on dim 0;
* `stack`       -- `stack` of all the pieces;
* `nested`      -- split-of-split D levels deep (`split(y, [1, rest])` on the
                   rest each time), every head relu'd, then `cat`.

For each model and size the graph is imported (`import_graph`), the default
pipeline runs (`run_pipeline`, whose `PassStatistics` give the time per
pass), the result is exported and checked against the traced module
(rtol=atol=0). The table prints the seconds per pass, and for each size after
the first the growth factor against the size 4x smaller (target: at most 5x).
With `--patterns`, the slowest patterns of `split-cat-simplify` are listed.

Usage::

    python benchmarks/bench_wide_siblings.py                 # K = 500, 2000, 8000
    python benchmarks/bench_wide_siblings.py --quick         # K = 32, 128 (smoke)
    python benchmarks/bench_wide_siblings.py --sizes 500,2000 --models pairs,nested
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.fx
from torch import nn

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from optimus_ir.translate.exporter import export_graph  # noqa: E402
from optimus_ir.translate.importer import import_graph  # noqa: E402
from optimus_ir.pipeline import run_pipeline  # noqa: E402

PIPELINE = "raise-fx,split-cat-simplify,dce,cse,lower-to-fx"
"""The default pipeline (`passes/registry.py`), spelt out so the table's
columns stay the same when the default grows."""


class Pairs(nn.Module):
    """Pieces of width 2 re-catted in neighbouring pairs, relu, stacked."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 2, 1)
        joined = [torch.relu(torch.cat([pieces[i], pieces[i + 1]], 1)) for i in range(0, self.k - 1, 2)]
        return torch.stack(joined)


class OneByOne(nn.Module):
    """Every piece used on its own, then concatenated."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 2, 1)
        return torch.cat([torch.relu(pieces[i]) for i in range(self.k)], 1)


class UnsqueezeCat(nn.Module):
    """Every piece unsqueezed on dim 0, then concatenated on dim 0."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 2, 1)
        return torch.cat([pieces[i].unsqueeze(0) for i in range(self.k)], 0) * 2.0


class Stack(nn.Module):
    """A stack of every piece."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 2, 1)
        return torch.stack([pieces[i] for i in range(self.k)]) * 2.0


class Nested(nn.Module):
    """split-of-split `k` levels deep; the heads relu'd and concatenated."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        heads = []
        rest = x
        for i in range(self.k):
            head, rest = torch.split(rest, [1, self.k - i], 1)
            heads.append(torch.relu(head))
        heads.append(rest)
        return torch.cat(heads, 1)


@dataclass(frozen=True)
class Model:
    """A benchmark model: the module for a size and its input."""

    name: str
    build: Callable[[int], nn.Module]
    input: Callable[[int], torch.Tensor]


MODELS: tuple[Model, ...] = (
    Model("pairs", Pairs, lambda k: torch.randn(4, 2 * k)),
    Model("one_by_one", OneByOne, lambda k: torch.randn(4, 2 * k)),
    Model("unsqueeze_cat", UnsqueezeCat, lambda k: torch.randn(4, 2 * k)),
    Model("stack", Stack, lambda k: torch.randn(4, 2 * k)),
    Model("nested", Nested, lambda k: torch.randn(4, k + 1)),
)


@dataclass
class Result:
    """Seconds per pass for one model and size."""

    model: str
    size: int
    nodes: int
    seconds: dict[str, float]
    patterns: dict[str, float]


def run_one(model: Model, size: int, check: bool = True) -> Result:
    """Trace, import, run the pipeline, export and (with `check`) compare."""
    module = model.build(size)
    x = model.input(size)
    gm = torch.fx.symbolic_trace(module)
    program = import_graph(gm, (x,))
    gc.collect()
    stats = run_pipeline(program.module, PIPELINE)
    seconds: dict[str, float] = {}
    patterns: dict[str, float] = {}
    for record in stats.passes:
        seconds[record.name] = seconds.get(record.name, 0.0) + record.seconds
        if record.name == "split-cat-simplify":
            for name, pattern in record.patterns.items():
                patterns[name] = patterns.get(name, 0.0) + pattern.seconds
    if check:
        exported = export_graph(program)
        with torch.no_grad():
            want = gm(x.clone())
            got = exported(x.clone())
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    return Result(model.name, size, len(gm.graph.nodes), seconds, patterns)


def format_table(results: list[Result], show_patterns: bool = False) -> str:
    """Seconds per pass, with the growth factor against the size 4x smaller."""
    passes = [p for p in PIPELINE.split(",")]
    head = f"{'model':<14}{'size':>6}{'nodes':>7}" + "".join(f"{p:>22}" for p in passes)
    lines = [head, "-" * len(head)]
    by_key = {(r.model, r.size): r for r in results}
    for r in results:
        prev = by_key.get((r.model, r.size // 4))
        cells = []
        for p in passes:
            s = r.seconds.get(p, 0.0)
            cell = f"{s:8.3f}s"
            if prev is not None:
                base = prev.seconds.get(p, 0.0)
                cell += f" ({s / base:5.1f}x)" if base > 1e-4 else "         "
            else:
                cell += "         "
            cells.append(f"{cell:>22}")
        lines.append(f"{r.model:<14}{r.size:>6}{r.nodes:>7}" + "".join(cells))
        if show_patterns and r.patterns:
            top = sorted(r.patterns.items(), key=lambda kv: -kv[1])[:4]
            lines.append(" " * 27 + "  ".join(f"{n} {s:.3f}s" for n, s in top))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,2000,8000", help="pieces (levels for nested)")
    parser.add_argument("--quick", action="store_true", help="sizes 32,128")
    parser.add_argument("--models", default=",".join(m.name for m in MODELS))
    parser.add_argument("--patterns", action="store_true", help="slowest patterns per run")
    parser.add_argument("--no-check", action="store_true", help="skip the numeric check")
    args = parser.parse_args(argv)
    sizes = [32, 128] if args.quick else [int(s) for s in args.sizes.split(",")]
    wanted = args.models.split(",")
    results: list[Result] = []
    for model in MODELS:
        if model.name not in wanted:
            continue
        for size in sizes:
            start = time.perf_counter()
            results.append(run_one(model, size, check=not args.no_check))
            print(f"# {model.name} {size}: {time.perf_counter() - start:.1f}s in all", file=sys.stderr)
    print(format_table(results, args.patterns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
