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
    from optimus_ir.api import _optimize

    optimized = _optimize(
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
    if inner == "eager":
        return optimized.forward
    if inner == "inductor":
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(optimized, list(example_inputs))
    raise ValueError(f"optimus backend: unknown inner compiler '{inner}' (inductor, eager)")
