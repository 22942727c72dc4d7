"""Counting the ops of a GraphModule, one way everywhere: per kind
(`op_kind`), compute ops apart from views and metadata (`PLUMBING_KINDS`),
the ops run per call apart from those `freeze` computed once, and the counts
every line about a module's ops prints (`OpCounts`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any

import attrs
import torch
import torch.fx

from optimus_ir.kernels.norms import COUNTS_AS_ATTRIBUTE

PLUMBING_KINDS = frozenset(
    "getitem view reshape unsqueeze squeeze flatten unflatten movedim permute transpose t "
    "expand expand_as unfold unbind split split_with_sizes chunk narrow select slice as_strided "
    "detach alias size dim values empty new_empty".split()
)
"""Call kinds (`op_kind`, methods without the dot) that compute nothing:
tuple indexing, views (reshape and flatten are views wherever the layout
allows), metadata, uninitialized allocations (`write-into-join`'s buffer,
which its join's writers fill), and the lookup of the values `freeze=True`
computed once (`optimus_ir.api.param_cache`). Every other call reads and writes data:
the *compute* ops of the op-count guarantee and of the benchmarks."""

def is_plumbing(kind: str) -> bool:
    """Whether ops of `kind` (`op_kind`: methods with their dot) compute
    nothing (`PLUMBING_KINDS`)."""
    return kind.lstrip(".") in PLUMBING_KINDS

def count_compute_ops(counts: Counter[str]) -> int:
    """The compute ops of an ops-per-kind count (`count_fx_ops`): all but
    `PLUMBING_KINDS`."""
    return sum(n for kind, n in counts.items() if not is_plumbing(kind))

def count_view_ops(counts: Counter[str]) -> int:
    """The view and metadata ops of an ops-per-kind count: `PLUMBING_KINDS`."""
    return sum(n for kind, n in counts.items() if is_plumbing(kind))

def op_kind(node: torch.fx.Node) -> str:
    """A short readable name for what an FX node computes."""
    if node.op == "call_function":
        reinplaced = getattr(node.target, "optimus_op_kind", None)
        if reinplaced is not None:  # `reinplace`'s grad-guarded form: the op it computes
            return reinplaced
        helper = getattr(node.target, COUNTS_AS_ATTRIBUTE, None)
        if helper is not None:  # a helper the lowering calls (`kernels.norms`): the op it computes
            return helper
        name = getattr(node.target, "__name__", str(node.target))
        overload = getattr(node.target, "_overloadname", None)
        if overload is not None:  # an ATen OpOverload: aten.split.Tensor -> split
            return str(node.target).split(".")[1] if "." in str(node.target) else name
        return name
    if node.op == "call_method":
        return f".{node.target}"
    return node.op

_AUGMENTED = frozenset(
    "iadd isub imul itruediv ifloordiv imod ipow iand ior ixor ilshift irshift imatmul setitem".split()
)
"""`operator` functions that write their first argument (`x += y`, `x[i] = v`)."""


def _writes_in_place(node: torch.fx.Node) -> bool:
    """The call writes its first argument in place: a method or torch
    function named with a trailing `_` (`add_`, `torch.relu_`), an
    augmented assignment, `inplace=True` (by keyword, or by position where
    the function's signature puts it), or a module called with its
    `inplace` attribute set."""
    if node.op == "call_method":
        name = str(node.target)
        return name.endswith("_") and not name.startswith("_")
    if node.op == "call_module":
        owner = node.graph.owning_module
        module = owner.get_submodule(str(node.target)) if owner is not None else None
        return bool(getattr(module, "inplace", False))
    if node.op != "call_function":
        return False
    if node.kwargs.get("inplace") is True:
        return True
    name = getattr(node.target, "__name__", "")
    module = getattr(node.target, "__module__", "") or ""
    if module in ("operator", "_operator"):
        return name in _AUGMENTED
    if name.endswith("_") and not name.startswith("_") and (module.startswith("torch") or module == ""):
        return True
    overload = getattr(node.target, "_overloadname", None)
    if overload is not None:
        return str(node.target).split(".")[1].endswith("_")
    from optimus_ir.api.param_cache import _inplace_position  # memoized per target

    position = _inplace_position(node.target)
    return position is not None and len(node.args) > position and node.args[position] is True


@attrs.frozen
class InPlaceCount:
    """The in-place calls of a graph: `total`, of which `grad_guarded` are
    `reinplace`'s forms (in place when gradients are not recorded)."""

    total: int = 0
    grad_guarded: int = 0


def count_inplace_ops(gm: torch.fx.GraphModule) -> InPlaceCount:
    """How many calls of `gm` write their first argument in place
    (`_writes_in_place`), `reinplace`'s grad-guarded forms included."""
    total = guarded = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "optimus_op_kind", None) is not None:
            total += 1
            guarded += 1
        elif _writes_in_place(node):
            total += 1
    return InPlaceCount(total, guarded)


def count_fx_ops(gm: torch.fx.GraphModule) -> Counter[str]:
    """Operations per kind in a GraphModule (placeholders/attrs/output left out)."""
    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        counts[op_kind(node)] += 1
    return counts

def _is_frozen_values(node: Any) -> bool:
    """The frozen guard's `values` call (`param_cache.freeze_parameter_expressions`)."""
    from optimus_ir.api.param_cache import FROZEN_GUARD_ATTRIBUTE

    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_method"
        and node.target == "values"
        and bool(node.args)
        and isinstance(node.args[0], torch.fx.Node)
        and node.args[0].op == "get_attr"
        and node.args[0].target == FROZEN_GUARD_ATTRIBUTE
    )

def _is_frozen_plumbing(node: torch.fx.Node) -> bool:
    """The frozen values' lookup: the `values` call or a getitem of it."""
    return _is_frozen_values(node) or (
        node.op == "call_function" and bool(node.args) and _is_frozen_values(node.args[0])
    )

def count_per_call_ops(gm: torch.fx.GraphModule) -> Counter[str]:
    """`count_fx_ops` of the ops `gm` runs on every call: the values
    `freeze` computed once (`param_cache.freeze_parameter_expressions`) are
    read like parameters, so their plumbing (the frozen guard's `values`
    call and a getitem per value) is left out, as get_attr is."""
    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output") or _is_frozen_plumbing(node):
            continue
        counts[op_kind(node)] += 1
    return counts

def count_parameter_only_ops(gm: torch.fx.GraphModule, parameter_inputs: Collection[str] = ()) -> Counter[str]:
    """The ops of `count_per_call_ops` that read parameters and buffers
    alone: their inputs are attributes (`get_attr`), the placeholders named
    in `parameter_inputs` (the parameters Dynamo lifts to graph inputs),
    frozen values or such ops, transitively. What a freezing (ours, or
    Inductor's constant folding) computes once instead of per call."""
    constant: set[torch.fx.Node] = set()
    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op == "get_attr" or (node.op == "placeholder" and node.target in parameter_inputs):
            constant.add(node)
            continue
        if node.op not in ("call_function", "call_method"):
            continue
        inputs = node.all_input_nodes
        if not inputs or not all(i in constant for i in inputs):
            continue
        constant.add(node)
        if not _is_frozen_plumbing(node):
            counts[op_kind(node)] += 1
    return counts

@attrs.frozen
class OpCounts:
    """The op counts of one optimized graph, counted one way wherever they
    are printed (`OptimizeReport.format`, the backend's one line per
    graph): the compute ops (`count_compute_ops`) and the view and metadata
    ops (`PLUMBING_KINDS`) of the captured graph and of what the result
    runs per call; apart from them, the ops on parameters alone that do not
    run per call (computed once: `once_by`)."""

    compute_before: int
    compute_after: int
    """Per call."""
    views_before: int
    views_after: int
    """Per call."""
    compute_once: int = 0
    views_once: int = 0
    once_by: str = ""
    compute_grown: tuple[tuple[str, int, int], ...] = ()
    """(kind, before, after per call) of the compute kinds that grew."""
    parameter_compute_per_call: int = 0
    """Compute ops per call on parameters alone (stacks of weights)."""
    groups_chunked: int = 0
    """Groups fused in several parts (`OptimizeReport.groups_chunked`)."""

    def summary(self) -> str:
        """`compute ops 38 -> 9 per call (+9 on parameters alone, ...), view
        and metadata ops 3 -> 18 per call`: the backend's counts."""
        parts = []
        for name, before, after, once in (
            ("compute ops", self.compute_before, self.compute_after, self.compute_once),
            ("view and metadata ops", self.views_before, self.views_after, self.views_once),
        ):
            text = f"{name} {before} -> {after} per call"
            if once:
                text += f" (+{once} on parameters alone, {self.once_by})"
            parts.append(text)
        return ", ".join(parts)

    def why_more(self) -> str | None:
        """Why the result runs more ops than the captured graph (per call,
        in compute or view ops, or all counted), or None where it does not."""
        before = self.compute_before + self.views_before
        after = self.compute_after + self.views_after
        once = self.compute_once + self.views_once
        if self.compute_after <= self.compute_before and after <= before and after + once <= before:
            return None
        reasons = []
        if self.compute_after > self.compute_before:
            grown = ", ".join(f"{kind} {b} -> {a}" for kind, b, a in self.compute_grown)
            causes = []
            if self.parameter_compute_per_call:
                causes.append(
                    f"{self.parameter_compute_per_call} of them on parameters alone (stacks of weights), made on "
                    "every call from the current parameters (freeze=True computes them once)"
                )
            if self.groups_chunked:
                causes.append(
                    f"{self.groups_chunked} group(s) fused in several parts (chunks within the memory "
                    "budget, or parts by source), each part its own op and copies"
                )
            if not causes:
                causes.append("copies (stack, cat) of the fused groups' operands")
            reasons.append(
                f"{self.compute_after - self.compute_before} more compute ops per call ({grown}): " + "; ".join(causes)
            )
        if self.views_after > self.views_before:
            reasons.append(
                f"{self.views_after - self.views_before} more view and metadata ops per call, which compute "
                "nothing (views of the fused ops' stacked operands and results, getitems of their unbinds)"
            )
        if once and after + once > before:
            reasons.append(f"{once} ops on parameters alone, {self.once_by}, not per call")
        return "more ops than captured: " + "; ".join(reasons)
