"""Values computed from parameters alone, computed once instead of per call.

Batch fusion's lowering stacks N weights into one tensor for a `baddbmm`
(`torch.stack([w0, w1, ...]).transpose(1, 2)`, `torch.stack(biases)
.unsqueeze(1)`, ...). Such an expression reads parameters and buffers only,
so its value changes only when they do; computing it on every call is what
makes PyTorch's Optimus slower than the unfused model on CPU.

`cache_parameter_expressions(gm)` finds these expressions in an exported
GraphModule and replaces them by values computed once:

* by default the values live on a `ParameterCache` submodule of the
  GraphModule, which checks on every call, cheaply, that every source
  tensor is still the same object with the same storage and `_version`
  (in-place updates, `load_state_dict`, `.to()`, `p.data = ...` and
  reassigned parameters are all seen) and recomputes otherwise. With
  autograd on and a source that requires grad, under autocast, or while a
  compiler traces the module, the values are computed at run time as the
  original graph computes them, so gradients reach the parameters;
* with `freeze=True` they are computed once, now, and registered as
  (non-persistent) buffers: no check at run time, and later changes of the
  parameters are not followed (like Inductor's freezing).

What is hoisted is conservative: only ops that are pure by
`optimus_ir.effects` *and* on a short list of data-movement and exact
elementwise ops (stack, cat, transpose, reshape, conversions, add, mul...;
no reductions or matmuls, whose results may depend on thread counts,
autocast or TF32 settings), only values that no output and no in-place
write can reach, and nothing at all that reads a parameter or buffer the
graph writes in place.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from optimus_ir.analysis.op_classes import FX_ALIASING_NAMES, NON_MUTATING_TARGETS
from optimus_ir.effects import _method_name_kind, _target_kind
from optimus_ir.exporter import ATTR_PATH_META
from optimus_ir.objects import ObjectTable

CACHE_ATTRIBUTE = "_optimus_parameter_cache"
"""The submodule of the GraphModule that holds the cache."""

HOISTABLE_NAMES: frozenset[str] = frozenset(
    """
    stack cat concat concatenate hstack vstack dstack
    transpose permute t T mT unsqueeze squeeze flatten unflatten reshape view
    view_as reshape_as expand expand_as broadcast_to contiguous clone narrow
    select getitem split split_with_sizes chunk unbind tensor_split movedim
    moveaxis swapaxes swapdims diagonal repeat tile flip pad tril triu
    to type float double half bfloat16 size dim
    add sub mul div truediv true_divide neg
    """.split()
)
"""Last name components of the ops a cached expression may consist of: data
movement, conversions and exact elementwise arithmetic. Their results do not
depend on global settings (thread count, autocast, TF32, deterministic
mode), so a value computed once is the value the graph computes later."""

VIEW_NAMES: frozenset[str] = frozenset(
    """
    transpose permute t T mT unsqueeze squeeze unflatten view view_as expand
    expand_as broadcast_to narrow select getitem split split_with_sizes chunk
    unbind tensor_split movedim moveaxis swapaxes swapdims diagonal size dim
    """.split()
)
"""Hoistable ops whose result is always a view (or metadata) of their
input: a chain of them over one parameter is cheap and must stay a live
view, so it is not cached."""

METADATA_ATTRIBUTES: frozenset[str] = frozenset({"shape", "dtype", "device", "ndim", "T", "mT"})
"""Tensor attributes a cached expression may read with `getattr` (not
`grad`, `requires_grad`, `data` or `_version`: they change without the
tensor's version changing)."""

WRITING_NAMES: dict[str, tuple[int, ...]] = {
    "batch_norm": (1, 2),
    "native_batch_norm": (3, 4),
    "_native_batch_norm_legit": (3, 4),
    "cudnn_batch_norm": (3, 4),
    "miopen_batch_norm": (3, 4),
    "instance_norm": (1, 2),
    "batch_norm_update_stats": (1, 2),
}
"""Ops that `optimus_ir.effects` counts as pure (no trailing `_`) but that
write their running-statistics arguments (by position) in training mode."""

EXTRA_ALIASING_NAMES: frozenset[str] = frozenset(
    """
    getattr broadcast_to broadcast_tensors atleast_1d atleast_2d atleast_3d
    einsum type_as pos __pos__ unsafe_split sum_to_size coalesce to_dense
    as_subclass align_as dropout
    """.split()
)
"""Pure ops that may return (a view of) an operand, beyond
`FX_ALIASING_NAMES`."""

IN_PLACE_OPERATOR_NAMES: frozenset[str] = frozenset(
    """
    setitem __setitem__ iadd isub imul itruediv ifloordiv imod ipow imatmul
    iand ior ixor ilshift irshift __iadd__ __isub__ __imul__ __itruediv__
    __ifloordiv__ __imod__ __ipow__ __imatmul__ __iand__ __ior__ __ixor__
    __ilshift__ __irshift__
    """.split()
)
"""Python operators that write their first operand (and nothing else)."""

_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_VERSION = operator.attrgetter("_version")
_REQUIRES_GRAD = operator.attrgetter("requires_grad")
_DATA_PTR = torch.Tensor.data_ptr
_any_autocast: Callable[[], bool] = getattr(
    torch._C, "_is_any_autocast_enabled", lambda: torch.is_autocast_enabled()  # noqa: SLF001
)
_is_compiling = torch.compiler.is_compiling


@dataclass(frozen=True)
class _CacheState:
    """One computation of the values and what it was computed from."""

    sources: tuple[torch.Tensor, ...]
    versions: list[int]
    pointers: list[int]
    storages: tuple[Any, ...]
    """The sources' storages, held so that no new storage can take the
    address of one the values were computed from (`pointers` would then
    match a tensor it was never computed from)."""
    values: tuple[Any, ...]

    @staticmethod
    def of(sources: Sequence[torch.Tensor], versions: list[int], values: tuple[Any, ...]) -> _CacheState:
        """The state for `values` computed from `sources` at `versions`."""
        return _CacheState(
            tuple(sources),
            versions,
            list(map(_DATA_PTR, sources)),
            tuple(s.untyped_storage() for s in sources),
            values,
        )


class ParameterCache(torch.nn.Module):
    """The values of parameter-only expressions, computed once and reused
    while their source tensors are unchanged.

    `compute` is a GraphModule (`ParameterExpressions`) whose placeholders
    are the source tensors and whose output is the tuple of values; the
    GraphModule that owns the cache calls `current_values(*sources)` with
    the sources it just read from its module dicts (so reassigned
    parameters arrive here as new objects)."""

    def __init__(self, compute: torch.fx.GraphModule) -> None:
        super().__init__()
        self.compute = compute
        self._state: _CacheState | None = None

    def current_values(self, *sources: Any) -> tuple[Any, ...]:
        """The values for `sources`: the cached ones when every source is the
        tensor they were computed from, with the same storage and
        `_version`; otherwise computed (and cached when that is safe, see
        `_recompute`)."""
        state = self._state
        if (
            state is not None
            and all(map(operator.is_, sources, state.sources))
            and not _is_compiling()
            and not (torch.is_grad_enabled() and any(map(_REQUIRES_GRAD, sources)))
            and not _any_autocast()
        ):
            try:
                if (
                    list(map(_VERSION, sources)) == state.versions
                    and list(map(_DATA_PTR, sources)) == state.pointers
                ):
                    return state.values
            except RuntimeError:  # inference tensors have no version counter
                pass
        return self._recompute(sources)

    def _recompute(self, sources: Sequence[Any]) -> tuple[Any, ...]:
        """Compute the values; cache them unless they must follow autograd,
        autocast or a trace (a compiler's fake or functional tensors, FX
        proxies: then the expressions run as the original graph ran them)."""
        compute = self.compute.forward  # not __call__: a tracer sees the ops
        if (
            not all(type(s) in _PLAIN_TENSOR_TYPES for s in sources)
            or _is_compiling()
            or (torch.is_grad_enabled() and any(map(_REQUIRES_GRAD, sources)))
            or _any_autocast()
        ):
            return compute(*sources)
        try:
            versions = list(map(_VERSION, sources))
        except RuntimeError:  # inference tensors: nothing to check against later
            return compute(*sources)
        with torch.inference_mode(False), torch.no_grad():  # this order: inference_mode(False) turns grad mode on
            values = tuple(compute(*sources))
        self._state = _CacheState.of(sources, versions, values)
        return values

    def invalidate(self) -> None:
        """Drop the cached values (the next call recomputes them)."""
        self._state = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_state"] = None  # recomputed after unpickling
        return state

    def __deepcopy__(self, memo: dict[int, Any]) -> ParameterCache:
        fresh = ParameterCache(copy.deepcopy(self.compute, memo))
        memo[id(self)] = fresh
        return fresh

    def extra_repr(self) -> str:
        state = self._state
        return f"cached={state is not None}"


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------


class _Classifier:
    """Purity and names of FX call targets, memoized per target object."""

    def __init__(self) -> None:
        self._table = ObjectTable()
        self._names: dict[int, tuple[str, str]] = {}

    def qualified(self, target: Any) -> tuple[str, str]:
        """(qualified name, last name component) of a call_function target."""
        known = self._names.get(id(target))
        if known is None:
            name = self._table.name_of(target)
            parts = name.split(".")
            if name.startswith("torch.ops.") and len(parts) >= 4:
                short = parts[3]  # torch.ops.aten.<name>.<overload>
            else:
                short = parts[-1]
            known = self._names[id(target)] = (name, short)
        return known

    def short_name(self, node: torch.fx.Node) -> str | None:
        if node.op == "call_function":
            return self.qualified(node.target)[1]
        if node.op == "call_method":
            return str(node.target)
        return None

    def is_pure(self, node: torch.fx.Node) -> bool:
        """Pure by `optimus_ir.effects` (its name-level rules, plus the
        `out=`/`inplace=True` arguments they look at on the IR op)."""
        if node.op == "call_function":
            kind = _target_kind(self.qualified(node.target)[0])
        elif node.op == "call_method":
            kind = _method_name_kind(str(node.target))
        else:
            return False
        if kind == "impure" or "out" in node.kwargs or node.kwargs.get("inplace") is True:
            return False
        return not any(arg is True for arg in node.args[1:])  # relu(x, True)

    def is_hoistable_op(self, node: torch.fx.Node) -> bool:
        """A pure op on the hoistable list (inputs not considered)."""
        if not self.is_pure(node):
            return False
        name = self.short_name(node)
        if name == "getattr" and node.op == "call_function":
            return len(node.args) == 2 and node.args[1] in METADATA_ATTRIBUTES
        return name in HOISTABLE_NAMES

    def may_alias_inputs(self, node: torch.fx.Node) -> bool:
        """The result may share storage with (or be) one of its inputs."""
        if node.op not in ("call_function", "call_method") or not self.is_pure(node):
            return True
        name = self.short_name(node)
        return name in FX_ALIASING_NAMES or name in EXTRA_ALIASING_NAMES

    def writes(self, node: torch.fx.Node) -> tuple[list[torch.fx.Node], bool]:
        """The inputs `node` may write in place, and whether it is unknown
        code (which may also return any tensor it can reach, a parameter
        included, without taking it as an input)."""
        if node.op in ("placeholder", "get_attr", "output"):
            return [], False
        if node.op == "call_module":
            return list(node.all_input_nodes), True
        if node.op == "call_function" and self.qualified(node.target)[0] in NON_MUTATING_TARGETS:
            return [], False
        name = self.short_name(node) or ""
        if self.is_pure(node):
            positions = WRITING_NAMES.get(name, ())
            args = node.args
            return [args[i] for i in positions if i < len(args) and isinstance(args[i], torch.fx.Node)], False
        in_place = name.endswith("_") and not name.startswith("_") and "out" not in node.kwargs
        if node.args and isinstance(node.args[0], torch.fx.Node):
            if name in IN_PLACE_OPERATOR_NAMES and (
                node.op == "call_method" or self.qualified(node.target)[0].startswith("_operator.")
            ):
                return [node.args[0]], False  # `x[i] = v`, `x += y`
            if in_place and (node.op == "call_method" or self.qualified(node.target)[0].startswith("torch.")):
                return [node.args[0]], False  # an in-place torch op writes `self`
        return list(node.all_input_nodes), True


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, item: Any) -> Any:
        parent = self.parent.get(item, item)
        if parent is item:
            return item
        root = self.find(parent)
        self.parent[item] = root
        return root

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


def _read_target(gm: torch.nn.Module, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


@dataclass
class _Plan:
    """The values to cache and what computing them needs."""

    frontier: list[torch.fx.Node]
    sources: list[torch.fx.Node]
    cone: list[torch.fx.Node]
    """Every node the frontier values are computed from, in graph order
    (sources included)."""


def _plan(gm: torch.fx.GraphModule) -> _Plan | None:
    """Choose the values to cache (two linear walks over the graph)."""
    classify = _Classifier()
    nodes = list(gm.graph.nodes)
    sources: set[torch.fx.Node] = set()
    hoistable: set[torch.fx.Node] = set()
    trivial: set[torch.fx.Node] = set()  # sources and views of one of them
    classes = _UnionFind()
    storage_owner: dict[Any, torch.fx.Node] = {}
    written: list[torch.fx.Node] = []
    opaque: list[torch.fx.Node] = []  # values of unknown origin (may be a parameter)
    returned: list[torch.fx.Node] = []

    for node in nodes:
        if node.op == "get_attr":
            try:
                value = _read_target(gm, str(node.target))
            except AttributeError:
                opaque.append(node)
                continue
            if not isinstance(value, torch.Tensor):
                opaque.append(node)
                continue
            sources.add(node)
            trivial.add(node)
            # Tied or overlapping parameters are one alias class.
            pointer = value.untyped_storage().data_ptr() if value.numel() else 0
            key = (value.device, pointer) if pointer else id(value)
            first = storage_owner.setdefault(key, node)
            classes.union(node, first)
            continue
        if node.op == "placeholder":
            opaque.append(node)
            continue
        if node.op == "output":
            returned.extend(node.all_input_nodes)
            continue
        inputs = node.all_input_nodes
        if (
            inputs
            and all(i in hoistable or i in sources for i in inputs)
            and classify.is_hoistable_op(node)
        ):
            hoistable.add(node)
            if classify.short_name(node) in VIEW_NAMES and all(i in trivial for i in inputs):
                trivial.add(node)
        if classify.may_alias_inputs(node):
            for i in inputs:
                classes.union(node, i)
        writes, unknown = classify.writes(node)
        written.extend(writes)
        if unknown:
            opaque.append(node)

    if not hoistable:
        return None
    mutated = {classes.find(n) for n in written}
    if any(classes.find(n) in mutated for n in opaque):
        # A write to something that may be a parameter at run time (an
        # input the caller may pass a parameter as, a module's result): any
        # parameter may change during the call.
        return None
    escaping = mutated | {classes.find(n) for n in returned}

    tainted: set[torch.fx.Node] = set()
    frontier: list[torch.fx.Node] = []
    for node in nodes:
        if node not in hoistable and node not in sources:
            continue
        if classes.find(node) in mutated or any(i in tainted for i in node.all_input_nodes):
            tainted.add(node)
            continue
        if node in trivial or classes.find(node) in escaping:
            continue
        if any(u not in hoistable for u in node.users):
            frontier.append(node)
    if not frontier:
        return None
    return _cone_of(frontier, sources)


def _cone_of(frontier: Sequence[torch.fx.Node], sources: set[torch.fx.Node]) -> _Plan:
    """The nodes the frontier values are computed from, in graph order."""
    needed: set[torch.fx.Node] = set()
    stack = list(frontier)
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        if node not in sources:
            stack.extend(node.all_input_nodes)
    graph = frontier[0].graph
    cone = [n for n in graph.nodes if n in needed]
    return _Plan(list(frontier), [n for n in cone if n in sources], cone)


def _compute_module(plan: _Plan) -> torch.fx.GraphModule:
    """A GraphModule computing the frontier values from the sources."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in plan.cone:
        if node.op == "get_attr":
            env[node] = graph.placeholder(node.name)
        else:
            env[node] = graph.node_copy(node, env.__getitem__)
    graph.output(tuple(env[n] for n in plan.frontier))
    return torch.fx.GraphModule(torch.nn.Module(), graph, class_name="ParameterExpressions")


def _source_values(gm: torch.fx.GraphModule, sources: Iterable[torch.fx.Node]) -> list[Any]:
    return [_read_target(gm, str(n.target)) for n in sources]


def _storages(values: Iterable[Any]) -> set[tuple[Any, int]]:
    return {
        (v.device, v.untyped_storage().data_ptr())
        for v in values
        if isinstance(v, torch.Tensor) and v.numel()
    }


def _unique_name(gm: torch.nn.Module, name: str) -> str:
    candidate, index = name, 0
    while hasattr(gm, candidate):
        index += 1
        candidate = f"{name}_{index}"
    return candidate


# ---------------------------------------------------------------------------
# Rewrite
# ---------------------------------------------------------------------------


def cache_parameter_expressions(gm: torch.fx.GraphModule, *, freeze: bool = False) -> int:
    """Compute the values in `gm` that depend only on parameters and buffers
    once instead of on every call; returns how many values were hoisted.

    `gm` is rewritten in place and recompiled (nothing changes when nothing
    is hoisted). Only the values that non-hoisted ops use are kept (views of
    a single parameter are left as they are, being cheap and live). By
    default they are cached on a `ParameterCache` submodule that
    recomputes them when any source tensor changed (identity, storage,
    `_version`) and computes them at run time under autograd (a source that
    requires grad), autocast or a compiler's trace. With `freeze=True` they
    are computed now and stored as non-persistent buffers, read without any
    check: later changes of the parameters are not followed.

    A value is never hoisted when it, or anything that may alias it, is
    returned or written in place, nor when it reads a parameter or buffer
    the graph writes (nothing is hoisted when the graph writes a tensor
    that may be a parameter at run time, such as an input)."""
    if CACHE_ATTRIBUTE in gm._modules:  # noqa: SLF001 - already rewritten
        return 0
    plan = _plan(gm)
    if plan is None:
        return 0
    sources = _source_values(gm, plan.sources)
    compute = _compute_module(plan)
    try:
        with torch.inference_mode(False), torch.no_grad():  # this order: inference_mode(False) turns grad mode on
            values = tuple(compute.forward(*sources))
    except Exception:  # noqa: BLE001 - values that cannot be computed now stay where they are
        return 0
    # A value that is no plain tensor (a tuple, a size), or that shares
    # storage with a source (a conversion that returned its input), is not
    # worth caching and must stay live.
    source_storages = _storages(sources)
    keep = [
        i
        for i, v in enumerate(values)
        if type(v) is torch.Tensor
        and not (v.numel() and (v.device, v.untyped_storage().data_ptr()) in source_storages)
    ]
    if not keep:
        return 0
    if len(keep) < len(values):
        plan = _cone_of([plan.frontier[i] for i in keep], set(plan.sources))
        compute = _compute_module(plan)
        sources = _source_values(gm, plan.sources)
        values = tuple(values[i] for i in keep)

    graph = gm.graph
    first_sources = set(plan.sources)
    anchor = next(n for n in graph.nodes if n.op != "placeholder" and n not in first_sources)
    position = {n: i for i, n in enumerate(graph.nodes)}
    for source in plan.sources:
        if position[source] > position[anchor]:
            anchor.prepend(source)  # get_attr nodes have no inputs: any place is fine

    replacements: list[torch.fx.Node] = []
    with graph.inserting_before(anchor):
        if freeze:
            for node, value in zip(plan.frontier, values):
                name = _unique_name(gm, f"frozen_{node.name}")
                gm.register_buffer(name, value, persistent=False)
                frozen = graph.create_node("get_attr", name, name=name)
                frozen.meta[ATTR_PATH_META] = (("_buffers", name),)
                replacements.append(frozen)
        else:
            cache = ParameterCache(compute)
            if _primable(sources):  # the values just computed are the first call's
                cache._state = _CacheState.of(sources, list(map(_VERSION, sources)), values)  # noqa: SLF001
            gm.add_module(CACHE_ATTRIBUTE, cache)
            holder = graph.create_node("get_attr", CACHE_ATTRIBUTE, name="parameter_cache")
            holder.meta[ATTR_PATH_META] = (("_modules", CACHE_ATTRIBUTE),)
            current = graph.create_node(
                "call_method",
                "current_values",
                (holder, *plan.sources),
                name="cached_parameters",
            )
            for index, node in enumerate(plan.frontier):
                replacements.append(
                    graph.create_node(
                        "call_function", operator.getitem, (current, index), name=f"cached_{node.name}"
                    )
                )
    for node, replacement in zip(plan.frontier, replacements):
        node.replace_all_uses_with(replacement)
    source_nodes = set(plan.sources)
    for node in reversed(plan.cone):
        if not node.users and node not in source_nodes:
            graph.erase_node(node)
    if freeze:
        for source in plan.sources:
            if not source.users:
                graph.erase_node(source)
    gm.recompile()
    return len(replacements)


def _primable(sources: Sequence[Any]) -> bool:
    """Whether values computed from `sources` now may be cached as the
    cache itself would (plain tensors with version counters)."""
    if not all(type(s) in _PLAIN_TENSOR_TYPES for s in sources):
        return False
    try:
        list(map(_VERSION, sources))
    except RuntimeError:
        return False
    return True


__all__ = [
    "CACHE_ATTRIBUTE",
    "HOISTABLE_NAMES",
    "ParameterCache",
    "cache_parameter_expressions",
]
