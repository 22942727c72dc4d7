"""`make demo`: optimize the example recommendation model and report.

Captures the bundled recommendation model (examples/recsys.py) with Dynamo,
imports it into optimus-ir, runs the default pipeline, exports it back to FX,
checks the result against the original model on real inputs, and prints ops
per kind before and after, the passes run (with their statistics) and the
time of each phase. Then the same for the split/cat plumbing model
(examples/plumbing.py), where split-cat-simplify has work to do.

    python examples/demo.py [--towers 16] [--pipeline "raise-fx,...,lower-to-fx"]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.utils._pytree as pytree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import optimus_ir  # noqa: E402
from examples.plumbing import make_model as make_plumbing_model  # noqa: E402
from examples.recsys import make_recsys_model  # noqa: E402


def optimize_and_report(
    title: str, model: torch.nn.Module, inputs: tuple, pipeline: str | None, validate: bool
) -> None:
    """Optimize one model, check it against the original, print the report."""
    print(f"== {title}")
    start = time.perf_counter()
    optimized = optimus_ir.optimize(model, inputs, pipeline, validate=validate)
    total = time.perf_counter() - start
    report = optimized.optimus_report

    with torch.no_grad():
        expected = pytree.tree_leaves(model(*inputs))
        actual = pytree.tree_leaves(optimized(*inputs))
    max_diff = max(
        float((a.double() - e.double()).abs().max()) for a, e in zip(actual, expected)
    )
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e)

    print(report.format())
    if report.statistics is not None:
        print("pass statistics:")
        print(report.statistics.format_statistics())
    print(f"total optimize time: {total * 1000:.1f} ms")
    print(f"max abs difference vs. the original model: {max_diff:.3g}")
    print("result: OK (outputs match the original model)")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towers", type=int, default=16, help="parallel feature towers")
    parser.add_argument("--pipeline", default=None, help="pass pipeline (default: the default pipeline)")
    parser.add_argument("--validate", action="store_true", help="validate every pass differentially")
    args = parser.parse_args(argv)

    model, inputs = make_recsys_model(num_towers=args.towers)
    model.eval()
    optimize_and_report(
        f"recommendation model: {args.towers} towers, input {tuple(inputs[0].shape)}",
        model, inputs, args.pipeline, args.validate,
    )
    model, inputs = make_plumbing_model()
    optimize_and_report(
        "split/cat plumbing model (examples/plumbing.py)",
        model, inputs, args.pipeline, args.validate,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
