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
`tests/plugins/miscompile_passes.py`, a user's own) are registered by a
pass plugin: a Python file or module that calls `register_pass(name, cls)`
when it is imported. `load_pass_plugin(path_or_module)` imports one
(`optimus-opt --load-pass-plugin=...`); a missing file or module, a plugin
that fails to import, and a name registered twice are `PassPluginError`s.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

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
    # optimizations:
    "split-cat-simplify": lazy("optimus_ir.passes.split_cat_simplify"),
    "batch-fusion": lazy("optimus_ir.passes.batch_fusion"),
    "lower-batch": lazy("optimus_ir.lowering.lower_batch"),
    # the boundary: outputs keep the captured graph's strides (optimize runs
    # it after the pipeline with the strides it recorded at import)
    "match-output-strides": lazy("optimus_ir.passes.output_layout"),
}
"""Every pass of the project, by its kebab-case name (and those plugins
registered: `register_pass`)."""

DEFAULT_PIPELINE_STAGES: tuple[str, ...] = (
    "maximize-value-semantics",  # in-place writes to temporaries -> out-of-place ops
    "raise-fx",              # fx -> torch operator dialect
    "user-replacements",     # the users' registered replacements (no-op when none)
    "canonicalize",          # identities (eval dropout, no-op casts) gone before fusion sees them
    "split-cat-simplify",    # split/cat/stack/unbind plumbing
    "batch-fusion",          # independent same-kind ops -> batch ops
    "lower-batch",           # batch ops -> torch ops (bmm, stacked pointwise)
    "split-cat-simplify",    # the plumbing the lowering left
    "canonicalize",
    "dce",
    "cse",
    "lower-to-fx",           # back to fx for export
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
    """A pass plugin cannot be loaded, or registers a name already taken."""


def register_pass(name: str, pass_class: type[ModulePass]) -> None:
    """Register `pass_class` as the pass `name` (what a pass plugin calls
    when imported). `name` must be the class's `name`; registering the same
    class again is a no-op; a name already taken by another pass is a
    `PassPluginError` naming both."""
    if not (isinstance(pass_class, type) and issubclass(pass_class, ModulePass)):
        raise PassPluginError(f"register_pass('{name}', ...): {pass_class!r} is not a ModulePass class")
    if getattr(pass_class, "name", None) != name:
        raise PassPluginError(
            f"register_pass('{name}', {pass_class.__name__}): the class's name is "
            f"'{getattr(pass_class, 'name', None)}', not '{name}'"
        )
    existing = PASSES.get(name)
    if existing is not None:
        if getattr(existing, "pass_class", None) is pass_class:
            return
        owner = getattr(existing, "module", None) or getattr(existing, "__module__", "?")
        raise PassPluginError(
            f"pass '{name}' is already registered (by {owner}); "
            f"{pass_class.__module__}.{pass_class.__qualname__} cannot take its name"
        )
    if name in PIPELINES:
        raise PassPluginError(f"'{name}' is the name of a pipeline; a pass cannot take it")

    def load(expected_name: str | None = None) -> type[ModulePass]:
        return pass_class

    load.module = pass_class.__module__  # type: ignore[attr-defined]
    load.pass_class = pass_class  # type: ignore[attr-defined]
    PASSES[name] = load


def load_pass_plugin(plugin: str) -> list[str]:
    """Import the pass plugin `plugin` (a `.py` file, or a module name) and
    return the names of the passes it registered (none when it was loaded
    before). A file already imported, under any module name, is not
    imported again. Raises `PassPluginError` with a one-line reason."""
    before = set(PASSES)
    looks_like_path = plugin.endswith(".py") or "/" in plugin or "\\" in plugin
    if looks_like_path:
        path = Path(plugin).expanduser()
        if not path.is_file():
            raise PassPluginError(f"cannot load pass plugin '{plugin}': no such file")
        resolved = path.resolve()
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if file and Path(file).resolve() == resolved:
                return []
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
            raise PassPluginError(
                f"cannot load pass plugin '{plugin}': {type(error).__name__}: {error}"
            ) from error
    else:
        if plugin in sys.modules:
            return []
        try:
            importlib.import_module(plugin)
        except PassPluginError as error:
            raise PassPluginError(f"cannot load pass plugin '{plugin}': {error}") from None
        except ModuleNotFoundError as error:
            if error.name is not None and plugin.startswith(error.name):
                raise PassPluginError(f"cannot load pass plugin '{plugin}': no module named '{error.name}'") from None
            raise PassPluginError(f"cannot load pass plugin '{plugin}': {type(error).__name__}: {error}") from error
        except Exception as error:  # noqa: BLE001 - any failure of the plugin's code is reported
            raise PassPluginError(f"cannot load pass plugin '{plugin}': {type(error).__name__}: {error}") from error
    return sorted(set(PASSES) - before)
