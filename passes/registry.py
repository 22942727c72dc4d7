"""The pass registry: pass name -> lazily imported pass class.

Adding a pass is one line in `PASSES`: its kebab-case name and the module
that defines it (the class is the `ModulePass` in that module whose `name` is
the key; give the class name as a second argument when a module holds several
passes). Nothing is imported until a pipeline names the pass.

Named pipelines (`PIPELINES`) may be used in a `-p` pipeline like a pass
(without options); `DEFAULT_PIPELINE` is the one `optimize` runs.

The ops' canonicalization pattern sets are registered here too
(`CANONICALIZATION_PATTERNS`, named by the ops' `LazyCanonicalizationPatterns`
traits): this module is the only one that names project modules by string,
so that no lower layer imports a pass module, even lazily
(`python -m optimus_ir.tools.check_layers` checks it).

Passes from outside the project (the test-only passes of
`tests/plugins/miscompile_passes.py`, a user's own) register themselves with
the class decorator `@register_pass` (`optimus_ir.register_pass`), run when
their module is imported. `load_pass_plugin(path_or_module)` imports such a
module (`optimus-opt --load-pass-plugin=...`); a missing file or module or a
plugin that fails to import (a refused registration included) is a
`PassPluginError`. Installed packages declare plugins as entry points
(group `optimus_ir.plugins`), loaded by `optimus_ir.plugins.load_plugins`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, overload

from xdsl.passes import ModulePass

if TYPE_CHECKING:
    from xdsl.pattern_rewriter import RewritePattern

PassFactory = Callable[[], type[ModulePass]]


def lazy(module: str, class_name: str | None = None) -> PassFactory:
    """A factory that imports `module` and returns its pass class (the one
    named `class_name`, or the only ModulePass whose `name` is the registered
    name, found when the registry resolves it)."""

    def load(expected_name: str | None = None) -> type[ModulePass]:
        mod = importlib.import_module(module)
        if class_name is not None:
            return getattr(mod, class_name)
        candidates = [
            obj
            for obj in vars(mod).values()
            if isinstance(obj, type)
            and issubclass(obj, ModulePass)
            and obj.__module__ == mod.__name__
            and isinstance(getattr(obj, "name", None), str)
        ]
        if expected_name is not None:
            candidates = [c for c in candidates if c.name == expected_name]
        if len(candidates) != 1:
            raise LookupError(
                f"{module}: expected one ModulePass named '{expected_name}', "
                f"found {[c.__name__ for c in candidates]}"
            )
        return candidates[0]

    load.module = module  # type: ignore[attr-defined]
    return load


PASSES: dict[str, Callable[..., type[ModulePass]]] = {
    # cleanup
    "canonicalize": lazy("optimus_ir.passes.canonicalize"),
    "dce": lazy("optimus_ir.passes.dce"),
    "cse": lazy("optimus_ir.passes.cse"),
    # value semantics (fx level): in-place writes to temporaries out of place
    "maximize-value-semantics": lazy("optimus_ir.passes.value_semantics"),
    # levels:
    "raise-fx": lazy("optimus_ir.passes.raise_fx"),
    # the users' `register_replacement` rewrites (each replacement is also a
    # pass of its own name: `user_replacements.register_replacement_pass`)
    "user-replacements": lazy("optimus_ir.passes.user_replacements", "UserReplacementsPass"),
    "lower-to-fx": lazy("optimus_ir.lowering.lower_to_fx"),
    # after lower-to-fx: dead operands written in place again
    "reinplace": lazy("optimus_ir.passes.reinplace"),
    "write-into-join": lazy("optimus_ir.passes.write_into_join"),
    # optimizations:
    "split-cat-simplify": lazy("optimus_ir.passes.split_cat_simplify"),
    "batch-fusion": lazy("optimus_ir.passes.batch_fusion", "BatchFusion"),
    "lower-batch": lazy("optimus_ir.lowering.lower_batch"),
    "slices-to-split": lazy("optimus_ir.passes.slices_to_split"),
    # the boundary: outputs keep the captured graph's strides (optimize runs
    # it after the pipeline with the strides it recorded at import)
    "match-output-strides": lazy("optimus_ir.passes.output_layout"),
}
"""Every pass of the project, by its kebab-case name (and those plugins
registered: `@register_pass`)."""

DEFAULT_PIPELINE_STAGES: tuple[str, ...] = (
    "maximize-value-semantics",  # in-place writes to temporaries -> out-of-place ops
    "raise-fx",              # fx -> torch operator dialect
    "user-replacements",     # the users' registered replacements (no-op when none)
    "canonicalize",          # identities (eval dropout, no-op casts) gone before fusion sees them
    "split-cat-simplify",    # split/cat/stack/unbind plumbing
    "batch-fusion",          # independent same-kind ops -> batch ops
    "lower-batch",           # batch ops -> torch ops (bmm, stacked pointwise)
    "split-cat-simplify",    # the plumbing the lowering left
    "slices-to-split",       # sibling slices -> one split (one backward concatenation)
    "canonicalize",
    "dce",
    "cse",
    "lower-to-fx",           # back to fx for export
    "reinplace",             # out-of-place calls on dead temporaries back in place
    "write-into-join",       # the pieces of a join computed in their slots of its result
)
DEFAULT_PIPELINE: str = ",".join(DEFAULT_PIPELINE_STAGES)
"""The pipeline `optimize` runs by default (the `-p` text form)."""

BATCH_FUSION_STAGES: tuple[str, ...] = ("batch-fusion", "lower-batch")
"""The stages of the default pipeline that fuse (and lower what they fused)."""

UNFUSED_PIPELINE: str = ",".join(s for s in DEFAULT_PIPELINE_STAGES if s not in BATCH_FUSION_STAGES)
"""The default pipeline without batch fusion: what `optimize`'s speed check
falls back to when the fused module measures slower than the captured graph."""

PIPELINES: dict[str, str] = {
    "default": DEFAULT_PIPELINE,
    "unfused": UNFUSED_PIPELINE,
    "cleanup": "dce,cse",
}
"""Named pipelines, usable inside `-p` as if they were passes."""

PIPELINE_DESCRIPTIONS: dict[str, str] = {
    "default": "the pipeline optimize() and the backend run",
    "unfused": "the default without batch-fusion and lower-batch",
    "cleanup": "dce,cse",
}
"""What each named pipeline is, in a few words (`optimus-opt --help`)."""


_TORCH_PATTERNS = "optimus_ir.passes.canonicalization_patterns.torch"

CANONICALIZATION_PATTERNS: dict[str, tuple[str, str]] = {
    "torch.split": (_TORCH_PATTERNS, "SPLIT_PATTERNS"),
    "torch.join": (_TORCH_PATTERNS, "JOIN_PATTERNS"),
    "torch.view-chain": (_TORCH_PATTERNS, "VIEW_CHAIN_PATTERNS"),
    "torch.plumbing": (_TORCH_PATTERNS, "PLUMBING_PATTERNS"),
    "torch.dropout": (_TORCH_PATTERNS, "DROPOUT_PATTERNS"),
    "fx.identity-calls": ("optimus_ir.passes.canonicalization_patterns.fx", "IDENTITY_CALL_PATTERNS"),
    "batch": ("optimus_ir.passes.canonicalization_patterns.batch", "BATCH_PATTERNS"),
}
"""Canonicalization pattern sets by name -> (module, tuple name); an op's
`LazyCanonicalizationPatterns` trait names its set."""


@cache
def load_canonicalization_patterns(name: str) -> tuple[RewritePattern, ...]:
    """The canonicalization pattern set registered as `name`, imported at
    first use (KeyError if unknown)."""
    module, attribute = CANONICALIZATION_PATTERNS[name]
    return tuple(getattr(importlib.import_module(module), attribute))


def available_passes() -> dict[str, PassFactory]:
    """Name -> zero-argument factory returning the pass class (the form
    xDSL's `PassPipeline.parse_spec` and `xDSLOptMain` expect)."""
    return {name: _bind(name, factory) for name, factory in PASSES.items()}


def _bind(name: str, factory: PassFactory) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        if getattr(factory, "module", None) is not None:  # made by `lazy`
            return factory(name)  # type: ignore[call-arg]
        return factory()

    return load


def get_pass_class(name: str) -> type[ModulePass]:
    """The class of the pass registered as `name` (KeyError if unknown)."""
    return _bind(name, PASSES[name])()


# ---------------------------------------------------------------------------
# Pass plugins
# ---------------------------------------------------------------------------


class PassPluginError(Exception):
    """A pass plugin cannot be loaded: a missing file or module, a plugin
    whose import fails (a registration it makes refused included), or a
    broken entry-point plugin in strict mode. The message is one line that
    names the plugin."""


_KEBAB_CASE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*\Z")

_loading_plugins: list[str] = []
"""The plugins being imported now, innermost last (`loading_plugin`): a
registration records the innermost as where it came from."""


@contextlib.contextmanager
def loading_plugin(label: str) -> Iterator[None]:
    """Inside the block, passes registered are recorded as coming from the
    plugin `label` (`load_pass_plugin`'s argument, an entry point), which a
    later clash names."""
    _loading_plugins.append(label)
    try:
        yield
    finally:
        _loading_plugins.pop()


_Pass = TypeVar("_Pass", bound=ModulePass)


@overload
def register_pass(pass_class: type[_Pass], /) -> type[_Pass]: ...


@overload
def register_pass(*, replace: bool = False) -> Callable[[type[_Pass]], type[_Pass]]: ...


def register_pass(
    pass_class: type[_Pass] | None = None, /, *, replace: bool = False
) -> type[_Pass] | Callable[[type[_Pass]], type[_Pass]]:
    """Class decorator: register a `ModulePass` subclass as the pass named by
    its `name` class attribute (kebab-case), so that pipelines can name it
    (`optimize(..., pipeline=...)`, the backend's and the Inductor hook's
    `pipeline`, `optimus-opt -p`). Returns the class unchanged::

        @optimus_ir.register_pass
        @dataclass(frozen=True)
        class FuseMyOps(PatternPass):
            name = "fuse-my-ops"
            ...

    A name already registered by another class is a `ValueError` naming
    both classes and where the first came from, unless
    `@register_pass(replace=True)` (which may also replace a built-in
    pass). Registering the same class again is a no-op, and so is the same
    class defined again by re-importing its module (it replaces the old
    definition). A class that is not a `ModulePass` or has no string `name`
    is a `TypeError`; a name that is not kebab-case or is a named
    pipeline's (`default`, ...) is a `ValueError`."""
    if pass_class is None:
        return lambda cls: _register(cls, replace)
    if isinstance(pass_class, str):
        raise TypeError(
            f"register_pass({pass_class!r}): register_pass is a class decorator "
            "(`@register_pass` above the pass class; the name is the class's `name`)"
        )
    return _register(pass_class, replace)


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _register(pass_class: type[_Pass], replace: bool) -> type[_Pass]:
    if not (isinstance(pass_class, type) and issubclass(pass_class, ModulePass)):
        raise TypeError(f"@register_pass: {pass_class!r} is not a subclass of xdsl.passes.ModulePass")
    who = _qualified(pass_class)
    name = getattr(pass_class, "name", None)
    if not isinstance(name, str):
        raise TypeError(
            f"@register_pass: {who} has no pass name (set the class attribute `name = \"my-pass\"`)"
        )
    if not _KEBAB_CASE.match(name):
        raise ValueError(
            f"@register_pass: {who}: pass name {name!r} is not kebab-case "
            "(lower-case letters and digits in words joined by '-', e.g. 'fuse-my-ops')"
        )
    if name in PIPELINES:
        raise ValueError(f"@register_pass: {who}: '{name}' is the name of a pipeline; a pass cannot take it")
    existing = PASSES.get(name)
    if existing is not None and not replace:
        existing_class = getattr(existing, "pass_class", None)
        if existing_class is pass_class:
            return pass_class
        # the same definition, made again by re-importing its module
        same_definition = existing_class is not None and _qualified(existing_class) == who
        if not same_definition:
            raise ValueError(
                f"@register_pass: pass '{name}' is already registered ({_describe_registration(name, existing)}); "
                f"{who} cannot take its name (use @register_pass(replace=True) to replace it)"
            )

    def load(expected_name: str | None = None) -> type[ModulePass]:
        return pass_class

    load.module = pass_class.__module__  # type: ignore[attr-defined]
    load.pass_class = pass_class  # type: ignore[attr-defined]
    load.registered_by = _loading_plugins[-1] if _loading_plugins else pass_class.__module__  # type: ignore[attr-defined]
    PASSES[name] = load
    return pass_class


def _describe_registration(name: str, factory: Callable[..., type[ModulePass]]) -> str:
    """`<class> by <module or plugin>` for the pass registered as `name`."""
    pass_class = getattr(factory, "pass_class", None)
    if pass_class is not None:
        return f"{_qualified(pass_class)}, registered by {factory.registered_by}"  # type: ignore[attr-defined]
    module = getattr(factory, "module", None) or getattr(factory, "__module__", "?")
    try:
        described = _qualified(_bind(name, factory)())
    except Exception:  # noqa: BLE001 - only for the message; the module is named anyway
        described = "a pass"
    return f"{described}, registered by {module}"


def load_pass_plugin(plugin: str) -> list[str]:
    """Import the pass plugin `plugin` (a `.py` file, or a module name) and
    return the names of the passes it registered (none when it was loaded
    before). A file already imported, under any module name, is not
    imported again. Raises `PassPluginError` with a one-line reason naming
    the plugin (a registration the plugin makes that is refused included)."""
    before = set(PASSES)
    looks_like_path = plugin.endswith(".py") or "/" in plugin or "\\" in plugin
    with loading_plugin(plugin):
        if looks_like_path:
            _load_plugin_file(plugin)
        else:
            _load_plugin_module(plugin)
    return sorted(set(PASSES) - before)


def _failure(plugin: str, error: BaseException) -> PassPluginError:
    return PassPluginError(f"cannot load pass plugin '{plugin}': {type(error).__name__}: {_first_line(error)}")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


def _load_plugin_file(plugin: str) -> None:
    path = Path(plugin).expanduser()
    if not path.is_file():
        raise PassPluginError(f"cannot load pass plugin '{plugin}': no such file")
    resolved = path.resolve()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve() == resolved:
            return
    module_name = f"optimus_pass_plugin_{resolved.stem}_{abs(hash(str(resolved))):x}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise PassPluginError(f"cannot load pass plugin '{plugin}': not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except PassPluginError as error:
        sys.modules.pop(module_name, None)
        raise PassPluginError(f"cannot load pass plugin '{plugin}': {error}") from None
    except Exception as error:  # noqa: BLE001 - any failure of the plugin's code is reported
        sys.modules.pop(module_name, None)
        raise _failure(plugin, error) from error


def _load_plugin_module(plugin: str) -> None:
    if plugin in sys.modules:
        return
    try:
        importlib.import_module(plugin)
    except PassPluginError as error:
        raise PassPluginError(f"cannot load pass plugin '{plugin}': {error}") from None
    except ModuleNotFoundError as error:
        if error.name is not None and (plugin == error.name or plugin.startswith(error.name + ".")):
            raise PassPluginError(f"cannot load pass plugin '{plugin}': no module named '{error.name}'") from None
        raise _failure(plugin, error) from error
    except Exception as error:  # noqa: BLE001 - any failure of the plugin's code is reported
        raise _failure(plugin, error) from error
