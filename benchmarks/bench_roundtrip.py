"""Time the FX round trip on generated wide recommendation-like graphs.

For each requested size (in FX nodes) a GraphModule is generated directly with
the torch.fx.Graph API: a chain of blocks, each block

    split(x, width, dim=1) -> getitem -> linear -> layer_norm -> tanh -> cat

over `towers` parallel towers, with parameters as get_attr nodes (as Dynamo
captures them). Node metadata (`meta["val"]`, fake tensors) is computed by
propagating an example input through one block under FakeTensorMode and is
shared by the nodes of equal shape, so generating 100k nodes takes about a
second and the importer never has to propagate.

Phases timed separately:

* import  -- `import_graph(gm)`: FX graph -> fx dialect
* raise   -- the `raise-fx` pass (when the pass pipeline provides it)
* lower   -- the `lower-to-fx` pass (likewise)
* print   -- `str(module)` (only with --print)
* export  -- `export_graph(...)`: fx dialect -> GraphModule (incl. FX codegen)

For reference, the `fx_gm` column is the time FX itself takes to build a
GraphModule from the original graph (Python code generation and compile);
export pays the same, so `export - fx_gm` is the exporter's own share. It is
not counted in the total.

Usage::

    python benchmarks/bench_roundtrip.py --sizes 1000,10000,100000 --json out.json
    python benchmarks/bench_roundtrip.py --sizes 1000 --check   # also run both graphs

`--profile PHASE` runs cProfile over one phase of the largest size and prints
the top functions (PHASE is import, raise, lower, print or export).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import operator
import platform
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx._lazy_graph_module import _LazyGraphModule

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from optimus_ir.translate.exporter import export_graph  # noqa: E402
from optimus_ir.translate.importer import import_graph  # noqa: E402

NODES_PER_TOWER = 8  # getitem, 2 get_attr, linear, 2 get_attr, layer_norm, tanh
NODES_PER_BLOCK_EXTRA = 2  # split, cat


# ---------------------------------------------------------------------------
# Graph generation
# ---------------------------------------------------------------------------


def _fake_block_values(batch: int, towers: int, width: int) -> dict[str, Any]:
    """Fake-tensor values of one block, by running it on a fake example input."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    with mode:
        x = torch.empty(batch, towers * width)
        weight = torch.empty(width, width)
        vector = torch.empty(width)
        pieces = torch.split(x, width, dim=1)
        linear = F.linear(pieces[0], weight, vector)
        norm = F.layer_norm(linear, (width,), vector, vector, 1e-5)
        tanh = torch.tanh(norm)
        cat = torch.cat([tanh] * towers, dim=1)
    return {
        "x": x,
        "split": tuple(pieces),
        "piece": pieces[0],
        "weight": weight,
        "vector": vector,
        "linear": linear,
        "norm": norm,
        "tanh": tanh,
        "cat": cat,
    }


def build_graph(
    num_nodes: int, towers: int = 64, width: int = 16, batch: int = 32, seed: int = 0
) -> tuple[torch.fx.GraphModule, tuple[torch.Tensor]]:
    """A GraphModule of about `num_nodes` nodes (whole blocks) and its input."""
    per_block = towers * NODES_PER_TOWER + NODES_PER_BLOCK_EXTRA
    blocks = max(1, round((num_nodes - 2) / per_block))
    values = _fake_block_values(batch, towers, width)

    generator = torch.Generator().manual_seed(seed)
    count = blocks * towers
    # One allocation per kind; every tower's parameters are views into it.
    weights = torch.randn(count, width, width, generator=generator) / width**0.5
    biases = torch.randn(count, width, generator=generator) * 0.1
    ln_weights = 1 + 0.1 * torch.randn(count, width, generator=generator)
    ln_biases = 0.1 * torch.randn(count, width, generator=generator)

    root = torch.nn.Module()
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = values["x"]
    current = x
    normalized_shape = (width,)
    for b in range(blocks):
        split = graph.call_function(torch.functional.split, (current, width), {"dim": 1})
        split.meta["val"] = values["split"]
        outputs = []
        for t in range(towers):
            i = b * towers + t
            piece = graph.call_function(operator.getitem, (split, t))
            piece.meta["val"] = values["piece"]
            names = (f"w{i}", f"b{i}", f"g{i}", f"h{i}")
            for name, tensor in zip(names, (weights[i], biases[i], ln_weights[i], ln_biases[i])):
                root.register_buffer(name, tensor)
            w = graph.get_attr(names[0])
            w.meta["val"] = values["weight"]
            bias = graph.get_attr(names[1])
            bias.meta["val"] = values["vector"]
            linear = graph.call_function(F.linear, (piece, w, bias))
            linear.meta["val"] = values["linear"]
            g = graph.get_attr(names[2])
            g.meta["val"] = values["vector"]
            h = graph.get_attr(names[3])
            h.meta["val"] = values["vector"]
            norm = graph.call_function(F.layer_norm, (linear, normalized_shape, g, h, 1e-5))
            norm.meta["val"] = values["norm"]
            tanh = graph.call_function(torch.tanh, (norm,))
            tanh.meta["val"] = values["tanh"]
            outputs.append(tanh)
        current = graph.call_function(torch.cat, (outputs,), {"dim": 1})
        current.meta["val"] = values["cat"]
    graph.output(current)
    # Lazy: FX generates and compiles the Python code only when the module is
    # first called (a 100k-node forward takes seconds to compile).
    gm = _LazyGraphModule(root, graph)
    example = torch.randn(batch, towers * width, generator=generator)
    return gm, (example,)


# ---------------------------------------------------------------------------
# Phases
# ---------------------------------------------------------------------------


def _pipeline_runner() -> Callable[[Any, str], Any] | None:
    """The pass pipeline runner, if the project has one yet."""
    try:
        from optimus_ir.pipeline import run_pipeline  # type: ignore[attr-defined]
    except ImportError:
        return None
    return run_pipeline


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run_size(
    num_nodes: int,
    *,
    with_print: bool,
    with_passes: bool,
    check: bool,
    profile: str | None = None,
) -> dict[str, Any]:
    build_s, (gm, inputs) = _timed(lambda: build_graph(num_nodes))
    nodes = len(gm.graph.nodes)
    row: dict[str, Any] = {"requested": num_nodes, "nodes": nodes, "build_s": build_s}
    profiler = cProfile.Profile() if profile else None

    def phase(name: str, fn: Callable[[], Any]) -> Any:
        if profiler is not None and profile == name:
            profiler.enable()
        seconds, result = _timed(fn)
        if profiler is not None and profile == name:
            profiler.disable()
        row[f"{name}_s"] = seconds
        return result

    imported = phase("import", lambda: import_graph(gm))
    runner = _pipeline_runner() if with_passes else None
    if runner is not None:
        phase("raise", lambda: runner(imported.module, "raise-fx"))
        phase("lower", lambda: runner(imported.module, "lower-to-fx"))
    if with_print:
        text = phase("print", lambda: str(imported.module))
        row["print_chars"] = len(text)
    exported = phase("export", lambda: export_graph(imported))
    row["total_s"] = sum(
        v for k, v in row.items() if k.endswith("_s") and k not in ("build_s", "fx_gm_s")
    )
    row["fx_gm_s"], _ = _timed(lambda: torch.fx.GraphModule(gm, gm.graph))
    row["exported_nodes"] = len(exported.graph.nodes)
    if check:
        with torch.no_grad():
            torch.testing.assert_close(exported(*inputs), gm(*inputs), rtol=0, atol=0)
        row["checked"] = True
    if profiler is not None:
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(30)
        stream.write("\n")
        pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(25)
        row["profile"] = stream.getvalue()
    return row


PHASES = ("import", "raise", "lower", "print", "export")


def print_table(rows: list[dict[str, Any]]) -> None:
    phases = [p for p in PHASES if any(f"{p}_s" in r for r in rows)]
    header = ["nodes", "build", *phases, "total", "s/1k nodes", "fx_gm"]
    print(" | ".join(f"{h:>10}" for h in header))
    print("-+-".join("-" * 10 for _ in header))
    for row in rows:
        cells = [f"{row['nodes']:>10}", f"{row['build_s']:>10.3f}"]
        cells += [
            f"{row[f'{p}_s']:>10.3f}" if f"{p}_s" in row else f"{'-':>10}" for p in phases
        ]
        cells.append(f"{row['total_s']:>10.3f}")
        cells.append(f"{1000 * row['total_s'] / row['nodes']:>10.4f}")
        cells.append(f"{row['fx_gm_s']:>10.3f}")
        print(" | ".join(cells))
    for base, row in zip(rows, rows[1:]):
        if base["total_s"]:
            ratio = row["total_s"] / base["total_s"]
            print(
                f"{row['nodes']} vs {base['nodes']} nodes: total x{ratio:.2f} "
                f"for x{row['nodes'] / base['nodes']:.2f} nodes"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="comma-separated node counts"
    )
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    parser.add_argument("--print", action="store_true", help="also time printing the IR")
    parser.add_argument(
        "--no-passes", action="store_true", help="skip raise-fx/lower-to-fx even if present"
    )
    parser.add_argument(
        "--check", action="store_true", help="run original and exported graphs, compare"
    )
    parser.add_argument(
        "--profile", choices=PHASES, help="cProfile this phase of the largest size"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    rows = []
    for size in sizes:
        row = run_size(
            size,
            with_print=args.print,
            with_passes=not args.no_passes,
            check=args.check,
            profile=args.profile if size == max(sizes) else None,
        )
        rows.append(row)
        print(
            f"[{row['nodes']} nodes] "
            + ", ".join(f"{k[:-2]} {v:.3f}s" for k, v in row.items() if k.endswith("_s")),
            file=sys.stderr,
            flush=True,
        )
    print_table(rows)
    for row in rows:
        if "profile" in row:
            print(row.pop("profile"))
    if args.json:
        report = {
            "benchmark": "roundtrip",
            "python": platform.python_version(),
            "torch": torch.__version__,
            "machine": platform.machine(),
            "passes": _pipeline_runner() is not None and not args.no_passes,
            "rows": rows,
        }
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
