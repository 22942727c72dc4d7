"""Time `merge-dead-split-pieces` on a wide split whose pieces die one by one.

`split(x, [2] * K, dim=1)` with one `unsqueeze` per piece; the unsqueezes
of pieces 4i+2 and 4i+3 are unused, so `erase-dead-plumbing` removes them
one after the other while the pass runs and half of the pieces die in pairs
(`--dead` instead makes those pieces unused from the start). The pattern is
`deferred` (tried when nothing else has work left), so the K-result split
is rebuilt once; `--eager` makes it an ordinary pattern again, as it was,
which rebuilds the split for every pair that dies.

Usage::

    python benchmarks/bench_merge_dead_pieces.py --sizes 500,1000,2000,4000
    python benchmarks/bench_merge_dead_pieces.py --sizes 500,1000,2000 --eager
"""

from __future__ import annotations

import argparse
import time

import torch  # noqa: F401  (imported before timing: the passes use it)
from xdsl.dialects.builtin import ArrayAttr, Float32Type, ModuleOp
from xdsl.ir import Operation

from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.passes.canonicalization_patterns.torch import MergeDeadSplitPieces
from optimus_ir.pipeline import run_pipeline
from optimus_ir.foundation.types import tensor_type


def build(k: int, dying: bool) -> ModuleOp:
    """The split of `k` pieces, half of them dead or dying (see above)."""
    x = fx.PlaceholderOp("x", tensor_type((4, 2 * k), Float32Type(), "cpu"))
    split = T.SplitOp(x.result, [2] * k, 1)
    ops: list[Operation] = [x, split]
    outputs = []
    for i, piece in enumerate(split.results):
        dead = i % 4 in (2, 3)
        if dying:
            unsqueeze = T.UnsqueezeOp(piece, 0)
            ops.append(unsqueeze)
            if not dead:
                outputs.append(unsqueeze.result)
        elif not dead:
            outputs.append(piece)
    out = fx.OutputOp(ArrayAttr([fx.RefAttr(i) for i in range(len(outputs))]), outputs)
    return ModuleOp([fx.GraphOp("forward", [*ops, out])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1000,2000,4000")
    parser.add_argument("--pass", dest="pass_name", default="split-cat-simplify")
    parser.add_argument("--dead", action="store_true", help="pieces dead from the start")
    parser.add_argument("--eager", action="store_true", help="the pattern not deferred (as before)")
    args = parser.parse_args()
    MergeDeadSplitPieces.deferred = not args.eager
    run_pipeline(build(8, True), args.pass_name, verify_each=False)  # warm up
    previous = None
    print(f"{'K':>6} {'seconds':>8} {'rebuilds':>8} {'growth':>7}")
    for k in (int(s) for s in args.sizes.split(",")):
        module = build(k, not args.dead)
        start = time.perf_counter()
        stats = run_pipeline(module, args.pass_name, verify_each=False)
        seconds = time.perf_counter() - start
        rebuilds = stats.by_pass(args.pass_name)[0].patterns["merge-dead-split-pieces"].rewrites
        growth = f"{seconds / previous:6.1f}x" if previous else ""
        print(f"{k:>6} {seconds:8.3f} {rebuilds:>8} {growth:>7}")
        previous = seconds


if __name__ == "__main__":
    main()
