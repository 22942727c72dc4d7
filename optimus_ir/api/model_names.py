"""The optimized module's state under the model's own names.

`optimize(model, ...)` returns a GraphModule whose graph reads the model's
parameters and buffers (`param_cache.read_tensors_from_model`). Dynamo's
capture registered them on it under names of its own
(`L__self___towers_0_weight`), so a checkpoint saved from the module (or from
`DDP(optimize(model)).module`) did not load into the model. `adopt_model_names`
registers them under the model's names instead, in a tree of submodules
shaped like the model's:

* the model's root parameters and buffers on the module itself, and for
  every submodule of the model a *structural copy* of it (same class and
  attributes, `object.__new__` without `__init__`; its own parameter,
  buffer and submodule dicts and hook dicts) holding the model's very
  Parameter and buffer objects. `state_dict()`, `load_state_dict()`,
  `named_parameters()`, `named_buffers()`, `named_modules()` (what DDP and
  optimizers walk) then see exactly the model's names and tensors, with the
  model's own `_save_to_state_dict`/`_load_from_state_dict`, versions,
  non-persistent buffers and extra state. The copies are the module's: its
  `.train()`/`.eval()` and attributes set on it do not change the model.
  A submodule the graph calls (`call_module`, as in a symbolically traced
  model) is the model's own, not a copy, as before.
* every get_attr node that reads a model tensor is retargeted to the model's
  name (`towers.0.weight`), and its own path (`exporter.ATTR_OWN_META`) to
  the tree; the per-call reads are those of `read_tensors_from_model`: the
  module's own attribute, and where it still is the tensor the code was made
  with, the model's current one.
* what is not the model's state stays the module's own and out of the state
  dict: the values `freeze=True` computed (non-persistent buffers, `frozen_*`,
  listed by `named_buffers()`), tensors the capture lifted as constants (made
  non-persistent), the frozen guard.

Copies: `copy.deepcopy` and pickling of a GraphModule rebuild it from its
graph's targets only (plain `nn.Module` containers, buffers persistent);
`keep_state_on_copies` makes both restore the whole tree. A copy reads its
own tensors, not the model's (as before).

Loading into a `freeze=True` module (`guard_frozen_loads`): the frozen values
are computed from the parameters once, so `load_state_dict` computes them
again from the loaded tensors (and re-optimized specializations likewise);
`assign=True` is refused, since it would leave them computed from tensors
the module no longer holds.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import torch
import torch.fx

from optimus_ir.translate.exporter import (
    ATTR_OWN_META,
    ATTR_PATH_META,
    MADE_WITH_ATTRIBUTE,
    OWN_STATE_ATTRIBUTE,
    OwnState,
    WatchedDict,
)
from optimus_ir.translate.model_state import CaptureError

log = logging.getLogger("optimus_ir.api.model_names")

STATE_DICTS = ("_parameters", "_buffers", "_modules")
"""The module dicts that make up a module's state tree."""

HOOK_SUFFIXES = ("hooks", "hooks_with_kwargs", "hooks_always_called")
"""`nn.Module.__dict__` keys ending so hold hooks: a structural copy gets
dicts of its own, so a hook registered on it is not registered on the model."""

NAMED_ATTRIBUTE = "_optimus_model_names"
"""The key in an optimized module's `__dict__` that says its state is under
the model's names (True), for the copies' restore and for tests."""


# ---------------------------------------------------------------------------
# Refusing wrapped models
# ---------------------------------------------------------------------------


def refuse_wrapped_model(model: Any) -> None:
    """Raise `CaptureError` with what to do instead when `model` is a wrapper
    that `optimize` cannot capture as one graph: `DistributedDataParallel`
    or `DataParallel` (their forward syncs buffers, logs runtime statistics
    and hooks the reducer, none of which a graph can hold), a
    `FullyShardedDataParallel` or `fully_shard` model (its parameters are
    sharded outside the graph) and a `torch.compile`d module (Dynamo is
    already in charge of it)."""
    name = type(model).__name__
    if isinstance(model, torch.nn.parallel.DistributedDataParallel | torch.nn.DataParallel):
        raise CaptureError(
            f"cannot optimize a {name}: its forward synchronizes buffers and hooks the gradient "
            "reducer, which no captured graph can do. Optimize the model it wraps and wrap the "
            "result: `DistributedDataParallel(optimus_ir.optimize(ddp.module, inputs), ...)` (its "
            "state_dict() has the model's names), or compile the wrapper with the backend: "
            "`torch.compile(ddp, backend=\"optimus\")` (DDPOptimizer hands it one graph per bucket)"
        )
    if _is_fsdp(model):
        raise CaptureError(
            f"cannot optimize a {name}: its parameters are sharded and gathered around the graph "
            "by hooks. Use the backend: `torch.compile(model, backend=\"optimus\")` after "
            "`fully_shard(model)` (docs/using-on-your-model.md, 'Distributed training')"
        )
    compiled = getattr(getattr(torch, "_dynamo", None), "eval_frame", None)
    optimized_module = getattr(compiled, "OptimizedModule", None)
    if optimized_module is not None and isinstance(model, optimized_module):
        raise CaptureError(
            f"cannot optimize a {name} (the result of torch.compile): optimize the module it "
            "compiles, `optimus_ir.optimize(compiled._orig_mod, inputs)`, or compile with the "
            "backend: `torch.compile(model, backend=\"optimus\")`"
        )


def _is_fsdp(model: Any) -> bool:
    """Whether `model` is sharded by FSDP (the wrapper, or `fully_shard`'s
    class swap); False where torch.distributed is not built."""
    if not torch.distributed.is_available():
        return False
    try:
        from torch.distributed import fsdp
    except ImportError:  # pragma: no cover - builds without distributed
        return False
    kinds = tuple(
        kind for kind in (getattr(fsdp, "FullyShardedDataParallel", None), getattr(fsdp, "FSDPModule", None))
        if isinstance(kind, type)
    )
    return bool(kinds) and isinstance(model, kinds)


# ---------------------------------------------------------------------------
# The state tree
# ---------------------------------------------------------------------------


def _structural_copy(
    module: torch.nn.Module, shared: set[int], memo: dict[int, torch.nn.Module]
) -> torch.nn.Module:
    """`module` as the optimized module holds it: a structural copy (same
    class and attributes, dicts of its own holding the same tensors and the
    copies of its submodules), or `module` itself where the graph calls it
    (`shared`) or it keeps its state in C++ (a ScriptModule)."""
    done = memo.get(id(module))
    if done is not None:
        return done
    if id(module) in shared or isinstance(module, torch.jit.ScriptModule):
        memo[id(module)] = module
        return module
    copied = object.__new__(type(module))  # no __init__: the attributes are the original's
    memo[id(module)] = copied
    state = dict(module.__dict__)
    for key, value in module.__dict__.items():
        if key.endswith(HOOK_SUFFIXES) and isinstance(value, dict):
            state[key] = type(value)(value)
    state["_parameters"] = type(module._parameters)(module._parameters)  # noqa: SLF001
    state["_buffers"] = type(module._buffers)(module._buffers)  # noqa: SLF001
    state["_non_persistent_buffers_set"] = set(module._non_persistent_buffers_set)  # noqa: SLF001
    children = type(module._modules)()  # noqa: SLF001
    for name, child in module._modules.items():  # noqa: SLF001
        children[name] = _structural_copy(child, shared, memo) if child is not None else None
    state["_modules"] = children
    copied.__dict__.update(state)
    if isinstance(module, torch.fx.GraphModule):
        # A graph knows the module that owns it: the copy owns a copy.
        graph = copy.deepcopy(module.graph)
        graph.owning_module = copied  # type: ignore[assignment]
        copied.__dict__["_graph"] = graph
    return copied


def tensor_owners(model: torch.nn.Module) -> dict[int, tuple[str, str]]:
    """The id of each parameter and buffer of `model` -> the module dict
    that holds it (`_parameters` or `_buffers`) and its first qualified
    name (`towers.0.weight`)."""
    tensors: dict[int, tuple[str, str]] = {}
    for kind, named in (
        ("_parameters", model.named_parameters(remove_duplicate=False)),
        ("_buffers", model.named_buffers(remove_duplicate=False)),
    ):
        for name, tensor in named:
            tensors.setdefault(id(tensor), (kind, name))
    return tensors


def _qualified_names(model: torch.nn.Module) -> tuple[dict[int, tuple[str, str]], dict[int, str]]:
    """(`tensor_owners`, id of each submodule -> its first qualified name)."""
    tensors = tensor_owners(model)
    modules: dict[int, str] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        if name:
            modules.setdefault(id(module), name)
    return tensors, modules


def _path(name: str, kind: str) -> tuple[tuple[str, str], ...]:
    """The dicts that hold `name` (`towers.0.weight`) in a state tree."""
    *modules, leaf = name.split(".")
    return (*(("_modules", part) for part in modules), (kind, leaf))


def _clashes(gm: torch.fx.GraphModule, model: torch.nn.Module) -> list[str]:
    """The model's root-level names that the optimized module cannot hold as
    state: an attribute of its class (`graph`, `code`, `forward`) or a
    plain attribute of its own (`optimus_report`, `meta`)."""
    names = [
        *model._parameters, *model._buffers, *model._modules,  # noqa: SLF001
    ]
    own = {k for k in gm.__dict__ if k not in STATE_DICTS}
    return [n for n in names if hasattr(type(gm), n) or n in own]


def _path_container(module: Any, model_tensors: set[int]) -> bool:
    """Whether `module` is only a container FX made for dotted get_attr
    targets (`towers.0.weight`, as `dynamo_capture` names the model's
    tensors): a plain `nn.Module` tree holding the model's tensors alone."""
    if type(module) is not torch.nn.Module:
        return False
    if any(t is not None and id(t) not in model_tensors for t in (*module._parameters.values(), *module._buffers.values())):  # noqa: SLF001
        return False
    return all(_path_container(child, model_tensors) for child in module._modules.values())  # noqa: SLF001


def adopt_model_names(gm: torch.fx.GraphModule, model: torch.nn.Module) -> bool:
    """Register `model`'s parameters, buffers and submodules on `gm` under
    the model's names (the module docstring), after
    `param_cache.read_tensors_from_model(gm, model)`; whether it did.

    Left as it is (False, logged at DEBUG) where a root-level name of the
    model is an attribute of `gm` that is no state (`graph`, `code`, ...).
    `gm`'s code is regenerated unless pending."""
    from optimus_ir.translate.exporter import recompile

    clashes = _clashes(gm, model)
    if clashes:
        log.debug("optimus: model names not adopted: %s would shadow the module's own attributes", clashes)
        return False
    tensors, modules = _qualified_names(model)
    # Modules the graph uses as modules (call_module, get_attr of a module)
    # stay the model's own, as GraphModule registered them.
    shared: set[int] = set()
    retarget: list[tuple[torch.fx.Node, str, tuple[tuple[str, str], ...] | None]] = []
    for node in gm.graph.nodes:
        if node.op not in ("get_attr", "call_module"):
            continue
        try:
            value = _read_target(gm, str(node.target))
        except AttributeError:
            continue
        if isinstance(value, torch.nn.Module) and id(value) in modules:
            shared.add(id(value))
            retarget.append((node, modules[id(value)], None))
        elif node.op == "get_attr" and isinstance(value, torch.Tensor) and id(value) in tensors:
            kind, name = tensors[id(value)]
            retarget.append((node, name, _path(name, kind)))
    memo: dict[int, torch.nn.Module] = {}
    children = {
        name: _structural_copy(child, shared, memo) if child is not None else None
        for name, child in model._modules.items()  # noqa: SLF001
    }
    model_tensors = set(tensors)
    model_modules = set(modules)

    def own_entries(table: Mapping[str, Any], model_ids: set[int]) -> dict[str, Any]:
        return {k: v for k, v in table.items() if v is None or id(v) not in model_ids}

    parameters = type(gm._parameters)(model._parameters)  # noqa: SLF001
    buffers = type(gm._buffers)(model._buffers)  # noqa: SLF001
    submodules = type(gm._modules)(children)  # noqa: SLF001
    own_parameters = own_entries(gm._parameters, model_tensors)  # noqa: SLF001
    own_buffers = own_entries(gm._buffers, model_tensors)  # noqa: SLF001
    own_modules = {
        k: v for k, v in own_entries(gm._modules, model_modules).items()  # noqa: SLF001
        if not _path_container(v, model_tensors)
    }
    for table, own in ((parameters, own_parameters), (buffers, own_buffers), (submodules, own_modules)):
        for key, value in own.items():
            if key in table:
                log.debug("optimus: model names not adopted: the module's own %r is a model name too", key)
                return False
            table[key] = value
    non_persistent = set(model._non_persistent_buffers_set)  # noqa: SLF001
    # What the module holds beyond the model's state (frozen values, lifted
    # constants) is not the model's: out of its state dict.
    non_persistent |= set(own_buffers)
    gm.__dict__["_parameters"] = parameters
    gm.__dict__["_buffers"] = buffers
    gm.__dict__["_modules"] = submodules
    gm.__dict__["_non_persistent_buffers_set"] = non_persistent
    for node, name, path in retarget:
        node.target = name
        if path is None:
            node.meta.pop(ATTR_PATH_META, None)
            continue
        own = node.meta.get(ATTR_OWN_META)
        if own is not None:
            node.meta[ATTR_OWN_META] = (path, own[1])
        elif not _reads_model(node):
            node.meta[ATTR_PATH_META] = path
    gm.__dict__[NAMED_ATTRIBUTE] = True
    keep_state_on_copies(gm)
    recompile(gm)
    return True


def watch_own_state(gm: torch.nn.Module) -> bool:
    """Let `gm`'s code read the model's tensors alone (one lookup each)
    until an attribute is reassigned on `gm` itself (`exporter.OwnState`):
    its own parameter, buffer and submodule dicts, and those of its state
    tree's copies, become `exporter.WatchedDict`s that set the state on any
    change. Called last, when `gm` is complete: the state starts unset only
    where every own attribute the code reads is the tensor it was made with
    (else it starts set: own attributes first, as without a watch). Whether
    `gm` is watched (a module of `adopt_model_names` only)."""
    if not isinstance(gm, torch.fx.GraphModule) or not gm.__dict__.get(NAMED_ATTRIBUTE, False):
        return False
    model = gm.__dict__.get("_optimus_model")  # param_cache.MODEL_ATTRIBUTE
    models = {id(m) for m in model.modules()} if isinstance(model, torch.nn.Module) else set()
    state = OwnState()
    stack: list[torch.nn.Module] = [gm]
    seen: set[int] = set()
    while stack:
        module = stack.pop()
        if id(module) in seen or id(module) in models:
            continue  # the model's own modules (called by the graph) change with the model
        seen.add(id(module))
        for key in STATE_DICTS:
            table = module.__dict__[key]
            if isinstance(table, WatchedDict):
                table.watch = state
            else:
                module.__dict__[key] = WatchedDict(table, watch=state)
        stack.extend(child for child in module._modules.values() if child is not None)  # noqa: SLF001
    made_with = gm.__dict__.get(MADE_WITH_ATTRIBUTE, ())
    for node in gm.graph.find_nodes(op="get_attr"):
        own = node.meta.get(ATTR_OWN_META)
        if own is None:
            continue
        try:
            value = _read_path(gm, own[0])
        except (KeyError, AttributeError):
            value = None
        if own[1] >= len(made_with) or value is not made_with[own[1]]:
            state.changed = True
            break
    gm.__dict__[OWN_STATE_ATTRIBUTE] = state
    return True


def _read_path(module: torch.nn.Module, path: tuple[tuple[str, str], ...]) -> Any:
    value: Any = module
    for kind, key in path:
        value = getattr(value, kind)[key]
    return value


def _reads_model(node: torch.fx.Node) -> bool:
    """Whether the get_attr's fast path leads into the model (`read_tensors_from_model`)."""
    path = node.meta.get(ATTR_PATH_META)
    return bool(path) and path[0][0] == "__dict__"


def _read_target(module: torch.nn.Module, target: str) -> Any:
    value: Any = module
    for part in target.split("."):
        value = getattr(value, part)
    return value


def share_model_state(gm: torch.fx.GraphModule, model: torch.nn.Module, attribute: str) -> None:
    """Make `gm`, a module that calls `model` itself as its submodule
    `attribute` (`api._running_the_model`), show the model's state as its
    own: its parameter, buffer and submodule dicts *are* the model's (so the
    names are the model's and every change shows on both), and `model` is
    kept as a plain attribute (the graph's call_module reads it)."""
    gm._modules.pop(attribute, None)  # noqa: SLF001
    gm.__dict__[attribute] = model
    for key in (*STATE_DICTS, "_non_persistent_buffers_set"):
        gm.__dict__[key] = model.__dict__[key]


# ---------------------------------------------------------------------------
# Copies
# ---------------------------------------------------------------------------


def keep_state_on_copies(gm: torch.fx.GraphModule) -> None:
    """Make `copy.deepcopy(gm)` and `pickle` keep `gm`'s whole state tree
    (GraphModule rebuilds a copy from its graph's targets alone: plain
    containers, every tensor a persistent buffer, unused parameters lost).
    Installed on `gm`'s own class (GraphModule makes one per instance), and
    again on every copy. Neither copy keeps the model the module reads
    from: a copy reads its own tensors."""
    cls = type(gm)
    if cls.__qualname__.split(".")[-1] != "GraphModuleImpl":  # not FX's class of its own: left alone
        return
    cls.__deepcopy__ = _deepcopy_keeping_state  # type: ignore[method-assign]
    cls.__reduce__ = _reduce_keeping_state  # type: ignore[method-assign]


NOT_COPIED = ("_optimus_model", MADE_WITH_ATTRIBUTE, OWN_STATE_ATTRIBUTE)
"""`__dict__` entries a copy leaves out: the model the module reads from
(`param_cache.MODEL_ATTRIBUTE`) and the tensors its code was made with; a
copy's code finds neither and reads its own attributes."""


REPORT_ATTRIBUTE = "optimus_report"
"""The plain attribute holding what `optimize()` did (`OptimizeReport`):
GraphModule's deepcopy rebuilds a module from its graph and drops it, so
`_deepcopy_keeping_state` copies it (pickling keeps it with `__dict__`)."""


def _deepcopy_keeping_state(self: torch.fx.GraphModule, memo: dict[int, Any]) -> torch.fx.GraphModule:
    left_out = {key: self.__dict__.pop(key) for key in NOT_COPIED if key in self.__dict__}
    try:
        copied = torch.fx.GraphModule.__deepcopy__(self, memo)
    finally:
        self.__dict__.update(left_out)
    tables = {key: memo.get(id(self.__dict__[key])) for key in (*STATE_DICTS, "_non_persistent_buffers_set")}
    _restore_state(copied, tables, plain=set(self.__dict__))
    if REPORT_ATTRIBUTE in self.__dict__ and REPORT_ATTRIBUTE not in copied.__dict__:
        copied.__dict__[REPORT_ATTRIBUTE] = copy.deepcopy(self.__dict__[REPORT_ATTRIBUTE], memo)
    return copied


class StateTracer(torch.fx.Tracer):
    """The tracer unpickling runs over a module's code to rebuild its graph
    (GraphModule pickles code, not graphs): buffers are read as get_attr,
    like parameters, rather than folded into constants of their values at
    pickling time (so loading a state dict into the copy reaches them)."""

    proxy_buffer_attributes = True


def _reduce_keeping_state(self: torch.fx.GraphModule) -> tuple[Any, ...]:
    function, arguments = torch.fx.GraphModule.__reduce__(self)
    body = dict(arguments[0])
    for key in NOT_COPIED:
        body.pop(key, None)
    if body.get("_tracer_cls") in (None, torch.fx.Tracer):
        body["_tracer_cls"] = StateTracer
    return (_unpickle_keeping_state, (function, (body, *arguments[1:])))


def _unpickle_keeping_state(function: Any, arguments: tuple[Any, ...]) -> torch.fx.GraphModule:
    """What `pickle` calls to rebuild a module `keep_state_on_copies` prepared."""
    body = arguments[0]
    tables = {key: body.get(key) for key in (*STATE_DICTS, "_non_persistent_buffers_set")}
    restored = function(*arguments)
    _restore_state(restored, tables, plain={k for k in body if k not in STATE_DICTS})
    for key in STATE_DICT_HOOKS:  # what deepcopy keeps, pickling keeps too
        if isinstance(body.get(key), dict):
            restored.__dict__[key] = body[key]
    return restored


STATE_DICT_HOOKS = (
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)
"""The hook dicts of `state_dict`/`load_state_dict` (a frozen module's
`param_cache.refresh_after_load`, for one)."""


def _restore_state(copied: torch.fx.GraphModule, tables: Mapping[str, Any], plain: Iterable[str]) -> None:
    """Put the original's state tree (`tables`: its dicts, copied) into the
    copy GraphModule rebuilt: the original's entries, in its order, then
    what the rebuild added beyond them; an attribute the original kept
    plain (in `__dict__`: the stride fallback) that the rebuild registered
    goes back to `__dict__`."""
    plain = set(plain)
    if any(tables.get(key) is None for key in STATE_DICTS):
        return
    for key in STATE_DICTS:
        rebuilt = copied.__dict__[key]
        table = type(tables[key])(tables[key])
        for name, value in rebuilt.items():
            if name in table:
                continue
            if name in plain:
                copied.__dict__[name] = value
            else:
                table[name] = value
        copied.__dict__[key] = table
    non_persistent = tables.get("_non_persistent_buffers_set")
    if non_persistent is not None:
        copied.__dict__["_non_persistent_buffers_set"] = set(non_persistent)
    keep_state_on_copies(copied)


__all__ = [
    "NAMED_ATTRIBUTE",
    "adopt_model_names",
    "keep_state_on_copies",
    "refuse_wrapped_model",
    "tensor_owners",
    "share_model_state",
    "watch_own_state",
]
