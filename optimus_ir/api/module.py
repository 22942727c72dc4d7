"""The module `optimize` returns and its guard: `_OptimizeFor` (the model
optimized with fixed, resolved options for one input signature: what the
guard calls again for other inputs; its `_optimize_or_fall_back` falls back
to the captured graph for a failure inside optimus-ir, its
`_optimize_captured` applies the speed check and op-count guard), and the
installation of the guard on the first module (`install_guarded`)."""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from optimus_ir.api.capturing import capture
from optimus_ir.api.fallback import _running_the_model, _unoptimized, describe_failure
from optimus_ir.api.optimizing import _optimize, knobs_of
from optimus_ir.api.report import OptimizeReport
from optimus_ir.api.speed_check import _guard_op_count, check_speed_of, measure_memory_with_speed
from optimus_ir.foundation.diagnostics import OptimusFallbackWarning
from optimus_ir.translate.exporter import CODE_PENDING_ATTRIBUTE, finish_code
from optimus_ir.api.guards import UNCACHED_GRAPH_ATTRIBUTE
from optimus_ir.translate.model_state import AttributeAssignmentError
from optimus_ir.options import ResolvedOptions, ResolvedPipeline


@dataclass(frozen=True)
class _OptimizeFor:
    """`optimize` of `model` with fixed options for given inputs, without
    the guard: what the guard calls to re-optimize (a class, not a closure,
    so that the guarded module can still be pickled)."""

    model: Any
    options: ResolvedOptions
    """Resolved once (`OptimizeOptions.resolve`): the environment read, the
    pipeline's passes built with their options."""
    statistics: Any = None
    frozen_originals: Mapping[int, Any] = field(default_factory=dict)
    """With `freeze` and a stand-in `model`: the original tensors its
    tensors replaced (`param_cache.frozen_originals`), whose `requires_grad`
    the frozen values of every module made from it follow."""

    def __getstate__(self) -> dict[str, Any]:
        # weak references do not pickle; a copy goes by its own tensors' flags
        return {**self.__dict__, "frozen_originals": {}}

    def __call__(
        self, inputs: Sequence[Any], kwargs: Mapping[str, Any], *, defer_code: bool = False
    ) -> torch.fx.GraphModule:
        """The model optimized for `inputs` and `kwargs`; with `defer_code`,
        its code may be pending (`exporter.finish_code`: `optimize` installs
        the guard first, then generates it once)."""
        options = self.options
        result = self._optimize_or_fall_back(inputs, kwargs, defer_code=defer_code)
        if self.frozen_originals:
            from optimus_ir.api.param_cache import inherit_frozen_originals

            inherit_frozen_originals(result, self.frozen_originals)
        if not defer_code:
            from optimus_ir.api.model_names import watch_own_state

            finish_code(result)
            watch_own_state(result)  # a specialization of the guard is complete here
        if options.remarks:
            report: OptimizeReport = result.optimus_report  # type: ignore[assignment]
            # what a discarded attempt did, said so: it is not in the module returned
            for remark in report.discarded_remarks:
                print(f"optimus: remark (discarded attempt): {remark.message}", file=sys.stderr)
            for remark in report.remarks:
                print(f"optimus: remark: {remark.message}", file=sys.stderr)
        return result

    def _optimize_or_fall_back(
        self,
        example_inputs: Sequence[Any],
        example_kwargs: Mapping[str, Any],
        *,
        defer_code: bool = False,
    ) -> torch.fx.GraphModule:
        """`optimize` for one input signature, without the guard: capture (a
        CaptureError raises), then `_optimize_captured`; a failure after the
        capture returns the captured graph with one `OptimusFallbackWarning`
        unless `options.strict` (or it is a ValidationError asked for with
        `validate`). `defer_code`: the result's code may be pending (`exporter.finish_code`)."""
        model, options = self.model, self.options
        start = time.perf_counter()
        try:
            gm = capture(model, example_inputs, example_kwargs)
        except AttributeAssignmentError as error:
            runner = _running_the_model(model, example_inputs, example_kwargs, str(error))
            if runner is None:
                raise
            warnings.warn(
                f"optimus: cannot optimize {type(model).__name__}: {error}; returning a module that "
                "runs the model itself, unoptimized, so that the attribute writes still happen "
                "(torch.compile(model, backend='optimus') optimizes it: Dynamo replays the writes)",
                OptimusFallbackWarning,
                stacklevel=4,
            )
            runner.optimus_report.phase_seconds["capture"] = time.perf_counter() - start  # type: ignore[union-attr]
            return runner
        capture_seconds = time.perf_counter() - start
        training = model.training if isinstance(model, torch.nn.Module) else None
        try:
            result = self._optimize_captured(gm, example_inputs, example_kwargs, training, defer_code=defer_code)
        except Exception as error:
            from optimus_ir.pipeline.validation import ValidationError

            if options.strict or (options.validate and isinstance(error, ValidationError)):
                raise
            reason = describe_failure(error)
            warnings.warn(
                f"optimus: cannot optimize {type(model).__name__}: {reason}; returning the captured "
                f"graph unoptimized (strict=True or OPTIMUS_STRICT=1 raises instead)",
                OptimusFallbackWarning,
                stacklevel=4,
            )
            result = _unoptimized(gm, model, training, reason)
        result.optimus_report.phase_seconds["capture"] = capture_seconds  # type: ignore[union-attr]
        return result


    def _optimize_captured(
        self,
        gm: torch.fx.GraphModule,
        example_inputs: Sequence[Any],
        example_kwargs: Mapping[str, Any],
        training: bool | None,
        *,
        defer_code: bool = False,
    ) -> torch.fx.GraphModule:
        """The captured graph `gm` of `model` optimized, checked for speed
        (`check_speed_of`) and, for the default pipeline, for its op count
        (`_guard_op_count`: an explicit pipeline is run as written, tests and
        users forcing a fusion); the result reads `model`'s parameters and
        buffers, and with `defer_code` its code may be pending (`exporter.finish_code`)."""
        model, options = self.model, self.options
        pipeline: ResolvedPipeline = options.pipeline
        rerun = dict(
            knobs_of(options),
            tensors_from=model,
            training=training,
            statistics=self.statistics,
            example_kwargs=example_kwargs,
            guard_strides=True,
            keep_uncached_graph=True,
            defer_code=defer_code,
        )
        made = _optimize(gm, example_inputs, pipeline, **rerun)
        result = check_speed_of(made, gm, example_inputs, example_kwargs, rerun) if options.check_speed else made
        unfused_run = result is not made
        if unfused_run:
            from optimus_ir.api.shared_stacks import release_shared_stacks

            release_shared_stacks(made)  # the parameters get their own storage back
        if pipeline.default:
            result = _guard_op_count(gm, model, example_inputs, result, training, rerun, unfused_run=unfused_run)
        warm = not unfused_run and result is made  # the module the speed check ran
        measure_memory_with_speed(result, gm, model, example_inputs, example_kwargs, warm=warm)
        return result


def install_guarded(
    result: torch.fx.GraphModule,
    model: Any,
    example_inputs: Sequence[Any],
    kwargs: Mapping[str, Any],
    optimize_for: _OptimizeFor,
) -> torch.fx.GraphModule:
    """`result` (the first module `optimize_for` made, its code pending)
    guarded (`guards.install_guard`: for other inputs it calls
    `optimize_for` again), its code generated once, its own state watched.
    With `freeze`, the stacks become the only copy of the weights they
    hold: the module (and its guard, which re-optimizes and falls back)
    reads a stand-in of the model whose stacked weights are views of them."""
    from optimus_ir.api.guards import install_guard
    from optimus_ir.api.model_names import watch_own_state

    report: OptimizeReport = result.optimus_report  # type: ignore[attr-defined]
    # The guard's check goes into the code, which is generated then, once
    # (`exporter.finish_code`): that time is the export's.
    pending = result.__dict__.get(CODE_PENDING_ATTRIBUTE, False)
    start = time.perf_counter()
    owner = model
    if optimize_for.options.freeze:
        from optimus_ir.api.param_cache import frozen_bytes, frozen_originals, hand_over_to_frozen_values

        owner = hand_over_to_frozen_values(result, model)
        if owner is not model:
            optimize_for = dataclasses.replace(optimize_for, model=owner, frozen_originals=frozen_originals(result))
        if report.frozen_bytes:
            report.frozen_bytes, report.parameter_copy_bytes = frozen_bytes(result)
    install_guard(
        result,
        owner,
        example_inputs,
        kwargs,
        optimize_for,
        uncached_graph=result.__dict__.pop(UNCACHED_GRAPH_ATTRIBUTE, None),
    )
    finish_code(result)  # when no guard could be installed
    watch_own_state(result)  # complete now: its code reads the model's tensors alone until changed
    if pending:
        report.phase_seconds["export"] = report.phase_seconds.get("export", 0.0) + time.perf_counter() - start
    return result
