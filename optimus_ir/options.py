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

The environment (`OPTIMUS_*` variables) is read in one place,
`optimus_ir.environment` (its docstring lists the variables); the names are
re-exported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, get_args

from optimus_ir.cost_model import DEFAULT_MEMORY_BUDGET, parse_memory_budget
from optimus_ir.environment import (  # noqa: F401 - re-exported
    CACHE_DIR_ENV,
    CHECK_SPEED_ENV,
    COST_MODEL_ENV,
    CostModelChoice,
    ENVIRONMENT_VARIABLES,
    EntryPoint,
    Environment,
    InnerCompiler,
    KernelChoice,
    LOG_ENV,
    PLUGINS_ENV,
    STRICT_ENV,
    TRACEBACK_ENV,
    TRITON_INTERPRET_ENV,
    TRITON_ON_CPU_ENV,
    VERIFY_EACH_ENV,
    environment,
    literal_choices,
    literal_option_problems,
)

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
    memory_budget: str | float | int = DEFAULT_MEMORY_BUDGET
    """The memory budget of every `batch-fusion` of the pipeline that
    leaves its `memory-budget` option at the default: how many tensor bytes
    one call of the fused graph may hold at once, against the captured
    graph's peak. A text (`"1.5x+1MiB"`, the default; `"2x"`, `"+50%"`,
    `"64MiB"`, `"1GiB"`, `"none"`), a float (a ratio: `2.0` is `"2x"`) or
    an int (bytes). See `optimus_ir.cost_model.parse_memory_budget`."""

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
        "memory_budget": ("batch-fusion", "memory_budget"),
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
        try:
            parse_memory_budget(self.memory_budget)
        except ValueError as error:
            raise ValueError(f"optimus: option 'memory_budget': {error}") from None
        for name in ("validate", "freeze", "remarks"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"optimus: option {name!r} must be True or False, not {getattr(self, name)!r}")
        for name in ("verify_each", "check_speed", "strict"):
            if getattr(self, name) not in (None, True, False):
                raise TypeError(f"optimus: option {name!r} must be True, False or None, not {getattr(self, name)!r}")
        if self.pipeline is not None:
            from optimus_ir.pipeline import parse_pipeline
            from optimus_ir.plugins import load_plugins

            load_plugins(strict=self.strict)  # installed plugins' passes may be named in it
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
        with the pass knobs (`cost_model`, `kernels`, `memory_budget`) set on the passes that
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
    "PLUGINS_ENV",
    "STRICT_ENV",
    "TRACEBACK_ENV",
    "TRITON_INTERPRET_ENV",
    "TRITON_ON_CPU_ENV",
    "VERIFY_EACH_ENV",
    "environment",
    "literal_choices",
    "literal_option_problems",
]
