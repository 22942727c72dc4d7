"""One graph through the compiler: capture, import into the `fx` dialect,
the pass pipeline (ending with `lower-to-fx`, and the output strides
matched), the export to a GraphModule reading the model's parameters, and
freezing; each phase timed (`_phase`), a failure marked with its phase.
No guard and no fall back here: `optimus_ir.api.module` adds them."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp

from optimus_ir.api.capturing import _dynamo_guarded, _flat_inputs, _keep_capture_guard, capture
from optimus_ir.api.op_counts import count_compute_ops, count_fx_ops, count_inplace_ops, count_parameter_only_ops, count_per_call_ops
from optimus_ir.api.report import OptimizeReport
from optimus_ir.foundation.diagnostics import Diagnostic, Severity, collect_diagnostics
from optimus_ir.foundation.environment import environment
from optimus_ir.dialects import fx
from optimus_ir.translate.attribute_snapshot import SNAPSHOT_ATTRIBUTE, AttributeSnapshot
from optimus_ir.translate.exporter import FALLBACK_ATTRIBUTE, copy_graph, export_graph, finish_code
from optimus_ir.api.guards import UNCACHED_GRAPH_ATTRIBUTE
from optimus_ir.translate.importer import ImportedGraph, gc_paused, graph_of, import_graph
from optimus_ir.translate.model_state import ABSENT as _ABSENT  # "not given" sentinel
from optimus_ir.options import ResolvedOptions, ResolvedPipeline


def knobs_of(options: ResolvedOptions) -> dict[str, Any]:
    """The keywords of `_optimize` that resolved `options` decide, for
    every entry point that runs it: `validate`, `verify_each`, `freeze`,
    `parameter_stacks` (which `_optimize` applies with `guard_strides` only:
    the backend shares its stacks as graph inputs itself)."""
    return {
        "validate": options.validate,
        "verify_each": options.verify_each,
        "freeze": options.freeze,
        "parameter_stacks": options.parameter_stacks,
    }


def _optimize(
    model: Callable[..., Any] | torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    pipeline: ResolvedPipeline | str | None,
    *,
    validate: bool,
    statistics: Any,
    example_kwargs: Mapping[str, Any] | None,
    verify_each: bool | None,
    guard_strides: bool,
    freeze: bool = False,
    parameter_stacks: str = "copy",
    cache_parameters: bool = True,
    after_pass: Callable[[Any, ModuleOp], None] | None = None,
    tensors_from: Any = None,
    training: bool | None | object = _ABSENT,
    keep_uncached_graph: bool = False,
    defer_code: bool = False,
) -> torch.fx.GraphModule:
    """`optimize` without its guard and fallback. `pipeline`: the passes to
    run (`ResolvedPipeline`, built in memory by `OptimizeOptions.resolve`),
    or a `-p` text (parsed here), or None (the default pipeline).
    `guard_strides=False` leaves out the call-time stride and mode checks
    (the torch.compile backend: Dynamo guards on strides itself);
    `training`: the mode of the model `model` was captured from (default:
    `model`'s own); `keep_uncached_graph` leaves the graph before the
    parameters are frozen in `UNCACHED_GRAPH_ATTRIBUTE` (for
    `optimus_ir.api.guards`: a copy where values were frozen, else
    `guards.OWN_GRAPH`); `defer_code` returns the module with its code
    pending (`exporter.finish_code` generates it: the guard's installation
    does, once); `cache_parameters=False` leaves parameter-only values where
    they are even with `freeze`; with `guard_strides`, the result reads
    parameters and buffers from `tensors_from` (default: `model`) when it is
    a module; `after_pass(pass, module)` is called after every pass (the
    backend logs the IR with it). An exception carries the phase it was
    raised in (`failed_phase`) and, from a pass, the pass (`pipeline.failed_pass`)."""
    from optimus_ir.pipeline import default_verify_each

    kwargs = dict(example_kwargs or {})
    phases: dict[str, float] = {}
    with _phase("capture", phases):
        gm = capture(model, example_inputs, kwargs)
        flat_inputs = _flat_inputs(gm, example_inputs, kwargs)
    with _phase("import", phases):
        program = import_graph(gm, flat_inputs)
    if verify_each is None:
        verify_each = validate or default_verify_each()
    hook = _pass_hook(program, flat_inputs, validate, after_pass, phases)
    freezing = freeze and cache_parameters
    owner = model if tensors_from is None else tensors_from
    sharing = parameter_stacks == "shared" and not freezing and guard_strides and isinstance(owner, torch.nn.Module)
    to_run = _pipeline_of(pipeline)
    # stacks of parameters are computed once with freeze, read in place when
    # shared: free per call
    free_stacks = freezing or sharing
    # a model optimized in training mode reads shared stacks under autograd;
    # told so with copies too, its remarks price what "shared" would fuse
    autograd = bool(getattr(owner, "training", False)) and not freezing and isinstance(owner, torch.nn.Module)
    passes = (
        [_with_constant_parameters(p, checked=sharing, autograd=autograd) for p in to_run.passes]
        if free_stacks else [_read_under_autograd(p) if autograd else p for p in to_run.passes]
    )
    # A trailing lower-to-fx runs after the output layouts are fixed (the
    # layout facts are known on operator ops only).
    passes, after_lowering = _split_lowering_tail(passes)
    lower_last = after_lowering is not None
    rewrites_before = statistics.budget.used if statistics is not None else 0
    with _phase("passes", phases), collect_diagnostics() as diagnostics:
        stats, text, layout_specialized = _run_passes(
            program, passes, to_run.text, lower_last, statistics, hook, verify_each, rewrites_before,
            after_lowering or [],
        )
    remarks = _remarks_warning_the_rest(diagnostics)

    with _phase("export", phases):
        # The mode is baked into the captured graph; the module refuses the other.
        if training is _ABSENT:
            training = model.training if isinstance(model, torch.nn.Module) else None
        # The code is generated once, last (binding the parameters to the
        # model, freezing and the guard each change it).
        result = export_graph(
            program,
            # Dynamo's guard of the capture checks every input's strides
            # already: the stride check is for graphs captured otherwise.
            fallback=gm if guard_strides and layout_specialized and not _dynamo_guarded(gm) else None,
            training=training if guard_strides else None,  # type: ignore[arg-type]
            defer_code=True,
        )
    ops_after = _read_model_tensors(result, owner if guard_strides else None, keep_uncached_graph, freezing)
    cached, held = _freeze(result, phases) if freezing else (0, (0, 0))
    shared = _share_stacks(result, phases) if sharing else 0
    if not defer_code:
        start = time.perf_counter()
        finish_code(result)  # the export's code generation, deferred to now: its time is the export's
        phases["export"] = phases.get("export", 0.0) + time.perf_counter() - start

    result.optimus_report = OptimizeReport(  # type: ignore[attr-defined]
        ops_before=count_fx_ops(gm),
        ops_after=ops_after,
        inplace_before=count_inplace_ops(gm),
        inplace_after=count_inplace_ops(result),
        pipeline=text,
        phase_seconds=phases,
        statistics=stats,
        remarks=remarks,
        cached_parameter_values=cached,
        shared_parameter_stacks=shared,
        cost_model=_cost_model_used(passes, program.module),
        frozen_bytes=held[0],
        parameter_copy_bytes=held[1],
        side_effect_free=_side_effect_free(program.module),
        ops_per_call=count_per_call_ops(result) if cached else None,
        parameter_ops_per_call=count_compute_ops(count_parameter_only_ops(result)),
    )
    _keep_capture_guard(gm, result)
    return result


def _pipeline_of(pipeline: ResolvedPipeline | str | None) -> ResolvedPipeline:
    """The pipeline `_optimize` runs: as given, or a `-p` text's (parsed:
    what the caller wrote), or the default one (built in memory)."""
    if isinstance(pipeline, ResolvedPipeline):
        return pipeline
    from optimus_ir.options import default_pipeline_passes

    if pipeline is None:
        from optimus_ir.passes.registry import DEFAULT_PIPELINE

        return ResolvedPipeline(default_pipeline_passes(), DEFAULT_PIPELINE, default=True)
    from optimus_ir.pipeline import parse_pipeline

    return ResolvedPipeline(parse_pipeline(pipeline) if pipeline else (), pipeline)


def _pass_hook(
    program: ImportedGraph,
    flat_inputs: Sequence[Any],
    validate: bool,
    after_pass: Callable[[Any, ModuleOp], None] | None,
    phases: dict[str, float],
) -> Callable[[Any, ModuleOp], None] | None:
    """What runs after every pass: the differential validator (`validate`),
    then `after_pass`; None when neither."""
    hook = None
    if validate:
        from optimus_ir.pipeline.validation import DifferentialValidator

        with _phase("validation setup", phases):
            # The validator calls the graph with its flat inputs.
            flat_program = ImportedGraph(program.module, program.owner, program.objects, None)
            validator = DifferentialValidator(flat_program, inputs=flat_inputs)
            hook = lambda pass_, module: validator.after_pass(pass_.name, module)  # noqa: E731
    if after_pass is None:
        return hook
    validating = hook

    def both(pass_: Any, module: ModuleOp) -> None:
        if validating is not None:
            validating(pass_, module)
        after_pass(pass_, module)

    return both


def _remarks_warning_the_rest(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The passes' remarks (for the report); their warnings are warned."""
    for diagnostic in diagnostics:
        if diagnostic.severity is Severity.WARNING:
            warnings.warn(str(diagnostic), stacklevel=4)
    return [d for d in diagnostics if d.severity is Severity.REMARK]


def _read_model_tensors(
    result: torch.fx.GraphModule, owner: Any, keep_uncached_graph: bool, freezing: bool
) -> Any:
    """The ops of `result` per kind, counted before freezing (the ops the
    pipeline made: the frozen values' own plumbing is one call and a getitem
    per value); `result` (and its fallback graph) made to read the
    parameters and buffers of `owner` when it is a module, under its names;
    with `keep_uncached_graph`, the graph before freezing kept for the guard."""
    with gc_paused():  # tens of thousands of long-lived objects made: nothing is garbage
        ops_after = count_fx_ops(result)
        if isinstance(owner, torch.nn.Module):
            from optimus_ir.api.model_names import adopt_model_names
            from optimus_ir.api.param_cache import read_tensors_from_model

            read_tensors_from_model(result, owner)
            adopt_model_names(result, owner)  # its state dict is the model's
            result.__dict__[SNAPSHOT_ATTRIBUTE] = AttributeSnapshot(enabled=environment().snapshot)
            fallback = result.__dict__.get(FALLBACK_ATTRIBUTE)
            if isinstance(fallback, torch.fx.GraphModule) and fallback is not owner:  # not the caller's graph
                read_tensors_from_model(fallback, owner)
        if keep_uncached_graph:
            # The guard's batch proof runs this graph on fake tensors, before
            # freezing: frozen values would have been computed from the real
            # parameters. Unfrozen, the module's own graph is that graph.
            from optimus_ir.api.guards import OWN_GRAPH

            result.__dict__[UNCACHED_GRAPH_ATTRIBUTE] = copy_graph(result.graph) if freezing else OWN_GRAPH
    return ops_after


def _freeze(result: torch.fx.GraphModule, phases: dict[str, float]) -> tuple[int, tuple[int, int]]:
    """Compute the values on parameters alone once (`freeze`); how many, and
    the bytes they take and hold of the weights twice (`param_cache.frozen_bytes`)."""
    from optimus_ir.api.param_cache import freeze_parameter_expressions, frozen_bytes

    with _phase("freeze parameters", phases):
        cached = freeze_parameter_expressions(result)
        return cached, frozen_bytes(result)


def _cost_model_used(passes: Sequence[Any], module: ModuleOp) -> str:
    """The cost model batch fusion priced with, described (its constants,
    and for a calibration when it was measured and how steadily); "" where
    no batch-fusion pass priced anything."""
    for pass_ in passes:
        if getattr(pass_, "name", None) == "batch-fusion" and hasattr(pass_, "_cost_model"):
            model = pass_._cost_model(graph_of(module).block)  # noqa: SLF001 - the pass's own choice, asked again
            return model.describe() if model is not None else "none (every group found is fused)"
    return ""


def _share_stacks(result: torch.fx.GraphModule, phases: dict[str, float]) -> int:
    """Re-home the stacked parameters of fused groups into shared stacks
    (`parameter_stacks="shared"`); how many stacks are shared."""
    from optimus_ir.api.shared_stacks import share_parameter_stacks

    with _phase("share parameter stacks", phases):
        return share_parameter_stacks(result)


def _side_effect_free(module: ModuleOp) -> bool:
    """No op of the graph has side effects (writes, random numbers, calls of
    unknown code): running it changes nothing but its outputs. The
    `reinplace` pass's calls write only temporaries of the graph's own that
    die there, which nothing outside sees."""
    from optimus_ir.foundation.traits import is_removable
    from optimus_ir.kernels import inplace
    from optimus_ir.kernels.joins import OWN_WRITES_PREFIX

    own_writes = (inplace.__name__ + ".", OWN_WRITES_PREFIX)
    return all(
        is_removable(op) or isinstance(op, fx.CallFunctionOp) and op.target.data.startswith(own_writes)
        for op in graph_of(module).block.ops
        if not isinstance(op, fx.PlaceholderOp | fx.OutputOp)
    )

def _has_non_fx_ops(module: ModuleOp) -> bool:
    return any(op.dialect_name() != "fx" for op in graph_of(module).block.ops)

def _read_under_autograd(pass_: Any) -> Any:
    """`pass_`, told the model runs under autograd when it is batch fusion:
    with copies of the parameters this changes no price, only what its
    remarks say `parameter_stacks="shared"` would fuse (`plan`'s
    `with_free_parameter_stacks`)."""
    if (
        getattr(pass_, "name", None) == "batch-fusion"
        and hasattr(pass_, "autograd_parameters")
        and not getattr(pass_, "constant_parameters", True)  # a pipeline that prices stacks its own way: as given
    ):
        return dataclasses.replace(pass_, autograd_parameters=True)
    return pass_


def _with_constant_parameters(pass_: Any, *, checked: bool = False, autograd: bool = False) -> Any:
    """`pass_`, told that parameters are constants when it is batch fusion
    (its cost model then prices stacks of parameters as free; `checked`:
    shared stacks, whose members are checked on every call; `autograd`:
    read under autograd, small members stacked per call)."""
    if getattr(pass_, "name", None) == "batch-fusion" and hasattr(pass_, "constant_parameters"):
        if checked and hasattr(pass_, "checked_parameters"):
            extra = {"autograd_parameters": True} if autograd and hasattr(pass_, "autograd_parameters") else {}
            return dataclasses.replace(pass_, constant_parameters=True, checked_parameters=True, **extra)
        return dataclasses.replace(pass_, constant_parameters=True)
    return pass_

FAILED_PHASE_ATTRIBUTE = "optimus_phase"
"""The attribute an exception raised by `_optimize` carries: the phase
(capture, import, passes, export, ...) it was raised in."""

@contextlib.contextmanager
def _phase(name: str, phases: dict[str, float]) -> Iterator[None]:
    """Time one phase of `_optimize` into `phases[name]`; an exception
    leaving it is marked with the phase (the innermost mark wins)."""
    start = time.perf_counter()
    try:
        yield
    except Exception as error:
        if getattr(error, FAILED_PHASE_ATTRIBUTE, None) is None:
            try:
                setattr(error, FAILED_PHASE_ATTRIBUTE, name)
            except AttributeError:
                pass
        raise
    finally:
        phases[name] = time.perf_counter() - start

def failed_phase(error: BaseException) -> str | None:
    """The phase of `_optimize` that raised `error` (`_phase`), or None."""
    return getattr(error, FAILED_PHASE_ATTRIBUTE, None)

AFTER_LOWERING_PASSES = frozenset({"reinplace", "write-into-join"})
"""Passes that may follow the pipeline's trailing `lower-to-fx` and still
run after it when optimize() moves the lowering behind the output-stride
fix (they work on the lowered fx calls)."""


def _split_lowering_tail(passes: list[Any]) -> tuple[list[Any], list[Any] | None]:
    """(the passes before a trailing `lower-to-fx`, the passes after it), or
    (`passes`, None) where the pipeline does not end in `lower-to-fx`
    followed only by `AFTER_LOWERING_PASSES`."""
    for at in range(len(passes) - 1, -1, -1):
        name = getattr(passes[at], "name", None)
        if name == "lower-to-fx":
            return passes[:at], passes[at + 1:]
        if name not in AFTER_LOWERING_PASSES:
            break
    return passes, None


def _run_passes(
    program: ImportedGraph,
    passes: list[Any],
    text: str,
    lower_last: bool,
    statistics: Any,
    hook: Any,
    verify_each: bool,
    rewrites_before: int,
    after_lowering: list[Any],
) -> tuple[Any, str, bool]:
    """Run the pipeline's passes on `program`, then lower what is left to fx
    and run `after_lowering` (the pipeline's passes after its trailing
    lower-to-fx); the statistics, the pipeline text as run, and whether the
    result relies on the example inputs' layout (needs the stride guard)."""
    from optimus_ir.pipeline import run_pipeline

    stats = run_pipeline(
        program.module,
        passes,
        statistics=statistics,
        validate_each=hook,
        verify_each=True if verify_each else False,
    )
    # Layout facts about the inputs matter only where a rewrite used them
    # (every pattern rewrite is charged to the budget; raising and lowering
    # are bit-exact for any strides) or where an output was made contiguous:
    # without either, the module needs no stride check and runs as lean as
    # the captured graph.
    layout_specialized = stats.budget.used > rewrites_before
    layout_specialized |= (
        _match_output_strides(program, stats, hook, verify_each, rewritten=layout_specialized) > 0
    )
    if lower_last or _has_non_fx_ops(program.module):
        from optimus_ir.passes.registry import get_pass_class

        run_pipeline(
            program.module,
            [get_pass_class("lower-to-fx")()],
            statistics=stats,
            validate_each=hook,
            verify_each=True if verify_each else False,
        )
        if not lower_last:
            text = f"{text},lower-to-fx" if text else "lower-to-fx"
    if after_lowering:
        run_pipeline(
            program.module,
            after_lowering,
            statistics=stats,
            validate_each=hook,
            verify_each=True if verify_each else False,
        )
    if not verify_each:
        from optimus_ir.foundation.diagnostics import verify_module

        verify_module(program.module, "after the pipeline")
    return stats, text, layout_specialized


# ---------------------------------------------------------------------------
# Layout at the boundary: input strides checked, output strides kept
# ---------------------------------------------------------------------------


def _match_output_strides(
    program: ImportedGraph, statistics: Any, hook: Any, verify_each: bool, *, rewritten: bool
) -> int:
    """Make every returned tensor have the strides the captured graph
    returns, whatever the layout: the `match-output-strides` pass
    (`passes/output_layout.py`), run by the pass manager with the strides the
    importer recorded (`rewritten`: some rewrite ran); the number of
    restores it added."""
    from optimus_ir.passes.registry import get_pass_class
    from optimus_ir.pipeline import run_pipeline

    if not any(want is not None for want in program.output_strides):
        return 0  # nothing known to match
    match = get_pass_class("match-output-strides").expecting(  # type: ignore[attr-defined]
        program.output_strides, rewritten=rewritten
    )
    run_pipeline(
        program.module,
        [match],
        statistics=statistics,
        validate_each=hook,
        verify_each=True if verify_each else False,
    )
    return statistics.by_pass(match.name)[-1].counters.get("restores added", 0)
