"""`torch.compile(model, backend="optimus")`: optimus-ir as a compiler stage.

Registered through the `torch_dynamo_backends` entry point. Dynamo hands us
each captured graph (with its example values in node.meta); we optimize it and
pass the result on to Inductor (default) or run it as it is (`inner="eager"`).
Options come through `torch.compile(..., options={...})`:

* `pipeline`: a `-p` pipeline text (default: the default pipeline);
* `inner`: "inductor" (default) or "eager";
* `validate`: check every pass differentially (slow; for debugging);
* `verify_each`: verify the IR after every pass (default: once, after the
  last pass, unless `OPTIMUS_VERIFY_EACH=1`).

A graph optimus-ir cannot handle (one it cannot import or type, a pass or
the export failing, a validation failure) is not an error of the user's
program: the backend warns once per graph (`OptimusFallbackWarning`, naming
the problem) and hands the graph on unoptimized. A bad `pipeline` text or
unknown option is the caller's mistake and raises.

Dynamo guards on the strides of the inputs itself, so the backend's graph
carries no stride check of its own (`optimize()`'s result does). Values
computed from parameters alone are cached (`optimus_ir.param_cache`) only
with `inner="eager"`: Inductor traces the module and folds constants itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx


class OptimusFallbackWarning(UserWarning):
    """A graph the torch.compile backend could not optimize runs unoptimized."""


def optimus_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    pipeline: str | None = None,
    inner: str = "inductor",
    validate: bool = False,
    verify_each: bool | None = None,
    options: dict[str, Any] | None = None,
    **unknown: Any,
) -> Callable[..., Any]:
    """Dynamo backend: optimize `gm`, then compile it with `inner`.

    torch.compile hands `options={...}` over as one keyword; its entries
    override the keyword arguments."""
    if options:
        known = {
            "pipeline": pipeline,
            "inner": inner,
            "validate": validate,
            "verify_each": verify_each,
        }
        unknown.update({k: v for k, v in options.items() if k not in known})
        known.update({k: v for k, v in options.items() if k in known})
        pipeline, inner = known["pipeline"], known["inner"]
        validate, verify_each = known["validate"], known["verify_each"]
    if unknown:
        raise TypeError(
            f"optimus backend: unknown option(s) {sorted(unknown)}; "
            "known: pipeline, inner, validate, verify_each"
        )
    import warnings

    from optimus_ir.pipeline import PipelineError, parse_pipeline

    if inner not in ("inductor", "eager"):
        raise ValueError(f"optimus backend: unknown inner compiler '{inner}' (inductor, eager)")
    if pipeline is not None:
        parse_pipeline(pipeline)  # a bad pipeline raises PipelineError here
    try:
        optimized = _optimize_graph(gm, example_inputs, pipeline, validate, verify_each, inner)
    except PipelineError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever fails, the user's program must run
        where = f"{type(error).__name__}: {error}"
        warnings.warn(
            f"optimus backend: cannot optimize this graph ({where.splitlines()[0]}); "
            "running it unoptimized",
            OptimusFallbackWarning,
            stacklevel=2,
        )
        optimized = gm
    if inner == "eager":
        return optimized.forward
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(optimized, list(example_inputs))


def _optimize_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    pipeline: str | None,
    validate: bool,
    verify_each: bool | None,
    inner: str,
) -> torch.fx.GraphModule:
    """`gm` optimized for the backend (no stride guard: Dynamo guards)."""
    from optimus_ir.api import _optimize

    return _optimize(
        gm,
        example_inputs,
        pipeline,
        validate=validate,
        statistics=None,
        example_kwargs=None,
        verify_each=verify_each,
        guard_strides=False,
        # Inductor traces the module with fake tensors (the cache would only
        # compute its values inline) and folds constants itself; with
        # Dynamo's default of lifting parameters to graph inputs there are no
        # parameter-only values to cache anyway.
        cache_parameters=inner == "eager",
    )
