"""Shared preconditions of the split/cat simplification patterns.

Used by `split_cat_simplify` (core patterns) and `split_cat_views` (view-chain
patterns). Everything here is *local*: it follows `value.uses` and defining
ops from the values a pattern looks at, never scans the whole block.

Aliasing model
--------------
Two values *alias* when they may share storage. A value's *alias class* is
the closure of that relation through ops that may return a view of an
operand (`may_alias_operands`): torch plumbing ops (split, unbind, slice,
select, squeeze, unsqueeze, view, reshape, flatten, unflatten, permute,
transpose, movedim, detach), and fx ops that are not known to return a fresh
tensor (unknown or impure callables, getitem, fx `view`/`t`/`expand`/`to`...).
The class is followed both up (what a value is a view of) and down (the views
of it, the views of those...), so siblings (other pieces of one split) are in
one class. This is conservative on purpose.

A class is *mutated* when one of its values is an operand of an op that may
write to it: an fx op that `optimus_ir.effects` does not know to be pure
(in-place `add_`, `copy_`, `out=`, `operator.setitem`, unknown calls,
`call_module`). Operator-dialect ops never write to their operands.

A rewrite that replaces a *fresh* tensor (the result of cat/stack, which
copies) by a view of another value changes aliasing; `can_forward_as_alias`
says when that is unobservable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as t
from optimus_ir.effects import effect_kind
from optimus_ir.types import DYNAMIC

# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------


def tensor_type(value: SSAValue) -> TensorType | None:
    """The value's tensor type, or None when it is not a tensor."""
    ty = value.type
    return ty if isinstance(ty, TensorType) else None


def shape(value: SSAValue) -> tuple[int, ...] | None:
    """The value's shape (`DYNAMIC` for `?`), or None when it is not a tensor."""
    ty = tensor_type(value)
    return None if ty is None else tuple(ty.get_shape())


def all_static(sizes: Sequence[int] | None) -> bool:
    """True when `sizes` is known and holds no dynamic (`?`) size."""
    return sizes is not None and all(s != DYNAMIC and s >= 0 for s in sizes)


def static_size(value: SSAValue, dim: int) -> int | None:
    """The static size of `dim` of `value`, or None (dynamic, not a tensor,
    dim out of range)."""
    sizes = shape(value)
    if sizes is None or not 0 <= dim < len(sizes) or sizes[dim] == DYNAMIC:
        return None
    return sizes[dim]


def same_type(a: SSAValue, b: SSAValue) -> bool:
    """The two values have identical types (shape, dtype, device): one may
    replace the other without changing any user's view of the IR."""
    return a.type == b.type


def offsets(sections: Sequence[int]) -> list[int]:
    """Start offsets of the sections, plus the total at the end:
    `[2, 3, 4] -> [0, 2, 5, 9]`."""
    out = [0]
    for s in sections:
        out.append(out[-1] + s)
    return out


# ---------------------------------------------------------------------------
# Pieces of split / unbind
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """A value that is result `index` of a split or unbind op."""

    op: t.SplitOp | t.UnbindOp
    index: int

    @property
    def source(self) -> SSAValue:
        """The tensor that was split."""
        return self.op.input

    @property
    def dim(self) -> int:
        return self.op.dim.data


def piece_of(value: SSAValue) -> Piece | None:
    """The (split or unbind op, result index) that defines `value`, or None."""
    if isinstance(value, OpResult) and isinstance(value.op, t.SplitOp | t.UnbindOp):
        return Piece(value.op, value.index)
    return None


def split_piece_of(value: SSAValue) -> Piece | None:
    """Like `piece_of`, for split results only."""
    piece = piece_of(value)
    return piece if piece is not None and isinstance(piece.op, t.SplitOp) else None


def sections_of(op: t.SplitOp) -> list[int]:
    """The explicit sections of a split."""
    return list(t.ints(op.sections))


@dataclass(frozen=True)
class Run:
    """Operands `operands[first:last]` of a join are results
    `start .. start + (last - first) - 1` of one split/unbind `op`, in order."""

    op: t.SplitOp | t.UnbindOp
    first: int
    last: int
    start: int

    @property
    def length(self) -> int:
        return self.last - self.first

    @property
    def stop(self) -> int:
        """One past the last piece index."""
        return self.start + self.length

    def covers_all(self) -> bool:
        """The run is every piece of its op, in order."""
        return self.start == 0 and self.length == len(self.op.results)


def consecutive_runs(values: Sequence[SSAValue]) -> list[Run | None]:
    """Group `values` into maximal runs of consecutive pieces of one
    split/unbind (piece i followed by piece i + 1 of the same op). Returns one
    entry per maximal group, in order: a `Run` for a group of pieces (length
    1 or more), None for a value that is not a piece."""
    runs: list[Run | None] = []
    i = 0
    n = len(values)
    while i < n:
        piece = piece_of(values[i])
        if piece is None:
            runs.append(None)
            i += 1
            continue
        j = i + 1
        while j < n:
            nxt = piece_of(values[j])
            if nxt is None or nxt.op is not piece.op or nxt.index != piece.index + (j - i):
                break
            j += 1
        runs.append(Run(piece.op, i, j, piece.index))
        i = j
    return runs


# ---------------------------------------------------------------------------
# Users
# ---------------------------------------------------------------------------


def users(value: SSAValue) -> Iterator[Operation]:
    """The ops using `value` (an op using it twice appears twice)."""
    for use in value.uses:
        yield use.operation


def has_uses(value: SSAValue) -> bool:
    return value.first_use is not None


def users_are_only(
    value: SSAValue, accept: type[Operation] | tuple[type[Operation], ...] | Callable[[Operation], bool]
) -> bool:
    """Every user of `value` is accepted: an instance of the given op
    class(es), or satisfies the predicate. True for an unused value."""
    if isinstance(accept, type | tuple):
        classes = accept
        return all(isinstance(op, classes) for op in users(value))
    return all(accept(op) for op in users(value))


def only_user(value: SSAValue) -> Operation | None:
    """The single op using `value` (possibly several times), or None."""
    found: Operation | None = None
    for use in value.uses:
        if found is None:
            found = use.operation
        elif use.operation is not found:
            return None
    return found


def results_unused(op: Operation) -> bool:
    """No result of `op` has a use."""
    return all(r.first_use is None for r in op.results)


# ---------------------------------------------------------------------------
# Aliasing and mutation
# ---------------------------------------------------------------------------

TORCH_VIEW_OPS: tuple[type[Operation], ...] = (
    t.SplitOp,
    t.UnbindOp,
    t.SliceOp,
    t.SelectOp,
    t.SqueezeOp,
    t.UnsqueezeOp,
    t.ViewOp,
    t.ReshapeOp,  # a view when possible
    t.FlattenOp,  # a view when possible
    t.UnflattenOp,
    t.PermuteOp,
    t.TransposeOp,
    t.MovedimOp,
    t.DetachOp,
)
"""Operator-dialect ops whose results may share storage with their input."""

# Last name components of pure torch functions / methods that may return a
# view of (or the very same tensor as) an operand.
FX_ALIASING_NAMES: frozenset[str] = frozenset(
    """
    getitem __getitem__ view view_as reshape reshape_as as_strided expand expand_as
    t T mT H mH transpose swapaxes swapdims permute movedim moveaxis narrow select
    slice split split_with_sizes tensor_split chunk unbind hsplit vsplit dsplit
    squeeze unsqueeze flatten unflatten ravel detach alias diagonal real imag
    unfold view_as_real view_as_complex to type float double half bfloat16 int long
    bool cpu cuda contiguous expand_copy _reshape_alias _unsafe_view lift_fresh
    align_to refine_names rename data requires_grad_ indices values crow_indices
    col_indices conj resolve_conj resolve_neg positive numpy_T adjoint
    """.split()
)

STRIDE_SENSITIVE_NAMES: frozenset[str] = frozenset(
    """
    view view_as as_strided stride is_contiguous data_ptr storage_offset
    _unsafe_view untyped_storage storage numpy
    """.split()
)
"""fx targets whose behaviour depends on the strides of their operand."""


def _target_name(op: Operation) -> str | None:
    if isinstance(op, fx.CallFunctionOp | fx.CallMethodOp):
        target = op.target.data
        parts = target.split(".")
        if target.startswith("torch.ops.") and len(parts) >= 4:
            return parts[3]  # torch.ops.aten.<name>.<overload>
        return parts[-1]
    return None


def is_fx_node(op: Operation) -> bool:
    """An fx call (function, method or module)."""
    return isinstance(op, fx.CallFunctionOp | fx.CallMethodOp | fx.CallModuleOp)


NON_MUTATING_TARGETS: frozenset[str] = frozenset(
    {
        "torch._assert",
        "torch._check",
        "torch._check_is_size",
        "torch.ops.aten._assert_async.msg",
        "torch.ops.aten._assert_scalar.default",
        "torch.ops.aten.sym_constrain_range_for_size.default",
        "torch.ops.aten._assert_tensor_metadata.default",
    }
)
"""Impure fx call targets (they must stay) that never write to a tensor."""

NON_MUTATING_MODULE_TYPES: frozenset[str] = frozenset(
    {"torch.export._unlift.GuardsFn"}
)
"""`fx.call_module` module types that never write to their operands
(torch.export's input-guard module)."""


def may_write_operands(op: Operation) -> bool:
    """`op` may write to (some of) its operands: an fx call that is not known
    pure, except assertions and guards (`NON_MUTATING_TARGETS`,
    `NON_MUTATING_MODULE_TYPES`). `fx.output` and operator-dialect ops never
    do."""
    if not is_fx_node(op) or effect_kind(op) != "impure":
        return False
    if isinstance(op, fx.CallModuleOp):
        module_type = op.attributes.get("module_type")
        return not (
            isinstance(module_type, StringAttr) and module_type.data in NON_MUTATING_MODULE_TYPES
        )
    return not (isinstance(op, fx.CallFunctionOp) and op.target.data in NON_MUTATING_TARGETS)


def may_alias_operands(op: Operation) -> bool:
    """A result of `op` may share storage with one of its tensor operands."""
    if isinstance(op, TORCH_VIEW_OPS):
        return True
    if not is_fx_node(op):
        return False
    if effect_kind(op) == "impure":
        return True  # unknown: anything goes (and add_ returns self)
    name = _target_name(op)
    return name is None or name in FX_ALIASING_NAMES


def alias_class(value: SSAValue, limit: int = 100_000) -> set[SSAValue]:
    """Every value that may share storage with `value` (see the module
    docstring): the views it is made from, their views, and so on."""
    seen: set[SSAValue] = {value}
    stack = [value]
    while stack:
        v = stack.pop()
        owner = v.owner
        if isinstance(owner, Operation) and may_alias_operands(owner):
            for operand in owner.operands:
                if operand not in seen and isinstance(operand.type, TensorType | fx.ValueType):
                    seen.add(operand)
                    stack.append(operand)
        for r in _direct_views(v):
            if r not in seen:
                seen.add(r)
                stack.append(r)
        if len(seen) > limit:
            break
    return seen


def _direct_views(value: SSAValue) -> Iterator[SSAValue]:
    """Results of the users of `value` that may be views of it."""
    for use in value.uses:
        user = use.operation
        if may_alias_operands(user):
            yield from user.results


def view_closure(value: SSAValue) -> set[SSAValue]:
    """`value` and every value that may be a view of it (downward only)."""
    seen: set[SSAValue] = {value}
    stack = [value]
    while stack:
        v = stack.pop()
        for r in _direct_views(v):
            if r not in seen:
                seen.add(r)
                stack.append(r)
    return seen


def class_is_mutated(values: Iterable[SSAValue]) -> bool:
    """Some value of the set is an operand of an op that may write to it."""
    return any(may_write_operands(use.operation) for v in values for use in v.uses)


def may_be_mutated(value: SSAValue) -> bool:
    """True when `value` or anything aliasing it (its pieces, slices, views,
    what it is a view of, their other views) is used by an op that may write
    to it (in-place `add_`, `copy_`, `out=`, a non-pure call)."""
    return class_is_mutated(alias_class(value))


def alias_roots(value: SSAValue) -> set[SSAValue]:
    """The values at the top of `value`'s view chains: values not produced
    by an op that may alias its operands (graph inputs, parameters, fresh
    results of compute ops)."""
    roots: set[SSAValue] = set()
    seen: set[SSAValue] = {value}
    stack = [value]
    while stack:
        v = stack.pop()
        owner = v.owner
        if isinstance(owner, Operation) and may_alias_operands(owner):
            for operand in owner.operands:
                if operand not in seen:
                    seen.add(operand)
                    stack.append(operand)
        else:
            roots.add(v)
    return roots


def is_graph_input(value: SSAValue) -> bool:
    """A graph input or parameter/buffer (`fx.placeholder`, `fx.get_attr`,
    a block argument): storage the caller owns."""
    if isinstance(value, BlockArgument):
        return True
    return isinstance(value.owner, fx.PlaceholderOp | fx.GetAttrOp)


def is_graph_input_view(value: SSAValue) -> bool:
    """`value` may be (a view of) a graph input or parameter."""
    return any(is_graph_input(root) for root in alias_roots(value))


def reaches_output(values: Iterable[SSAValue]) -> bool:
    """Some value of the set is returned by `fx.output`."""
    return any(isinstance(use.operation, fx.OutputOp) for v in values for use in v.uses)


def stride_sensitive(values: Iterable[SSAValue]) -> bool:
    """Some value of the set is used by an op whose result depends on its
    operand's strides (`torch.view`, fx `view`/`stride`/`is_contiguous`...)."""
    for v in values:
        for use in v.uses:
            op = use.operation
            if isinstance(op, t.ViewOp):
                return True
            if is_fx_node(op) and _target_name(op) in STRIDE_SENSITIVE_NAMES:
                return True
    return False


# ---------------------------------------------------------------------------
# Layout (strides): results must stay bit-identical
# ---------------------------------------------------------------------------

_CONTIGUOUS_RESULT_OPS: tuple[type[Operation], ...] = (
    t.LinearOp,
    t.MmOp,
    t.AddmmOp,
    t.BmmOp,
    t.BaddbmmOp,
    t.MatmulOp,
    t.LayerNormOp,
    t.SumOp,
    t.MeanOp,
)


def contiguous_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides of `sizes`."""
    strides = [1] * len(sizes)
    for d in range(len(sizes) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(sizes[d + 1], 1)
    return tuple(strides)


def _view_strides(
    old: Sequence[int], old_strides: Sequence[int], new: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides of `view(new)` of a tensor with `old` sizes and strides, or
    None when it cannot be a view (torch's `computeStride`)."""
    if not old or not new or 0 in old:
        return contiguous_strides(new)
    new_strides = [0] * len(new)
    view_d = len(new) - 1
    chunk = old_strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                new_strides[view_d] = view_numel * chunk
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk = old_strides[d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None


def strides_of(value: SSAValue, depth: int = 32) -> tuple[int, ...] | None:
    """The strides `value` provably has at run time, or None (unknown,
    dynamic sizes). Graph inputs and parameters have the strides recorded
    at import (`fx.input_strides`: contiguous when none are recorded; the
    module `optimize` returns checks them at call time); matmul/linear/
    layer_norm/reduction results, cat/stack results of rank < 4 and
    pointwise results of contiguous operands are contiguous; views follow
    their input (reshape/flatten: a contiguous copy when no view exists)."""
    sizes = shape(value)
    if sizes is None or not all_static(sizes) or depth <= 0:
        return None
    owner = value.owner
    if is_graph_input(value):
        # The strides recorded at import (`fx.input_strides`; the exported
        # module checks them at call time); block arguments: contiguous.
        recorded = fx.input_strides(owner) if isinstance(owner, Operation) else None
        return recorded if recorded is not None else contiguous_strides(sizes)
    if isinstance(owner, _CONTIGUOUS_RESULT_OPS):
        return contiguous_strides(sizes)
    if isinstance(owner, t.CatOp | t.StackOp):
        if len(sizes) < 4 or all(known_contiguous(v, depth - 1) for v in owner.inputs):
            return contiguous_strides(sizes)
        return None
    if isinstance(owner, t.UnaryPointwiseOp | t.BinaryPointwiseOp):
        if isinstance(owner, t.DropoutOp):
            return None
        tensors = [v for v in owner.operands if isinstance(v.type, TensorType)]
        if all(known_contiguous(v, depth - 1) for v in tensors):
            return contiguous_strides(sizes)
        return None
    if not isinstance(owner, TORCH_VIEW_OPS):
        return None
    source = owner.input  # type: ignore[attr-defined]
    base = strides_of(source, depth - 1)
    src_sizes = shape(source)
    if base is None or src_sizes is None:
        return None
    base_list = list(base)
    if isinstance(owner, t.SplitOp | t.DetachOp):
        return base
    if isinstance(owner, t.SliceOp):
        base_list[owner.dim.data] *= owner.step.data
        return tuple(base_list)
    if isinstance(owner, t.UnbindOp | t.SelectOp):
        del base_list[owner.dim.data]
        return tuple(base_list)
    if isinstance(owner, t.SqueezeOp):
        dropped = set(t.ints(owner.dims))
        return tuple(st for d, st in enumerate(base_list) if d not in dropped)
    if isinstance(owner, t.UnsqueezeOp):
        d = owner.dim.data
        inner = base_list[d] * src_sizes[d] if d < len(src_sizes) else 1
        return tuple(base_list[:d] + [inner] + base_list[d:])
    if isinstance(owner, t.PermuteOp):
        return tuple(base_list[d] for d in t.ints(owner.dims))
    if isinstance(owner, t.TransposeOp):
        a, b = owner.dim0.data, owner.dim1.data
        base_list[a], base_list[b] = base_list[b], base_list[a]
        return tuple(base_list)
    if isinstance(owner, t.MovedimOp):
        order = t.movedim_permutation(
            len(base_list), t.ints(owner.source), t.ints(owner.destination)
        )
        return tuple(base_list[d] for d in order)
    viewed = _view_strides(src_sizes, base_list, sizes)
    if viewed is not None:
        return viewed
    if isinstance(owner, t.ReshapeOp | t.FlattenOp):
        return contiguous_strides(sizes)  # reshape copies
    return None


def same_layout(a: SSAValue, b: SSAValue) -> bool:
    """`a` and `b` provably have the same shape and strides (strides of
    size-1 dims ignored): computations on them round identically."""
    sa, sb = shape(a), shape(b)
    if sa is None or sa != sb:
        return False
    ta, tb = strides_of(a), strides_of(b)
    if ta is None or tb is None:
        return False
    if any(s == 0 for s in sa):
        return True
    return all(x == y for x, y, n in zip(ta, tb, sa) if n != 1)


def known_contiguous(value: SSAValue, depth: int = 32) -> bool:
    """`value` is provably laid out contiguously (row-major, dense); see
    `strides_of` for what is known."""
    sizes = shape(value)
    strides = strides_of(value, depth)
    if sizes is None or strides is None:
        return False
    if any(s == 0 for s in sizes):
        return True
    want = contiguous_strides(sizes)
    return all(x == y for x, y, n in zip(strides, want, sizes) if n != 1)


def leading_ones(value: SSAValue, dim: int) -> bool:
    """Every dim of `value` before `dim` has static size 1: a slice, split
    piece or select along `dim` of a contiguous tensor is contiguous."""
    sizes = shape(value)
    return sizes is not None and all(s == 1 for s in sizes[:dim])


def contiguous_part(source: SSAValue, dim: int) -> bool:
    """A slice/select/piece of `source` along `dim` is provably contiguous."""
    return known_contiguous(source) and leading_ones(source, dim)


def layout_insensitive(value: SSAValue) -> bool:
    """No result computed from `value` depends on its strides: following
    users through views and pointwise ops (whose output layout follows their
    input), only pointwise ops, views (not `torch.view`, which may fail on a
    strided input), copies (cat, stack) and the graph output are found.
    Reductions, matmuls, layer_norm and fx ops are layout sensitive (a
    strided sum rounds differently from a contiguous one). A returned
    pointwise result may get other strides, never other values (a view
    reaching the output directly is refused by `can_forward_as_alias`)."""
    seen: set[SSAValue] = {value}
    stack = [value]
    while stack:
        v = stack.pop()
        for use in v.uses:
            op = use.operation
            if isinstance(op, t.CatOp | t.StackOp | fx.OutputOp):
                continue  # copies; a returned value (its values are exact)
            if isinstance(op, t.ViewOp) or isinstance(op, t.DropoutOp):
                return False
            if isinstance(op, TORCH_VIEW_OPS) or isinstance(
                op, t.UnaryPointwiseOp | t.BinaryPointwiseOp
            ):
                for r in op.results:
                    if r not in seen:
                        seen.add(r)
                        stack.append(r)
                continue
            return False
    return True


def can_forward_as_alias(
    fresh: SSAValue, source: SSAValue, *, whole: bool = False, contiguous: bool = False
) -> bool:
    """May the fresh tensor `fresh` (a cat/stack result, a copy) be replaced
    by a view of `source` (or, with `whole=True`, by `source` itself or a
    view of all of it that only adds size-1 dims, like `unsqueeze`)?

    `contiguous` says the caller proved the replacement is laid out like
    `fresh` (e.g. `contiguous_part` for a slice of a contiguous tensor); for
    `whole` it is also true when `same_layout(fresh, source)`. Callers that
    build another view chain can build it first and pass
    `contiguous=same_layout(fresh, new_value)`.

    The replacement makes `fresh`'s users alias `source`. That is unobservable
    only when

    * nothing in either alias class may be written to (a write through one
      would now show through the other);
    * the layout is the same, or no user of `fresh` depends on it
      (`layout_insensitive`: a strided view where there was a contiguous copy
      changes how a sum rounds, and `view` could fail);
    * `fresh` does not reach the graph output, except when it becomes
      `source` itself (`whole`), `source` is a fresh result of a compute op
      (not a view, not a graph input or parameter) and nothing else aliasing
      `source` is returned (two outputs would share storage)."""
    fresh_class = view_closure(fresh)
    source_class = alias_class(source)
    if fresh_class & source_class:
        return False  # fresh already aliased with source? be safe
    if class_is_mutated(fresh_class) or class_is_mutated(source_class):
        return False
    if whole:
        contiguous = contiguous or same_layout(fresh, source)
    if not contiguous and not layout_insensitive(fresh):
        return False
    if reaches_output(fresh_class):
        if not whole or not contiguous:
            return False
        if alias_roots(source) != {source} or is_graph_input(source):
            return False
        if reaches_output(source_class):
            return False
    return True


__all__ = [
    "FX_ALIASING_NAMES",
    "NON_MUTATING_MODULE_TYPES",
    "NON_MUTATING_TARGETS",
    "STRIDE_SENSITIVE_NAMES",
    "TORCH_VIEW_OPS",
    "Piece",
    "Run",
    "alias_class",
    "alias_roots",
    "all_static",
    "can_forward_as_alias",
    "contiguous_part",
    "contiguous_strides",
    "same_layout",
    "strides_of",
    "known_contiguous",
    "layout_insensitive",
    "leading_ones",
    "class_is_mutated",
    "consecutive_runs",
    "has_uses",
    "is_fx_node",
    "is_graph_input",
    "is_graph_input_view",
    "may_alias_operands",
    "may_be_mutated",
    "may_write_operands",
    "offsets",
    "only_user",
    "piece_of",
    "reaches_output",
    "results_unused",
    "same_type",
    "sections_of",
    "shape",
    "split_piece_of",
    "static_size",
    "stride_sensitive",
    "tensor_type",
    "users",
    "users_are_only",
    "view_closure",
]
