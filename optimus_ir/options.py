"""The options of optimus-ir, configured once: `OptimizeOptions` and the environment.

`OptimizeOptions` holds every knob of the three entry points: `optimize()`,
the torch.compile backend (`backend="optimus"`, `optimus_ir.backend(...)`)
and the Inductor pre-grad hook (`optimus_ir.inductor_pass(...)`). Each
entry point still takes its knobs as keyword arguments (they build an
`OptimizeOptions`) and also takes one ready-made::

    options = OptimizeOptions(freeze=True, kernels="torch", remarks=True)
    optimus_ir.optimize(model, [x], options=options)
    torch.compile(model, backend=optimus_ir.backend(options=options))

A few knobs mean something to some entry points only (`ENTRY_POINTS`);
setting one where it does not apply raises TypeError.

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
=========================  =========================================================
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args, get_type_hints

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
)
"""Every environment variable optimus-ir reads (see the module docs)."""

_TRUE_WORDS = ("1", "true", "yes", "on")


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

EntryPoint = Literal["optimize", "backend", "inductor"]
"""The three entry points that take `OptimizeOptions`."""


# --- the options ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OptimizeOptions:
    """Every knob of `optimize()`, the torch.compile backend and the
    Inductor hook. A field left None takes its value from the environment
    when an entry point runs (`resolved`)."""

    pipeline: str | None = None
    """A `-p` pipeline text; None: the default pipeline."""
    inner: InnerCompiler = "inductor"
    """Backend only: hand the optimized graph to "inductor", or run it as
    it is ("eager")."""
    validate: bool = False
    """Check every pass differentially on random inputs (slow; debugging).
    Not inside Inductor (the hook has no real inputs to run)."""
    verify_each: bool | None = None
    """Verify the IR after every pass (default: once at the end, unless
    `validate` or `OPTIMUS_VERIFY_EACH=1`)."""
    freeze: bool = False
    """Treat the parameters as constants (inference only; later updates are
    not followed). Not inside Inductor (`config.freezing` is its switch)."""
    check_speed: bool | None = None
    """`optimize()` only: time the fused result against the captured graph
    and keep the faster (default: on, unless `OPTIMUS_CHECK_SPEED=0`)."""
    strict: bool | None = None
    """Raise instead of falling back to the unoptimized graph (default:
    `OPTIMUS_STRICT`)."""
    remarks: bool = False
    """Print the passes' remarks (what was fused and why the rest was not)
    to stderr."""
    cost_model: CostModelChoice = "calibrated"
    """The cost model of every `batch-fusion` of the pipeline that leaves
    its `cost-model` option at the default (see `CostModelChoice`)."""
    kernels: KernelChoice = "auto"
    """The kernels of every `lower-batch` of the pipeline that leaves its
    `kernels` option at the default (see `KernelChoice`)."""

    ENTRY_POINTS: ClassVar[Mapping[str, tuple[EntryPoint, ...]]] = {
        "inner": ("backend",),
        "validate": ("optimize", "backend"),
        "freeze": ("optimize", "backend"),
        "check_speed": ("optimize",),
    }
    """The knobs that apply to some entry points only (the others apply to all)."""

    _PASS_KNOBS: ClassVar[Mapping[str, tuple[str, str]]] = {
        "cost_model": ("batch-fusion", "cost_model"),
        "kernels": ("lower-batch", "kernels"),
    }
    """Knobs that set a pass option: knob -> (pass name, option field)."""

    def __post_init__(self) -> None:
        if self.inner not in get_args(InnerCompiler):
            raise ValueError(
                f"optimus: unknown inner compiler {self.inner!r} (choose from {', '.join(get_args(InnerCompiler))})"
            )
        for name, choices in (("cost_model", CostModelChoice), ("kernels", KernelChoice)):
            if getattr(self, name) not in get_args(choices):
                raise ValueError(
                    f"optimus: option {name!r} must be one of {', '.join(map(repr, get_args(choices)))}, "
                    f"not {getattr(self, name)!r}"
                )
        for name in ("validate", "freeze", "remarks"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"optimus: option {name!r} must be True or False, not {getattr(self, name)!r}")
        for name in ("verify_each", "check_speed", "strict"):
            if getattr(self, name) not in (None, True, False):
                raise TypeError(f"optimus: option {name!r} must be True, False or None, not {getattr(self, name)!r}")
        if self.pipeline is not None:
            from optimus_ir.pipeline import parse_pipeline

            parse_pipeline(self.pipeline)  # a bad pipeline (or not a text) raises PipelineError here

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def option_names(cls, entry: EntryPoint | None = None) -> list[str]:
        """The knobs (of `entry`, or all), in declaration order."""
        return [
            f.name
            for f in dataclasses.fields(cls)
            if entry is None or entry in cls.ENTRY_POINTS.get(f.name, (entry,))
        ]

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any], entry: EntryPoint | None = None) -> OptimizeOptions:
        """The options of a dict (the keyword arguments of an entry point);
        an unknown key raises TypeError listing the known ones, a key that
        does not apply to `entry` raises TypeError saying so."""
        known = cls.option_names(entry)
        everything = cls.option_names()
        unknown = sorted(set(options) - set(everything))
        if unknown:
            raise TypeError(f"optimus: unknown option(s) {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
        made = cls(**options)
        if entry is not None:
            made.check_entry(entry)
        return made

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **options: Any) -> OptimizeOptions:
        """`OptimizeOptions(**options)` with the knobs left None set from the
        environment (`environment(environ)`)."""
        return cls(**options).resolved(environment(environ))

    def check_entry(self, entry: EntryPoint) -> None:
        """TypeError when a knob that does not apply to `entry` differs from its default."""
        defaults = OptimizeOptions()
        for name, entries in self.ENTRY_POINTS.items():
            if entry in entries or getattr(self, name) == getattr(defaults, name):
                continue
            if entry == "inductor":
                raise TypeError(
                    f"optimus inductor pass: {name!r} is not an option inside Inductor "
                    "(see optimus_ir.inductor_pass); use backend='optimus' for it"
                )
            where = {"optimize": "optimize()", "backend": "the torch.compile backend"}
            raise TypeError(
                f"optimus: {name!r} is not an option of {where[entry]} "
                f"(only of {', '.join(where.get(e, 'the Inductor hook') for e in entries)})"
            )

    def resolved(self, env: Environment | None = None) -> OptimizeOptions:
        """These options with every None knob set from `env` (default: the
        environment now): strict, check_speed, verify_each (`validate`
        implies it)."""
        env = environment() if env is None else env
        return dataclasses.replace(
            self,
            strict=env.strict if self.strict is None else self.strict,
            check_speed=env.check_speed if self.check_speed is None else self.check_speed,
            verify_each=(self.validate or env.verify_each) if self.verify_each is None else self.verify_each,
        )

    # -- reading ----------------------------------------------------------------------------

    @property
    def is_strict(self) -> bool:
        """`strict`, or `OPTIMUS_STRICT` when it is None."""
        return environment().strict if self.strict is None else self.strict

    def pipeline_to_run(self) -> str | None:
        """The `-p` text to run: `pipeline` (None: the default pipeline)
        with the pass knobs (`cost_model`, `kernels`) set on the passes that
        leave those options at their defaults. None when nothing changes (the
        default pipeline as it is)."""
        defaults = OptimizeOptions()
        changed = {k: v for k, v in self._PASS_KNOBS.items() if getattr(self, k) != getattr(defaults, k)}
        if not changed:
            return self.pipeline
        from optimus_ir.passes.registry import DEFAULT_PIPELINE
        from optimus_ir.pipeline import parse_pipeline, pipeline_text

        passes = list(parse_pipeline(DEFAULT_PIPELINE if self.pipeline is None else self.pipeline))
        for i, pass_ in enumerate(passes):
            for knob, (pass_name, option) in changed.items():
                if getattr(pass_, "name", None) != pass_name:
                    continue
                field_ = {f.name: f for f in dataclasses.fields(pass_)}[option]
                if getattr(pass_, option) == field_.default:
                    passes[i] = pass_ = dataclasses.replace(pass_, **{option: getattr(self, knob)})
        return pipeline_text(passes)

    def describe(self) -> str:
        """The options that differ from the defaults, as keyword arguments."""
        defaults = OptimizeOptions()
        return ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(defaults, f.name)
        )


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
    "ENVIRONMENT_VARIABLES",
    "Environment",
    "CostModelChoice",
    "InnerCompiler",
    "KernelChoice",
    "LOG_ENV",
    "OptimizeOptions",
    "STRICT_ENV",
    "TRACEBACK_ENV",
    "TRITON_INTERPRET_ENV",
    "TRITON_ON_CPU_ENV",
    "VERIFY_EACH_ENV",
    "environment",
    "literal_choices",
    "literal_option_problems",
]
