"""Per-call cost of reading the parameters and buffers in the module `optimize()` returns.

Every call of the optimized module first reads each parameter and buffer its
graph uses (`exporter._FastAttributes`: the prologue of the generated
`forward`, a `try:` block of dict lookups; `param_cache.read_tensors_from_model`
makes it read the model's current tensors). This script times that prologue
alone, cut out of the module's own generated code: `forward` up to the end of
the prologue's `except` clause (the guard's check and the mode check
included), then `return None`, compiled with the module's globals and called
on the module itself. It also times the whole call, for scale.

The model is examples/recsys.py's recommendation model ('mixed' variant by
default), optimized with the default pipeline, `check_speed=False`; on one
thread, interleaved, medians of per-call CPU times over the rounds
(`optimus_ir.examples.timing.median_us_each`), under `torch.no_grad()`.
Columns: `reads` (the attributes the prologue reads), `prologue us`,
`changed us` (the prologue once an attribute was reassigned on the module
itself, `exporter.OwnState` set: its own attributes are read first; n/a
where the module has no such state), `call us`, `prologue %` (of the call).

Usage::

    python benchmarks/bench_attribute_reads.py
    python benchmarks/bench_attribute_reads.py --towers 8 64 256 --batch 8 --rounds 40 --json out.json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

_ROOT = Path(__file__).resolve().parent.parent
for path in (_ROOT, _ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import optimus_ir  # noqa: E402
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model  # noqa: E402
from optimus_ir.examples.timing import median_us_each  # noqa: E402

OWN_STATE_ATTRIBUTE = "_optimus_own_state"
"""`exporter.OWN_STATE_ATTRIBUTE` (spelled out: the script also runs on trees without it)."""

PROLOGUE_END = "except (KeyError, AttributeError):"
"""The line that starts the prologue's fallback (`exporter._FastAttributes`)."""


def prologue_of(module: torch.fx.GraphModule) -> Callable[..., Any]:
    """`module.forward` cut after its attribute prologue (the line after its
    `except` clause), returning None."""
    lines = module.code.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def forward"))
    end = next(i for i, line in enumerate(lines) if line.strip().startswith(PROLOGUE_END))
    source = "\n".join([*lines[start : end + 2], "    return None"])
    namespace = dict(module.forward.__globals__)
    exec(compile(source, "<prologue>", "exec"), namespace)  # noqa: S102 - the module's own code
    return namespace["forward"]


def measure(towers: int, batch: int, variant: str, rounds: int, sample_ms: float) -> dict[str, float]:
    """Per-call microseconds of the prologue and of the whole call for one model."""
    model, (x,) = make_recsys_model(num_towers=towers, batch=batch, **VARIANTS[variant])
    module = optimus_ir.optimize(model, (x,), check_speed=False)
    prologue = prologue_of(module)
    # Its state set: the reads after an attribute was reassigned on the
    # module itself (the module's own attributes first). A copy, so that
    # the module timed above keeps its state.
    changed = copy.copy(module)
    changed.__dict__ = dict(module.__dict__)
    state = module.__dict__.get(OWN_STATE_ATTRIBUTE)
    if state is not None:
        changed.__dict__[OWN_STATE_ATTRIBUTE] = type(state)(changed=True)
    with torch.no_grad():
        torch.testing.assert_close(module(x), model(x), rtol=0, atol=0)
        assert prologue(module, x) is None
        figures = median_us_each(
            {
                "prologue": lambda: prologue(module, x),
                "changed": lambda: prologue(changed, x),
                "call": lambda: module(x),
            },
            rounds,
            sample_ms,
        )
    get_attrs = sum(1 for n in module.graph.nodes if n.op == "get_attr")
    return {
        "reads": float(get_attrs),
        "prologue us": figures["prologue"],
        "changed us": figures["changed"] if state is not None else float("nan"),
        "call us": figures["call"],
        "prologue %": 100 * figures["prologue"] / figures["call"],
    }


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towers", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="mixed")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--sample-ms", type=float, default=10.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(
        f"recsys '{args.variant}', batch {args.batch}: per-call us (median of {args.rounds} "
        "interleaved rounds, one thread)"
    )
    header = ["reads", "prologue us", "changed us", "call us", "prologue %"]
    print(f"{'towers':>6}  " + "  ".join(f"{c:>12}" for c in header))
    results: dict[str, dict[str, float]] = {}
    for towers in args.towers:
        figures = measure(towers, args.batch, args.variant, args.rounds, args.sample_ms)
        results[str(towers)] = figures
        print(f"{towers:>6}  " + "  ".join(f"{figures[c]:>12.2f}" for c in header), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
