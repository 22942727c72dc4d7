"""Time optimize() on large tower graphs captured by Dynamo: phases and growth.

The model is the recommendation tower pattern at scale (`Towers` of
`bench_batch_fusion_pass.py`): `split(x, 8, 1)` into T pieces, per piece
`linear -> layer_norm -> tanh|relu`, then `cat`. Captured the way
`optimize()` captures a module (Dynamo, `optimus_ir.api.capture`), a graph
of T towers has 8 T + 4 FX nodes (a getitem, four parameter get_attrs and
three calls per tower), so T = 12500 is a 100k-node graph.

Each size is captured, then the captured GraphModule goes through
`optimize()` (`check_speed=False`: the speed check times the model, which
is not compile work) and the time of each phase is read from
`optimus_report.phase_seconds`: import (the IR is built from the metadata
Dynamo attached: no shape propagation), passes (the default pipeline, with
the final verification), export (building the GraphModule, and generating
its code, which optimize() does once, last, after the guard's check is in
the codegen), and `other` (the rest of optimize(): op counts, binding the
parameters to the model, the guard). The capture itself is Dynamo's and is reported apart.
Per phase, the growth exponent k of time ~ nodes^k is fitted by least
squares on log-log over the sizes.

Dynamo's own capture grows faster than the graph (on two shared cores:
150-200 s at 10k nodes, 900 s at 30k; 100k would take hours), so beyond
30k nodes use `--capture direct`: it builds the same graph directly (the
nodes, targets and parameters Dynamo's capture makes, with `example_value`
metadata computed by running every op on fake tensors as Dynamo does;
`tests/test_bench_large_graph.py` checks it against Dynamo's capture), and
what optimize() does with it is what it does with Dynamo's.

Usage::

    python benchmarks/bench_large_graph.py --capture direct       # 10k, 30k, 100k nodes
    python benchmarks/bench_large_graph.py --nodes 10000,20000    # Dynamo's capture
    python benchmarks/bench_large_graph.py --nodes 10000,20000 --capture direct
    python benchmarks/bench_large_graph.py --profile passes --nodes 20000 --capture direct
    python benchmarks/bench_large_graph.py --profile optimize --nodes 30000 --capture direct
    python benchmarks/bench_large_graph.py --smoke                # seconds: tiny sizes
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import json
import math
import operator
import os
import pstats
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch import nn
from torch.nn import functional as F

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_batch_fusion_pass import Towers  # noqa: E402

DEFAULT_NODES = (10_000, 30_000, 100_000)
SMOKE_NODES = (100, 200)
WIDTH = 8
BATCH = 4
PHASES = ("import", "passes", "export", "other")
"""The phases of optimize() after the capture, in order."""
PHASE_FUNCTIONS = {"import": "import_graph", "passes": "_run_passes", "export": "export_graph"}
"""The timed phases and the function of `optimus_ir.api.optimizing` each starts with
(`PHASE_WRAPPED`: all the functions timed)."""
PHASE_WRAPPED = (
    ("import", "optimus_ir.api.optimizing", "import_graph"),
    ("passes", "optimus_ir.api.optimizing", "_run_passes"),
    ("export", "optimus_ir.api.optimizing", "export_graph"),
    # the export's code generation, deferred until the guard is in the codegen
    # (optimize() generates the module's code once, last): the export's time
    ("export", "optimus_ir.api.optimizing", "finish_code"),
    ("export", "optimus_ir.api.module", "finish_code"),
    ("export", "optimus_ir.api.speed_check", "finish_code"),
    ("export", "optimus_ir.translate.exporter", "finish_code"),
)
"""(phase, module, function) of every function whose CPU time is the phase's."""
TARGET_SECONDS = 60.0
TARGET_EXPONENT = 1.1


def towers_for(nodes: int) -> int:
    """The tower count of a Dynamo-captured tower graph of about `nodes` nodes."""
    return max(1, (nodes - 4) // 8)


def capture_dynamo(towers: int) -> tuple[torch.fx.GraphModule, torch.Tensor]:
    """The T-tower model captured as optimize() captures it, and its input."""
    from optimus_ir.api import capture

    model = Towers(towers, WIDTH).eval()
    x = torch.randn(BATCH, towers * WIDTH)
    with torch.no_grad():
        return capture(model, (x,)), x


def capture_direct(towers: int) -> tuple[torch.fx.GraphModule, torch.Tensor]:
    """The graph `capture_dynamo` makes, built node by node: the same
    targets, names, flat parameters and `example_value` metadata (each op
    run on fake tensors, like Dynamo's tracing), in a fraction of the time."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    model = Towers(towers, WIDTH).eval()
    x = torch.randn(BATCH, towers * WIDTH)
    graph = torch.fx.Graph()
    mode = FakeTensorMode()
    with mode:
        fake_x = mode.from_tensor(x)
        placeholder = graph.placeholder("l_x_")
        placeholder.meta["example_value"] = fake_x
        split = graph.call_function(torch.split, (placeholder, WIDTH, 1))
        pieces = torch.split(fake_x, WIDTH, 1)
        split.meta["example_value"] = pieces
        getitems = []
        for i in range(towers):  # Dynamo unpacks the split's pieces first
            getitems.append(graph.call_function(operator.getitem, (split, i)))
            getitems[-1].meta["example_value"] = pieces[i]
        outs: list[torch.fx.Node] = []
        for i in range(towers):
            piece = getitems[i]

            def parameter(kind: str, field: str, tensor: torch.Tensor) -> tuple[torch.fx.Node, torch.Tensor]:
                node = graph.get_attr(f"{kind}.{i}.{field}")  # the model's own name, as the capture reads it
                fake = mode.from_tensor(tensor)
                node.meta["example_value"] = fake
                return node, fake

            linear, norm = model.linears[i], model.norms[i]
            weight, fake_weight = parameter("linears", "weight", linear.weight)
            bias, fake_bias = parameter("linears", "bias", linear.bias)
            y = graph.call_function(F.linear, (piece, weight, bias))
            value = F.linear(pieces[i], fake_weight, fake_bias)
            y.meta["example_value"] = value
            norm_weight, fake_norm_weight = parameter("norms", "weight", norm.weight)
            norm_bias, fake_norm_bias = parameter("norms", "bias", norm.bias)
            z = graph.call_function(F.layer_norm, (y, (WIDTH,), norm_weight, norm_bias, 1e-05))
            value = F.layer_norm(value, (WIDTH,), fake_norm_weight, fake_norm_bias, 1e-05)
            z.meta["example_value"] = value
            activation = torch.tanh if i % 2 == 0 else torch.relu
            out = graph.call_function(activation, (z,))
            out.meta["example_value"] = activation(value)
            outs.append(out)
        cat = graph.call_function(torch.cat, (outs, 1))
        cat.meta["example_value"] = torch.cat([o.meta["example_value"] for o in outs], 1)
    graph.output([cat])
    return torch.fx.GraphModule(model, graph), x


CAPTURES = {"dynamo": capture_dynamo, "direct": capture_direct}


def measure(nodes: int, capture: str, profile: str | None = None, top: int = 40) -> dict[str, Any]:
    """Capture a tower graph of about `nodes` nodes and optimize it; the
    seconds of each phase (and a cProfile of phase `profile` on stderr)."""
    import optimus_ir

    towers = towers_for(nodes)
    start = time.perf_counter()
    gm, x = CAPTURES[capture](towers)
    capture_s = time.perf_counter() - start
    gc.collect()
    profiler = cProfile.Profile() if profile else None
    cpu: dict[str, float] = {}
    # each phase's CPU time (the machine may be shared: wall time is noisy),
    # and a cProfile of exactly one phase, by wrapping the functions it calls
    modules = {name: importlib.import_module(name) for _, name, _ in PHASE_WRAPPED}
    originals = {(module, name): getattr(modules[module], name) for _, module, name in PHASE_WRAPPED}

    def timed(phase: str, original: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            if profiler is not None and phase == profile:
                profiler.enable()
            try:
                return original(*args, **kwargs)
            finally:
                if profiler is not None and phase == profile:
                    profiler.disable()
                cpu[phase] = cpu.get(phase, 0.0) + time.process_time() - start

        return run

    for phase, module, name in PHASE_WRAPPED:
        setattr(modules[module], name, timed(phase, originals[module, name]))
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start, start_cpu = time.perf_counter(), time.process_time()
            if profiler is not None and profile == "optimize":
                profiler.enable()
            try:
                result = optimus_ir.optimize(gm, (x,), check_speed=False)
            finally:
                if profiler is not None and profile == "optimize":
                    profiler.disable()
            total, total_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    finally:
        for (module, name), original in originals.items():
            setattr(modules[module], name, original)
    report = result.optimus_report
    phases = dict(report.phase_seconds)
    row: dict[str, Any] = {
        "nodes": len(gm.graph.nodes),
        "towers": towers,
        "capture": capture,
        "capture_s": capture_s,
        "import_s": phases.get("import", 0.0),
        "passes_s": phases.get("passes", 0.0),
        "export_s": phases.get("export", 0.0),
        "optimize_s": total,
        "groups_fused": report.groups_fused,
        "ops_after": sum(report.ops_after.values()),
        "per_pass_s": _per_pass(report.statistics),
    }
    row["other_s"] = max(0.0, total - row["import_s"] - row["passes_s"] - row["export_s"])
    for phase in PHASE_FUNCTIONS:
        row[f"{phase}_cpu_s"] = cpu.get(phase, 0.0)
    row["optimize_cpu_s"] = total_cpu
    row["other_cpu_s"] = max(0.0, total_cpu - sum(cpu.values()))
    if profiler is not None:
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top)
    with torch.no_grad():  # the result computes what the captured graph computes
        torch.testing.assert_close(result(x), gm(x))
    return row


def _per_pass(statistics: Any) -> dict[str, float]:
    seconds: dict[str, float] = {}
    if statistics is not None:
        for record in statistics.passes:
            seconds[record.name] = seconds.get(record.name, 0.0) + record.seconds
    return seconds


def fitted_exponent(nodes: Sequence[float], seconds: Sequence[float]) -> float | None:
    """The least-squares slope of log(seconds) over log(nodes)."""
    points = [(math.log(n), math.log(s)) for n, s in zip(nodes, seconds) if n > 0 and s > 0]
    if len(points) < 2:
        return None
    mean_x = sum(p[0] for p in points) / len(points)
    mean_y = sum(p[1] for p in points) / len(points)
    var = sum((p[0] - mean_x) ** 2 for p in points)
    return sum((p[0] - mean_x) * (p[1] - mean_y) for p in points) / var if var else None


def exponents(rows: Sequence[dict[str, Any]], clock: str = "") -> dict[str, float | None]:
    """The fitted growth exponent of each phase and of optimize() in all
    (`clock` "cpu": of the CPU times, which load from other processes
    inflates less than the wall times)."""
    nodes = [r["nodes"] for r in rows]
    suffix = "_cpu_s" if clock == "cpu" else "_s"
    keys = (*PHASES, "optimize") if clock == "cpu" else ("capture", *PHASES, "optimize")
    return {key: fitted_exponent(nodes, [r[f"{key}{suffix}"] for r in rows]) for key in keys}


def _exponent_line(title: str, fitted: dict[str, float | None]) -> str:
    return f"{title} (time ~ nodes^k): " + ", ".join(
        f"{k} {v:.2f}" if v is not None else f"{k} -" for k, v in fitted.items()
    )


def render(
    rows: Sequence[dict[str, Any]], fitted: dict[str, float | None], fitted_cpu: dict[str, float | None]
) -> str:
    """The table of phases per size (wall seconds, then CPU seconds), the
    fitted exponents and the verdict."""
    header = f"{'nodes':>7} {'capture':>8} {'import':>7} {'passes':>7} {'export':>7} {'other':>6} {'optimize':>8} {'fused':>5}"
    lines = ["wall seconds", header]
    for r in rows:
        lines.append(
            f"{r['nodes']:>7} {r['capture_s']:>8.2f} {r['import_s']:>7.2f} {r['passes_s']:>7.2f} "
            f"{r['export_s']:>7.2f} {r['other_s']:>6.2f} {r['optimize_s']:>8.2f} {r['groups_fused']:>5}"
        )
    lines += ["CPU seconds of this process", header]
    for r in rows:
        lines.append(
            f"{r['nodes']:>7} {'':>8} {r['import_cpu_s']:>7.2f} {r['passes_cpu_s']:>7.2f} "
            f"{r['export_cpu_s']:>7.2f} {r['other_cpu_s']:>6.2f} {r['optimize_cpu_s']:>8.2f} {r['groups_fused']:>5}"
        )
    lines.append(_exponent_line("growth exponent, wall", fitted))
    lines.append(_exponent_line("growth exponent, CPU", fitted_cpu))
    if rows:
        last = rows[-1]
        worst = max((fitted_cpu[p] for p in PHASES if fitted_cpu[p] is not None), default=None)
        lines.append(
            f"largest: {last['nodes']} nodes through optimize() (import, passes, export) in "
            f"{last['optimize_s']:.1f} s wall, {last['optimize_cpu_s']:.1f} s CPU (target < {TARGET_SECONDS:.0f} s "
            f"at 100k); steepest phase exponent (CPU) {worst if worst is None else round(worst, 2)} (target <= {TARGET_EXPONENT})"
        )
        passes = sorted(last["per_pass_s"].items(), key=lambda item: -item[1])
        lines.append("passes at the largest size: " + ", ".join(f"{n} {s:.2f}" for n, s in passes))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", help="comma-separated FX node counts (default 10000,30000,100000)")
    parser.add_argument("--capture", choices=sorted(CAPTURES), default="dynamo",
                        help="how the graph is made: Dynamo (as optimize() does; default) or directly "
                        "with the same nodes and metadata (fast, for profiling)")
    parser.add_argument("--profile", choices=(*PHASE_FUNCTIONS, "optimize"),
                        help="cProfile this phase (or all of optimize(), the guard and the rest "
                        "included) at every size (printed on stderr)")
    parser.add_argument("--top", type=int, default=40, help="profile rows to print")
    parser.add_argument("--json", type=Path, help="also write the rows and exponents here")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds (for the tests)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.smoke:
        sizes = list(SMOKE_NODES)
    elif args.nodes:
        sizes = [int(n) for n in args.nodes.split(",") if n]
    else:
        sizes = list(DEFAULT_NODES)
    warnings.filterwarnings("ignore")
    measure(SMOKE_NODES[0], args.capture)  # first-use costs (lazy imports, fake mode, Dynamo)
    rows = []
    for size in sizes:
        rows.append(measure(size, args.capture, args.profile, args.top))
        r = rows[-1]
        print(f"  {r['nodes']} nodes: capture {r['capture_s']:.1f} s, optimize {r['optimize_s']:.1f} s",
              file=sys.stderr, flush=True)
    fitted, fitted_cpu = exponents(rows), exponents(rows, "cpu")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, 1 thread, capture: {args.capture}, "
          f"{os.cpu_count()} cores, load average {load:.1f} at the end")
    print(render(rows, fitted, fitted_cpu))
    if args.json is not None:
        args.json.write_text(json.dumps(
            {"rows": rows, "exponents": fitted, "exponents_cpu": fitted_cpu, "load": load}, indent=1
        ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
