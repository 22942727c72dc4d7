"""`optimize()`, the library's entry point: its keywords made into
`OptimizeOptions` (checked and parsed once), resolved once
(`OptimizeOptions.resolve`: the environment read, the pipeline's passes
built with their options), the model optimized for the example inputs
(`module._OptimizeFor`) and guarded (`module.install_guarded`). What the
module returned guarantees is in the package's docs (`optimus_ir.api`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.fx

from optimus_ir.api.module import _OptimizeFor, install_guarded
from optimus_ir.analysis.cost_model import DEFAULT_MEMORY_BUDGET
from optimus_ir.options import CostModelChoice, InnerCompiler, KernelChoice, OptimizeOptions
from optimus_ir.plugins import load_plugins


def optimize(
    model: Callable[..., Any] | torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    pipeline: str | None = None,
    *,
    inner: InnerCompiler = "inductor",
    validate: bool = False,
    verify_each: bool | None = None,
    freeze: bool = False,
    check_speed: bool | None = None,
    strict: bool | None = None,
    remarks: bool = False,
    cost_model: CostModelChoice = "calibrated",
    kernels: KernelChoice = "auto",
    memory_budget: str | float | int = DEFAULT_MEMORY_BUDGET,
    parameter_stacks: ParameterStacks = "copy",
    options: OptimizeOptions | None = None,
    statistics: Any = None,
    example_kwargs: Mapping[str, Any] | None = None,
) -> torch.fx.GraphModule:
    """Optimize `model` for `example_inputs` (and `example_kwargs`); returns
    an equivalent GraphModule, called like the model.

    The knobs (`pipeline` to `memory_budget`) are the fields of
    `optimus_ir.OptimizeOptions`, every one of them, with its defaults,
    shared with the torch.compile backend and the Inductor hook (docs/options.md);
    pass them as keywords or all at once as `options=OptimizeOptions(...)`,
    not both. `inner` is the backend's alone: set here, it raises TypeError.
    A knob left None is read from the environment once, now
    (`optimus_ir.options`). `statistics` (a `PassStatistics` to add to) is
    not an option but a collector.

    `pipeline` is a `-p` pipeline text (`"raise-fx,split-cat-simplify,lower-to-fx"`);
    None means the default pipeline. With `validate=True`, the IR is exported and
    run on seeded random inputs before and after every pass and a pass that
    changes results raises `ValidationError` naming the pass and the output.
    `verify_each=True` verifies the IR after every pass (also implied by
    `validate`); otherwise once, after the last pass, unless
    `OPTIMUS_VERIFY_EACH=1` (see `optimus_ir.pipeline.default_verify_each`).

    What the module returned guarantees (the model never changed, its state
    the model's; the guards; the fall back on a failure inside optimus-ir;
    parameters followed, or frozen with `freeze`; never clearly slower than
    the captured graph, never more ops) is in the package's docs,
    `optimus_ir.api`.
    """
    arguments = dict(locals())  # first thing: the parameters alone
    from optimus_ir.api.model_names import refuse_wrapped_model

    refuse_wrapped_model(model)  # DDP, FSDP, torch.compile: what to do instead
    # the knobs, by the fields' names: the signature spells each field once
    # (a test checks it against `OptimizeOptions`), nothing here again
    options = _options_of_call(options, {name: arguments[name] for name in OptimizeOptions.option_names()})
    load_plugins(strict=options.strict)  # installed plugins (passes, replacements): once per process
    optimize_for = _OptimizeFor(model, options.resolve(), statistics)
    kwargs = dict(example_kwargs or {})
    first = optimize_for(example_inputs, kwargs, defer_code=True)
    return install_guarded(first, model, example_inputs, kwargs, optimize_for)


def _options_of_call(options: OptimizeOptions | None, keywords: Mapping[str, Any]) -> OptimizeOptions:
    """The options of an `optimize` call: `options`, or its keywords made
    into options (a bad pipeline or option is the caller's mistake: it
    raises now); both given is a TypeError, so is a knob of another entry point."""
    if options is None:
        options = OptimizeOptions(**keywords)
    else:
        given = sorted(k for k, v in keywords.items() if v != _OPTIMIZE_DEFAULTS[k])
        if not isinstance(options, OptimizeOptions):
            raise TypeError(f"optimize: options must be an OptimizeOptions, not {type(options).__name__}")
        if given:
            raise TypeError(
                f"optimize: give options=OptimizeOptions(...) or keyword options, not both "
                f"(got {', '.join(map(repr, given))} too)"
            )
    options.check_entry("optimize")
    return options


_OPTIMIZE_DEFAULTS = {
    name: parameter.default
    for name, parameter in inspect.signature(optimize).parameters.items()
    if parameter.default is not inspect.Parameter.empty
}
"""The defaults of `optimize`'s keyword knobs (a knob differing from its
default was given)."""
