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
The module owns the frozen values, and `hand_over_to_frozen_values` (called
by `optimize`) makes them the only copy of the weights they hold: every
other reader of a stacked weight (the module's own parameters, the model it
reads from and its guard falls back to: a stand-in of the caller's model,
which is not changed) reads a view of a frozen value, so once the caller
drops the model each weight is held once (`frozen_bytes` reports what is
still held twice).

What is frozen is conservative: only ops that are pure by
`optimus_ir.foundation.effects` *and* on a short list of data-movement and exact
elementwise ops (stack, cat, transpose, reshape, conversions, add, mul...;
no reductions or matmuls, whose results may depend on thread counts,
autocast or TF32 settings), only values that no output and no in-place
write can reach, and nothing at all that reads a parameter or buffer the
graph writes in place.
"""

from __future__ import annotations

import functools
import inspect
import operator
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.fx.graph_module import _USER_PRESERVED_ATTRIBUTES_KEY

from optimus_ir.analysis.alias_facts import fx_node_may_alias
from optimus_ir.analysis.op_classes import NON_MUTATING_TARGETS
from optimus_ir.api.model_names import tensor_owners
from optimus_ir.foundation.effects import _method_name_kind, _target_kind
from optimus_ir.translate.exporter import (
    ATTR_OWN_META,
    ATTR_PATH_META,
    RESULT_MAY_ALIAS_META,
    FALLBACK_ATTRIBUTE,
    MADE_WITH_ATTRIBUTE,
    _FastAttributes,
    attribute_path,
    copy_graph,
    fast_codegen,
    recompile,
)
from optimus_ir.foundation.objects import ObjectTable
from optimus_ir.kernels.joins import JOIN_SLOTS_TARGET
from optimus_ir.kernels.joins import OWN_WRITES_PREFIX as JOINS_PREFIX

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
"""Ops that `optimus_ir.foundation.effects` counts as pure (no trailing `_`) but that
write their running-statistics arguments (by position) in training mode."""

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
    tuple (the GraphModule registers them already).

    `views[i]` is source `i`'s values as a view of the storage of one frozen
    value, where one holds them (`_views_of_sources`; None elsewhere):
    `hand_over_to_frozen_values` makes these the module's tensors, so that
    the original parameters need not be kept. It then also records weak
    references to the originals (`originals`): while the caller's model
    lives, the requires_grad flags of its parameters are the ones that
    count (`model.requires_grad_(False)` makes backward through the module
    legal); once it is gone, the views' flags."""

    def __init__(
        self, sources: Sequence[torch.Tensor], views: Sequence[torch.Tensor | None] | None = None
    ) -> None:
        super().__init__()
        self.__dict__["sources"] = tuple(sources)
        self.__dict__["views"] = tuple(views) if views is not None else (None,) * len(self.sources)
        self.__dict__["originals"] = None
        self.__dict__["source_bytes"] = _storage_bytes(self.sources)
        """Bytes of the sources' storage when the values were frozen (what
        the weights take once: `frozen_bytes` counts what is held beyond)."""

    def values(self, *frozen: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """`frozen`, tied to the sources that require grad when grad mode is on."""
        if not torch.is_grad_enabled():
            return frozen
        needing = [s for s in self._live_sources() if s.requires_grad]
        if not needing:
            return frozen
        return _FrozenValuesBackward.apply(len(frozen), *frozen, *needing)

    def _live_sources(self) -> tuple[torch.Tensor, ...]:
        """The sources whose flags count: each original while it lives, else
        the tensor that replaced it."""
        originals = self.originals
        if originals is None:
            return self.sources
        live = []
        for source, original in zip(self.sources, originals):
            tensor = original() if original is not None else None
            live.append(source if tensor is None else tensor)
        return tuple(live)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["originals"] = None  # weak references (not picklable); a copy goes by its own tensors
        return state

    def extra_repr(self) -> str:
        return f"sources={len(self.sources)}"


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------



@functools.lru_cache(maxsize=None)
def _inplace_position(target: Any) -> int | None:
    """The position of `target`'s `inplace` parameter (`F.relu(x, True)`),
    or None where it has none. A target without an inspectable signature
    (torch's builtins) has no such flag: its in-place forms are separate
    ops by name (`relu_`), which the effect rules already see."""
    try:
        parameters = list(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return None
    return parameters.index("inplace") if "inplace" in parameters else None

_REINPLACED = "optimus_ir.kernels.inplace."
"""The qualified-name prefix of the `reinplace` pass's grad-guarded in-place
calls (`optimus_ir.kernels.inplace`)."""

_FIRST_ARGUMENT_WRITERS = (_REINPLACED, JOINS_PREFIX)
"""Our grad-guarded forms (`reinplace`'s in-place calls, `write-into-join`'s
writers and joins): each writes only its first argument and returns it (or,
with gradients recorded, a fresh tensor); their other arguments are only
read. But `join_slots` (`JOIN_SLOTS_TARGET`), which writes nothing and
returns fresh storage (its first argument only tells the device)."""


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
        """Pure by `optimus_ir.foundation.effects` (its name-level rules, plus the
        `out=`/`inplace=True` arguments they look at on the IR op)."""
        if node.op == "call_function":
            kind = _target_kind(self.qualified(node.target)[0])
        elif node.op == "call_method":
            kind = _method_name_kind(str(node.target))
        else:
            return False
        if kind == "impure" or "out" in node.kwargs or node.kwargs.get("inplace") is True:
            return False
        if node.op != "call_function":
            return True  # Tensor methods write in place by name (`add_`), never by a flag
        position = _inplace_position(node.target)
        # relu(x, True) writes x; sum(x, [1], True) is keepdim, not a write.
        return position is None or len(node.args) <= position or node.args[position] is not True

    def is_hoistable_op(self, node: torch.fx.Node) -> bool:
        """A pure op on the hoistable list (inputs not considered)."""
        if not self.is_pure(node):
            return False
        name = self.short_name(node)
        if name == "getattr" and node.op == "call_function":
            return len(node.args) == 2 and node.args[1] in METADATA_ATTRIBUTES
        return name in HOISTABLE_NAMES

    def may_alias_inputs(self, node: torch.fx.Node) -> bool:
        """The result may share storage with (or be) one of its inputs: what
        the IR's aliasing facts said when the graph was exported
        (`exporter.RESULT_MAY_ALIAS_META`), or for a graph that was not
        exported from IR, torch's answer for the node itself
        (`alias_facts.fx_node_may_alias`: run on fake tensors shaped like
        the metadata); a node with effects may."""
        if node.op not in ("call_function", "call_method") or not self.is_pure(node):
            return True
        recorded = node.meta.get(RESULT_MAY_ALIAS_META)
        if recorded is not None:
            return bool(recorded)
        return fx_node_may_alias(node)

    def writes_first_argument_only(self, node: torch.fx.Node) -> bool:
        """One of our grad-guarded forms (`_FIRST_ARGUMENT_WRITERS`, not
        `join_slots`): it writes and returns its first argument and only reads
        the others."""
        if node.op != "call_function":
            return False
        name = self.qualified(node.target)[0]
        return name.startswith(_FIRST_ARGUMENT_WRITERS) and name != JOIN_SLOTS_TARGET

    def aliased_inputs(self, node: torch.fx.Node) -> list[torch.fx.Node]:
        """The inputs whose storage `node`'s result may share: all of them
        where `may_alias_inputs`, only the first argument for our
        grad-guarded forms (`_FIRST_ARGUMENT_WRITERS`)."""
        if node.op == "call_function" and self.qualified(node.target)[0] == JOIN_SLOTS_TARGET:
            return []
        if node.op == "call_function" and self.qualified(node.target)[0].startswith(_FIRST_ARGUMENT_WRITERS):
            first = node.args[0] if node.args else None
            return [first] if isinstance(first, torch.fx.Node) else []
        return list(node.all_input_nodes) if self.may_alias_inputs(node) else []

    def writes(self, node: torch.fx.Node) -> tuple[list[torch.fx.Node], bool]:
        """The inputs `node` may write in place, and whether it is unknown
        code (which may also return any tensor it can reach, a parameter
        included, without taking it as an input)."""
        if node.op in ("placeholder", "get_attr", "output"):
            return [], False
        if node.op == "call_module":
            return list(node.all_input_nodes), True
        if node.op == "call_function" and (
            self.qualified(node.target)[0] in NON_MUTATING_TARGETS or self.qualified(node.target)[0] == JOIN_SLOTS_TARGET
        ):
            return [], False
        name = self.short_name(node) or ""
        if self.is_pure(node):
            positions = WRITING_NAMES.get(name, ())
            args = node.args
            return [args[i] for i in positions if i < len(args) and isinstance(args[i], torch.fx.Node)], False
        in_place = name.endswith("_") and not name.startswith("_") and "out" not in node.kwargs
        if node.args and isinstance(node.args[0], torch.fx.Node):
            if node.op == "call_function" and self.qualified(node.target)[0].startswith(_FIRST_ARGUMENT_WRITERS):
                return [node.args[0]], False  # our grad-guarded forms write their first argument
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
        for i in classify.aliased_inputs(node):
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


_EXACT_FLOAT_BITS: dict[torch.dtype, int] = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}
"""Significand bits of the floating types: integers below 2**bits are exact."""

_SAME_SIZE_INTEGER: dict[int, torch.dtype] = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
"""An integer type of each element size, to compare tensors bit for bit."""


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """`a` and `b` hold the same bits (NaNs and signed zeros included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    as_int = _SAME_SIZE_INTEGER.get(a.element_size())
    if as_int is None or a.is_complex():
        return bool(torch.equal(a, b))
    return bool(torch.equal(a.view(as_int), b.view(as_int)))


def _storage_elements(t: torch.Tensor) -> torch.Tensor:
    """The whole storage of `t`, as a flat tensor of its dtype."""
    count = t.untyped_storage().nbytes() // t.element_size()
    return t.new_empty(0).set_(t.untyped_storage(), 0, (count,), (1,))


def _exact_numbers(positions: torch.Tensor, total: int) -> bool:
    """Whether `positions` (a traced value) can hold the numbers 0..total-1
    exactly: an integer type, or a floating type whose significand fits."""
    if positions.is_floating_point():
        return total <= 2 ** _EXACT_FLOAT_BITS.get(positions.dtype, 0)
    return positions.dtype in (torch.int32, torch.int64)


def _views_of_sources(
    compute: torch.fx.GraphModule, sources: Sequence[Any], values: Sequence[torch.Tensor]
) -> list[torch.Tensor | None]:
    """For each source: a view of the storage of one of `values` holding
    exactly its values (bit for bit, its shape), or None where no value
    holds them all in one strided pattern (a converted or computed value, a
    source no value is made from).

    The frozen expressions are data movement and exact arithmetic on the
    sources, so where a source was only moved (stacked, concatenated,
    transposed, made contiguous) its elements lie in the value's storage at
    a strided pattern. That pattern is found by running `compute` once more
    on sources that hold their own element numbers (int32, or int64 past
    2**31 elements; a value converted to a floating type counts only while
    the numbers fit its significand), reading where each number landed in
    each value's storage and checking that the positions of each source
    form one strided view; the view is then checked against the source's
    real bits, so that no coincidence can make a wrong view (an expression
    that computes rather than moves gives no view). Cost, at optimize time:
    the expressions once more on integers and one sort of each value's
    numbers (recsys-mixed-64: 26 ms on one thread, 1% of `optimize`);
    transient memory about three times the bytes of the largest value."""
    found: list[torch.Tensor | None] = [None] * len(sources)
    starts: list[int] = []
    total = 0
    for source in sources:
        usable = isinstance(source, torch.Tensor) and source.numel() and not source.is_complex()
        starts.append(total if usable else -1)
        total += source.numel() if usable else 0
    if not total:
        return found
    kind = torch.int32 if total < 2**31 else torch.int64
    numbered = [
        torch.arange(start, start + source.numel(), dtype=kind, device=source.device).reshape(source.shape)
        if start >= 0
        else source
        for source, start in zip(sources, starts)
    ]
    try:
        with torch.inference_mode(False), torch.no_grad():
            traced = list(compute.forward(*numbered))
    except Exception:  # noqa: BLE001 - an expression that needs the real types: no views
        return found
    del numbered
    if len(traced) != len(values):
        return found
    for j, value in enumerate(values):
        positions, traced[j] = traced[j], None  # each traced value freed once read
        if (
            not isinstance(positions, torch.Tensor)
            or positions.shape != value.shape
            or positions.stride() != value.stride()
            or positions.storage_offset() != value.storage_offset()
            or positions.device != value.device
            or not _exact_numbers(positions, total)
        ):
            continue
        numbers = _storage_elements(positions)
        if numbers.numel() != value.untyped_storage().nbytes() // value.element_size():
            continue
        # Storage elements outside the value (a slice of a stack) may hold
        # anything: only exact numbers in range are positions.
        valid = (numbers >= 0) & (numbers < total)
        if numbers.is_floating_point():
            valid &= numbers == numbers.round()
        # Each number's place in the storage, in the order of the numbers
        # (the first place where a number landed twice): a source's places
        # are then one run, in the order of its elements.
        places = torch.nonzero(valid).squeeze(1)
        ids, order = torch.sort(numbers[valid].long())
        places = places[order]
        first = torch.ones_like(ids, dtype=torch.bool)
        first[1:] = ids[1:] != ids[:-1]
        ids, places = ids[first], places[first]
        del numbers, valid, positions, order, first
        bounds = torch.tensor(
            [(start, start + source.numel()) if start >= 0 else (0, 0) for source, start in zip(sources, starts)],
            dtype=torch.int64,
            device=value.device,
        )
        runs = torch.searchsorted(ids, bounds).tolist()
        for index, (source, start) in enumerate(zip(sources, starts)):
            low, high = runs[index]
            if (
                found[index] is not None
                or start < 0
                or high - low != source.numel()  # unique numbers in range: all of them
                or source.dtype != value.dtype
                or source.device != value.device
            ):
                continue
            at = places[low:high].reshape(source.shape)
            view = _strided_view(value, at)
            if view is not None and _bits_equal(view, source):
                found[index] = view
    return found


def _strided_view(value: torch.Tensor, at: torch.Tensor) -> torch.Tensor | None:
    """The view of `value`'s storage whose element at each index is the
    storage element `at[index]`, or None where `at` is no strided pattern
    (non-negative strides)."""
    offset = int(at.reshape(-1)[0])
    strides = []
    for dim, size in enumerate(at.shape):
        if size == 1:
            strides.append(1)
            continue
        step = at.narrow(dim, 1, 1) - at.narrow(dim, 0, 1)
        stride = int(step.reshape(-1)[0])
        if stride < 0:
            return None
        strides.append(stride)
    expected = torch.full(at.shape, offset, dtype=at.dtype, device=at.device)
    for dim, (size, stride) in enumerate(zip(at.shape, strides)):
        shape = [1] * at.dim()
        shape[dim] = size
        expected = expected + (torch.arange(size, dtype=at.dtype, device=at.device) * stride).reshape(shape)
    if not torch.equal(expected, at):
        return None
    return value.as_strided(at.shape, strides, offset)


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
        compute = _compute_module(plan)

    graph = gm.graph
    first_sources = set(plan.sources)
    anchor = next(n for n in graph.nodes if n.op != "placeholder" and n not in first_sources)
    guard = FrozenValuesGuard(sources, _views_of_sources(compute, sources, values))
    guard.__dict__["source_targets"] = tuple(str(n.target) for n in plan.sources)
    guard.__dict__["compute"] = compute  # what `refresh_frozen_values` runs again
    gm.add_module(FROZEN_GUARD_ATTRIBUTE, guard)
    gm.register_load_state_dict_pre_hook(refuse_assigning_load)
    gm.register_load_state_dict_post_hook(refresh_after_load)
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


FROZEN_ASSIGN_MESSAGE = (
    "optimus_ir: this module was optimized with freeze=True: {count} value(s) (the stacked "
    "weights of fused ops) were computed from its parameters, and load_state_dict(..., "
    "assign=True) would replace the tensors they were computed from. Load without assign=True "
    "(the frozen values are then computed again from the loaded parameters), or load the "
    "checkpoint into the model and call optimus_ir.optimize(model, example_inputs, freeze=True) again."
)
"""The error `load_state_dict(assign=True)` into a frozen module raises."""


def refresh_frozen_values(gm: torch.nn.Module) -> int:
    """Compute the values `freeze_parameter_expressions` froze in `gm` again
    from the tensors `gm` holds now under the names they were computed from
    (after `load_state_dict`), writing them into the frozen values in place;
    how many values were refreshed (0 where `gm` has none)."""
    guard = gm._modules.get(FROZEN_GUARD_ATTRIBUTE) if isinstance(gm, torch.fx.GraphModule) else None  # noqa: SLF001
    compute = getattr(guard, "compute", None) if isinstance(guard, FrozenValuesGuard) else None
    if compute is None:
        return 0
    sources = tuple(_read_target(gm, target) for target in guard.source_targets)
    frozen = frozen_values(gm)
    with torch.inference_mode(False), torch.no_grad():
        values = tuple(compute.forward(*sources))
        for old, new in zip(frozen, values, strict=True):
            old.copy_(new)  # `new` is fresh storage: reading views of `old` for it was done first
    guard.__dict__["sources"] = sources
    return len(values)


def refuse_assigning_load(
    module: torch.nn.Module, state_dict: Any, prefix: str, local_metadata: dict[str, Any], *rest: Any
) -> None:
    """A load_state_dict pre-hook of a frozen module: `assign=True` raises
    (`FROZEN_ASSIGN_MESSAGE`) before anything is loaded."""
    if local_metadata.get("assign_to_params_buffers", False):
        raise RuntimeError(FROZEN_ASSIGN_MESSAGE.format(count=len(frozen_values(module))))


def refresh_after_load(module: torch.nn.Module, incompatible_keys: Any) -> None:
    """A load_state_dict post-hook of a frozen module: its frozen values, and
    those of the modules its guard made for other inputs (they read the same
    tensors), are computed again from the loaded parameters."""
    from optimus_ir.api.guards import GUARD_ATTRIBUTE

    refresh_frozen_values(module)
    guard = module.__dict__.get(GUARD_ATTRIBUTE)
    for other in guard.modules() if guard is not None else ():
        if other is not module:
            refresh_frozen_values(other)


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
    owners = tensor_owners(model)
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


def frozen_values(gm: torch.nn.Module) -> tuple[torch.Tensor, ...]:
    """The values `freeze_parameter_expressions` froze in `gm` (its
    buffers that the frozen guard hands out), in order; () where none."""
    if not isinstance(gm, torch.fx.GraphModule) or FROZEN_GUARD_ATTRIBUTE not in gm._modules:  # noqa: SLF001
        return ()
    for node in gm.graph.find_nodes(op="call_method", target="values"):
        holder = node.args[0] if node.args else None
        if isinstance(holder, torch.fx.Node) and holder.op == "get_attr" and holder.target == FROZEN_GUARD_ATTRIBUTE:
            return tuple(_read_target(gm, str(a.target)) for a in node.args[1:] if isinstance(a, torch.fx.Node))
    return ()


def _storage_bytes(tensors: Iterable[Any]) -> int:
    """Bytes of the distinct storages of `tensors` (each storage once)."""
    sizes: dict[tuple[Any, int], int] = {}
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.numel():
            storage = t.untyped_storage()
            sizes[(t.device, storage.data_ptr())] = storage.nbytes()
    return sum(sizes.values())


def frozen_bytes(gm: torch.nn.Module) -> tuple[int, int]:
    """(bytes of the frozen values' storage, bytes the module holds of the
    weights beyond one copy): the second is the storage of the frozen values
    and of the tensors it holds for their sources, less what the sources
    took when they were frozen -- all of the values before
    `hand_over_to_frozen_values`, 0 after it where every source became a
    view of a value, else the values' share of the sources that did not (a
    converted weight, a weight stacked twice); (0, 0) without frozen values."""
    values = frozen_values(gm)
    if not values:
        return 0, 0
    guard: FrozenValuesGuard = gm._modules[FROZEN_GUARD_ATTRIBUTE]  # type: ignore[assignment]  # noqa: SLF001
    held = _storage_bytes((*values, *guard.sources))
    return _storage_bytes(values), max(0, held - guard.source_bytes)


def hand_over_to_frozen_values(gm: torch.fx.GraphModule, model: Any) -> Any:
    """Make the frozen values of `gm` (a `freeze=True` module of `model`)
    the only copy of the weights they hold; the model `gm` is to read its
    parameters and buffers from from now on (its guard re-optimizes and
    falls back to it): `model` itself where nothing was handed over, else
    a stand-in for it.

    Every source that lies in a frozen value as a strided pattern
    (`FrozenValuesGuard.views`: a stacked weight, bias, ...) is replaced,
    wherever `gm` holds it, by that view (a Parameter again where it was
    one, with its requires_grad): `gm`'s own registered parameters and
    buffers, the tensors its code compares them with (`MADE_WITH_ATTRIBUTE`),
    the guard's sources, the stride fallback (the captured graph) and the
    model it reads from. `model` is never changed: the stand-in is a
    structural copy of it (each module that holds a replaced tensor, and
    each above it, copied with its own parameter, buffer and submodule
    dicts; plain attributes, hooks and every other module shared), so once
    the caller drops `model`, the original weights are freed and each
    weight is held once. Sources that are no such pattern (converted or
    computed values) stay as they are: their copy in the frozen values is
    reported (`frozen_bytes`, `OptimizeReport.parameter_copy_bytes`)."""
    guard = gm._modules.get(FROZEN_GUARD_ATTRIBUTE)  # noqa: SLF001
    if not isinstance(guard, FrozenValuesGuard) or guard.originals is not None:
        return model
    replacements: dict[int, torch.Tensor] = {}
    for source, view in zip(guard.sources, guard.views):
        if view is None or id(source) in replacements or type(source) not in (torch.Tensor, torch.nn.Parameter):
            continue  # a subclass of Parameter or Tensor may carry more than its data: kept as it is
        if type(source) is torch.nn.Parameter:
            replacements[id(source)] = torch.nn.Parameter(view, requires_grad=source.requires_grad)
        else:
            replacements[id(source)] = view.detach().requires_grad_(source.requires_grad)
    if not replacements:
        return model
    clones: dict[int, torch.nn.Module] = {}
    try:
        stand_in = _module_copy(model, replacements, clones) if isinstance(model, torch.nn.Module) else model
    except Exception:  # noqa: BLE001 - a module that cannot be copied so: the weights stay twice (reported)
        return model
    # Nothing was changed so far; from here on only dict entries are set.
    # `gm` and the fallback keep submodules of the model by reference (a
    # call_module target): those are the model's, replaced by their copies.
    owned = {id(m) for m in model.modules()} if isinstance(model, torch.nn.Module) else set()
    fallback = gm.__dict__.get(FALLBACK_ATTRIBUTE)
    if fallback is model and stand_in is not model:
        gm.__dict__[FALLBACK_ATTRIBUTE] = stand_in
        preserved = gm.meta.get(_USER_PRESERVED_ATTRIBUTES_KEY)
        if isinstance(preserved, dict) and preserved.get(FALLBACK_ATTRIBUTE) is model:
            preserved[FALLBACK_ATTRIBUTE] = stand_in
    elif isinstance(fallback, torch.nn.Module) and id(fallback) not in owned:
        _rebind(fallback, model, stand_in, replacements, clones, owned)
    _rebind(gm, model, stand_in, replacements, clones, owned)
    guard.__dict__["originals"] = tuple(
        weakref.ref(s) if id(s) in replacements else None for s in guard.sources
    )
    guard.__dict__["sources"] = tuple(replacements.get(id(s), s) for s in guard.sources)
    return stand_in


def frozen_originals(gm: torch.nn.Module) -> dict[int, weakref.ref[torch.Tensor]]:
    """id of each tensor `hand_over_to_frozen_values` put in place of a
    model's tensor -> a weak reference to that tensor: what a module
    optimized again from the stand-in (`optimize`'s guard re-optimizes with
    it) goes by for `requires_grad` (`inherit_frozen_originals`)."""
    guard = gm._modules.get(FROZEN_GUARD_ATTRIBUTE) if isinstance(gm, torch.nn.Module) else None  # noqa: SLF001
    if not isinstance(guard, FrozenValuesGuard) or guard.originals is None:
        return {}
    return {id(s): o for s, o in zip(guard.sources, guard.originals) if o is not None}


def inherit_frozen_originals(gm: torch.nn.Module, originals: Mapping[int, weakref.ref[torch.Tensor]]) -> None:
    """Make the frozen values of `gm` (a `freeze=True` module optimized from
    a stand-in) follow the `requires_grad` of the original tensors the
    stand-in's tensors replaced (`frozen_originals`), as the first module does."""
    guard = gm._modules.get(FROZEN_GUARD_ATTRIBUTE) if isinstance(gm, torch.nn.Module) else None  # noqa: SLF001
    if not isinstance(guard, FrozenValuesGuard) or guard.originals is not None or not originals:
        return
    guard.__dict__["originals"] = tuple(originals.get(id(s)) for s in guard.sources)


def _module_copy(
    module: torch.nn.Module, replacements: dict[int, torch.Tensor], clones: dict[int, torch.nn.Module]
) -> torch.nn.Module:
    """`module`, or where it (or a module below it) holds a tensor in
    `replacements`, a copy of it holding the replacements: the same class
    and attributes, its own parameter, buffer and submodule dicts (filled
    in `clones`, by the id of the module copied). `module` is not changed."""
    done = clones.get(id(module))
    if done is not None:
        return done
    if isinstance(module, torch.jit.ScriptModule):
        return module  # its tensors live in its C++ object: shared as it is
    children = {
        name: _module_copy(child, replacements, clones) if child is not None else None
        for name, child in module._modules.items()  # noqa: SLF001
    }
    holds = any(id(t) in replacements for t in (*module._parameters.values(), *module._buffers.values()))  # noqa: SLF001
    if not holds and all(children[name] is child for name, child in module._modules.items()):  # noqa: SLF001
        return module
    copied = object.__new__(type(module))  # no __init__: the attributes are the original's
    copied.__dict__.update(module.__dict__)
    for table in ("_parameters", "_buffers"):
        original = module.__dict__[table]
        fresh = type(original)()
        for name, tensor in original.items():
            fresh[name] = replacements.get(id(tensor), tensor) if tensor is not None else None
        copied.__dict__[table] = fresh
    modules = type(module._modules)()  # noqa: SLF001
    modules.update(children)
    copied.__dict__["_modules"] = modules
    if isinstance(module, torch.fx.GraphModule):
        # A graph knows the module owning it: the original's would keep the
        # original (and its weights) alive through the copy. The copy owns
        # a copy of the graph (nodes only: metadata is shared, its code is
        # its class's, the original's, so it is not generated again).
        graph = copy_graph(module.graph)
        graph.owning_module = copied  # type: ignore[assignment]
        copied.__dict__["_graph"] = graph
    clones[id(module)] = copied
    return copied


def _rebind(
    root: torch.nn.Module,
    model: Any,
    stand_in: Any,
    replacements: dict[int, torch.Tensor],
    clones: dict[int, torch.nn.Module],
    owned: set[int],
) -> None:
    """Replace, in `root` and the modules below it that are not the
    model's (`owned`), every tensor in `replacements`, every module of
    the model by its copy (`clones`) and the model `root` reads from
    (`MODEL_ATTRIBUTE`) by `stand_in`; the tensors its code was made with
    (`MADE_WITH_ATTRIBUTE`) likewise, so that its identity tests hold."""
    stack = [root]
    seen: set[int] = set()
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        for table in (module._parameters, module._buffers):  # noqa: SLF001
            for name, tensor in table.items():
                if tensor is not None and id(tensor) in replacements:
                    table[name] = replacements[id(tensor)]
        for name, child in module._modules.items():  # noqa: SLF001
            if child is None:
                continue
            if id(child) in owned:
                module._modules[name] = clones.get(id(child), child)  # noqa: SLF001
            else:
                stack.append(child)
        if module.__dict__.get(MODEL_ATTRIBUTE) is model:
            module.__dict__[MODEL_ATTRIBUTE] = stand_in
        made_with = module.__dict__.get(MADE_WITH_ATTRIBUTE)
        if isinstance(made_with, tuple):
            module.__dict__[MADE_WITH_ATTRIBUTE] = tuple(replacements.get(id(t), t) for t in made_with)


__all__ = [
    "FROZEN_BACKWARD_MESSAGE",
    "FROZEN_GUARD_ATTRIBUTE",
    "HOISTABLE_NAMES",
    "MODEL_ATTRIBUTE",
    "FrozenValuesGuard",
    "freeze_parameter_expressions",
    "frozen_bytes",
    "frozen_values",
    "hand_over_to_frozen_values",
    "read_tensors_from_model",
    "refresh_frozen_values",
]
