"""The environment of optimus-ir, read in one place, and the option types
the passes and `OptimizeOptions` share (`Literal` choices).

The environment is read here and nowhere else in the package
(`environment()`; a test greps the sources for it). It is read when it is
asked for, not cached at import, so that a test can `monkeypatch.setenv`
a variable and see its effect. The variables:

=========================  =========================================================
variable                   meaning (where it applies)
=========================  =========================================================
`OPTIMUS_STRICT`           `1`/`true`/`yes`/`on`: a graph optimus-ir cannot optimize
                           raises instead of running unoptimized (the default of
                           `strict`; the tests set it)
`OPTIMUS_CHECK_SPEED`      `0`: `optimize()` does not time its result against the
                           captured graph (the default of `check_speed`; the tests
                           set it)
`OPTIMUS_VERIFY_EACH`      not empty and not `0`: verify the IR after every pass (the
                           default of `verify_each`, also for `run_pipeline`; the
                           tests set it)
`OPTIMUS_COST_MODEL`       `default`: the cost model's documented constants instead
                           of a calibration wherever a calibrated model is asked for
                           (`batch-fusion{cost-model=calibrated}`, the default; the
                           tests set it); `calibrated` or unset: measure and cache
`OPTIMUS_CACHE_DIR`        the directory of the cost model's calibration cache
                           (default `~/.cache/optimus-ir`)
`OPTIMUS_LOG`              `info` or `debug`: log the `optimus_ir` loggers to stderr
                           (backend and Inductor hook)
`OPTIMUS_TRITON_ON_CPU`    `1` together with `TRITON_INTERPRET=1`: CPU tensors take
                           the Triton kernels (run by Triton's interpreter; tests)
`TRITON_INTERPRET`         Triton's own switch, read by the kernels to pick their
                           interpreter configurations
`OPTIMUS_TRACEBACK`        not empty: `optimus-opt` prints the Python traceback of an
                           internal error
`OPTIMUS_PLUGINS`          `0`/`false`/`no`/`off`: installed plugins (entry points of
                           group `optimus_ir.plugins`) are not loaded
                           (`optimus_ir.plugins.load_plugins`)
`OPTIMUS_SNAPSHOT`         `0`/`false`/`no`/`off`: an optimized module reads every
                           parameter and runs every shared-stack check on each
                           call, with no snapshot of the last call's reads
                           (`optimus_ir.translate.attribute_snapshot`)
=========================  =========================================================
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_type_hints

# --- the environment ---------------------------------------------------------------------

STRICT_ENV = "OPTIMUS_STRICT"
CHECK_SPEED_ENV = "OPTIMUS_CHECK_SPEED"
VERIFY_EACH_ENV = "OPTIMUS_VERIFY_EACH"
COST_MODEL_ENV = "OPTIMUS_COST_MODEL"
CACHE_DIR_ENV = "OPTIMUS_CACHE_DIR"
LOG_ENV = "OPTIMUS_LOG"
TRITON_ON_CPU_ENV = "OPTIMUS_TRITON_ON_CPU"
TRITON_INTERPRET_ENV = "TRITON_INTERPRET"
TRACEBACK_ENV = "OPTIMUS_TRACEBACK"
PLUGINS_ENV = "OPTIMUS_PLUGINS"
SNAPSHOT_ENV = "OPTIMUS_SNAPSHOT"

ENVIRONMENT_VARIABLES: tuple[str, ...] = (
    STRICT_ENV,
    CHECK_SPEED_ENV,
    VERIFY_EACH_ENV,
    COST_MODEL_ENV,
    CACHE_DIR_ENV,
    LOG_ENV,
    TRITON_ON_CPU_ENV,
    TRITON_INTERPRET_ENV,
    TRACEBACK_ENV,
    PLUGINS_ENV,
    SNAPSHOT_ENV,
)
"""Every environment variable optimus-ir reads (see the module docs)."""

_TRUE_WORDS = ("1", "true", "yes", "on")
_FALSE_WORDS = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Environment:
    """What the environment asks of optimus-ir, parsed (`environment()`)."""

    strict: bool = False
    """`OPTIMUS_STRICT` is 1, true, yes or on."""
    check_speed: bool = True
    """`OPTIMUS_CHECK_SPEED` is not `0`."""
    verify_each: bool = False
    """`OPTIMUS_VERIFY_EACH` is set and not `0`."""
    cost_model: str = ""
    """`OPTIMUS_COST_MODEL`, stripped and lower-cased ("" when unset); the
    cost model warns about values other than `default` and `calibrated`."""
    cache_dir: str | None = None
    """`OPTIMUS_CACHE_DIR` (None when unset or empty)."""
    log_level: str = ""
    """`OPTIMUS_LOG`, stripped and lower-cased ("" when unset)."""
    triton_interpret: bool = False
    """`TRITON_INTERPRET=1`."""
    triton_on_cpu: bool = False
    """`OPTIMUS_TRITON_ON_CPU=1` and `TRITON_INTERPRET=1`."""
    traceback: bool = False
    """`OPTIMUS_TRACEBACK` is set (not empty)."""
    plugins: bool = True
    """`OPTIMUS_PLUGINS` is not 0, false, no or off: installed plugins
    (entry points) are loaded."""
    snapshot: bool = True
    """`OPTIMUS_SNAPSHOT` is not 0, false, no or off: optimized modules keep
    a snapshot of their last call's reads (`translate.attribute_snapshot`)."""


def environment(environ: Mapping[str, str] | None = None) -> Environment:
    """The settings of the environment variables, read now from `environ`
    (default: `os.environ`). The one place optimus-ir reads the environment."""
    env = os.environ if environ is None else environ
    interpret = env.get(TRITON_INTERPRET_ENV) == "1"
    return Environment(
        strict=env.get(STRICT_ENV, "").strip().lower() in _TRUE_WORDS,
        check_speed=env.get(CHECK_SPEED_ENV, "1").strip() != "0",
        verify_each=env.get(VERIFY_EACH_ENV, "") not in ("", "0"),
        cost_model=env.get(COST_MODEL_ENV, "").strip().lower(),
        cache_dir=env.get(CACHE_DIR_ENV) or None,
        log_level=env.get(LOG_ENV, "").strip().lower(),
        triton_interpret=interpret,
        triton_on_cpu=interpret and env.get(TRITON_ON_CPU_ENV) == "1",
        traceback=bool(env.get(TRACEBACK_ENV)),
        plugins=env.get(PLUGINS_ENV, "").strip().lower() not in _FALSE_WORDS,
        snapshot=env.get(SNAPSHOT_ENV, "").strip().lower() not in _FALSE_WORDS,
    )


# --- typed choices (the pass options use them too) ----------------------------------------

InnerCompiler = Literal["inductor", "eager"]
"""What the backend hands the optimized graph to: Inductor, or nothing (run it)."""

KernelChoice = Literal["auto", "triton", "torch"]
"""`lower-batch{kernels=...}`: `auto` (Triton kernels for CUDA tensors where
available), `triton` (for every tensor), `torch` (never)."""

CostModelChoice = Literal["calibrated", "default", "none"]
"""`batch-fusion{cost-model=...}`: `calibrated` (measured once on this
machine and cached; `OPTIMUS_COST_MODEL=default` makes it `default`),
`default` (documented constants) or `none` (fuse every group found)."""

ParameterStacks = Literal["copy", "shared"]
"""Where a fused group's stacked parameters live (`optimize(parameter_stacks=...)`):
`copy` (a stack made on every call, from the parameters as they are) or
`shared` (the parameters re-homed into one storage per group, which the fused
op reads without a copy: `optimus_ir.api.shared_stacks`)."""

EntryPoint = Literal["optimize", "backend", "inductor"]
"""The three entry points that take `OptimizeOptions`."""



def literal_choices(annotation: Any) -> tuple[Any, ...] | None:
    """The values of a `Literal[...]` annotation (also inside `... | None`), or None."""
    from typing import Union, get_origin

    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)
    if origin is Union or type(annotation).__name__ == "UnionType":
        for member in get_args(annotation):
            choices = literal_choices(member)
            if choices is not None:
                return choices
    return None


def literal_option_problems(instance: Any) -> list[str]:
    """For a dataclass (a pass), one message per `Literal[...]`-typed field
    whose value is not one of its choices: what xDSL's spec parsing refuses,
    for instances made in Python."""
    if not dataclasses.is_dataclass(instance) or isinstance(instance, type):
        return []
    problems = []
    for name, choices, optional in _literal_fields(type(instance)):
        value = getattr(instance, name, None)
        if value not in choices and not (value is None and optional):
            option = name.replace("_", "-")
            problems.append(f"option '{option}' must be one of {', '.join(map(str, choices))}, got {value!r}")
    return problems


@functools.cache
def _literal_fields(cls: type) -> tuple[tuple[str, tuple[Any, ...], bool], ...]:
    """(field, choices, None allowed) of each `Literal[...]`-typed field of `cls`."""
    try:
        hints = get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an annotation we cannot resolve is not ours to check
        return ()
    fields = []
    for field_ in dataclasses.fields(cls):
        choices = literal_choices(hints.get(field_.name))
        if choices is not None:
            fields.append((field_.name, choices, type(None) in get_args(hints[field_.name])))
    return tuple(fields)


__all__ = [
    "CACHE_DIR_ENV",
    "CHECK_SPEED_ENV",
    "COST_MODEL_ENV",
    "CostModelChoice",
    "ENVIRONMENT_VARIABLES",
    "EntryPoint",
    "Environment",
    "InnerCompiler",
    "KernelChoice",
    "LOG_ENV",
    "ParameterStacks",
    "STRICT_ENV",
    "TRACEBACK_ENV",
    "TRITON_INTERPRET_ENV",
    "TRITON_ON_CPU_ENV",
    "VERIFY_EACH_ENV",
    "environment",
    "literal_choices",
    "literal_option_problems",
]
