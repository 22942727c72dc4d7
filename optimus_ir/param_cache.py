"""Parameter freshness: values computed from parameters alone, and where
the optimized module reads the parameters from.

Batch fusion's lowering stacks N weights into one tensor for a `baddbmm`
(`torch.stack([w0, w1, ...]).transpose(1, 2)`, `torch.stack(biases)
.unsqueeze(1)`, ...). Such an expression reads parameters and buffers only.

By default (`optimize(freeze=False)`) it is computed on every call, like
every other op of the graph, from the tensors the model holds at that call:
no cached copy exists that could go stale. A cache checked by identity,
`_version` and `data_ptr()` was tried and served stale stacks: writes
through `.data` (`p.data.add_(1)`, `p.data -= lr * g`; `.data` is a tensor
with its own version counter), `p.data = p.data.t()` and the fused
optimizers (`Adam(fused=True)`) change none of the three, and nothing
cheaper than reading every parameter would see them. The cost model
charges the stacking to the fusion (`batch-fusion`'s `constant-parameters`
option is off), so a group is fused only where it pays with that cost.
`read_tensors_from_model` makes the optimized module read every parameter
and buffer from the model's own module dicts on every call, so reassigned
parameters and buffers, `load_state_dict(assign=True)` and the new buffers
of `.to()`/`.half()` are followed too.

`freeze_parameter_expressions(gm)` (`optimize(freeze=True)`) is the explicit
fast path: the parameters are constants. The expressions are computed once,
at optimize time, and registered as (non-persistent) buffers, read without
any check; later changes of the parameters are not followed (like
Inductor's freezing). A backward that reaches a frozen value while a
source parameter requires grad raises a RuntimeError saying so
(`FrozenValuesGuard`; under `no_grad` it costs one grad-mode test).

What is frozen is conservative: only ops that are pure by
`optimus_ir.effects` *and* on a short list of data-movement and exact
elementwise ops (stack, cat, transpose, reshape, conversions, add, mul...;
no reductions or matmuls, whose results may depend on thread counts,
autocast or TF32 settings), only values that no output and no in-place
write can reach, and nothing at all that reads a parameter or buffer the
graph writes in place.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from optimus_ir.analysis.op_classes import FX_ALIASING_NAMES, NON_MUTATING_TARGETS
from optimus_ir.effects import _method_name_kind, _target_kind
from optimus_ir.exporter import (
    ATTR_OWN_META,
    ATTR_PATH_META,
    MADE_WITH_ATTRIBUTE,
    _FastAttributes,
    attribute_path,
    fast_codegen,
    recompile,
)
from optimus_ir.objects import ObjectTable

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

FROZEN_GUARD_ATTRIBUTE = "_optimus_frozen_guard"
"""The submodule of a frozen GraphModule that makes a backward through the
frozen values an error (`FrozenValuesGuard`)."""

MODEL_ATTRIBUTE = "_optimus_model"
"""The key in an optimized module's `__dict__` (not a registered submodule:
the module's parameters and state dict stay its own) of the model it reads
its parameters and buffers from (`read_tensors_from_model`)."""

FROZEN_BACKWARD_MESSAGE = (
    "optimus_ir: this module was optimized with freeze=True, which treats parameters as "
    "constants: {count} value(s) computed from the parameters (the stacked weights of fused "
    "ops) were computed once at optimize time and carry no gradient, so the gradients of "
    "these parameters cannot be computed. To train through the optimized module, call "
    "optimus_ir.optimize(model, example_inputs) without freeze=True (the stacks are then "
    "computed on every call, with gradients); for inference, call it under torch.no_grad() "
    "or torch.inference_mode(), or set requires_grad=False on the parameters."
)
"""The error a backward through frozen values raises."""


class _FrozenValuesBackward(torch.autograd.Function):
    """The frozen values, passed through, tied to the parameters they were
    computed from: a backward that reaches them raises (instead of leaving
    those parameters' `.grad` None without a word)."""

    @staticmethod
    def forward(ctx: Any, count: int, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:  # noqa: ARG004
        ctx.count = count
        return tuple(t.view_as(t) for t in tensors[:count])

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:  # noqa: ARG004
        raise RuntimeError(FROZEN_BACKWARD_MESSAGE.format(count=ctx.count))


class FrozenValuesGuard(torch.nn.Module):
    """Hands out the frozen values of a `freeze=True` module.

    Under `no_grad`/`inference_mode` (what freezing is for) it returns them
    as they are: one grad-mode test per call. With grad mode on and a source
    parameter that requires grad, they go through `_FrozenValuesBackward`,
    whose backward raises a RuntimeError explaining that `freeze=True`
    treats the parameters as constants and how to get gradients. The
    sources are the tensors the values were computed from, held as a plain
    tuple (the GraphModule registers them already)."""

    def __init__(self, sources: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.__dict__["sources"] = tuple(sources)

    def values(self, *frozen: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """`frozen`, tied to the sources that require grad when grad mode is on."""
        if not torch.is_grad_enabled():
            return frozen
        needing = [s for s in self.sources if s.requires_grad]
        if not needing:
            return frozen
        return _FrozenValuesBackward.apply(len(frozen), *frozen, *needing)

    def extra_repr(self) -> str:
        return f"sources={len(self.sources)}"

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


def freeze_parameter_expressions(gm: torch.fx.GraphModule) -> int:
    """Compute the values in `gm` that depend only on parameters and buffers
    now, once, and store them as non-persistent buffers read without any
    check; returns how many values were frozen (`optimize(freeze=True)`).

    Later changes of the parameters are not followed: the parameters are
    constants. A backward that reaches a frozen value while a source
    parameter requires grad raises (`FrozenValuesGuard`); under `no_grad`
    the values are read as they are. `gm` is rewritten in place and
    recompiled, unless its code is pending (`exporter.graph_module`)
    (nothing changes when nothing is frozen). Only the values
    that non-frozen ops use are kept (views of a single parameter are left
    as they are, being cheap and live).

    A value is never frozen when it, or anything that may alias it, is
    returned or written in place, nor when it reads a parameter or buffer
    the graph writes (nothing is frozen when the graph writes a tensor that
    may be a parameter at run time, such as an input)."""
    if FROZEN_GUARD_ATTRIBUTE in gm._modules:  # noqa: SLF001 - already rewritten
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
    # worth freezing and must stay live.
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
        sources = _source_values(gm, plan.sources)
        values = tuple(values[i] for i in keep)

    graph = gm.graph
    first_sources = set(plan.sources)
    anchor = next(n for n in graph.nodes if n.op != "placeholder" and n not in first_sources)
    guard = FrozenValuesGuard(sources)
    gm.add_module(FROZEN_GUARD_ATTRIBUTE, guard)
    frozen_nodes: list[torch.fx.Node] = []
    with graph.inserting_before(anchor):
        for node, value in zip(plan.frontier, values):
            name = _unique_name(gm, f"frozen_{node.name}")
            gm.register_buffer(name, value, persistent=False)
            frozen = graph.create_node("get_attr", name, name=name)
            frozen.meta[ATTR_PATH_META] = (("_buffers", name),)
            frozen_nodes.append(frozen)
        holder = graph.create_node("get_attr", FROZEN_GUARD_ATTRIBUTE, name="frozen_guard")
        holder.meta[ATTR_PATH_META] = (("_modules", FROZEN_GUARD_ATTRIBUTE),)
        handed_out = graph.create_node("call_method", "values", (holder, *frozen_nodes), name="frozen_values")
        replacements = [
            graph.create_node("call_function", operator.getitem, (handed_out, index), name=f"frozen_{node.name}_value")
            for index, node in enumerate(plan.frontier)
        ]
    for node, replacement in zip(plan.frontier, replacements):
        node.replace_all_uses_with(replacement)
    for node in reversed(plan.cone):
        if not node.users:
            graph.erase_node(node)
    recompile(gm)  # unless its code is pending (optimize() generates it once, last)
    return len(replacements)


def read_tensors_from_model(gm: torch.fx.GraphModule, model: torch.nn.Module) -> int:
    """Make `gm` read, on every call, each parameter and buffer of `model`
    it uses from `model`'s own module dicts (`model.towers[0].weight`, not
    the copy of the reference Dynamo's capture registered on `gm`); returns
    how many reads now go to the model.

    What the model holds at call time is what is computed with: a Parameter
    or buffer reassigned on the model, `load_state_dict(..., assign=True)`,
    the new buffers of `.to()`/`.half()`/`.double()` (which replace buffers,
    and parameters under `torch.__future__.set_overwrite_module_params_on_conversion`)
    are all followed, at the price of a few dict lookups per attribute. The
    model is kept in `gm.__dict__` (not registered: `gm`'s parameters and
    state dict stay as they are); a copy or unpickled `gm` reads its own
    attributes. An attribute reassigned on `gm` itself (`functional_call`,
    `gm.load_state_dict(..., assign=True)`, `setattr`) is no longer the
    tensor the code was made with, and is what is computed with then
    (`exporter.ATTR_OWN_META`): one more lookup and identity test each. A tensor the model no longer has where it had it (deleted,
    or moved between parameters and buffers) is read from `gm` instead (the
    exported code's getattr fallback)."""
    owners: dict[int, tuple[str, str]] = {}
    for kind, named in (
        ("_parameters", model.named_parameters(remove_duplicate=False)),
        ("_buffers", model.named_buffers(remove_duplicate=False)),
    ):
        for name, tensor in named:
            owners.setdefault(id(tensor), (kind, name))
    if not isinstance(gm.graph._codegen, _FastAttributes):  # noqa: SLF001 - a captured graph (the stride fallback)
        fast = fast_codegen(gm.graph._codegen)  # noqa: SLF001
        if not isinstance(fast, _FastAttributes):
            return 0  # a codegen of another kind: left reading its own attributes
        gm.graph.set_codegen(fast)
    bound = 0
    made_with: list[torch.Tensor] = []
    for node in gm.graph.find_nodes(op="get_attr"):
        try:
            value = _read_target(gm, str(node.target))
        except AttributeError:
            continue
        found = owners.get(id(value)) if isinstance(value, torch.Tensor) else None
        if found is None:
            continue
        kind, name = found
        *modules, leaf = name.split(".")
        # Bound before (the captured graph is the stride fallback of every
        # module optimize() makes from it, and is bound again each time):
        # its own path is the one recorded then, its index is renewed.
        previous = node.meta.get(ATTR_OWN_META)
        own_path = (
            previous[0]
            if previous is not None
            else node.meta.get(ATTR_PATH_META) or attribute_path(gm, str(node.target))
        )
        if own_path is not None and own_path[0] != ("__dict__", MODEL_ATTRIBUTE):
            node.meta[ATTR_OWN_META] = (own_path, len(made_with))
            made_with.append(value)
        node.meta[ATTR_PATH_META] = (
            ("__dict__", MODEL_ATTRIBUTE),
            *(("_modules", part) for part in modules),
            (kind, leaf),
        )
        bound += 1
    gm.__dict__[MODEL_ATTRIBUTE] = model
    gm.__dict__[MADE_WITH_ATTRIBUTE] = tuple(made_with)
    recompile(gm)  # unless its code is pending (optimize() generates it once, last)
    return bound


__all__ = [
    "FROZEN_BACKWARD_MESSAGE",
    "FROZEN_GUARD_ATTRIBUTE",
    "HOISTABLE_NAMES",
    "MODEL_ATTRIBUTE",
    "FrozenValuesGuard",
    "freeze_parameter_expressions",
    "read_tensors_from_model",
]
