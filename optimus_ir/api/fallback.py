"""What `optimize` returns when it does not optimize: the captured graph as
a module of its own (`_unoptimized`), or a module running the model itself
(`_running_the_model`, for a model whose attribute writes no graph can
replay); and how a failure inside optimus-ir is named (`describe_failure`)."""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.fx

from optimus_ir.api.capturing import _keep_capture_guard
from optimus_ir.api.op_counts import count_fx_ops
from optimus_ir.api.optimizing import failed_phase
from optimus_ir.api.report import OptimizeReport

def describe_failure(error: BaseException) -> str:
    """`pass 'x' failed (Error: first line)`: where inside optimus-ir
    `error` was raised (the pass, else the phase of `_optimize`) and what."""
    from optimus_ir.pipeline import failed_pass

    crashed = failed_pass(error)
    phase = failed_phase(error)
    where = f"pass '{crashed}'" if crashed else _PHASE_NAMES.get(phase or "", phase or "optimus-ir")
    first_line = (str(error).strip().splitlines() or [""])[0]
    return f"{where} failed ({type(error).__name__}: {first_line})"

_PHASE_NAMES = {
    "capture": "the capture",
    "import": "the import",
    "validation setup": "the validation set-up",
    "passes": "the pipeline",
    "export": "the export",
    "freeze parameters": "freezing the parameters",
    "speed check": "the speed check",
}
"""How a failure report names a phase of `_optimize` that failed outside
any one pass."""

def _running_the_model(
    model: Any, example_inputs: Sequence[Any], example_kwargs: Mapping[str, Any], reason: str
) -> torch.fx.GraphModule | None:
    """A GraphModule whose forward takes the parameters of `model.forward`
    and calls `model` itself (one `call_module`): what `optimize` returns for
    a model it cannot capture faithfully, such as one whose forward assigns
    attributes. None when `model.forward` takes variadic arguments (a graph
    cannot pass them on)."""
    if not isinstance(model, torch.nn.Module):
        return None
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return None
    graph = torch.fx.Graph()
    args: list[torch.fx.Node] = []
    kwargs: dict[str, torch.fx.Node] = {}
    for parameter in parameters:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            return None
        if parameter.default is inspect.Parameter.empty:
            node = graph.placeholder(parameter.name)
        else:
            node = graph.placeholder(parameter.name, default_value=parameter.default)
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = node
        else:
            args.append(node)
    graph.output(graph.call_module("model", tuple(args), kwargs))
    from optimus_ir.api.model_names import share_model_state

    root = torch.nn.Module()
    root.model = model  # by reference: the writes go to the caller's model
    result = torch.fx.GraphModule(root, graph)
    result.training = model.training  # this module only: its submodule is the model
    share_model_state(result, model, "model")  # its state dict is the model's, names and all
    result.optimus_report = OptimizeReport(  # type: ignore[attr-defined]
        pipeline="", fallback=f"the model runs unoptimized: {reason}"
    )
    return result

def _unoptimized(
    gm: torch.fx.GraphModule, model: Any, training: bool | None, reason: str
) -> torch.fx.GraphModule:
    """The captured graph as a module of its own (`gm` may be the caller's
    GraphModule, which is not to be changed), in the model's mode, reading
    the parameters and buffers of `model` (when a module) on every call;
    its code pending (`exporter.finish_code`: whoever returns it generates
    it once)."""
    from optimus_ir.translate.exporter import fast_codegen, graph_module, mode_guard

    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    graph.set_codegen(fast_codegen(gm.graph._codegen, mode_guard(training) if training is not None else ""))  # noqa: SLF001
    result = graph_module(gm, graph, defer_code=True)
    if training is not None:
        result.training = training  # this module only: its submodules are the model's
    if isinstance(model, torch.nn.Module) and model is not gm:
        from optimus_ir.api.model_names import adopt_model_names
        from optimus_ir.api.param_cache import read_tensors_from_model

        read_tensors_from_model(result, model)
        adopt_model_names(result, model)
    ops = count_fx_ops(gm)
    result.optimus_report = OptimizeReport(  # type: ignore[attr-defined]
        ops_before=ops, ops_after=Counter(ops), pipeline="", fallback=reason
    )
    _keep_capture_guard(gm, result)
    return result
