"""`torch.compile(model, backend="optimus")`: optimus-ir as a compiler stage.

Registered through the `torch_dynamo_backends` entry point. Dynamo hands us
each captured graph (with its example values in node.meta); we optimize it and
pass the result on to Inductor (default) or run it as it is (`inner="eager"`).
Options come through `torch.compile(..., options={...})`:

* `pipeline`: a `-p` pipeline text (default: the default pipeline);
* `inner`: "inductor" (default) or "eager";
* `validate`: check every pass differentially (slow; for debugging).
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
    options: dict[str, Any] | None = None,
    **unknown: Any,
) -> Callable[..., Any]:
    """Dynamo backend: optimize `gm`, then compile it with `inner`.

    torch.compile hands `options={...}` over as one keyword; its entries
    override the keyword arguments."""
    if options:
        known = {"pipeline": pipeline, "inner": inner, "validate": validate}
        unknown.update({k: v for k, v in options.items() if k not in known})
        known.update({k: v for k, v in options.items() if k in known})
        pipeline, inner, validate = known["pipeline"], known["inner"], known["validate"]
    if unknown:
        raise TypeError(
            f"optimus backend: unknown option(s) {sorted(unknown)}; "
            "known: pipeline, inner, validate"
        )
    from optimus_ir.api import optimize

    optimized = optimize(gm, example_inputs, pipeline, validate=validate)
    if inner == "eager":
        return optimized.forward
    if inner == "inductor":
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(optimized, list(example_inputs))
    raise ValueError(f"optimus backend: unknown inner compiler '{inner}' (inductor, eager)")
