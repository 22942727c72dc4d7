"""The binders of raise-fx, by kind: each maps one torch spelling's
arguments to one torch-dialect op (see `passes/raise_fx.py`). Importing
this module registers them; the unary ops' binders are built from their
declared facts (`DeclaredBinder`)."""

from __future__ import annotations


import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import (
    IntegerType,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import OperandDef, OptionalDef

from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import INPLACE, Argument
from optimus_ir.foundation.types import DYNAMIC
from optimus_ir.kernels.norms import LAYER_NORM_TARGET, STACKED_LAYER_NORM_TARGET
from optimus_ir.passes.raise_binding import (
    DType,
    Opaque,
    Raiser,
    _MISSING,
    _SKIP,
    aten,
    canon_dim,
    canon_dims,
    function,
    int_or_ints,
    is_number,
    lit_bool,
    lit_float,
    lit_int,
    lit_ints,
    lit_number,
    lit_str,
    method,
    module,
    not_inplace,
    opt_dtype,
    opt_tensor,
    rank,
    shape,
    skip_unless,
    tensor,
    tensors,
    varargs_ints,
)


# ---------------------------------------------------------------------------
# Binders: linear algebra
# ---------------------------------------------------------------------------


def _linear_op(r: Raiser, x: SSAValue, w: SSAValue, b: SSAValue | None) -> Operation:
    skip_unless(rank(w) == 2 and rank(x) >= 1)
    skip_unless(b is None or rank(b) == 1)
    return T.LinearOp(x, w, b, result_type=r.out_tensor())


@function("torch._C._nn.linear", "torch.nn.functional.linear", *aten("linear.default"))
def _linear(r: Raiser, input, weight, bias=None):
    return _linear_op(r, tensor(input), tensor(weight), opt_tensor(bias))


@module("torch.nn.modules.linear.Linear")
def _linear_module(r: Raiser, path, m, input):
    x = tensor(input)
    return _linear_op(r, x, r.param(path, "weight", m), r.param(path, "bias", m))


@function("torch.mm", *aten("mm.default"))
@method("mm")
def _mm(r: Raiser, input, mat2):
    a, b = tensor(input), tensor(mat2)
    skip_unless(rank(a) == 2 and rank(b) == 2)
    w = r.transposed.get(b)
    if w is not None:
        return T.LinearOp(a, w, None, result_type=r.out_tensor())
    return T.MmOp(a, b, result_type=r.out_tensor())


@function("torch.addmm", *aten("addmm.default"))
@method("addmm")
def _addmm(r: Raiser, input, mat1, mat2, *, beta=1, alpha=1):
    c, a, b = tensor(input), tensor(mat1), tensor(mat2)
    beta, alpha = lit_number(beta), lit_number(alpha)
    skip_unless(rank(a) == 2 and rank(b) == 2)
    w = r.transposed.get(b)
    if w is not None and beta == 1 and alpha == 1 and rank(c) == 1:
        return T.LinearOp(a, w, c, result_type=r.out_tensor())
    return T.AddmmOp(c, a, b, beta=beta, alpha=alpha, result_type=r.out_tensor())


@function("torch.bmm", *aten("bmm.default"))
@method("bmm")
def _bmm(r: Raiser, input, mat2):
    return T.BmmOp(tensor(input), tensor(mat2), result_type=r.out_tensor())


@function("torch.baddbmm", *aten("baddbmm.default"))
@method("baddbmm")
def _baddbmm(r: Raiser, input, batch1, batch2, *, beta=1, alpha=1):
    return T.BaddbmmOp(
        tensor(input), tensor(batch1), tensor(batch2),
        beta=lit_number(beta), alpha=lit_number(alpha), result_type=r.out_tensor(),
    )


@function("torch.matmul", "operator.matmul", *aten("matmul.default"))
@method("matmul")
def _matmul(r: Raiser, input, other):
    return T.MatmulOp(tensor(input), tensor(other), result_type=r.out_tensor())


# ---------------------------------------------------------------------------
# Normalization
# ---------------------------------------------------------------------------


def _layer_norm_op(r, x, normalized_shape, w, b, eps, out) -> Operation:
    ns = int_or_ints(normalized_shape)
    xs = shape(x)
    skip_unless(0 < len(ns) <= len(xs))
    skip_unless(all(s == DYNAMIC or s == n for s, n in zip(xs[len(xs) - len(ns):], ns)))
    return T.LayerNormOp(x, ns, w, b, eps=lit_float(eps), result_type=out)


@function(
    "torch.nn.functional.layer_norm", "torch.layer_norm", *aten("layer_norm.default"),
    LAYER_NORM_TARGET,  # what lower-to-fx emits without affine parameters
    STACKED_LAYER_NORM_TARGET,  # ... over a batched layer norm's stacked members
)
def _layer_norm(r: Raiser, input, normalized_shape, weight=None, bias=None, eps=1e-5,
                cudnn_enable=True):
    return _layer_norm_op(
        r, tensor(input), normalized_shape, opt_tensor(weight), opt_tensor(bias), eps,
        r.out_tensor(),
    )


@function(*aten("native_layer_norm.default"))
def _native_layer_norm(r: Raiser, input, normalized_shape, weight, bias, eps):
    pieces = r.out_pieces()
    skip_unless(len(pieces) == 3 and r.used <= {0})
    op = _layer_norm_op(
        r, tensor(input), normalized_shape, opt_tensor(weight), opt_tensor(bias), eps,
        pieces[0],
    )
    return op, [op.results[0], None, None]


@module("torch.nn.modules.normalization.LayerNorm")
def _layer_norm_module(r: Raiser, path, m, input):
    return _layer_norm_op(
        r, tensor(input), m.get("normalized_shape"), r.param(path, "weight", m),
        r.param(path, "bias", m), m.get("eps"), r.out_tensor(),
    )


# ---------------------------------------------------------------------------
# Plumbing: split / chunk / unbind
# ---------------------------------------------------------------------------


def _split_op(r: Raiser, x: SSAValue, sections: list[int], dim: int):
    pieces = r.out_pieces()
    skip_unless(len(pieces) == len(sections) and all(s >= 0 for s in sections))
    size = shape(x)[dim]
    skip_unless(size == DYNAMIC or sum(sections) == size)
    op = T.SplitOp(x, sections, dim, result_types=pieces)
    return op, list(op.results)


def _sections(size: int, split_size: int) -> list[int]:
    skip_unless(size != DYNAMIC and split_size > 0)
    if size == 0:
        return [0]
    full, rest = divmod(size, split_size)
    return [split_size] * full + ([rest] if rest else [])


def _split_any(r: Raiser, tensor_, split, dim):
    x = tensor(tensor_)
    d = canon_dim(dim, rank(x))
    if type(split) is int:
        sections = _sections(shape(x)[d], split)
    else:
        sections = lit_ints(split)
    return _split_op(r, x, sections, d)


@function("torch.functional.split", "torch.split")
def _split(r: Raiser, tensor, split_size_or_sections, dim=0):
    return _split_any(r, tensor, split_size_or_sections, dim)


@method("split")
@function(*aten("split.Tensor", "split.sizes"))
def _split_method(r: Raiser, self, split_size, dim=0):
    return _split_any(r, self, split_size, dim)


@function("torch.split_with_sizes", *aten("split_with_sizes.default"))
@method("split_with_sizes")
def _split_with_sizes(r: Raiser, self, split_sizes, dim=0):
    x = tensor(self)
    return _split_op(r, x, lit_ints(split_sizes), canon_dim(dim, rank(x)))


@function("torch.chunk", *aten("chunk.default"))
@method("chunk")
def _chunk(r: Raiser, input, chunks, dim=0):
    x = tensor(input)
    d = canon_dim(dim, rank(x))
    size, n = shape(x)[d], lit_int(chunks)
    skip_unless(n > 0 and size != DYNAMIC and size > 0)
    return _split_op(r, x, _sections(size, -(-size // n)), d)


def _unbind_like(r: Raiser, cls: type, input, dim):
    """An unbind-like op (unbind, unbind_copy) over `dim`, one result per
    piece the call's declared type lists."""
    x = tensor(input)
    d = canon_dim(dim, rank(x))
    pieces = r.out_pieces()
    skip_unless(shape(x)[d] == len(pieces))
    op = cls(x, d, result_types=pieces)
    return op, list(op.results)


@function("torch.unbind", *aten("unbind.int"))
@method("unbind")
def _unbind(r: Raiser, input, dim=0):
    return _unbind_like(r, T.UnbindOp, input, dim)


@function("torch.unbind_copy", *aten("unbind_copy.int"))
def _unbind_copy(r: Raiser, input, dim=0):
    return _unbind_like(r, T.UnbindCopyOp, input, dim)


# ---------------------------------------------------------------------------
# Plumbing: cat / stack
# ---------------------------------------------------------------------------


def _cat_op(r: Raiser, values, dim):
    xs = tensors(values)
    out = r.out_tensor()
    n = len(out.get_shape())
    skip_unless(all(rank(x) == n for x in xs))  # no legacy empty 1-D inputs
    return T.CatOp(xs, canon_dim(dim, n), result_type=out)


@function("torch.cat", "torch.concat", *aten("cat.default", "concat.default"))
def _cat(r: Raiser, tensors, dim=0):
    return _cat_op(r, tensors, dim)


@function("torch.concatenate", *aten("concatenate.default"))
def _concatenate(r: Raiser, tensors, axis=0):
    return _cat_op(r, tensors, axis)


@function("torch.stack", *aten("stack.default"))
def _stack(r: Raiser, tensors_, dim=0):
    xs = tensors(tensors_)
    n = rank(xs[0])
    skip_unless(all(rank(x) == n for x in xs))
    return T.StackOp(xs, canon_dim(dim, n + 1), result_type=r.out_tensor())


# ---------------------------------------------------------------------------
# Plumbing: shape ops
# ---------------------------------------------------------------------------


def _squeeze_op(r: Raiser, x: SSAValue, dims: list[int] | None):
    xs = shape(x)
    skip_unless(len(xs) > 0)
    if dims is None:
        skip_unless(DYNAMIC not in xs)
        removed = [i for i, s in enumerate(xs) if s == 1]
    else:
        dims = canon_dims(dims, len(xs))
        skip_unless(all(xs[d] != DYNAMIC for d in dims))
        removed = sorted(d for d in dims if xs[d] == 1)
    out = r.out_tensor()
    skip_unless(len(out.get_shape()) == len(xs) - len(removed))
    return T.SqueezeOp(x, removed, result_type=out)


@function("torch.squeeze", *aten("squeeze.default", "squeeze.dim", "squeeze.dims"))
def _squeeze(r: Raiser, input, dim=None):
    return _squeeze_op(r, tensor(input), None if dim is None else int_or_ints(dim))


@method("squeeze")
def _squeeze_method(r: Raiser, self, *dims, dim=None):
    if dims:
        skip_unless(dim is None)
        dim = dims[0] if len(dims) == 1 else list(dims)
    return _squeeze_op(r, tensor(self), None if dim is None else int_or_ints(dim))


@function("torch.unsqueeze", *aten("unsqueeze.default"))
@method("unsqueeze")
def _unsqueeze(r: Raiser, input, dim):
    x = tensor(input)
    return T.UnsqueezeOp(x, canon_dim(dim, rank(x) + 1), result_type=r.out_tensor())


def _shape_list(values: list[int]) -> list[int]:
    skip_unless(all(v >= -1 for v in values) and values.count(-1) <= 1)
    return values


@function("torch.reshape", *aten("reshape.default", "_unsafe_view.default"))
def _reshape(r: Raiser, input, shape):
    return T.ReshapeOp(tensor(input), _shape_list(lit_ints(shape)), result_type=r.out_tensor())


@method("reshape")
def _reshape_method(r: Raiser, self, *shape):
    return T.ReshapeOp(tensor(self), _shape_list(varargs_ints(shape)), result_type=r.out_tensor())


@function(*aten("view.default"))
def _view(r: Raiser, self, size):
    return T.ViewOp(tensor(self), _shape_list(lit_ints(size)), result_type=r.out_tensor())


@method("view")
def _view_method(r: Raiser, self, *shape):
    # x.view(dtype) is a bit cast, not a view of a new shape: varargs_ints skips it.
    return T.ViewOp(tensor(self), _shape_list(varargs_ints(shape)), result_type=r.out_tensor())


def _flatten_op(r: Raiser, x: SSAValue, start_dim, end_dim):
    n = rank(x)
    s, e = canon_dim(start_dim, n), canon_dim(end_dim, n)
    skip_unless(s <= e)
    return T.FlattenOp(x, s, e, result_type=r.out_tensor())


@function("torch.flatten", *aten("flatten.using_ints"))
@method("flatten")
def _flatten(r: Raiser, input, start_dim=0, end_dim=-1):
    return _flatten_op(r, tensor(input), start_dim, end_dim)


@module("torch.nn.modules.flatten.Flatten")
def _flatten_module(r: Raiser, path, m, input):
    return _flatten_op(r, tensor(input), m.get("start_dim"), m.get("end_dim"))


def _unflatten_op(r: Raiser, x: SSAValue, dim, sizes):
    return T.UnflattenOp(
        x, canon_dim(dim, rank(x)), _shape_list(lit_ints(sizes)), result_type=r.out_tensor()
    )


@function("torch.unflatten", *aten("unflatten.int"))
@method("unflatten")
def _unflatten(r: Raiser, input, dim, sizes):
    return _unflatten_op(r, tensor(input), dim, sizes)


@module("torch.nn.modules.flatten.Unflatten")
def _unflatten_module(r: Raiser, path, m, input):
    return _unflatten_op(r, tensor(input), m.get("dim"), m.get("unflattened_size"))


def _permute_op(r: Raiser, x: SSAValue, dims: list[int]):
    n = rank(x)
    skip_unless(len(dims) == n)
    dims = canon_dims(dims, n)
    op = T.PermuteOp(x, dims, result_type=r.out_tensor())
    if dims == [1, 0]:
        r.transposed[op.results[0]] = x
        r.transpose_ops.append(op)
    return op


@function("torch.permute", *aten("permute.default"))
def _permute(r: Raiser, input, dims):
    return _permute_op(r, tensor(input), lit_ints(dims))


@method("permute")
def _permute_method(r: Raiser, self, *dims):
    return _permute_op(r, tensor(self), varargs_ints(dims))


def _transpose_op(r: Raiser, x: SSAValue, dim0, dim1):
    n = rank(x)
    d0, d1 = sorted((canon_dim(dim0, n), canon_dim(dim1, n)))
    op = T.TransposeOp(x, d0, d1, result_type=r.out_tensor())
    if n == 2 and d0 != d1:
        r.transposed[op.results[0]] = x
        r.transpose_ops.append(op)
    return op


@function("torch.transpose", "torch.swapdims", *aten("transpose.int", "swapdims.default"))
@method("transpose", "swapdims")
def _transpose(r: Raiser, input, dim0, dim1):
    return _transpose_op(r, tensor(input), dim0, dim1)


@function("torch.swapaxes", *aten("swapaxes.default"))
@method("swapaxes")
def _swapaxes(r: Raiser, input, axis0, axis1):
    return _transpose_op(r, tensor(input), axis0, axis1)


@function("torch.t", *aten("t.default"))
@method("t")
def _t(r: Raiser, input):
    x = tensor(input)
    skip_unless(rank(x) == 2)  # t() of a 0-d/1-d tensor is the tensor itself
    return _transpose_op(r, x, 0, 1)


@function("torch.movedim", "torch.moveaxis", *aten("movedim.int", "movedim.intlist"))
@method("movedim", "moveaxis")
def _movedim(r: Raiser, input, source, destination):
    x = tensor(input)
    n = rank(x)
    src, dst = canon_dims(int_or_ints(source), n), canon_dims(int_or_ints(destination), n)
    skip_unless(len(src) == len(dst))
    return T.MovedimOp(x, src, dst, result_type=r.out_tensor())


INT64_MAX = 2**63 - 1


def _slice_op(r: Raiser, x: SSAValue, dim, start, end, step):
    n = rank(x)
    d = canon_dim(dim, n)
    size = shape(x)[d]
    start = 0 if start is None else lit_int(start)
    end = INT64_MAX if end is None else lit_int(end)
    step = lit_int(step)
    skip_unless(step > 0)
    if size == DYNAMIC:
        skip_unless(start >= 0 and end >= 0)
    else:
        if start < 0:
            start += size
        if end < 0:
            end += size
        start = min(max(start, 0), size)
        end = min(max(end, start), size)
    return T.SliceOp(x, d, start, end, step, result_type=r.out_tensor())


@function(*aten("slice.Tensor"))
def _slice(r: Raiser, self, dim=0, start=None, end=None, step=1):
    return _slice_op(r, tensor(self), dim, start, end, step)


@function("torch.narrow", *aten("narrow.default"))
@method("narrow")
def _narrow(r: Raiser, input, dim, start, length):
    x = tensor(input)
    d = canon_dim(dim, rank(x))
    size = shape(x)[d]
    s, length = lit_int(start), lit_int(length)
    skip_unless(length >= 0)
    if s < 0:
        skip_unless(size != DYNAMIC)
        s += size
    skip_unless(s >= 0 and (size == DYNAMIC or s + length <= size))
    return _slice_op(r, x, d, s, s + length, 1)


def _select_op(r: Raiser, x: SSAValue, dim, index):
    n = rank(x)
    d = canon_dim(dim, n)
    size = shape(x)[d]
    i = lit_int(index)
    if size != DYNAMIC:
        skip_unless(-size <= i < size)
        if i < 0:
            i += size
    return T.SelectOp(x, d, i, result_type=r.out_tensor())


@function("torch.select", *aten("select.int"))
@method("select")
def _select(r: Raiser, input, dim, index):
    return _select_op(r, tensor(input), dim, index)


def _is_ellipsis(value: Any) -> bool:
    return (
        isinstance(value, Opaque)
        and isinstance(value.attr, fx.ObjectAttr)
        and value.attr.qualified_name.data == "builtins.Ellipsis"
    )


@function("operator.getitem")
def _getitem(r: Raiser, a, b):
    """Basic indexing of a tensor (ints, slices, None, one Ellipsis) becomes a
    chain of select / slice / unsqueeze; anything else (tensor indices, tuples
    from split...) stays."""
    x = tensor(a)
    out = r.out_tensor()
    index = list(b) if isinstance(b, tuple) else [b]
    consuming = sum(1 for i in index if type(i) is int or isinstance(i, slice))
    ellipses = [k for k, i in enumerate(index) if _is_ellipsis(i)]
    skip_unless(len(ellipses) <= 1 and consuming <= rank(x))
    if ellipses:
        k = ellipses[0]
        index[k : k + 1] = [slice(None, None, None)] * (rank(x) - consuming)
    ops: list[Operation] = []
    value, d = x, 0
    for item in index:
        if item is None:
            ops.append(T.UnsqueezeOp(value, d))
            d += 1
        elif type(item) is int:
            ops.append(_select_op(_Inferred, value, d, item))
        elif isinstance(item, slice):
            start, stop, step = item.start, item.stop, item.step
            step = 1 if step is None else step
            size = shape(value)[d]
            if not (start in (None, 0) and step == 1 and (stop is None or (
                size != DYNAMIC and type(stop) is int and stop >= size
            ))):
                ops.append(_slice_op(_Inferred, value, d, start, stop, step))
            d += 1
        else:
            raise _SKIP
        if ops:
            value = ops[-1].results[0]
    skip_unless(ops and value.type == out)
    return ops


class _InferredTypes:
    """Stands in for the Raiser where a chain's intermediate types are inferred."""

    @staticmethod
    def out_tensor() -> None:
        return None


_Inferred: Any = _InferredTypes()


# ---------------------------------------------------------------------------
# Unary pointwise
# ---------------------------------------------------------------------------


def _property_literal(value: Any, argument: Argument) -> Attribute | None:
    """The property an argument's literal value sets, of the kind of torch's
    default (a float argument takes an int too: `f(x, 1)` for a float parameter); None for a
    None value (an optional property left unset)."""
    if argument.choices is not None:
        skip_unless(type(value) in (str, int, float, bool) and value in argument.choices)
    default = argument.default
    if value is None:  # torch's None: only where None is its default (optional)
        skip_unless(default is None)
        return None
    if type(default) is bool:
        return fx.bool_literal(lit_bool(value))
    if type(default) is float:
        return fx.float_literal(lit_float(value))
    if type(default) is int:
        return fx.int_literal(lit_int(value))
    if type(default) is str or type(value) is str:
        return StringAttr(lit_str(value))
    if isinstance(value, DType):
        return value.element_type
    return T.number_attr(lit_number(value))


@dataclass(frozen=True)
class DeclaredBinder:
    """The binder of an op from its declared facts (`FACTS.spellings`): the
    tensor operands positionally, then the call's arguments (positional in
    torch's order, or by keyword) bound to the op's properties by name, with
    torch's defaults; `inplace` must be false. A submodule call reads the
    same names from the module's attributes. Any argument that is not a
    literal of the right kind, or not declared, leaves the call as it is."""

    cls: type[T.TorchOp]
    arguments: tuple[Argument, ...]
    operands: int
    required: frozenset[str]
    """The properties without a default that must be set."""

    @staticmethod
    def of(cls: type[T.TorchOp]) -> DeclaredBinder:
        """The binder of an op class whose operands are all single tensors."""
        op_def = cls.get_irdl_definition()
        if any(type(d) is not OperandDef for _, d in op_def.operands) or len(op_def.results) != 1:
            raise TypeError(
                f"'{cls.name}' declares spellings, but its operands or results are not "
                "single tensors: raise it with a hand-written binder (Spellings.custom)"
            )
        arguments = cls.FACTS.spellings.arguments  # type: ignore[union-attr]
        for argument in arguments:
            if argument != INPLACE and argument.property_name not in op_def.properties:
                raise TypeError(f"'{cls.name}' has no property '{argument.property_name}'")
        required = frozenset(
            name for name, d in op_def.properties.items()
            if d.default_value is None and not isinstance(d, OptionalDef)
        )
        return DeclaredBinder(cls, arguments, len(op_def.operands), required)

    def build(self, r: Raiser, operands: Sequence[Any], values: dict[str, Any]) -> Operation:
        """The op of `operands` with the arguments `values` (by torch name)."""
        properties: dict[str, Attribute | None] = {}
        for argument in self.arguments:
            value = values.get(argument.name, argument.default)
            if argument.name == INPLACE.name:
                not_inplace(value)
                continue
            properties[argument.property_name] = _property_literal(value, argument)
        skip_unless(all(properties.get(name) is not None for name in self.required))
        op = self.cls.__new__(self.cls)
        # the plain builder: the result type is the one FX recorded, and
        # `verify_types` checks it against the op's type inference
        T.TorchOp.__init__(
            op, operands=[tensor(v) for v in operands], result_types=[r.out_tensor()],
            properties=properties,
        )
        return op

    def call(self, r: Raiser, *args: Any, inplace_flag: bool, **kwargs: Any) -> Operation:
        """Bind a call's arguments (`inplace_flag`: the spelling has one)."""
        names = [a.name for a in self.arguments if inplace_flag or a.name != INPLACE.name]
        skip_unless(self.operands <= len(args) <= self.operands + len(names))
        values = dict(zip(names, args[self.operands:]))
        for name, value in kwargs.items():
            skip_unless(name in names and name not in values)
            values[name] = value
        return self.build(r, args[: self.operands], values)

    def function(self, r: Raiser, *args: Any, **kwargs: Any) -> Operation:
        """A torch function or `F.*` call (may have `inplace=`)."""
        return self.call(r, *args, inplace_flag=True, **kwargs)

    def method_or_aten(self, r: Raiser, *args: Any, **kwargs: Any) -> Operation:
        """A Tensor method or an aten overload: no `inplace` argument (in
        place is another name, `relu_`)."""
        return self.call(r, *args, inplace_flag=False, **kwargs)

    def module(self, r: Raiser, path: str, m: dict[str, Any], *args: Any, **kwargs: Any) -> Operation:
        """A submodule call: the arguments are the module's attributes."""
        skip_unless(len(args) == self.operands and not kwargs)
        values: dict[str, Any] = {}
        for argument in self.arguments:
            value = m.get(argument.name, _MISSING)
            skip_unless(value is not _MISSING)  # an attribute describe_module did not record
            values[argument.name] = value
        return self.build(r, args, values)


def _register_declared() -> None:
    """Register a `DeclaredBinder` for every spelling the torch dialect's ops
    declare (`FACTS.spellings`); hand-written binders below take the
    spellings whose binding is specific to the op (listed in `custom`)."""
    for cls in T.TORCH.operations:
        facts = T.facts_of(cls)
        if facts is None:
            continue
        spelled = facts.spellings
        if not (spelled.functions or spelled.methods or spelled.modules or spelled.aten):
            continue
        binder = DeclaredBinder.of(cls)  # type: ignore[arg-type]
        function(*spelled.functions)(binder.function)
        function(*aten(*spelled.aten))(binder.method_or_aten)
        method(*spelled.methods)(binder.method_or_aten)
        module(*spelled.modules)(binder.module)


_register_declared()


@function("torch.nn.functional.relu6")
def _relu6(r: Raiser, input, inplace=False):
    """relu6 is hardtanh over [0, 6] (what torch computes it as)."""
    not_inplace(inplace)
    return T.HardtanhOp(
        tensor(input), result_type=r.out_tensor(),
        properties={"min_val": fx.float_literal(0.0), "max_val": fx.float_literal(6.0)},
    )


@function("torch._C._nn.relu6", *aten("relu6.default"))
def _relu6_builtin(r: Raiser, input):
    return _relu6(r, input)


@module("torch.nn.modules.linear.Identity")
def _identity_module(r: Raiser, path, m, *args, **kwargs):
    skip_unless(len(args) == 1)  # Identity ignores extra arguments
    return tensor(args[0])


@function("torch.nan_to_num", *aten("nan_to_num.default"))
@method("nan_to_num")
def _nan_to_num(r: Raiser, input, nan=None, posinf=None, neginf=None):
    def opt(v):
        return None if v is None else lit_float(v)

    nan_ = opt(nan)
    if nan_ == 0.0 and not math.copysign(1.0, nan_) < 0:
        nan_ = None  # the default
    return T.NanToNumOp(tensor(input), nan_, opt(posinf), opt(neginf),
                        result_type=r.out_tensor())


def _clamp_op(r: Raiser, input, min_, max_):
    lo = None if min_ is None else lit_number(min_)
    hi = None if max_ is None else lit_number(max_)
    skip_unless(lo is not None or hi is not None)
    return T.ClampOp(tensor(input), lo, hi, result_type=r.out_tensor())


@function("torch.clamp", "torch.clip", *aten("clamp.default", "clip.default"))
@method("clamp", "clip")
def _clamp(r: Raiser, input, min=None, max=None):
    return _clamp_op(r, input, min, max)


@function("torch.clamp_min", *aten("clamp_min.default"))
@method("clamp_min")
def _clamp_min(r: Raiser, input, min):
    return _clamp_op(r, input, lit_number(min), None)


@function("torch.clamp_max", *aten("clamp_max.default"))
@method("clamp_max")
def _clamp_max(r: Raiser, input, max):
    return _clamp_op(r, input, None, lit_number(max))


def _dropout_op(r: Raiser, input, p, train):
    p_ = lit_float(p)
    skip_unless(0.0 <= p_ <= 1.0)
    return T.DropoutOp(tensor(input), p_, lit_bool(train), result_type=r.out_tensor())


@function("torch.nn.functional.dropout")
def _dropout(r: Raiser, input, p=0.5, training=True, inplace=False):
    not_inplace(inplace)
    return _dropout_op(r, input, p, training)


@function("torch.dropout", *aten("dropout.default"))
def _torch_dropout(r: Raiser, input, p, train):
    return _dropout_op(r, input, p, train)


@module("torch.nn.modules.dropout.Dropout")
def _dropout_module(r: Raiser, path, m, input):
    not_inplace(m.get("inplace"))
    return _dropout_op(r, input, m.get("p"), m.get("training"))


# ---------------------------------------------------------------------------
# Binary pointwise
# ---------------------------------------------------------------------------


def _binary(r: Raiser, cls: type, lhs, rhs, *, alpha=None, rounding_mode=None,
            reverse_ok=True):
    """lhs OP rhs, either side possibly a Python number (not both)."""
    extra: dict[str, Any] = {}
    if alpha is not None:
        extra["alpha"] = lit_number(alpha)
    if rounding_mode is not None:
        extra["rounding_mode"] = rounding_mode
    out = r.out_tensor()
    if isinstance(lhs, SSAValue):
        a = tensor(lhs)
        if isinstance(rhs, SSAValue):
            return cls(a, tensor(rhs), result_type=out, **extra)
        return cls(a, lit_number(rhs), result_type=out, **extra)
    skip_unless(reverse_ok and is_number(lhs))
    return cls(tensor(rhs), lhs, reverse=True, result_type=out, **extra)


def _bind_arithmetic(cls: type, name: str, *aliases: str, alpha: bool) -> None:
    """The binders of `name` (add, sub, mul): `operator.<name>`, either side
    a tensor or a number, and `torch.<name>`, its `aliases`, the tensor
    methods and aten's Tensor/Scalar overloads, the first operand a tensor
    (with torch's `alpha` where the op takes one)."""

    @function(f"operator.{name}")
    def _operator(r: Raiser, a, b):
        return _binary(r, cls, a, b)

    def _scaled(r: Raiser, input, other, *, alpha=1):
        tensor(input)
        return _binary(r, cls, input, other, alpha=alpha)

    def _plain(r: Raiser, input, other):
        tensor(input)
        return _binary(r, cls, input, other)

    functions = (f"torch.{name}", *(f"torch.{alias}" for alias in aliases))
    bind = function(*functions, *aten(f"{name}.Tensor", f"{name}.Scalar"))
    bind(method(name, *aliases)(_scaled if alpha else _plain))


_bind_arithmetic(T.AddOp, "add", alpha=True)
_bind_arithmetic(T.SubOp, "sub", "subtract", alpha=True)
_bind_arithmetic(T.MulOp, "mul", "multiply", alpha=False)


@function("torch.rsub", *aten("rsub.Tensor", "rsub.Scalar"))
def _rsub(r: Raiser, input, other, *, alpha=1):
    # rsub(x, y, alpha) == y - alpha * x
    tensor(input)
    return _binary(r, T.SubOp, other, input, alpha=alpha)


def pointwise_einsum(equation: str, shapes: Sequence[tuple[int, ...]]) -> tuple[list[int], ...] | str:
    """For a two-operand einsum that is only a pointwise product (PyTorch's
    einsum_to_pointwise: `"bi,bi->bi"`, `"bij,bj->bij"`, `"bi,bj->bij"`),
    each operand's output positions where `unsqueeze` adds a size-1 dim, in
    order; else why it is not one (a sum over a letter, an operand whose
    letters are not in output order, a repeated letter, an ellipsis, sizes
    that differ). Every output element is then one product of one element
    of each operand, as einsum computes it."""
    eq = equation.replace(" ", "")
    if "..." in eq:
        return "an ellipsis"
    if "->" not in eq:
        return "no explicit output"
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != 2 or len(shapes) != 2:
        return "not two operands"
    if not all(term.isalpha() for term in [*terms, out]):
        return "letters only"
    if any(len(set(term)) != len(term) for term in [*terms, out]):
        return "a repeated letter (a diagonal)"
    if set(terms[0]) | set(terms[1]) != set(out):
        return "a sum over a letter (a contraction, not a pointwise product)"
    sizes: dict[str, int] = {}
    plans: list[list[int]] = []
    for term, sh in zip(terms, shapes):
        if len(term) != len(sh):
            return "an operand's rank differs from its letters"
        positions = [out.index(letter) for letter in term]
        if positions != sorted(positions):
            return "an operand's letters are not in output order (a transpose)"
        for letter, size in zip(term, sh):
            if size == DYNAMIC or sizes.setdefault(letter, size) != size:
                return "a letter's sizes differ or are dynamic"
        plans.append([i for i, letter in enumerate(out) if letter not in term])
    return tuple(plans)


@function("torch.functional.einsum", "torch.einsum", *aten("einsum.default"))
def _einsum(r: Raiser, equation, *operands, path=None):
    """A pointwise einsum is `unsqueeze`s and one `mul` (the product of the
    same two elements: bitwise what einsum computes); any other stays an fx
    op, with a remark that says why."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    values = [tensor(v) for v in operands]
    out = r.out_tensor()
    plans = pointwise_einsum(lit_str(equation), [shape(v) for v in values])
    if isinstance(plans, str) or len({v.type.element_type for v in values}) != 1:  # type: ignore[attr-defined]
        why = plans if isinstance(plans, str) else "operands of different dtypes"
        r.remark(f"einsum-to-pointwise: einsum kept: {why}")
        skip_unless(False)
    chain: list[Operation] = []
    aligned: list[SSAValue] = []
    for value, missing in zip(values, plans):
        for dim in missing:  # increasing: each dim is final when added
            chain.append(T.UnsqueezeOp(value, dim))
            value = chain[-1].results[0]
        aligned.append(value)
    chain.append(T.MulOp(aligned[0], aligned[1], result_type=out))
    return chain


@function("operator.truediv")
def _op_truediv(r: Raiser, a, b):
    return _binary(r, T.DivOp, a, b)


@function("operator.floordiv")
def _op_floordiv(r: Raiser, a, b):
    return _binary(r, T.DivOp, a, b, rounding_mode="floor", reverse_ok=False)


@function("torch.floor_divide", *aten("floor_divide.default", "floor_divide.Scalar"))
@method("floor_divide")
def _floor_divide(r: Raiser, input, other):
    tensor(input)
    return _binary(r, T.DivOp, input, other, rounding_mode="floor")


@function("torch.div", "torch.divide",
          *aten("div.Tensor", "div.Scalar", "div.Tensor_mode", "div.Scalar_mode"))
@method("div", "divide")
def _div(r: Raiser, input, other, *, rounding_mode=None):
    tensor(input)
    mode = None if rounding_mode is None else lit_str(rounding_mode)
    skip_unless(mode in (None, "trunc", "floor"))
    return _binary(r, T.DivOp, input, other, rounding_mode=mode)


@function("torch.true_divide")
@method("true_divide")
def _true_divide(r: Raiser, dividend, divisor):
    tensor(dividend)
    return _binary(r, T.DivOp, dividend, divisor)


# ---------------------------------------------------------------------------
# softmax / log_softmax
# ---------------------------------------------------------------------------


def _softmax_op(r: Raiser, cls: type, input, dim, dtype):
    """softmax-like over `dim` (a literal int; `None`, torch's deprecated
    implicit choice of dim, is left alone), computed in `dtype`."""
    skip_unless(dim is not None)
    x = tensor(input)
    return cls(x, canon_dim(dim, rank(x)), opt_dtype(dtype), result_type=r.out_tensor())


def _bind_softmax_like(cls: type, name: str, module_class: str) -> None:
    """The binders of one softmax-like op `name` (softmax, log_softmax):
    `torch.<name>` and its aliases, the tensor method, `F.<name>`, the
    `nn` module and aten's `_<name>` (half_to_float, a CUDA-only fast path
    of `<name>(x.half(), dtype=float)`, is left alone)."""

    @function(f"torch.{name}", f"torch.special.{name}", f"torch._C._special.special_{name}",
              *aten(f"{name}.int", f"special_{name}.default"))
    @method(name)
    def _call(r: Raiser, input, dim, dtype=None):
        return _softmax_op(r, cls, input, dim, dtype)

    @function(f"torch.nn.functional.{name}")
    def _functional(r: Raiser, input, dim=None, _stacklevel=3, dtype=None):
        return _softmax_op(r, cls, input, dim, dtype)

    @module(f"torch.nn.modules.activation.{module_class}")
    def _module(r: Raiser, path, m, input):
        return _softmax_op(r, cls, input, m.get("dim"), None)

    @function(*aten(f"_{name}.default"))
    def _aten(r: Raiser, self, dim, half_to_float):
        skip_unless(lit_bool(half_to_float) is False)
        return _softmax_op(r, cls, self, dim, None)


_bind_softmax_like(T.SoftmaxOp, "softmax", "Softmax")
_bind_softmax_like(T.LogSoftmaxOp, "log_softmax", "LogSoftmax")


# ---------------------------------------------------------------------------
# Selection: where, masked_fill
# ---------------------------------------------------------------------------


def lit_scalar(value: Any) -> int | float | bool:
    """A literal Python number, bools included."""
    if type(value) is int or type(value) is float or type(value) is bool:
        return value
    raise _SKIP


def bool_tensor(value: Any) -> SSAValue:
    """A boolean tensor operand (torch.where still takes a deprecated uint8
    condition, which the dialect does not represent: left alone)."""
    t = tensor(value)
    element = t.type.element_type  # type: ignore[attr-defined]
    skip_unless(isinstance(element, IntegerType) and element.width.data == 1)
    return t


@function("torch.where", *aten("where.self", "where.ScalarOther"))
def _where(r: Raiser, condition, input, other):
    # where(cond, scalar, x) (aten where.ScalarSelf) is left alone: the op
    # holds a tensor input and a tensor or scalar other
    cond, x = bool_tensor(condition), tensor(input)
    rhs = other if isinstance(other, SSAValue) else lit_scalar(other)
    if isinstance(rhs, SSAValue):
        rhs = tensor(rhs)
    return T.WhereOp(cond, x, rhs, result_type=r.out_tensor())


@method("where")
def _where_method(r: Raiser, self, condition, other):
    return _where(r, condition, self, other)


@function("torch.masked_fill", *aten("masked_fill.Scalar"))
@method("masked_fill")
def _masked_fill(r: Raiser, input, mask, value):
    # a 0-d tensor value (aten masked_fill.Tensor) is left alone
    return T.MaskedFillOp(tensor(input), bool_tensor(mask), lit_scalar(value),
                          result_type=r.out_tensor())


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------


def _reduce(r: Raiser, cls: type, input, dim, keepdim, dtype):
    x = tensor(input)
    keep = lit_bool(keepdim)
    if dim is None or (isinstance(dim, list | tuple) and not dim):
        skip_unless(not keep)  # sum over everything: no keepdim form
        dims: list[int] = []
    else:
        dims = sorted(canon_dims(int_or_ints(dim), rank(x)))
    return cls(x, dims, keep, opt_dtype(dtype), result_type=r.out_tensor())


@function("torch.sum", *aten("sum.default", "sum.dim_IntList"))
@method("sum")
def _sum(r: Raiser, input, dim=None, keepdim=False, *, dtype=None):
    return _reduce(r, T.SumOp, input, dim, keepdim, dtype)


@function("torch.mean", *aten("mean.default", "mean.dim"))
@method("mean")
def _mean(r: Raiser, input, dim=None, keepdim=False, *, dtype=None):
    return _reduce(r, T.MeanOp, input, dim, keepdim, dtype)


