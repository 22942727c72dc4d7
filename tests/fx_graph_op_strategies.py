"""General generated FX programs (`fx_graph_strategies.fx_programs`): the op
generators (splits, unbinds, cats and stacks, views, linears, layer norms,
unary and binary ops, reductions, in-place writes, unknown calls), each
drawing what it needs and adding nodes through the `Builder`, the `OPS`
table, and the `fx_programs()` strategy with its drawn outputs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from hypothesis import strategies as st

from fx_graph_builder import Builder, Val
from fx_graph_check import FxProgram
from fx_graph_values import (
    FLOAT_DTYPES,
    INT_DTYPES,
    fuzz_helper,
    fuzz_scale_,
    layer_norm_module,
    linear_module,
    tensor,
)

# ---------------------------------------------------------------------------
# Op generators: each draws what it needs and adds nodes through the builder
# ---------------------------------------------------------------------------

DrawFn = Callable[[Any], Any]


def _pick(draw: DrawFn, b: Builder, pred: Callable[[Val], bool] = lambda v: True) -> Val | None:
    """A pool value (the most recent ones first, so shrinking chains ops)."""
    candidates = [v for v in reversed(b.pool) if pred(v)]
    if not candidates:
        return None
    return candidates[draw(st.integers(0, len(candidates) - 1))]


def _dim(draw: DrawFn, rank: int, negative: bool = True) -> int:
    d = draw(st.integers(0, rank - 1))
    return d - rank if negative and draw(st.booleans()) else d


def _composition(draw: DrawFn, n: int) -> list[int]:
    """Random positive sizes summing to n."""
    sizes, left = [], n
    while left > 0:
        k = draw(st.integers(1, left))
        sizes.append(k)
        left -= k
    return sizes


def _is_float(v: Val) -> bool:
    return v.value.dtype.is_floating_point


def op_split(draw: DrawFn, b: Builder) -> None:
    x = _pick(draw, b, lambda v: v.value.dim() >= 1)
    if x is None:
        return
    rank = x.value.dim()
    dim = _dim(draw, rank)
    n = x.value.shape[dim]
    how = draw(st.integers(0, 3))
    if how <= 1:  # equal pieces: what batch fusion groups
        sizes: int | list[int] = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    elif how == 2:
        sizes = draw(st.integers(1, n))
    else:
        sizes = _composition(draw, n)
    spelling = draw(st.sampled_from(["function", "method", "method_positional", "chunk"]))
    if spelling == "function":
        made = b.node("call_function", torch.split, (x.node, sizes), {"dim": dim})
    elif spelling == "method":
        made = b.node("call_method", "split", (x.node, sizes), {"dim": dim})
    elif spelling == "chunk":
        made = b.node("call_method", "chunk", (x.node, draw(st.integers(1, n)), dim))
    else:
        made = b.node("call_method", "split", (x.node, sizes, dim))
    if made is None:
        return
    _take_pieces(draw, b, made, dim % rank)


def _take_pieces(draw: DrawFn, b: Builder, made: tuple[torch.fx.Node, Any], dim: int) -> None:
    node, pieces = made
    count = len(pieces)
    how = draw(st.sampled_from(["all", "all", "some", "whole"]))
    if how == "whole":  # the tuple used whole by a cat/stack
        join = draw(st.sampled_from([torch.cat, torch.stack]))
        b.node("call_function", join, (node,), {"dim": dim} if draw(st.booleans()) else {})
        return
    indices = list(range(count))
    if how == "some":
        indices = sorted(set(draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=count))))
    if draw(st.booleans()):
        indices = indices[::-1]
    members = []
    for i in indices:
        index = i - count if draw(st.integers(0, 3)) == 0 else i
        got = b.node("call_function", operator.getitem, (node, index))
        if got is not None:
            members.append(b.pool[-1])
    if len(members) >= 2:
        b.groups.append((members, dim))


def op_unbind(draw: DrawFn, b: Builder) -> None:
    x = _pick(draw, b, lambda v: v.value.dim() >= 1 and v.value.shape[0] <= 8)
    if x is None:
        return
    rank = x.value.dim()
    dim = _dim(draw, rank)
    if draw(st.booleans()):
        made = b.node("call_function", torch.unbind, (x.node,), {"dim": dim})
    else:
        made = b.node("call_method", "unbind", (x.node, dim))
    if made is None:
        return
    node, pieces = made
    members = []
    for i in range(len(pieces)):
        if draw(st.integers(0, 4)) == 0:
            continue
        if b.node("call_function", operator.getitem, (node, i)) is not None:
            members.append(b.pool[-1])
    if len(members) >= 2:
        b.groups.append((members, -(dim % rank) - 2))  # stack them back at `dim`


def _join_group(draw: DrawFn, b: Builder) -> None:
    """cat/stack over (a reordered subset of) a sibling group."""
    if not b.groups:
        return
    members, dim = b.groups[draw(st.integers(0, len(b.groups) - 1))]
    chosen = list(members)
    if draw(st.booleans()):
        chosen = draw(st.permutations(chosen))
    if draw(st.booleans()) and len(chosen) > 1:
        chosen = chosen[: draw(st.integers(1, len(chosen)))]
    nodes = [m.node for m in chosen]
    if dim <= -2:  # unbind pieces: stack at the unbound dim
        b.node("call_function", torch.stack, (nodes,), {"dim": -dim - 2})
        return
    rank = chosen[0].value.dim()
    join = draw(st.sampled_from([torch.cat, torch.cat, torch.stack, torch.concat]))
    if join is torch.stack or rank == 0:
        d = draw(st.integers(0, rank))
        b.node("call_function", torch.stack, (nodes, d))
        return
    d = dim if draw(st.integers(0, 3)) else draw(st.integers(0, rank - 1))
    d = d - rank if draw(st.booleans()) else d
    if draw(st.booleans()):
        b.node("call_function", join, (nodes,), {"dim": d})
    else:
        b.node("call_function", join, (nodes, d))


def op_join(draw: DrawFn, b: Builder) -> None:
    if b.groups and draw(st.integers(0, 3)):
        _join_group(draw, b)
        return
    x = _pick(draw, b)
    if x is None:
        return
    same = [v for v in b.pool if v.value.shape == x.value.shape]
    extra = draw(st.lists(st.integers(0, len(same) - 1), max_size=3))
    nodes = [x.node] + [same[i].node for i in extra]
    rank = x.value.dim()
    if draw(st.booleans()):
        b.node("call_function", torch.stack, (nodes,), {"dim": draw(st.integers(-rank - 1, rank))})
    elif rank >= 1:
        b.node("call_function", torch.cat, (nodes,), {"dim": _dim(draw, rank)})


def _factor(draw: DrawFn, n: int) -> list[int]:
    """A random factorization of n into 1..3 factors."""
    out = []
    while n > 1 and len(out) < 2:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divisors))
        out.append(d)
        n //= d
    out.append(n)
    return out


def op_view(draw: DrawFn, b: Builder) -> None:
    x = _pick(draw, b)
    if x is None:
        return
    v = x.value
    rank = v.dim()
    kind = draw(st.sampled_from([
        "view", "reshape", "flatten", "unflatten", "permute", "transpose", "squeeze",
        "unsqueeze", "getitem", "narrow", "movedim", "t", "view_fn",
    ]))
    if kind in ("view", "reshape", "view_fn"):
        shape = _factor(draw, v.numel())
        if draw(st.booleans()):
            shape[draw(st.integers(0, len(shape) - 1))] = -1
        if kind == "view_fn":
            b.node("call_function", torch.reshape, (x.node, tuple(shape)))
        elif draw(st.booleans()):
            b.node("call_method", kind, (x.node, *shape))
        else:
            b.node("call_method", kind, (x.node, tuple(shape)))
    elif kind == "flatten" and rank >= 1:
        start = draw(st.integers(0, rank - 1))
        end = draw(st.integers(start, rank - 1))
        if draw(st.booleans()):
            b.node("call_function", torch.flatten, (x.node, start, end - rank))
        else:
            b.node("call_method", "flatten", (x.node,), {"start_dim": start})
    elif kind == "unflatten" and rank >= 1:
        dim = _dim(draw, rank)
        b.node("call_method", "unflatten", (x.node, dim, tuple(_factor(draw, v.shape[dim]))))
    elif kind == "permute" and rank >= 1:
        order = draw(st.permutations(range(rank)))
        if draw(st.booleans()):
            b.node("call_method", "permute", (x.node, *order))
        else:
            b.node("call_function", torch.permute, (x.node, tuple(order)))
    elif kind == "transpose" and rank >= 1:
        b.node("call_method", "transpose", (x.node, _dim(draw, rank), _dim(draw, rank)))
    elif kind == "t" and rank == 2:
        b.node("call_method", "t", (x.node,))
    elif kind == "squeeze":
        ones = [d for d in range(rank) if v.shape[d] == 1]
        if ones and draw(st.booleans()):
            b.node("call_method", "squeeze", (x.node, draw(st.sampled_from(ones))))
        else:
            b.node("call_function", torch.squeeze, (x.node,))
    elif kind == "unsqueeze":
        b.node("call_method", "unsqueeze", (x.node, draw(st.integers(-rank - 1, rank))))
    elif kind == "getitem" and rank >= 1:
        index: list[Any] = []
        for d in range(draw(st.integers(1, rank))):
            n = v.shape[d]
            choice = draw(st.integers(0, 4))
            if choice == 0:
                index.append(draw(st.integers(-n, n - 1)))
            elif choice == 1:
                index.append(slice(None))
            elif choice == 2:
                index.append(None)
            else:
                start = draw(st.integers(0, n - 1))
                stop = draw(st.integers(start + 1, n + 1))
                step = draw(st.sampled_from([None, 1, 2]))
                index.append(slice(start, stop, step))
        if draw(st.integers(0, 3)) == 0:
            index.insert(0, Ellipsis) if rank > len(index) else None
        b.node("call_function", operator.getitem,
               (x.node, tuple(index) if len(index) != 1 or draw(st.booleans()) else index[0]))
    elif kind == "narrow" and rank >= 1:
        dim = _dim(draw, rank)
        n = v.shape[dim]
        start = draw(st.integers(0, n - 1))
        length = draw(st.integers(1, n - start))
        if draw(st.booleans()):
            b.node("call_method", "narrow", (x.node, dim, start, length))
        else:
            b.node("call_function", torch.narrow, (x.node, dim, start, length))
    elif kind == "movedim" and rank >= 1:
        b.node("call_function", torch.movedim, (x.node, _dim(draw, rank), _dim(draw, rank)))


def _sibling_apply(draw: DrawFn, b: Builder, members: list[Val],
                   make: Callable[[Val, int], Any]) -> None:
    """Apply the same op to every member of a group (batch fusion's input)."""
    results = []
    for i, m in enumerate(members):
        before = len(b.pool)
        make(m, i)
        if len(b.pool) > before:
            results.append(b.pool[-1])
    if len(results) >= 2:
        b.groups.append((results, -1))


def _targets(draw: DrawFn, b: Builder) -> list[Val]:
    """One value, or every member of a sibling group (most of the time)."""
    if b.groups and draw(st.integers(0, 3)):
        members, _ = b.groups[draw(st.integers(0, len(b.groups) - 1))]
        return members
    x = _pick(draw, b)
    return [] if x is None else [x]


def op_linear(draw: DrawFn, b: Builder) -> None:
    members = [m for m in _targets(draw, b) if _is_float(m) and m.value.dim() >= 1]
    if not members:
        return
    out = draw(st.integers(1, 8))
    bias = draw(st.booleans())
    as_module = draw(st.booleans())
    grad = draw(st.booleans())
    seed = draw(st.integers(0, 1000))

    def make(m: Val, i: int) -> None:
        dtype, k = m.value.dtype, m.value.shape[-1]
        if as_module:
            src = (f"fx_graph_strategies.linear_module({k}, {out}, bias={bias}, dtype={dtype}, "
                   f"seed={seed + 10 * i}, requires_grad={grad})")
            name = b.add_module(linear_module(k, out, bias, dtype, seed + 10 * i, grad), src)
            b.node("call_module", name, (m.node,), moves_data=False)
            return
        w = b.node("get_attr", b.add_parameter((out, k), dtype, seed + 10 * i, grad), keep=False)
        bb = None
        if bias:
            bb = b.node("get_attr", b.add_parameter((out,), dtype, seed + 10 * i + 1, grad), keep=False)
        args = (m.node, w[0]) if w else None
        if args is None:
            return
        if bb is not None and draw(st.booleans()):
            b.node("call_function", F.linear, args, {"bias": bb[0]}, moves_data=False)
        elif bb is not None:
            b.node("call_function", F.linear, (*args, bb[0]), moves_data=False)
        else:
            b.node("call_function", F.linear, args, moves_data=False)

    _sibling_apply(draw, b, members, make)


def op_layer_norm(draw: DrawFn, b: Builder) -> None:
    members = [m for m in _targets(draw, b) if _is_float(m) and m.value.dim() >= 1]
    if not members:
        return
    ndims = draw(st.integers(1, 2))
    affine = draw(st.sampled_from(["none", "weight", "both"]))
    as_module = draw(st.booleans())
    eps = draw(st.sampled_from([1e-5, 1e-6, 0.1]))
    seed = draw(st.integers(0, 1000))
    grad = draw(st.booleans())

    def make(m: Val, i: int) -> None:
        shape = tuple(m.value.shape[-min(ndims, m.value.dim()):])
        dtype = m.value.dtype
        if as_module:
            aff = affine != "none"
            src = (f"fx_graph_strategies.layer_norm_module({shape!r}, affine={aff}, eps={eps}, "
                   f"dtype={dtype}, seed={seed + 10 * i}, requires_grad={grad})")
            name = b.add_module(layer_norm_module(shape, aff, eps, dtype, seed + 10 * i, grad), src)
            b.node("call_module", name, (m.node,), moves_data=False)
            return
        kwargs: dict[str, Any] = {"eps": eps}
        if affine != "none":
            w = b.node("get_attr", b.add_parameter(shape, dtype, seed + 10 * i, grad), keep=False)
            kwargs["weight"] = w[0]
            if affine == "both":
                bias = b.node("get_attr", b.add_parameter(shape, dtype, seed + 10 * i + 1, grad),
                              keep=False)
                kwargs["bias"] = bias[0]
        b.node("call_function", F.layer_norm, (m.node, list(shape)), kwargs, moves_data=False)

    _sibling_apply(draw, b, members, make)


_UNARY: list[tuple[str, Any, tuple, dict]] = [
    ("call_function", torch.relu, (), {}),
    ("call_function", F.relu, (), {}),
    ("call_method", "relu", (), {}),
    ("call_function", F.gelu, (), {}),
    ("call_function", F.gelu, (), {"approximate": "tanh"}),
    ("call_function", torch.sigmoid, (), {}),
    ("call_method", "sigmoid", (), {}),
    ("call_function", torch.tanh, (), {}),
    ("call_function", F.silu, (), {}),
    ("call_function", torch.abs, (), {}),
    ("call_function", operator.neg, (), {}),
    ("call_function", torch.exp, (), {}),
    ("call_function", torch.nan_to_num, (), {}),
    ("call_function", torch.nan_to_num, (0.0, 1.0, -1.0), {}),
    ("call_method", "nan_to_num", (), {"nan": 2.0, "posinf": 100.0}),
    ("call_function", torch.clamp, (-0.5, 0.5), {}),
    ("call_method", "clamp", (-1,), {}),
    ("call_method", "clamp", (), {"max": 0.25}),
    ("call_function", torch.clamp_min, (0.1,), {}),
]


def op_unary(draw: DrawFn, b: Builder) -> None:
    members = _targets(draw, b)
    if not members:
        return
    kind, target, extra, kwargs = draw(st.sampled_from(_UNARY))

    def make(m: Val, i: int) -> None:
        b.node(kind, target, (m.node, *extra), dict(kwargs), moves_data=False)

    _sibling_apply(draw, b, members, make)


_SCALARS = st.sampled_from([2, -1, 0.5, 3.0, 1e-3])


def op_binary(draw: DrawFn, b: Builder) -> None:
    members = _targets(draw, b)
    if not members:
        return
    form = draw(st.sampled_from([
        "tensor", "scalar", "reversed", "alpha", "method", "rsub", "div_mode", "where",
    ]))
    op = draw(st.sampled_from(["add", "sub", "mul", "div"]))
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}[op]
    tfn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
    scalar = draw(_SCALARS)
    other_kind = draw(st.sampled_from(["same", "broadcast", "param", "buffer"]))
    seed = draw(st.integers(0, 1000))

    def other_for(m: Val) -> torch.fx.Node | None:
        shape = tuple(m.value.shape)
        if other_kind == "broadcast" and shape:
            shape = shape[-1:]
        if other_kind in ("param", "buffer"):
            if other_kind == "param":
                name = b.add_parameter(shape or (1,), m.value.dtype if _is_float(m) else torch.float32,
                                       seed, False)
            else:
                name = b.add_buffer(shape, m.value.dtype, seed)
            got = b.node("get_attr", name, keep=False)
            return None if got is None else got[0]
        same = [v for v in b.pool if tuple(v.value.shape) == shape and v is not m]
        if same:
            return same[draw(st.integers(0, len(same) - 1))].node
        return m.node

    def make(m: Val, i: int) -> None:
        if form == "tensor":
            other = other_for(m)
            if other is not None:
                b.node("call_function", fn, (m.node, other), moves_data=False)
        elif form == "scalar":
            b.node("call_function", fn, (m.node, scalar), moves_data=False)
        elif form == "reversed":
            b.node("call_function", fn, (scalar, m.node), moves_data=False)
        elif form == "alpha" and op in ("add", "sub"):
            other = other_for(m)
            if other is not None:
                b.node("call_function", tfn, (m.node, other), {"alpha": scalar}, moves_data=False)
        elif form == "method":
            b.node("call_method", op, (m.node, scalar), moves_data=False)
        elif form == "rsub":
            b.node("call_function", torch.rsub, (m.node, scalar), moves_data=False)
        elif form == "div_mode":
            mode = draw(st.sampled_from(["trunc", "floor"]))
            b.node("call_function", torch.div, (m.node, scalar), {"rounding_mode": mode},
                   moves_data=False)
        elif form == "where":
            cond = b.node("call_function", operator.gt, (m.node, 0), moves_data=False, keep=False)
            if cond is not None:
                b.node("call_function", torch.where, (cond[0], m.node, scalar), moves_data=False)

    _sibling_apply(draw, b, members, make)


def op_reduce(draw: DrawFn, b: Builder) -> None:
    x = _pick(draw, b, lambda v: v.value.dim() >= 1)
    if x is None:
        return
    rank = x.value.dim()
    fn = draw(st.sampled_from(["sum", "mean"]))
    dims = sorted(set(draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=2))))
    if len({d % rank for d in dims}) != len(dims):
        dims = dims[:1]
    keepdim = draw(st.booleans())
    dim_arg: Any = dims[0] if len(dims) == 1 and draw(st.booleans()) else dims
    if draw(st.booleans()):
        b.node("call_method", fn, (x.node, dim_arg), {"keepdim": keepdim}, moves_data=False)
    elif draw(st.integers(0, 3)) == 0:
        b.node("call_function", getattr(torch, fn), (x.node,), moves_data=False)
    else:
        kwargs: dict[str, Any] = {"keepdim": keepdim}
        if draw(st.integers(0, 3)) == 0:
            kwargs["dtype"] = torch.float64
        b.node("call_function", getattr(torch, fn), (x.node, dim_arg), kwargs, moves_data=False)


def op_inplace(draw: DrawFn, b: Builder) -> None:
    """An in-place write to an intermediate, an input or a buffer."""
    where = draw(st.sampled_from(["pool", "input", "buffer"]))
    if where == "buffer":
        x = _pick(draw, b)
        if x is None:
            return
        name = b.add_buffer(tuple(x.value.shape), x.value.dtype, draw(st.integers(0, 1000)))
        got = b.node("get_attr", name)
        if got is None:
            return
        target = b.pool[-1]
    elif where == "input":
        target = b.input_vals[draw(st.integers(0, len(b.input_vals) - 1))]
    else:
        target = _pick(draw, b)
        if target is None:
            return
    kind = draw(st.sampled_from(["add_", "add_tensor", "mul_", "relu_", "relu_fn", "helper",
                                 "iadd"]))
    if kind == "add_":
        b.node("call_method", "add_", (target.node, draw(_SCALARS)), moves_data=False)
    elif kind == "add_tensor":
        same = [v for v in b.pool if v.value.shape == target.value.shape and v is not target]
        other = same[draw(st.integers(0, len(same) - 1))].node if same else target.node
        b.node("call_method", "add_", (target.node, other), {"alpha": 2}
               if draw(st.booleans()) else {}, moves_data=False)
    elif kind == "mul_":
        b.node("call_method", "mul_", (target.node, draw(_SCALARS)), moves_data=False)
    elif kind == "relu_":
        b.node("call_method", "relu_", (target.node,), moves_data=False)
    elif kind == "relu_fn":
        b.node("call_function", F.relu, (target.node,), {"inplace": True}, moves_data=False)
    elif kind == "iadd":
        b.node("call_function", operator.iadd, (target.node, 1), moves_data=False)
    else:
        b.node("call_function", fuzz_scale_, (target.node,), moves_data=False)


def op_unknown(draw: DrawFn, b: Builder) -> None:
    x = _pick(draw, b)
    if x is None:
        return
    kind = draw(st.sampled_from(["cumsum", "helper", "to", "clone", "contiguous"]))
    if kind == "cumsum" and x.value.dim() >= 1:
        b.node("call_function", torch.cumsum, (x.node, _dim(draw, x.value.dim())), moves_data=False)
    elif kind == "helper":
        b.node("call_function", fuzz_helper, (x.node,), moves_data=False)
    elif kind == "to":
        dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES))
        b.node("call_method", "to", (x.node, dtype), moves_data=x.value.dtype == dtype)
    elif kind == "clone":
        b.node("call_method", "clone", (x.node,))
    else:
        b.node("call_method", "contiguous", (x.node,))


OPS: dict[str, Callable[[DrawFn, Builder], None]] = {
    "split": op_split,
    "unbind": op_unbind,
    "join": op_join,
    "view": op_view,
    "linear": op_linear,
    "layer_norm": op_layer_norm,
    "unary": op_unary,
    "binary": op_binary,
    "reduce": op_reduce,
    "inplace": op_inplace,
    "unknown": op_unknown,
}

DATA_MOVEMENT_OPS = ("split", "unbind", "join", "view")


@st.composite
def fx_programs(draw: DrawFn, max_ops: int = 12, data_movement: bool | None = None) -> FxProgram:
    """A valid GraphModule with inputs and seeded parameters (see the module
    docstring). `data_movement=True` draws only data-moving ops (and int
    dtypes); False never restricts; None picks either."""
    if data_movement is None:
        data_movement = draw(st.integers(0, 3)) == 0
    b = Builder()
    inputs_source = []
    if data_movement:
        dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES + (torch.bool,)))
    else:
        dtype = draw(st.sampled_from([torch.float32] * 4 + [torch.float64, torch.bfloat16, torch.float16]))
    for i in range(draw(st.integers(1, 3))):
        shape = tuple(draw(st.lists(st.integers(1, 8), min_size=1, max_size=4)))
        if i and draw(st.booleans()):
            shape = tuple(b.inputs[0].shape)
        seed = draw(st.integers(0, 2**16))
        special = dtype.is_floating_point and not data_movement and draw(st.integers(0, 7)) == 0
        if dtype is torch.bool:
            value = tensor(shape, torch.int64, seed) > 0
            src = f"fx_graph_strategies.tensor({shape!r}, torch.int64, seed={seed}) > 0"
        else:
            value = tensor(shape, dtype, seed, special)
            src = f"fx_graph_strategies.tensor({shape!r}, {dtype}, seed={seed}, special={special})"
        b.placeholder(value, src)
        inputs_source.append(src)

    names = list(DATA_MOVEMENT_OPS) if data_movement else list(OPS)
    # weights that favour what the passes rewrite
    weighted = names + ["split", "join", "view"] + ([] if data_movement else ["linear", "unary", "layer_norm"])
    for _ in range(draw(st.integers(1, max_ops))):
        OPS[draw(st.sampled_from(weighted))](draw, b)

    b.output(_draw_outputs(draw, b))
    gm = torch.fx.GraphModule(b.owner, b.graph)
    return FxProgram(gm, b.inputs, b.data_movement_only, b.source(inputs_source), b.ops)


def _draw_outputs(draw: DrawFn, b: Builder) -> Any:
    """1..4 values, in a tuple, list, dict or alone; sometimes an input, a
    view of an input, or one value twice."""
    leaves: list[torch.fx.Node] = []
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.integers(0, 9))
        if choice == 0:
            leaves.append(b.input_vals[draw(st.integers(0, len(b.input_vals) - 1))].node)
        elif choice == 1:
            x = b.input_vals[draw(st.integers(0, len(b.input_vals) - 1))]
            got = b.node("call_method", "view", (x.node, -1))
            if got is not None:
                leaves.append(got[0])
        elif choice == 2 and leaves:
            leaves.append(leaves[-1])
        else:
            x = _pick(draw, b)
            if x is not None:
                leaves.append(x.node)
    if not leaves:
        leaves.append(b.pool[-1].node)
    shape = draw(st.sampled_from(["tuple", "tuple", "list", "dict", "single", "nested"]))
    if shape == "single" or (shape == "nested" and len(leaves) < 2):
        return leaves[0] if len(leaves) == 1 else tuple(leaves)
    if shape == "list":
        return list(leaves)
    if shape == "dict":
        return {f"out{i}": v for i, v in enumerate(leaves)}
    if shape == "nested":
        return (leaves[0], tuple(leaves[1:]))
    return tuple(leaves)
