"""Capture a model the way `torch.compile(fullgraph=True)` captures it.

Dynamo traces a fresh copy of the model's `forward` (its own code object,
so that the cache entry Dynamo leaves is ours alone and no other compile of
the model's class counts against Dynamo's recompile limits) and hands a
backend of ours the whole graph. From that hand-over we keep:

* the graph, its parameters and buffers turned into `get_attr` nodes named
  by their qualified names in the model (`towers.0.weight`), so the module
  made from it reads (and its state dict lists) the model's own tensors;
* the source of every other placeholder (`L['feats']['f0']`,
  `L['kjt']._values`): `optimus_ir.translate.calling.ModelCall` reads them from the
  arguments of a call, so every input structure torch's pytree and Dynamo
  know (dicts, lists, dataclasses, jagged tensors) is taken as it is;
* the value the model returned on the example, to rebuild its structure;
* Dynamo's guards for the capture (`CapturedGuard`): the check of every
  property of the arguments the graph was specialized on (shapes, strides,
  dtypes, devices, `requires_grad`, the values of Python arguments, dict
  keys and lengths, the attributes of the model that `forward` branched on,
  grad mode), evaluated by Dynamo's own guard manager. Guards on the
  model's parameters and buffers and on the structure of its modules are
  left out: the module reads them at call time (`param_cache`), and
  checking a few hundred parameters would cost more than the call.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import logging
import re
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.utils import _pytree as pytree

from optimus_ir.translate.calling import MODEL_ATTRIBUTE, ModelCall, ModelCallCodeGen, OutputLeaf
from optimus_ir.translate.model_state import CaptureError, ModuleState

log = logging.getLogger("optimus_ir.capture")

CAPTURE_GUARD_META = "optimus_capture_guard"


"""`GraphModule.meta` key of the `CapturedGuard` of a captured graph."""

_MODEL_GUARD_KINDS = frozenset({"CONSTANT_MATCH", "EQUALS_MATCH", "ID_MATCH", "BOOL_MATCH", "NONE_MATCH"})
"""Guards on what the model holds that are kept: the values of its plain
attributes that `forward` read (a flag, a scale, a function it calls)."""

_DROPPED_GLOBAL_KINDS = frozenset({"GLOBAL_STATE"})
"""Ambient state not guarded: thread count, autocast and matmul precision
flags (what the graph computes does not depend on them: each op reads them
when it runs). Grad mode is checked by our own rule,
`guards.Specialization.grad_enabled`. Dynamo's checks of `mark_dynamic`
marks cannot be left out this way: they are part of each tensor's
`TENSOR_MATCH` guard."""


def _source_name(source: Any) -> str:
    name = source.name
    return name() if callable(name) else name


@dataclass(eq=False)
class CapturedGuard:
    """Dynamo's guard of one capture: `check(frame)` on the frame locals of
    a call of the model's `forward` (the arguments by name, and the model
    under its instance name) says whether the graph captured then is the
    program the model runs for them."""

    manager: Any
    """Dynamo's root guard manager (C++), `manager.check(dict) -> bool`."""
    keepalive: Any
    """The code object traced (it holds the cache entry)."""

    def check(self, frame: Mapping[str, Any]) -> bool:
        # unpickled, the guard is gone (it lives in Dynamo's C++ cache
        # entry): nothing is accepted, and the call is optimized again
        return self.manager is not None and bool(self.manager.check(frame))

    def failures(self, frame: Mapping[str, Any]) -> list[str]:
        """The guards that fail for `frame`, as Dynamo words them."""
        if self.manager is None:
            return ["the module was unpickled: Dynamo's guard of its capture is not kept"]
        try:
            info = self.manager.check_verbose(frame)
        except Exception as error:  # noqa: BLE001 - a diagnostic only
            return [f"{type(error).__name__}: {error}"]
        return [str(part) for part in getattr(info, "verbose_code_parts", [])]

    def __getstate__(self) -> dict[str, Any]:
        return {"manager": None, "keepalive": None}

    def __deepcopy__(self, memo: dict[int, Any]) -> CapturedGuard:
        return self


@dataclass
class Captured:
    """What `capture_graph` returns."""

    graph_module: torch.fx.GraphModule
    guard: CapturedGuard
    call: ModelCall
    changes: list[tuple[str, Any, Any]]
    """The model's attributes `forward` assigned (`ModelState.changes`:
    name, before, what Dynamo's replay assigned), undone already."""
    output_markers: dict[int, torch.fx.Node]
    """id of the stand-in handed out for each graph output -> its value in
    the graph (what a replayed assignment of an output assigned)."""
    stand_ins: Any = None
    """Those stand-ins (kept while `changes` names them)."""


def _entry(model: Callable[..., Any]) -> tuple[Callable[..., Any], str | None, inspect.Signature, dict[str, Any]]:
    """A fresh function to trace (its own code object), the instance name of
    its frame (None: the model is not an argument), the signature a call
    binds to, and the globals of the code."""
    if isinstance(model, torch.nn.Module):
        forward = type(model).forward
        hooks = bool(
            model._forward_hooks or model._forward_pre_hooks  # noqa: SLF001
            or torch.nn.modules.module._global_forward_hooks  # noqa: SLF001
            or torch.nn.modules.module._global_forward_pre_hooks  # noqa: SLF001
        )
        # torch's own modules (`nn.Sequential`) are traced through a call: a
        # copy of their `forward` as the top frame leaves no cache entry
        ours = not type(model).__module__.startswith("torch.")
        if isinstance(forward, types.FunctionType) and ours and not hooks and getattr(model.forward, "__func__", None) is forward:
            code = forward.__code__
            fresh = types.FunctionType(
                code.replace(), forward.__globals__, forward.__name__, forward.__defaults__, forward.__closure__
            )
            fresh.__kwdefaults__ = forward.__kwdefaults__
            fresh.__dict__.update(forward.__dict__)
            instance = code.co_varnames[0] if code.co_argcount else None
            signature = inspect.signature(model.forward)
            return types.MethodType(fresh, model), instance, signature, forward.__globals__
        return _calling(model), None, _VARIADIC, {}
    if isinstance(model, types.FunctionType):
        code = model.__code__
        fresh = types.FunctionType(code.replace(), model.__globals__, model.__name__, model.__defaults__, model.__closure__)
        fresh.__kwdefaults__ = model.__kwdefaults__
        return fresh, None, inspect.signature(model), model.__globals__
    return _calling(model), None, _VARIADIC, {}


_VARIADIC = inspect.Signature(
    [
        inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
        inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD),
    ]
)
"""The signature of `_calling`'s function (its frame has `args` and `kwargs`)."""


def _calling(model: Callable[..., Any]) -> Callable[..., Any]:
    """A fresh function that calls `model` with its arguments (a module with
    hooks, a callable object): traced through `model.__call__`."""

    def call_model(*args: Any, **kwargs: Any) -> Any:
        return model(*args, **kwargs)

    code = call_model.__code__
    return types.FunctionType(code.replace(), call_model.__globals__, "call_model", None, call_model.__closure__)


_SUBMODULE_PATH = re.compile(r"\._modules\[(?P<q>['\"])(?P<name>[^'\"]+)(?P=q)\]")


def _keep_guard(instance: str | None, model: Any = None) -> Callable[[Sequence[Any]], list[bool]]:
    """Dynamo's `guard_filter_fn`: every guard but those on the model's
    tensors and module structure, on the attributes of torch's own modules
    (an `nn.Embedding`'s `max_norm`: set when it is built, like its weight),
    and the ambient state (module docstring)."""

    def rooted_in_model(name: str) -> bool:
        if name.startswith("___from_numpy(") and name.endswith(")"):
            name = name[len("___from_numpy("):-1]  # a numpy array the model holds, seen as a tensor
        return instance is not None and (
            name == instance or name.startswith((f"{instance}.", f"{instance}["))
        )

    def owner_is_torchs(name: str) -> bool:
        """Whether the attribute guarded belongs to a module of torch's own
        (its `training` flag aside: `.eval()` on a submodule changes it)."""
        if name.endswith(".training"):
            return False
        owner = model
        rest = name[len(instance or ""):]
        while isinstance(owner, torch.nn.Module):
            step = _SUBMODULE_PATH.match(rest)
            if step is None:
                break
            owner = owner._modules.get(step["name"])  # noqa: SLF001
            rest = rest[step.end():]
        return isinstance(owner, torch.nn.Module) and type(owner).__module__.startswith("torch.nn.")

    def keep(entries: Sequence[Any]) -> list[bool]:
        kept = []
        for entry in entries:
            kind = entry.guard_type
            if kind in _DROPPED_GLOBAL_KINDS:
                kept.append(False)
            elif rooted_in_model(entry.name):
                value = entry.value if entry.has_value else None
                kept.append(
                    kind in _MODEL_GUARD_KINDS
                    and not isinstance(value, torch.nn.Module | torch.Tensor)
                    and not owner_is_torchs(entry.name)
                )
            else:
                kept.append(True)
        return kept

    return keep


def _cache_entries(code: types.CodeType) -> list[Any]:
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    return list(_debug_get_cache_entry_list(code))


def _code_of(function: Callable[..., Any]) -> types.CodeType:
    return (function.__func__ if isinstance(function, types.MethodType) else function).__code__  # type: ignore[union-attr]


def capture_graph(
    model: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    dynamic: bool = False,
) -> Captured:
    """Capture `model(*args, **kwargs)` as one graph through torch.compile's
    path (module docstring), without running its graph (Dynamo traces
    on fake tensors; what it replays on Python objects is undone). `dynamic`: sizes marked dynamic on the arguments
    (`torch._dynamo.mark_dynamic`) stay symbolic; otherwise every size is
    static. Raises CaptureError where Dynamo cannot capture one graph."""
    function, instance, signature, namespace = _entry(model)
    recorded: dict[str, Any] = {"names": _tensor_names(model)}  # before Dynamo replays assignments
    held: list[Any] = []  # Dynamo's graph and the stand-ins of its outputs; emptied after: the cache entry keeps `run`

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        sources: dict[str, str] = {}
        examples: dict[str, Any] = {}
        for node in gm.graph.find_nodes(op="placeholder"):
            grapharg = node.meta.get("grapharg")
            if grapharg is None or grapharg.source is None:
                raise CaptureError(f"Dynamo's graph input '{node.target}' has no source")
            name = _source_name(grapharg.source)
            if getattr(grapharg, "pass_arg_as_tensor", False):
                name = f"___as_tensor({name})"
            sources[node.target] = name
            examples[node.target] = grapharg.example
        recorded["graph"] = gm
        recorded["sources"] = sources
        recorded["examples"] = examples
        recorded["fqn"] = dict(gm.meta.get("dynamo_flat_name_to_original_fqn", {}))

        held.append(gm)
        held.append(_output_markers(gm))

        def run(*inputs: Any) -> Any:
            # A capture does not run the graph: its writes (a batch norm's
            # running statistics, an in-place op on an input) and its random
            # numbers must not happen at optimize time. What it returns only has to be told
            # apart, by identity, in the value the model returns.
            outputs = held[0](*inputs) if held[1] is None else held[1]
            recorded["outputs"] = outputs
            return outputs

        return run

    # Dynamo replays the attribute assignments of `forward` on the model:
    # they are recorded (`Captured.changes`) and undone right away, before
    # the module is built from the model's attributes.
    state = ModuleState(model) if isinstance(model, torch.nn.Module) else None
    # A dispatch mode active around the call (a FLOP counter, a memory
    # tracker) is set aside: it is not part of the model's program.
    modes = _outside_modes() if torch._C._len_torch_dispatch_stack() else contextlib.nullcontext()  # noqa: SLF001
    try:
        # Only the sizes marked dynamic are: Dynamo's automatic dynamic shapes
        # remember sizes by the code's file, line and name, which every fresh
        # copy of `forward` shares, so earlier captures would leak in.
        with modes, torch._dynamo.config.patch(automatic_dynamic_shapes=False):  # noqa: SLF001
            try:
                with _quiet_guard_errors():
                    containers = _Containers(signature, args, kwargs)
                    returned = torch._dynamo.optimize(  # noqa: SLF001
                        backend, nopython=True, dynamic=None if dynamic else False,
                        guard_filter_fn=_keep_guard(instance, model),
                    )(function)(*containers.args, **containers.kwargs)
            except torch._dynamo.exc.InternalTorchDynamoError:  # noqa: SLF001
                # Dynamo's guard filtering itself fails on some sources (a numpy
                # array attribute, torch 2.13): all of its guards, then (a slower check).
                if state is not None:
                    state.restore()
                names = recorded["names"]
                recorded.clear()
                recorded["names"] = names
                held.clear()
                function, instance, signature, namespace = _entry(model)
                containers = _Containers(signature, args, kwargs)
                returned = torch._dynamo.optimize(  # noqa: SLF001
                    backend, nopython=True, dynamic=None if dynamic else False
                )(function)(*containers.args, **containers.kwargs)
        changes = state.changes() if state is not None else []
        item_writes = containers.writes()
        attribute_writes = containers.attribute_writes()
    finally:
        if "containers" in locals():
            containers.restore()
        if state is not None:
            state.restore()
    entries = _cache_entries(_code_of(function))
    if "graph" not in recorded and len(entries) == 1:
        # nothing to compute (`return None`, an argument as it is): Dynamo
        # made no graph, only guards; the module is an empty graph
        empty = torch.fx.Graph()
        empty.output(())
        recorded.update(graph=torch.fx.GraphModule(torch.nn.Module(), empty), sources={}, examples={}, outputs=())
    if "graph" not in recorded or len(entries) != 1:
        raise CaptureError(
            f"Dynamo did not capture {type(model).__name__} as one graph "
            f"({len(entries)} cache entries, graph {'made' if 'graph' in recorded else 'not made'})"
        )
    guard = CapturedGuard(entries[0].guard_manager, _code_of(function))  # the code holds the cache entry; not the model
    _outlive_dynamo_reset(_code_of(function))
    recorded["function"] = function
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    local_values = dict(bound.arguments)
    gm, call = _module_of(
        model, recorded, instance, signature, namespace, returned, local_values, item_writes, attribute_writes
    )
    markers: dict[int, torch.fx.Node] = {}
    outputs = recorded.get("outputs")
    if isinstance(outputs, tuple):
        output = next(iter(gm.graph.find_nodes(op="output")))
        values = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
        markers = {id(m): v for m, v in zip(outputs, values) if isinstance(v, torch.fx.Node)}
    recorded.clear()  # the cache entry keeps `run`, and so these, alive
    held.clear()
    gm.meta[CAPTURE_GUARD_META] = guard
    return Captured(gm, guard, call, changes, markers, outputs)


def _outside_modes() -> Any:
    from torch.utils._python_dispatch import _disable_current_modes

    return _disable_current_modes()


@contextlib.contextmanager
def _quiet_guard_errors() -> Iterator[None]:
    """Dynamo logs a guard it fails to build at ERROR before raising; the
    capture retries without its filter then, so that is not an error. And
    with a `guard_filter_fn` Dynamo builds each guard twice: the second
    build of a guard on a numpy array attribute (torchfm's field offsets,
    seen as a tensor made by `from_numpy` each time) compares the two
    tensors' weakrefs with `in`, which asks a tensor for its truth value.
    That comparison only records export metadata (`Guard.set_export_info`),
    so the two are told apart by identity instead; without it the filter
    cannot be used, and the unfiltered guard converts every numpy attribute
    on every call (10 us of a 170 us call)."""
    from torch._guards import Guard

    logger = logging.getLogger("torch._guards")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    original = Guard.__dict__.get("set_export_info")

    def set_export_info(self: Any, guard_type: Any, guarded_class: Any, code_list: Any, obj_weakref: Any) -> Any:
        mine = getattr(self, "obj_weakref", None)
        if mine is not None and obj_weakref is not None and mine is not obj_weakref and callable(mine):
            referent, other = mine(), obj_weakref()
            if isinstance(referent, torch.Tensor) or isinstance(other, torch.Tensor):
                self.obj_weakref = None  # tensors: identity, not ==
        return original(self, guard_type, guarded_class, code_list, obj_weakref)

    if original is not None:
        Guard.set_export_info = set_export_info  # type: ignore[method-assign]
    try:
        yield
    finally:
        logger.setLevel(level)
        if original is not None:
            Guard.set_export_info = original  # type: ignore[method-assign]


def written_attribute(node: torch.fx.Node) -> str | None:
    """The parameter or buffer (qualified name) `node` is, through a chain of
    in-place ops (`x.add_(1)`, `operator.iadd`): each returns the tensor it
    wrote. None where it is something else."""
    while node.op in ("call_function", "call_method") and node.args and isinstance(node.args[0], torch.fx.Node):
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        in_place = (name.endswith("_") and not name.startswith("_")) or (
            getattr(node.target, "__module__", None) in ("_operator", "operator") and name.startswith("i")
        )
        if not in_place:
            return None
        node = node.args[0]
    return str(node.target) if node.op == "get_attr" else None


def _output_markers(gm: torch.fx.GraphModule) -> tuple[Any, ...] | None:
    """Uninitialized tensors shaped as the graph's outputs (from Dynamo's
    metadata), one per output: stand-ins for a run of the graph; None where
    an output's metadata is missing (the graph is run then)."""
    output = next(iter(gm.graph.find_nodes(op="output")))
    values = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
    markers = []
    for value in values:
        meta = value.meta.get("example_value") if isinstance(value, torch.fx.Node) else None
        if not isinstance(meta, torch.Tensor):
            return None
        shape, stride = tuple(meta.shape), tuple(meta.stride())
        if all(type(n) is int for n in (*shape, *stride)):
            made = torch.empty_strided(shape, stride, dtype=meta.dtype, device=meta.device)
        else:  # a size known at run time only (`nonzero`): any token will do
            made = torch.empty(0, dtype=meta.dtype, device=meta.device)
        markers.append(made.requires_grad_(meta.requires_grad) if meta.requires_grad else made)
    return tuple(markers)


def _outlive_dynamo_reset(code: types.CodeType) -> None:
    """Keep `torch._dynamo.reset()` from invalidating the guard of this
    capture: reset clears the cache entries of every code object Dynamo has
    seen (it tracks them in `convert_frame.input_codes`), and the guard
    manager of a cleared entry fails every check from then on. The copy of
    `forward` traced here is ours alone and is never run through Dynamo
    again, so it is taken off that list (its cache entry stays ours)."""
    try:
        from torch._dynamo import convert_frame

        tracker = convert_frame.input_codes
        tracker.seen[:] = [ref for ref in tracker.seen if ref() is not code]
    except (ImportError, AttributeError):  # another torch: the guard may miss after a reset (re-optimized)
        pass


class _Containers:
    """The arguments of the capture, their dicts and lists copied (the
    leaves shared): Dynamo replays a write of `forward` into an argument's
    dict (`item_dict[k] = v.to(device)`) on these, not on the caller's,
    and `writes` tells what was written, for the module to do it too."""

    def __init__(self, signature: inspect.Signature, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        self.entries: list[tuple[Any, Any, str]] = []
        self.objects: list[tuple[Any, dict[str, Any], str]] = []
        """Other objects among the arguments (a jagged tensor), their
        attributes as they were: `forward` may cache values on them
        (`kjt._offsets`), which Dynamo replays on the caller's object."""
        bound = signature.bind(*args, **kwargs)
        copied = {name: self._copy(value, f"L[{name!r}]") for name, value in bound.arguments.items()}
        rebound = inspect.BoundArguments(signature, copied)  # type: ignore[arg-type]
        self.args, self.kwargs = tuple(rebound.args), dict(rebound.kwargs)

    def _copy(self, value: Any, path: str) -> Any:
        kind = type(value)
        if kind in (dict, collections.OrderedDict) and all(type(k) in (str, int) for k in value):
            made = kind((k, self._copy(v, f"{path}[{k!r}]")) for k, v in value.items())
            self.entries.append((made, dict(made), path))
            return made
        if kind is list:
            made = [self._copy(v, f"{path}[{i}]") for i, v in enumerate(value)]
            self.entries.append((made, list(made), path))
            return made
        if kind is tuple:
            return tuple(self._copy(v, f"{path}[{i}]") for i, v in enumerate(value))
        if (
            hasattr(value, "__dict__")
            and not isinstance(value, torch.Tensor | torch.nn.Module | type | types.FunctionType | types.ModuleType)
            and not callable(value)
        ):
            self.objects.append((value, dict(value.__dict__), path))
        return value

    def attribute_writes(self) -> list[tuple[str, Any, Any]]:
        """(object's source, ("attr", name), value) of every attribute
        `forward` set on an argument object; each object is put back as it
        was (the module sets them when it runs, where it can)."""
        found = []
        for obj, before, path in self.objects:
            now = dict(obj.__dict__)
            for name, value in now.items():
                if name not in before or before[name] is not value:
                    found.append((path, ("attr", name), value))
        self.restore()
        return found

    def restore(self) -> None:
        for obj, before, _ in self.objects:
            if set(obj.__dict__) != set(before) or any(obj.__dict__.get(k, _MISSING) is not v for k, v in before.items()):
                obj.__dict__.clear()
                obj.__dict__.update(before)

    def writes(self) -> list[tuple[str, Any, Any]]:
        """(container's source, key, value stored) of every item `forward`
        stored into a dict or list argument; CaptureError for other changes."""
        found = []
        for made, before, path in self.entries:
            if isinstance(made, list):
                if len(made) != len(before):
                    raise CaptureError(f"forward changes the length of its argument {path[2:-2] if path.count('[') == 1 else path}")
                items = list(enumerate(made))
            else:
                if any(key not in made for key in before):
                    raise CaptureError(f"forward deletes items of its argument {path}")
                items = list(made.items())
            for key, value in items:
                if isinstance(made, list):
                    changed = before[key] is not value
                else:
                    changed = key not in before or before[key] is not value
                if changed:
                    found.append((path, key, value))
        return found


_MISSING = object()


def _free_variables(function: Callable[..., Any]) -> dict[str, Any]:
    """The free variables of the traced code by name (Dynamo counts them
    among the frame's locals, and may guard on them)."""
    plain = function.__func__ if isinstance(function, types.MethodType) else function
    cells = getattr(plain, "__closure__", None) or ()
    names = plain.__code__.co_freevars
    found = {}
    for name, cell in zip(names, cells):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return found


def _tensor_names(model: Any) -> dict[int, str]:
    """id -> qualified name of the model's parameters and buffers."""
    names: dict[int, str] = {}
    if isinstance(model, torch.nn.Module):
        for name, tensor in model.named_parameters(remove_duplicate=False):
            names.setdefault(id(tensor), name)
        for name, tensor in model.named_buffers(remove_duplicate=False):
            names.setdefault(id(tensor), name)
    return names


def _argument_sources(local_values: Mapping[str, Any]) -> dict[int, str]:
    """id -> source name of every pytree leaf of the arguments (for values the
    model returns as they are)."""
    found: dict[int, str] = {}
    for name, value in local_values.items():
        try:
            leaves, _ = pytree.tree_flatten_with_path(value)
        except Exception:  # noqa: BLE001 - an unflattenable argument: only itself
            leaves = [((), value)]
        for path, leaf in leaves:
            text = f"L[{name!r}]" + "".join(_key_text(key) for key in path)
            if text is not None:
                found.setdefault(id(leaf), text)
    return found


def leaf_source_names(frame: Mapping[str, Any]) -> list[str]:
    """Readable names of the pytree leaves of a call's arguments, in
    `pytree.tree_flatten(dict(frame))` order (`feats['f0']`, `kjt._values`)."""
    try:
        leaves, _ = pytree.tree_flatten_with_path(dict(frame))
    except ValueError:  # a registered class without `flatten_with_keys_fn`: leaves by position
        return [f"leaf #{i}" for i in range(len(pytree.tree_leaves(dict(frame))))]
    names = []
    for path, _leaf in leaves:
        head, *rest = path
        names.append(str(getattr(head, "key", head)) + "".join(_key_text(key) for key in rest))
    return names


def _key_text(key: Any) -> str:
    if isinstance(key, pytree.SequenceKey):
        return f"[{key.idx}]"
    if isinstance(key, pytree.MappingKey):
        return f"[{key.key!r}]"
    if isinstance(key, pytree.GetAttrKey):
        return f".{key.name}"
    raise CaptureError(f"cannot read a returned argument through {key!r}")


def _module_of(
    model: Any,
    recorded: Mapping[str, Any],
    instance: str | None,
    signature: inspect.Signature,
    namespace: Mapping[str, Any],
    returned: Any,
    local_values: Mapping[str, Any],
    writes: Sequence[tuple[str, Any, Any]] = (),
    attribute_writes: Sequence[tuple[str, Any, Any]] = (),
) -> tuple[torch.fx.GraphModule, ModelCall]:
    """The captured GraphModule: parameters and buffers of the model as
    `get_attr` of their qualified names, the other placeholders read by
    their sources, the model's value returned (`ModelCall`)."""
    gm: torch.fx.GraphModule = recorded["graph"]
    graph = gm.graph
    names = recorded["names"]
    sources: dict[str, str] = {}
    placeholders = list(graph.find_nodes(op="placeholder"))
    first = next((n for n in graph.nodes if n.op != "placeholder"), None)
    position = {n: i for i, n in enumerate(graph.nodes)}
    examples_by_node: dict[torch.fx.Node, Any] = {}
    for node in placeholders:
        example = recorded["examples"][node.target]
        name = names.get(id(example)) if isinstance(example, torch.Tensor) else None
        if name is None:
            sources[node.target] = recorded["sources"][node.target]
            examples_by_node[node] = example
            continue
        # read where it is first used, as Dynamo's export places its
        # get_attr nodes (batch fusion places the stacks of weights by them)
        with graph.inserting_before(min(node.users, key=position.__getitem__) if node.users else first):
            attr = graph.create_node("get_attr", name)
        attr.meta.update(node.meta)
        attr.meta.pop("grapharg", None)
        node.replace_all_uses_with(attr)
        graph.erase_node(node)
    outputs = recorded.get("outputs")
    outputs = tuple(outputs) if isinstance(outputs, list | tuple) else (outputs,)
    by_id = {id(value): i for i, value in enumerate(outputs)}
    arguments = _argument_sources(local_values)
    placeholder_source = {id(v): sources[n.target] for n, v in examples_by_node.items()}
    leaves, spec = pytree.tree_flatten(returned)

    def leaf_of(leaf: Any) -> OutputLeaf:
        index = by_id.get(id(leaf))
        if index is not None:
            return OutputLeaf("graph", index=index)
        if isinstance(leaf, torch.Tensor):
            source = arguments.get(id(leaf)) or placeholder_source.get(id(leaf))
            if source is None and id(leaf) in names and instance is not None:
                source = f"L[{instance!r}]" + "".join(
                    f"._modules[{part!r}]" for part in names[id(leaf)].split(".")[:-1]
                ) + f".{names[id(leaf)].split('.')[-1]}"
            if source is None:
                raise CaptureError(
                    "the model returns (or stores into its inputs) a tensor that is neither computed by "
                    "the graph nor one of its arguments, parameters or buffers"
                )
            return OutputLeaf("source", source=source)
        if leaf is None or type(leaf) in (bool, int, float, str, complex) or isinstance(leaf, torch.dtype | torch.device):
            return OutputLeaf("constant", constant=leaf)
        if id(leaf) in arguments:
            return OutputLeaf("source", source=arguments[id(leaf)])
        # an object Dynamo rebuilds on every call (it may hold tensors the
        # graph computed): a constant would be the first call's, forever
        raise CaptureError(
            f"the model returns a {type(leaf).__name__}, which is not a tensor, a Python "
            "constant or a container torch's pytree knows, so it is not supported or "
            "pytree-flattenable: return tensors in tuples, lists, dicts or dataclasses, or "
            "register the class with torch.utils._pytree.register_pytree_node"
        )

    output_leaves = [leaf_of(leaf) for leaf in leaves]
    input_writes = [(path, key, leaf_of(value)) for path, key, value in writes]
    for path, key, value in attribute_writes:
        try:
            input_writes.append((path, key, leaf_of(value)))
        except CaptureError:
            # a value Dynamo builds (a dict of jagged tensors cached on a
            # KeyedJaggedTensor): not repeated; the object computes it again
            log.info("optimus: forward sets %s.%s on an argument; the optimized module does not", path, key[1])
    call = ModelCall(
        signature, instance, sources, spec, tuple(output_leaves), namespace, _free_variables(recorded["function"]),
        tuple(input_writes),
    )
    graph.set_codegen(ModelCallCodeGen(call))
    root = model if isinstance(model, torch.nn.Module) else torch.nn.Module()
    result = torch.fx.GraphModule(_Root(root, gm), graph)
    result.meta.update(gm.meta)
    result.__dict__[MODEL_ATTRIBUTE] = model
    if isinstance(model, torch.nn.Module):
        result.training = model.training
    return result, call


class _Root(torch.nn.Module):
    """What a captured GraphModule copies its attributes from: the model's
    parameters and buffers by their qualified names, the attributes of
    Dynamo's graph (constants it made) by theirs."""

    def __init__(self, model: torch.nn.Module, graph_module: torch.fx.GraphModule) -> None:
        super().__init__()
        self.__dict__["_optimus_sources"] = (model, graph_module)

    def __getattr__(self, name: str) -> Any:
        model, gm = self.__dict__["_optimus_sources"]
        for owner in (model, gm):
            try:
                return getattr(owner, name)
            except AttributeError:
                continue
        raise AttributeError(name)


__all__ = ["CAPTURE_GUARD_META", "Captured", "CapturedGuard", "capture_graph"]
