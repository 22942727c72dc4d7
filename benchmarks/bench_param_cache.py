"""Per-call cost of parameter freshness (`optimus_ir.api.param_cache`) on the
recsys model (`examples/recsys.py`, variant `mixed`, 64 towers, batch 64 by
default), one thread, under `torch.no_grad()`.

The module `optimize()` returns reads every parameter and buffer from the
model's own module dicts and computes the stacked weights of fused ops on
every call (nothing can go stale); `freeze=True` computes them once. What
that costs, interleaved (`benchmarks/timing.py`: every round runs each
variant `inner` times back to back, the order rotated per round), medians
of the per-call CPU time of this thread:

* captured -- the graph Dynamo captured, unoptimized;
* default -- `optimize(model, inputs)` as returned;
* default, flat reads -- the same module reading the attributes its capture
  registered on it (what it read before it read the model's dicts): the
  difference to `default` is the price of following reassigned tensors;
* freeze -- `optimize(model, inputs, freeze=True)`;
* stacks -- the default module's parameter-only expressions alone (what
  `freeze=True` saves per call, when both fuse the same groups);
* freeze guard -- `FrozenValuesGuard.values` alone, under `no_grad` (what
  the backward error costs a frozen module per call).

Before timing, every module's output is compared with the model's. The ops
per kind are printed for the three modules (the default and the frozen
module may fuse different groups: the cost model charges the default for
stacking its weights on every call).

Usage::

    python benchmarks/bench_param_cache.py                       # 64 towers, batch 64
    python benchmarks/bench_param_cache.py --towers 16 --rounds 10 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "examples", _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import optimus_ir  # noqa: E402
from optimus_ir.api import capture, count_fx_ops  # noqa: E402
from optimus_ir.translate.exporter import ATTR_OWN_META, ATTR_PATH_META, attribute_path  # noqa: E402
from optimus_ir.api.param_cache import (  # noqa: E402
    FROZEN_GUARD_ATTRIBUTE,
    MODEL_ATTRIBUTE,
    _compute_module,
    _plan,
    _source_values,
)
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model  # noqa: E402
from optimus_ir.examples.timing import measure as measure_interleaved  # noqa: E402

COLUMNS = ("captured", "default", "default, flat reads", "freeze", "stacks", "freeze guard")


def _flat_reads(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` reading its own registered attributes instead of the model's."""
    copy = torch.fx.GraphModule(gm, gm.graph)  # same attributes, same graph object
    copy.graph = _copied_graph(gm)
    for node in copy.graph.find_nodes(op="get_attr"):
        path = node.meta.get(ATTR_PATH_META)
        if path and path[0] == ("__dict__", MODEL_ATTRIBUTE):
            node.meta[ATTR_PATH_META] = attribute_path(copy, str(node.target))
            node.meta.pop(ATTR_OWN_META, None)
    copy.__dict__.update(
        {k: v for k, v in gm.__dict__.items() if k.startswith(("_optimus", "optimus_")) and k != MODEL_ATTRIBUTE}
    )
    copy.training = gm.training
    copy.recompile()
    return copy


def _copied_graph(gm: torch.fx.GraphModule) -> torch.fx.Graph:
    graph = torch.fx.Graph()
    graph.set_codegen(type(gm.graph._codegen).__new__(type(gm.graph._codegen)))  # noqa: SLF001
    graph._codegen.__dict__.update(gm.graph._codegen.__dict__)  # noqa: SLF001
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    output = graph.graph_copy(gm.graph, mapping)
    graph.output(output)
    return graph


def measure(towers: int, batch: int, variant: str, rounds: int, sample_ms: float) -> dict[str, Any]:
    """Per-call milliseconds of each column, and the ops of each module."""
    model, inputs = make_recsys_model(num_towers=towers, batch=batch, seed=0, **VARIANTS[variant])
    captured = capture(model, inputs)
    default = optimus_ir.optimize(model, inputs, check_speed=False)
    frozen = optimus_ir.optimize(model, inputs, freeze=True, check_speed=False)
    flat = _flat_reads(default)
    plan = _plan(flat)
    calls: dict[str, Any] = {
        "captured": lambda: captured(*inputs),
        "default": lambda: default(*inputs),
        "default, flat reads": lambda: flat(*inputs),
        "freeze": lambda: frozen(*inputs),
    }
    if plan is not None:
        compute = _compute_module(plan)
        sources = _source_values(flat, plan.sources)
        calls["stacks"] = lambda: compute.forward(*sources)
    guard = getattr(frozen, FROZEN_GUARD_ATTRIBUTE, None)
    if guard is not None:
        values = tuple(b for n, b in frozen.named_buffers() if n.startswith("frozen_"))
        calls["freeze guard"] = lambda: guard.values(*values)
    with torch.no_grad():
        expected = model(*inputs)
        for name in ("captured", "default", "default, flat reads", "freeze"):
            torch.testing.assert_close(calls[name](), expected, msg=name)
    samples, _ = measure_interleaved(calls, rounds, sample_ms)
    return {
        "ms": {name: statistics.median(values) for name, values in samples.items()},
        "ops": {
            "captured": sum(count_fx_ops(captured).values()),
            "default": sum(default.optimus_report.ops_after.values()),
            "freeze": sum(frozen.optimus_report.ops_after.values()),
        },
        "frozen values": frozen.optimus_report.cached_parameter_values,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towers", type=int, default=64)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="mixed")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--sample-ms", type=float, default=20.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = measure(args.towers, args.batch, args.variant, args.rounds, args.sample_ms)
    finally:
        torch.set_num_threads(threads)
    ms = result["ms"]
    print(
        f"recsys-{args.variant}-{args.towers}, batch {args.batch}, one thread: per-call ms "
        f"(median of {args.rounds} interleaved rounds, CPU time)"
    )
    ops = result["ops"]
    for name in COLUMNS:
        if name in ms:
            count = f"{ops[name]:>4} ops" if name in ops else " " * 8
            print(f"  {name:<20} {count}  {ms[name]:8.4f} ms")
    reads = ms["default"] - ms["default, flat reads"]
    print(
        f"  reading the model's dicts: {reads * 1e3:+.1f} us per call "
        f"({reads / ms['default'] * 100:+.1f}% of the default call); "
        f"freeze guard {ms.get('freeze guard', 0.0) * 1e3:.2f} us "
        f"({ms.get('freeze guard', 0.0) / ms['freeze'] * 100:.2f}% of the frozen call)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
