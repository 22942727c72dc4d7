"""Plugins installed as packages: entry points of group `optimus_ir.plugins`.

A package extends optimus-ir by declaring, in its pyproject.toml::

    [project.entry-points."optimus_ir.plugins"]
    my-plugin = "my_package.optimus_plugin"            # a module: importing it registers
    my-other = "my_package.setup:register_everything"  # a function: called with no arguments

The module registers its passes (`@optimus_ir.register_pass`) and
replacements when imported; a `module:function` value is imported, then the
function is called with no arguments.

`load_plugins()` loads every such entry point once per process, lazily: the
entry points of optimus-ir call it before they parse a pipeline
(`optimize()`, `OptimizeOptions(pipeline=...)`, the torch.compile backend
and the Inductor hook when they compile a graph, `optimus-opt` before it
parses `-p`). Importing `optimus_ir` loads nothing.

A plugin that fails (its import raises, its function raises, the value
names nothing callable, a registration it makes is refused) is skipped:
whatever passes it registered before failing are unregistered, and it gives
one `OptimusPluginWarning` per process naming the entry point, its value,
its distribution and the error. In strict mode (`strict=True`, or
`OPTIMUS_STRICT=1` when `strict` is None: the switch `optimize()` and the
backend use) a broken plugin raises `PassPluginError` instead, on every
call. `OPTIMUS_PLUGINS=0` (also `false`, `no`, `off`) turns entry-point
loading off (`optimus-opt --load-pass-plugin` still works).
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optimus_ir.foundation.environment import environment
from optimus_ir.passes import registry
from optimus_ir.passes.registry import PassPluginError

PLUGIN_GROUP = "optimus_ir.plugins"
"""The entry-point group of optimus-ir plugins."""

log = logging.getLogger(__name__)


class OptimusPluginWarning(UserWarning):
    """An installed plugin (entry point of group `optimus_ir.plugins`)
    failed to load and was skipped; given once per plugin and process."""


@dataclass(frozen=True)
class PluginOutcome:
    """What loading one entry point did."""

    name: str
    """The entry point's name."""
    value: str
    """The entry point's value (`module` or `module:function`)."""
    distribution: str | None
    """The name of the distribution that declares it (None if unknown)."""
    error: str | None = None
    """Why it failed (`Type: message`, one line); None when it loaded."""

    @property
    def loaded(self) -> bool:
        return self.error is None

    def describe(self) -> str:
        """`'name' (= value, from distribution dist)`."""
        where = f"distribution '{self.distribution}'" if self.distribution else "an unknown distribution"
        return f"'{self.name}' (= {self.value}, from {where})"


@dataclass
class _PluginState:
    """The entry points loaded in this process (None: not yet)."""

    outcomes: list[PluginOutcome] | None = None
    warned: set[PluginOutcome] = field(default_factory=set)
    loading: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)


_STATE = _PluginState()


def load_plugins(strict: bool | None = None) -> list[str]:
    """Load every installed plugin (entry points of group
    `optimus_ir.plugins`) the first time it is called in this process;
    returns the names of the entry points that loaded (the same list on
    every call). A broken plugin is skipped with one `OptimusPluginWarning`
    per process, or raises `PassPluginError` when `strict` (None: the
    `OPTIMUS_STRICT` environment variable). With `OPTIMUS_PLUGINS=0`
    nothing is loaded and the result is empty.

    A call made while the plugins are being loaded (a plugin that calls
    `optimize()` when imported) loads nothing and returns []."""
    env = environment()
    if not env.plugins:
        return []
    strict = env.strict if strict is None else strict
    state = _STATE
    with state.lock:
        if state.loading:
            return []
        if state.outcomes is None:
            state.loading = True
            try:
                state.outcomes = [_load(entry_point) for entry_point in _entry_points()]
            finally:
                state.loading = False
        outcomes = list(state.outcomes)
        broken = [outcome for outcome in outcomes if not outcome.loaded]
        if broken and strict:
            first = broken[0]
            raise PassPluginError(f"cannot load optimus-ir plugin {first.describe()}: {first.error}")
        for outcome in broken:
            if outcome in state.warned:
                continue
            state.warned.add(outcome)
            warnings.warn(
                f"optimus-ir plugin {outcome.describe()} failed to load and is skipped: "
                f"{outcome.error} (strict=True or OPTIMUS_STRICT=1 raises instead)",
                OptimusPluginWarning,
                stacklevel=2,
            )
    return [outcome.name for outcome in outcomes if outcome.loaded]


def plugin_outcomes() -> tuple[PluginOutcome, ...]:
    """What loading each entry point did (empty before `load_plugins` ran)."""
    return tuple(_STATE.outcomes or ())


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=PLUGIN_GROUP))


def _distribution_name(entry_point: importlib.metadata.EntryPoint) -> str | None:
    dist = getattr(entry_point, "dist", None)
    if dist is None:
        return None
    try:
        return dist.name
    except Exception:  # noqa: BLE001 - a distribution without readable metadata
        return None


def _load(entry_point: importlib.metadata.EntryPoint) -> PluginOutcome:
    """Import (and call) one entry point; a failure is recorded, and the
    passes and replacements it registered before failing are unregistered
    (a half-loaded plugin must not leave half of its rewrites running)."""
    from optimus_ir.passes.user_replacements import REPLACEMENTS

    name, value = entry_point.name, entry_point.value
    distribution = _distribution_name(entry_point)
    passes_before = dict(registry.PASSES)
    replacements_before = dict(REPLACEMENTS)
    label = f"plugin '{name}' ({value})"
    try:
        with registry.loading_plugin(label):
            loaded = entry_point.load()
            if entry_point.attr is not None:
                if not callable(loaded):
                    raise TypeError(f"'{value}' is not callable (a `module:function` entry point names a function)")
                loaded()
    except Exception as error:  # noqa: BLE001 - any failure of the plugin's code skips the plugin
        _restore(passes_before)
        for replacement in set(REPLACEMENTS) - set(replacements_before):
            del REPLACEMENTS[replacement]
        message = str(error).strip().splitlines()
        outcome = PluginOutcome(name, value, distribution, f"{type(error).__name__}: {message[0] if message else '(no message)'}")
        log.info("optimus-ir plugin %s failed: %s", outcome.describe(), outcome.error)
        return outcome
    log.info("loaded optimus-ir plugin '%s' (%s)", name, value)
    return PluginOutcome(name, value, distribution)


def _restore(passes_before: dict[str, Callable[..., Any]]) -> None:
    """Undo the registrations made since `passes_before` was taken."""
    for pass_name in set(registry.PASSES) - set(passes_before):
        del registry.PASSES[pass_name]
    for pass_name, factory in passes_before.items():
        if registry.PASSES.get(pass_name) is not factory:
            registry.PASSES[pass_name] = factory


__all__ = ["OptimusPluginWarning", "PLUGIN_GROUP", "PluginOutcome", "load_plugins", "plugin_outcomes"]
