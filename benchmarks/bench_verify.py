"""Time of IR verification in the default pipeline: after every pass (the
tests, optimus-opt, `optimize(..., verify_each=True)`) against once at the
end (production `optimize()` and the torch.compile backend).

Models: the generated wide graph of `bench_roundtrip.py` (`--sizes`, in FX
nodes) and the recommendation model of `examples/recsys.py` with
`--towers` towers, both through the default pipeline.

Usage::

    python benchmarks/bench_verify.py --sizes 16000,100000 --towers 64
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
for path in (_ROOT, _ROOT / "benchmarks", _ROOT / "examples"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import torch  # noqa: E402

import optimus_ir.foundation.diagnostics  # noqa: E402
import optimus_ir.pipeline  # noqa: E402
from optimus_ir.translate.importer import import_graph  # noqa: E402

_spent = [0.0, 0]
_verify = optimus_ir.foundation.diagnostics.verify_module


def _timed_verify(module, context=""):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    try:
        return _verify(module, context)
    finally:
        _spent[0] += time.perf_counter() - start
        _spent[1] += 1


optimus_ir.pipeline.verify_module = _timed_verify
optimus_ir.foundation.diagnostics.verify_module = _timed_verify


def _run(make_program, verify_each: bool | None) -> tuple[float, float, int, int]:
    program = make_program()
    _spent[:] = [0.0, 0]
    gc.collect()
    start = time.perf_counter()
    optimus_ir.pipeline.run_pipeline(program.module, None, verify_each=verify_each)
    total = time.perf_counter() - start
    ops = sum(1 for _ in program.module.walk())
    return total, _spent[0], _spent[1], ops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16000,100000")
    parser.add_argument("--towers", type=int, default=64)
    args = parser.parse_args()
    os.environ.pop(optimus_ir.pipeline.VERIFY_EACH_ENV, None)

    from bench_roundtrip import build_graph
    from optimus_ir.examples.recsys import make_recsys_model

    cases = []
    for size in [int(s) for s in args.sizes.split(",") if s]:
        gm, _ = build_graph(size)
        cases.append((f"wide graph, {len(gm.graph.nodes)} FX nodes", lambda gm=gm: import_graph(gm)))
    model, inputs = make_recsys_model(num_towers=args.towers)
    captured, _ = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)
    cases.append((f"recsys, {args.towers} towers", lambda: import_graph(captured, inputs)))

    print(f"{'model':<34} {'verify':<6} {'pipeline s':>10} {'verify s':>9} {'verifies':>8} {'share':>6}")
    for name, make in cases:
        for label, mode in (("each", True), ("once", None)):
            total, spent, count, _ = _run(make, mode)
            print(
                f"{name:<34} {label:<6} {total:>10.3f} {spent:>9.3f} {count:>8} "
                f"{100 * spent / total:>5.0f}%",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
