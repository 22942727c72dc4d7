"""The library API: capture, import, optimize, export.

`optimize(model, example_inputs)` is the whole compiler stage in one call:

1. capture: an nn.Module (or any callable) is captured the way torch.compile
   captures it -- Dynamo, one whole graph, static shapes -- so ordinary Python
   such as a loop over the pieces of a split is fine; a GraphModule is taken
   as it is;
2. import into the `fx` dialect;
3. run the pass pipeline (`DEFAULT_PIPELINE` unless one is given), ending with
   `lower-to-fx` (appended when the pipeline leaves operator ops behind);
4. export a GraphModule that is called with the same positional inputs as the
   model and references the model's own parameters.

The returned module carries an `optimus_report` (`OptimizeReport`): ops per
kind before and after, the passes run with their statistics, time per phase.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp

from optimus_ir.dialects import fx
from optimus_ir.exporter import export_graph
from optimus_ir.importer import ImportedGraph, graph_of, import_graph


class CaptureError(RuntimeError):
    """Dynamo could not capture the model as one whole graph."""


@dataclass
class OptimizeReport:
    """What `optimize` did, for people and for tests."""

    ops_before: Counter[str] = field(default_factory=Counter)
    ops_after: Counter[str] = field(default_factory=Counter)
    pipeline: str = ""
    phase_seconds: dict[str, float] = field(default_factory=dict)
    statistics: Any = None

    def format(self) -> str:
        lines = [f"pipeline: {self.pipeline}"]
        kinds = sorted(set(self.ops_before) | set(self.ops_after))
        width = max((len(k) for k in kinds), default=4)
        lines.append(f"{'op kind':<{width}}  before  after")
        for kind in kinds:
            lines.append(
                f"{kind:<{width}}  {self.ops_before[kind]:>6}  {self.ops_after[kind]:>5}"
            )
        lines.append(
            f"{'total':<{width}}  {sum(self.ops_before.values()):>6}  "
            f"{sum(self.ops_after.values()):>5}"
        )
        lines.append(
            "time: "
            + ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in self.phase_seconds.items())
        )
        return "\n".join(lines)


def count_fx_ops(gm: torch.fx.GraphModule) -> Counter[str]:
    """Operations per kind in a GraphModule (placeholders/attrs/output left out)."""
    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        counts[op_kind(node)] += 1
    return counts


def op_kind(node: torch.fx.Node) -> str:
    """A short readable name for what an FX node computes."""
    if node.op == "call_function":
        name = getattr(node.target, "__name__", str(node.target))
        overload = getattr(node.target, "_overloadname", None)
        if overload is not None:  # an ATen OpOverload: aten.split.Tensor -> split
            return str(node.target).split(".")[1] if "." in str(node.target) else name
        return name
    if node.op == "call_method":
        return f".{node.target}"
    return node.op


def capture(model: Callable[..., Any], example_inputs: Sequence[Any]) -> torch.fx.GraphModule:
    """Capture `model` with Dynamo as one whole graph with static shapes."""
    if isinstance(model, torch.fx.GraphModule):
        return model
    try:
        gm, _guards = torch._dynamo.export(  # noqa: SLF001
            model, assume_static_by_default=True
        )(*example_inputs)
    except Exception as error:  # noqa: BLE001 - Dynamo raises many kinds
        raise CaptureError(
            f"Dynamo could not capture {type(model).__name__} as one graph: {error}"
        ) from error
    return gm


def _has_non_fx_ops(module: ModuleOp) -> bool:
    return any(op.dialect_name() != "fx" for op in graph_of(module).block.ops)


def optimize(
    model: Callable[..., Any] | torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    pipeline: str | None = None,
    *,
    validate: bool = False,
    statistics: Any = None,
) -> torch.fx.GraphModule:
    """Optimize `model` for `example_inputs`; returns an equivalent GraphModule.

    `pipeline` is a `-p` pipeline text (`"raise-fx,split-cat-simplify,lower-to-fx"`);
    None means the default pipeline. With `validate=True`, the IR is exported and
    run on seeded random inputs before and after every pass and a pass that
    changes results raises `ValidationError` naming the pass and the output.
    """
    from optimus_ir.passes.registry import DEFAULT_PIPELINE
    from optimus_ir.pipeline import run_pipeline

    phases: dict[str, float] = {}
    start = time.perf_counter()
    gm = capture(model, example_inputs)
    phases["capture"] = time.perf_counter() - start

    start = time.perf_counter()
    program = import_graph(gm, example_inputs)
    phases["import"] = time.perf_counter() - start

    text = DEFAULT_PIPELINE if pipeline is None else pipeline
    hook = None
    if validate:
        from optimus_ir.validation import DifferentialValidator

        start = time.perf_counter()
        validator = DifferentialValidator(program, inputs=example_inputs)
        hook = lambda pass_, module: validator.after_pass(pass_.name, module)  # noqa: E731
        phases["validation setup"] = time.perf_counter() - start
    start = time.perf_counter()
    stats = run_pipeline(program.module, text, statistics=statistics, validate_each=hook)
    if _has_non_fx_ops(program.module):
        run_pipeline(program.module, "lower-to-fx", statistics=stats, validate_each=hook)
        text = f"{text},lower-to-fx" if text else "lower-to-fx"
    phases["passes"] = time.perf_counter() - start

    start = time.perf_counter()
    result = export_graph(program)
    phases["export"] = time.perf_counter() - start

    report = OptimizeReport(
        ops_before=count_fx_ops(gm),
        ops_after=count_fx_ops(result),
        pipeline=text,
        phase_seconds=phases,
        statistics=stats,
    )
    result.optimus_report = report  # type: ignore[attr-defined]
    return result


__all__ = [
    "CaptureError",
    "ImportedGraph",
    "OptimizeReport",
    "capture",
    "count_fx_ops",
    "export_graph",
    "fx",
    "import_graph",
    "optimize",
]
