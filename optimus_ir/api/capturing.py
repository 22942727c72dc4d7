"""Capture: a model (an nn.Module or any callable) to one whole FX graph,
the way torch.compile captures it (Dynamo, static shapes), with the checks
that the graph behaves like the model (its attribute assignments), the flat
graph inputs of a call, and Dynamo's guard of the capture handed on."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.graph import _PyTreeCodeGen

from optimus_ir.translate.model_state import AttributeAssignmentError, CaptureError

def capture(
    model: Callable[..., Any],
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any] | None = None,
) -> torch.fx.GraphModule:
    """Capture `model` with Dynamo as one whole graph with static shapes.

    The model is left exactly as it was (attributes Dynamo's replay rebinds
    are restored); an assignment to a model attribute that the graph cannot
    perform is a CaptureError."""
    if isinstance(model, torch.fx.GraphModule):
        return model
    if not callable(model):
        raise CaptureError(
            f"cannot optimize a {type(model).__name__}: pass an nn.Module, a "
            "torch.fx.GraphModule or a function"
        )
    if not isinstance(example_inputs, tuple | list):
        raise CaptureError(
            f"example_inputs must be a tuple or list of the model's inputs, not a "
            f"{type(example_inputs).__name__} (write (x,) for one input)"
        )
    kwargs = dict(example_kwargs or {})
    function = model.forward if isinstance(model, torch.nn.Module) else model
    try:
        inspect.signature(function).bind(*example_inputs, **kwargs)
    except TypeError as error:
        raise CaptureError(
            f"the example inputs do not fit {type(model).__name__}"
            f"{'.forward' if isinstance(model, torch.nn.Module) else ''}: {error}"
        ) from None
    except ValueError:  # no signature (a builtin): Dynamo will say
        pass
    from optimus_ir.api.dynamo_capture import capture_graph

    try:
        captured = capture_graph(model, example_inputs, kwargs)
    except Exception as error:  # noqa: BLE001 - Dynamo raises many kinds
        first = (str(error).strip().splitlines() or [""])[0]
        raise CaptureError(
            f"Dynamo could not capture {type(model).__name__} as one graph "
            f"(as torch.compile(fullgraph=True) would): {type(error).__name__}: {first}"
        ) from error
    if isinstance(model, torch.nn.Module):
        _check_assignments(model, captured)
    gm = captured.graph_module
    return gm

def _check_assignments(model: torch.nn.Module, captured: Any) -> None:
    """Raise CaptureError for an attribute assignment the captured graph does
    not perform. `self.buf += 1` on a tensor is fine: it writes the buffer in
    place (an op of the graph) and assigns the very same tensor back, which
    Dynamo replays with the graph's output for it (`Captured.output_markers`)."""
    from optimus_ir.api.dynamo_capture import written_attribute

    assigned: list[str] = []
    for name, old, new in captured.changes:
        node = captured.output_markers.get(id(new))
        if isinstance(old, torch.Tensor) and node is not None:
            target = written_attribute(node)
            if target is not None and _model_tensor(captured.graph_module, target) is old:
                continue
        assigned.append(name)
    if assigned:
        names = ", ".join(f"'{name}'" for name in sorted(set(assigned)))
        raise AttributeAssignmentError(
            f"{type(model).__name__}.forward assigns {names}; the captured graph "
            "cannot do that, so the optimized module would not behave like the model",
            tuple(sorted(set(assigned))),
        )

def _model_tensor(model: torch.nn.Module, target: str) -> Any:
    """The tensor of `model` at qualified name `target`, or None."""
    try:
        return model.get_parameter(target)
    except AttributeError:
        try:
            return model.get_buffer(target)
        except AttributeError:
            return None

def _flat_inputs(
    gm: torch.fx.GraphModule, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> list[Any]:
    """The values of `gm`'s placeholders, in order, for a call `gm(*args, **kwargs)`."""
    from optimus_ir.translate.calling import MODEL_ATTRIBUTE, ModelCallCodeGen

    codegen = gm.graph._codegen  # noqa: SLF001
    if isinstance(codegen, ModelCallCodeGen):
        call = codegen.call
        return call.values(call.bind(*args, **kwargs), gm.__dict__.get(MODEL_ATTRIBUTE))
    if kwargs:
        bound = inspect.signature(gm.forward).bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError(
                f"cannot pass keyword-only inputs {sorted(bound.kwargs)} to this graph"
            )
        args = bound.args
    codegen = gm.graph._codegen  # noqa: SLF001
    if isinstance(codegen, _PyTreeCodeGen) and codegen.pytree_info is not None:
        return list(codegen.process_inputs(*args))
    return list(args)

def _dynamo_guarded(gm: torch.fx.GraphModule) -> bool:
    """Whether `gm` was captured by `dynamo_capture` (and has Dynamo's guard)."""
    from optimus_ir.api.dynamo_capture import CAPTURE_GUARD_META

    return gm.meta.get(CAPTURE_GUARD_META) is not None

def _keep_capture_guard(captured: torch.fx.GraphModule, result: torch.fx.GraphModule) -> None:
    """Hand Dynamo's guard of the capture (`dynamo_capture`) on to the module
    made from it, where `install_guard` (or a re-optimizing guard) takes it."""
    from optimus_ir.api.dynamo_capture import CAPTURE_GUARD_META
    from optimus_ir.api.guards import CAPTURE_GUARD_ATTRIBUTE

    guard = captured.meta.get(CAPTURE_GUARD_META)
    if guard is not None:
        result.__dict__[CAPTURE_GUARD_ATTRIBUTE] = guard
