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
`optimus_ir.foundation.environment` (its docstring lists the variables); the names are
re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, get_args, overload

import attrs

from optimus_ir.foundation import environment as _environment
from optimus_ir.analysis.cost_model import DEFAULT_MEMORY_BUDGET, MemoryBudget, parse_memory_budget
from optimus_ir.foundation.environment import *  # noqa: F403 - the environment's names, re-exported (one list: its __all__)
from optimus_ir.foundation.environment import (
    CostModelChoice,
    EntryPoint,
    Environment,
    InnerCompiler,
    KernelChoice,
    ParameterStacks,
    environment,
)

if TYPE_CHECKING:
    from xdsl.passes import ModulePass

# --- validators: each knob checked (and parsed) once, when the options are made -------------


def _one_of(choices_of: Any, message: Callable[[str, Any, tuple[Any, ...]], str]) -> Callable[..., None]:
    """A validator: the value is one of the `Literal` `choices_of`, else ValueError(`message`)."""
    choices = get_args(choices_of)

    def check(_instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value not in choices:
            raise ValueError(message(attribute.name, value, choices))

    return check


def _unknown_inner(_name: str, value: Any, choices: tuple[Any, ...]) -> str:
    return f"optimus: unknown inner compiler {value!r} (choose from {', '.join(choices)})"


def _not_a_choice(name: str, value: Any, choices: tuple[Any, ...]) -> str:
    return f"optimus: option {name!r} must be one of {', '.join(map(repr, choices))}, not {value!r}"


def _true_or_false(_instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"optimus: option {attribute.name!r} must be True or False, not {value!r}")


def _true_false_or_none(_instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value not in (None, True, False):
        raise TypeError(f"optimus: option {attribute.name!r} must be True, False or None, not {value!r}")


def _parsed_memory_budget(options: OptimizeOptions) -> MemoryBudget:
    """`memory_budget` parsed: the one parse of the knob (`parsed_memory_budget`)."""
    try:
        return parse_memory_budget(options.memory_budget)
    except ValueError as error:
        raise ValueError(f"optimus: option 'memory_budget': {error}") from None


def _parsed_pipeline(options: OptimizeOptions) -> tuple[ModulePass, ...] | None:
    """`pipeline` parsed (None: no text given): the one parse of the knob. A
    bad pipeline (or not a text) raises `PipelineError` when the options are made."""
    if options.pipeline is None:
        return None
    from optimus_ir.pipeline import parse_pipeline
    from optimus_ir.plugins import load_plugins

    _true_false_or_none(options, attrs.fields(OptimizeOptions).strict, options.strict)
    load_plugins(strict=options.strict)  # installed plugins' passes may be named in it
    return parse_pipeline(options.pipeline)


# --- the options ---------------------------------------------------------------------------


@attrs.frozen
class OptimizeOptions:
    """Every knob of `optimize()`, the torch.compile backend and the
    Inductor hook. A field left None takes its value from the environment
    when an entry point runs (`resolve`). Each knob is checked when the
    options are made (attrs validators: a bad value raises then, naming
    the knob), and the two that are texts, `pipeline` and `memory_budget`,
    are parsed then, once; `resolve` hands the passes what was parsed."""

    pipeline: str | None = None
    """A `-p` pipeline text; None: the default pipeline."""
    inner: InnerCompiler = attrs.field(default="inductor", validator=_one_of(InnerCompiler, _unknown_inner))
    """Backend only: hand the optimized graph to "inductor", or run it as
    it is ("eager")."""
    validate: bool = attrs.field(default=False, validator=_true_or_false)
    """Check every pass differentially on random inputs (slow; debugging).
    Not inside Inductor (the hook has no real inputs to run)."""
    verify_each: bool | None = attrs.field(default=None, validator=_true_false_or_none)
    """Verify the IR after every pass (default: once at the end, unless
    `validate` or `OPTIMUS_VERIFY_EACH=1`)."""
    freeze: bool = attrs.field(default=False, validator=_true_or_false)
    """Treat the parameters as constants (inference only; later updates are
    not followed). Not inside Inductor (`config.freezing` is its switch)."""
    check_speed: bool | None = attrs.field(default=None, validator=_true_false_or_none)
    """`optimize()` only: time the fused result against the captured graph
    and keep the faster (default: on, unless `OPTIMUS_CHECK_SPEED=0`)."""
    strict: bool | None = attrs.field(default=None, validator=_true_false_or_none)
    """Raise instead of falling back to the unoptimized graph (default:
    `OPTIMUS_STRICT`)."""
    remarks: bool = attrs.field(default=False, validator=_true_or_false)
    """Print the passes' remarks (what was fused and why the rest was not)
    to stderr."""
    cost_model: CostModelChoice = attrs.field(default="calibrated", validator=_one_of(CostModelChoice, _not_a_choice))
    """The cost model of every `batch-fusion` of the pipeline that leaves
    its `cost-model` option at the default (see `CostModelChoice`)."""
    kernels: KernelChoice = attrs.field(default="auto", validator=_one_of(KernelChoice, _not_a_choice))
    """The kernels of every `lower-batch` of the pipeline that leaves its
    `kernels` option at the default (see `KernelChoice`)."""
    memory_budget: str | float | int = DEFAULT_MEMORY_BUDGET
    """The memory budget of every `batch-fusion` of the pipeline that
    leaves its `memory-budget` option at the default: how many tensor bytes
    one call of the fused graph may hold at once, against the captured
    graph's peak. A text (`"1.5x+1MiB"`, the default; `"2x"`, `"+50%"`,
    `"64MiB"`, `"1GiB"`, `"none"`), a float (a ratio: `2.0` is `"2x"`) or
    an int (bytes). See `optimus_ir.analysis.cost_model.parse_memory_budget`."""

    parameter_stacks: ParameterStacks = attrs.field(default="copy", validator=_one_of(ParameterStacks, _not_a_choice))
    """Where a fused group's stacked parameters live (see `ParameterStacks`):
    "copy" stacks them on every call; "shared" re-homes the parameters into
    one storage per group (`p.data = stack[i]`) that the fused op reads
    without a copy. Not with `freeze` (which computes the stacks once)."""

    # What the texts say, parsed once when the options are made (not knobs:
    # neither compared nor shown). Computed after the knobs above are set.
    parsed_memory_budget: MemoryBudget = attrs.field(
        init=False, eq=False, repr=False, default=attrs.Factory(_parsed_memory_budget, takes_self=True)
    )
    """`memory_budget` parsed (`cost_model.parse_memory_budget`)."""
    parsed_pipeline: tuple[ModulePass, ...] | None = attrs.field(
        init=False, eq=False, repr=False, default=attrs.Factory(_parsed_pipeline, takes_self=True)
    )
    """`pipeline` parsed into its pass instances (None without a text)."""

    ENTRY_POINTS: ClassVar[Mapping[str, tuple[EntryPoint, ...]]] = {
        "inner": ("backend",),
        "validate": ("optimize", "backend"),
        "freeze": ("optimize", "backend"),
        "check_speed": ("optimize",),
        "parameter_stacks": ("optimize", "backend"),
    }
    """The knobs that apply to some entry points only (the others apply to all)."""

    PASS_KNOBS: ClassVar[Mapping[str, tuple[str, str]]] = {
        "cost_model": ("batch-fusion", "cost_model"),
        "kernels": ("lower-batch", "kernels"),
        "memory_budget": ("batch-fusion", "memory_budget"),
    }
    """Knobs that set a pass option: knob -> (pass name, option field)."""

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def option_names(cls, entry: EntryPoint | None = None) -> list[str]:
        """The knobs (of `entry`, or all), in declaration order."""
        return [
            name
            for name in cls.defaults()
            if entry is None or entry in cls.ENTRY_POINTS.get(name, (entry,))
        ]

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every knob's default, in declaration order (read from the
        declaration: no options are made, so nothing is parsed)."""
        return {field_.name: field_.default for field_ in attrs.fields(cls) if field_.init}

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
        defaults = self.defaults()
        for name, entries in self.ENTRY_POINTS.items():
            if entry in entries or getattr(self, name) == defaults[name]:
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

    def resolve(self, env: Environment | None = None) -> ResolvedOptions:
        """What an entry point runs with, settled once: the None knobs set
        from `env` (default: the environment now; `validate` implies
        `verify_each`) and the pipeline built in memory, the pass knobs set
        on its passes as typed values (`ResolvedPipeline`). Nothing is parsed
        here: the texts were parsed when these options were made."""
        env = environment() if env is None else env
        return ResolvedOptions(
            options=self,
            strict=env.strict if self.strict is None else self.strict,
            check_speed=env.check_speed if self.check_speed is None else self.check_speed,
            verify_each=(self.validate or env.verify_each) if self.verify_each is None else self.verify_each,
            pipeline=self._pipeline_with_knobs(),
        )

    def resolved(self, env: Environment | None = None) -> OptimizeOptions:
        """These options with every None knob set from `env` (default: the
        environment now): strict, check_speed, verify_each (`validate`
        implies it). The entry points use `resolve`."""
        env = environment() if env is None else env
        return attrs.evolve(
            self,
            strict=env.strict if self.strict is None else self.strict,
            check_speed=env.check_speed if self.check_speed is None else self.check_speed,
            verify_each=(self.validate or env.verify_each) if self.verify_each is None else self.verify_each,
        )

    def _changed_pass_knobs(self) -> dict[str, tuple[str, str]]:
        """The pass knobs (`PASS_KNOBS`) that differ from their defaults."""
        defaults = self.defaults()
        return {k: v for k, v in self.PASS_KNOBS.items() if getattr(self, k) != defaults[k]}

    def _passes_with(self, values: Mapping[str, Any]) -> list[ModulePass]:
        """The passes of `pipeline` (parsed when the options were made) or
        of the default pipeline (`default_pipeline_passes`), with the pass
        knobs' `values` set on the passes that leave those options at their
        defaults (pass instances replaced in memory)."""
        import dataclasses

        passes = list(default_pipeline_passes() if self.parsed_pipeline is None else self.parsed_pipeline)
        for i, pass_ in enumerate(passes):
            if not dataclasses.is_dataclass(pass_):
                continue
            fields = {f.name: f for f in dataclasses.fields(pass_)}
            changes = {
                option: values[knob]
                for knob, (pass_name, option) in self.PASS_KNOBS.items()
                if knob in values
                and getattr(pass_, "name", None) == pass_name
                and option in fields
                and getattr(pass_, option) == fields[option].default
            }
            if changes:
                passes[i] = dataclasses.replace(pass_, **changes)
        return passes

    def _pipeline_with_knobs(self) -> ResolvedPipeline:
        """The pipeline to run (`_passes_with` every pass knob); the memory
        budget goes to every `batch-fusion` parsed (`MemoryBudget`), so no
        pass parses it again."""
        from optimus_ir.passes.registry import DEFAULT_PIPELINE

        values = {knob: getattr(self, knob) for knob in self.PASS_KNOBS}
        values["memory_budget"] = self.parsed_memory_budget
        passes = self._passes_with(values)
        if self._changed_pass_knobs():
            from optimus_ir.pipeline import pipeline_text

            text = pipeline_text(passes)  # what the report shows: no pass reads it
        else:
            text = DEFAULT_PIPELINE if self.pipeline is None else self.pipeline
        return ResolvedPipeline(tuple(passes), text, default=self.pipeline is None and not self._changed_pass_knobs())

    # -- reading ----------------------------------------------------------------------------

    @property
    def is_strict(self) -> bool:
        """`strict`, or `OPTIMUS_STRICT` when it is None."""
        return environment().strict if self.strict is None else self.strict

    def pipeline_to_run(self) -> str | None:
        """The `-p` text of the pipeline these options run: `pipeline` (None:
        the default pipeline) with the pass knobs (`cost_model`, `kernels`,
        `memory_budget`) set, as written, on the passes that leave those
        options at their defaults. None when nothing changes (the default
        pipeline as it is). For people and tools: the entry points run
        `resolve().pipeline`, whose passes were never text."""
        changed = self._changed_pass_knobs()
        if not changed:
            return self.pipeline
        from optimus_ir.pipeline import pipeline_text

        return pipeline_text(self._passes_with({knob: getattr(self, knob) for knob in changed}))

    def describe(self) -> str:
        """The options that differ from the defaults, as keyword arguments."""
        return ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name, default in self.defaults().items()
            if getattr(self, name) != default
        )


def default_pipeline_passes() -> tuple[ModulePass, ...]:
    """The passes of the default pipeline, made in memory from its stages
    (`registry.DEFAULT_PIPELINE_STAGES`: pass names without options). Where
    `registry.DEFAULT_PIPELINE` no longer spells those stages (replaced by a
    text with options: a test forcing a fusion), that text is the default
    pipeline, and it is parsed."""
    from optimus_ir.passes import registry

    if registry.DEFAULT_PIPELINE != ",".join(registry.DEFAULT_PIPELINE_STAGES):
        from optimus_ir.pipeline import parse_pipeline

        return parse_pipeline(registry.DEFAULT_PIPELINE)
    return tuple(registry.get_pass_class(name)() for name in registry.DEFAULT_PIPELINE_STAGES)


_Knob = TypeVar("_Knob")


@attrs.frozen
class ResolvedPipeline:
    """A pipeline ready to run: its pass instances, options set, and its
    text as the report shows it (never parsed again)."""

    passes: tuple[ModulePass, ...]
    text: str
    """The pipeline as the user wrote it (or `DEFAULT_PIPELINE`), or, where
    a pass knob changed a pass, the text of the passes (`pipeline_text`)."""
    default: bool = False
    """It is the default pipeline as it is (`pipeline=None`, no pass knob
    changed): `optimize`'s op-count guarantee applies to it (an explicit
    pipeline, or a knob forcing fusion such as `cost_model="none"`, runs as
    written)."""

    def replacing(self, change: Callable[[ModulePass], ModulePass]) -> ResolvedPipeline:
        """This pipeline with `change` applied to every pass (the text is
        that of the new passes where any changed)."""
        passes = tuple(change(pass_) for pass_ in self.passes)
        if all(new is old for new, old in zip(passes, self.passes)):
            return self
        from optimus_ir.pipeline import pipeline_text

        return attrs.evolve(self, passes=passes, text=pipeline_text(passes))


class _Given(Generic[_Knob]):
    """A knob of `ResolvedOptions` that is the given `options`' own (read
    through, never copied): `resolved.freeze` is `resolved.options.freeze`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, resolved: None, owner: type) -> _Given[_Knob]: ...

    @overload
    def __get__(self, resolved: ResolvedOptions, owner: type | None = None) -> _Knob: ...

    def __get__(self, resolved: ResolvedOptions | None, owner: type | None = None) -> _Knob | _Given[_Knob]:
        return self if resolved is None else getattr(resolved.options, self.name)


@attrs.frozen
class ResolvedOptions:
    """`OptimizeOptions` settled for one entry point's run
    (`OptimizeOptions.resolve`): the environment read once, every knob
    typed, the pipeline built."""

    options: OptimizeOptions
    """The options as given."""
    strict: bool
    check_speed: bool
    verify_each: bool
    pipeline: ResolvedPipeline

    # the knobs no environment variable settles: those of `options`, as given
    validate = _Given[bool]()
    freeze = _Given[bool]()
    parameter_stacks = _Given[ParameterStacks]()
    remarks = _Given[bool]()
    inner = _Given[InnerCompiler]()


__all__ = [
    *_environment.__all__,
    "OptimizeOptions",
    "ResolvedOptions",
    "ResolvedPipeline",
    "default_pipeline_passes",
]
