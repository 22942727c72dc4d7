"""Fusion-rich generated FX programs (issue 19;
`fx_graph_strategies.fusion_programs`): N parallel members through levels
of the same op per member (linears, layer norms, unary ops, scalars, clamps
at +-0.0, tensor operands, transposes, in-place writes), the layers that
draw them, and the generator features that hit known bugs
(`KNOWN_BUG_FEATURES`, `feature_enabled`).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from hypothesis import strategies as st

from fx_graph_builder import Builder, Val
from fx_graph_check import FxProgram
from fx_graph_op_strategies import DrawFn
from fx_graph_values import input_tensor, layer_norm_module, linear_module

# ---------------------------------------------------------------------------
# Fusion-rich programs (issue 19): parallel members for batch fusion
# ---------------------------------------------------------------------------

KNOWN_BUG_FEATURES: frozenset[str] = frozenset()
"""Generator features that hit a known bug not fixed yet: each is off while
named here, so that CI stays green until the fix lands. Every feature
(int-float-scalars, signed-zero-clamp, transposed-members, ragged-linears,
triton-nan, triton-strided, triton-signed-zero) found an issue-19 bug that is
fixed now, so none is off. `FUZZ_KNOWN_BUGS=1` turns every feature on
regardless (to reproduce a bug)."""


def feature_enabled(name: str) -> bool:
    """Whether the generator may use a feature of `KNOWN_BUG_FEATURES`."""
    return name not in KNOWN_BUG_FEATURES or os.environ.get("FUZZ_KNOWN_BUGS") == "1"


RAGGED_WIDTHS = (8, 12, 16)
"""Linear output widths interleaved over the members of a ragged group."""

_EXACT_UNARY: list[tuple[str, Any, tuple, dict]] = [
    ("call_function", torch.relu, (), {}),
    ("call_method", "relu", (), {}),
    ("call_function", F.relu, (), {}),
    ("call_function", torch.abs, (), {}),
    ("call_function", operator.neg, (), {}),
    ("call_function", torch.nan_to_num, (), {}),
    ("call_method", "nan_to_num", (), {"nan": 2.0, "posinf": 100.0}),
    ("call_function", torch.clamp, (-0.5, 0.5), {}),
    ("call_method", "clamp", (), {"max": 0.25}),
    ("call_function", torch.clamp_min, (0.1,), {}),
]
_ROUNDING_UNARY: list[tuple[str, Any, tuple, dict]] = [
    ("call_function", torch.sigmoid, (), {}),
    ("call_method", "sigmoid", (), {}),
    ("call_function", torch.tanh, (), {}),
    ("call_function", F.gelu, (), {}),
    ("call_function", F.gelu, (), {"approximate": "tanh"}),
    ("call_function", F.silu, (), {}),
    ("call_function", torch.exp, (), {}),
]
_INT_UNARY: list[tuple[str, Any, tuple, dict]] = [
    ("call_function", torch.abs, (), {}),
    ("call_function", operator.neg, (), {}),
    ("call_function", torch.clamp, (-2, 3), {}),
    ("call_method", "clamp", (), {"min": 0}),
]


class _Fusion:
    """State of one fusion-rich program being drawn: the builder and the
    current parallel members (the previous level's results)."""

    def __init__(self, draw: DrawFn, b: Builder) -> None:
        self.draw = draw
        self.b = b
        self.seed = 0
        self.joins: list[torch.fx.Node] = []  # cats of a level's results, returned too
        # no cat of members once widths interleave, while that crashes
        # lower-batch (KNOWN_BUG_FEATURES "ragged-linears")
        self.may_join = True

    def next_seed(self) -> int:
        self.seed += 17
        return self.seed

    def join(self, members: list[Val]) -> None:
        """A cat of `members` along the last dim, returned with the outputs
        (lower-batch turns a cat of fused members into one view)."""
        if not self.may_join:
            return
        got = self.b.node("call_function", torch.cat, ([m.node for m in members], -1), keep=False)
        if got is not None:
            self.joins.append(got[0])

    def apply(self, members: list[Val], make: Callable[[Val, int], Any]) -> list[Val]:
        """`make(member, i)` for every member; the members that produced a
        value, replaced by it (the others dropped)."""
        out = []
        for i, m in enumerate(members):
            before = len(self.b.pool)
            make(m, i)
            if len(self.b.pool) > before:
                out.append(self.b.pool[-1])
        return out


def _fusion_members(f: _Fusion, dtype: torch.dtype) -> list[Val]:
    """Inputs and the parallel members cut from them: pieces of a split or
    chunk (along the last or the first dim), of an unbind, or separate
    inputs; inputs contiguous, transposed or expanded (stride 0), with
    nan/inf/-0.0 sometimes."""
    draw, b = f.draw, f.b
    # hypothesis favours the first choice of a sampled_from (and the low end
    # of an integer range): the first choices here are the fusion-rich ones
    n = draw(st.sampled_from([4, 8, 2, 3, 4, 6, 8, 8]))  # the cost model wants several
    width = draw(st.sampled_from([1, 2, 4, 4, 8, 8, 16]))
    rows = draw(st.integers(1, 6))
    source = draw(st.sampled_from(["split-last", "split-last", "split-first", "chunk", "unbind",
                                   "inputs", "inputs"]))
    layouts = ["contiguous", "contiguous", "contiguous", "expanded"]
    if feature_enabled("transposed-members"):
        layouts.append("transposed")
    layout = draw(st.sampled_from(layouts))
    special = dtype.is_floating_point and draw(st.sampled_from([False, False, True]))

    def add_input(shape: tuple[int, ...]) -> Val:
        seed = draw(st.integers(0, 2**16))
        value = input_tensor(shape, dtype, seed, special, layout)
        if layout != "contiguous":
            b.features.add(f"{layout} input")
        if special:
            b.features.add("nan/inf/-0.0 input")
        return b.placeholder(
            value, f"fx_graph_strategies.input_tensor({shape!r}, {dtype}, seed={seed}, "
                   f"special={special}, layout={layout!r})")

    if source == "inputs":
        n = min(n, 6)
        return [add_input((rows, width)) for _ in range(n)]
    if source == "unbind":
        x = add_input((n, rows, width))
        made = b.node("call_method", "unbind", (x.node, 0))
    elif source == "split-first":
        x = add_input((n * rows, width))
        made = b.node("call_function", torch.split, (x.node, rows), {"dim": 0})
    elif source == "chunk":
        x = add_input((rows, n * width))
        made = b.node("call_method", "chunk", (x.node, n, -1))
    else:
        x = add_input((rows, n * width))
        made = b.node("call_method", "split", (x.node, width), {"dim": -1})
    if made is None:
        return [x]
    members = []
    for i in range(len(made[1])):
        if b.node("call_function", operator.getitem, (made[0], i)) is not None:
            members.append(b.pool[-1])
    if draw(st.sampled_from([False] * 9 + [True])):  # an input written in place: nothing fuses
        kind = draw(st.sampled_from(["mul_", "add_"]))
        if b.node("call_method", kind, (x.node, 2), moves_data=False) is not None:
            b.features.add("in-place input")
    return members


def _linear_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """One linear per member: separate or shared weights, equal or ragged
    output widths, as modules or `F.linear` on parameters; or a fan-out of
    several linears over each member (same input, `linear-shared-input`)."""
    draw, b = f.draw, f.b
    how = draw(st.sampled_from(["separate", "separate", "shared", "ragged", "fanout"]))
    bias = draw(st.booleans())
    as_module = how != "shared" and draw(st.booleans())
    grad = draw(st.booleans())
    out = draw(st.sampled_from([1, 4, 8, 8, 16]))
    b.features.add(f"linear {how}")
    b.reorders = True
    shared: dict[tuple, tuple[torch.fx.Node, torch.fx.Node | None]] = {}

    def linear(m: Val, width: int) -> None:
        dtype, k = m.value.dtype, m.value.shape[-1]
        seed = f.next_seed()
        if as_module:
            src = (f"fx_graph_strategies.linear_module({k}, {width}, bias={bias}, dtype={dtype}, "
                   f"seed={seed}, requires_grad={grad})")
            name = b.add_module(linear_module(k, width, bias, dtype, seed, grad), src)
            b.node("call_module", name, (m.node,), moves_data=False, reorders=True)
            return
        key = (k, width, dtype)
        if how != "shared" or key not in shared:
            w = b.node("get_attr", b.add_parameter((width, k), dtype, seed, grad), keep=False)
            bb = b.node("get_attr", b.add_parameter((width,), dtype, seed + 1, grad),
                        keep=False) if bias else None
            if w is None:
                return
            shared[key] = (w[0], None if bb is None else bb[0])
        weight, bias_node = shared[key]
        args = (m.node, weight) if bias_node is None else (m.node, weight, bias_node)
        b.node("call_function", F.linear, args, moves_data=False, reorders=True)

    if how == "fanout":
        ragged = feature_enabled("ragged-linears") and draw(st.booleans())
        if ragged:
            b.features.add("ragged linear fan-out")
        count = draw(st.integers(2, 6))
        sources = members[: max(1, 8 // count)]
        results = []
        for m in sources:
            results += f.apply([m] * count, lambda v, i: linear(
                v, RAGGED_WIDTHS[i % len(RAGGED_WIDTHS)] if ragged else out))
        if ragged and draw(st.booleans()):
            f.join(results)  # the cat of interleaved widths lower-batch rewrites
        return results
    if how == "ragged":
        f.may_join &= feature_enabled("ragged-linears")
        return f.apply(members, lambda m, i: linear(m, RAGGED_WIDTHS[i % len(RAGGED_WIDTHS)]))
    return f.apply(members, lambda m, i: linear(m, out))


def _layer_norm_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """One layer norm per member over the last dim(s): no affine, weight,
    weight and bias; separate or shared parameters; module or functional."""
    draw, b = f.draw, f.b
    ndims = draw(st.sampled_from([1, 1, 2]))
    affine = draw(st.sampled_from(["none", "weight", "both", "both"]))
    shared_params = draw(st.booleans())
    as_module = not shared_params and draw(st.booleans())
    eps = draw(st.sampled_from([1e-5, 1e-5, 0.1]))
    grad = draw(st.booleans())
    b.features.add("layer_norm")
    b.reorders = True
    shared: dict[tuple, dict[str, Any]] = {}

    def make(m: Val, i: int) -> None:
        shape = tuple(m.value.shape[-min(ndims, m.value.dim()):])
        dtype = m.value.dtype
        seed = f.next_seed()
        if as_module:
            aff = affine != "none"
            src = (f"fx_graph_strategies.layer_norm_module({shape!r}, affine={aff}, eps={eps}, "
                   f"dtype={dtype}, seed={seed}, requires_grad={grad})")
            name = b.add_module(layer_norm_module(shape, aff, eps, dtype, seed, grad), src)
            b.node("call_module", name, (m.node,), moves_data=False, reorders=True)
            return
        key = (shape, dtype)
        if not shared_params or key not in shared:
            kwargs: dict[str, Any] = {"eps": eps}
            if affine != "none":
                kwargs["weight"] = b.node(
                    "get_attr", b.add_parameter(shape, dtype, seed, grad), keep=False)[0]
            if affine == "both":
                kwargs["bias"] = b.node(
                    "get_attr", b.add_parameter(shape, dtype, seed + 1, grad), keep=False)[0]
            shared[key] = kwargs
        b.node("call_function", F.layer_norm, (m.node, list(shape)), dict(shared[key]),
               moves_data=False, reorders=True)

    return f.apply(members, make)


def _unary_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """One unary op per member: all the same, or two alternating."""
    draw, b = f.draw, f.b
    is_int = not members[0].value.dtype.is_floating_point
    table = _INT_UNARY if is_int else _EXACT_UNARY + _ROUNDING_UNARY
    first = draw(st.sampled_from(table))
    second = draw(st.sampled_from(table)) if draw(st.integers(0, 3)) == 0 else first
    b.features.add("unary")

    def make(m: Val, i: int) -> None:
        kind, target, extra, kwargs = first if i % 2 == 0 else second
        rounding = (kind, target, extra, kwargs) in _ROUNDING_UNARY
        b.node(kind, target, (m.node, *extra), dict(kwargs), moves_data=False, reorders=rounding)

    return f.apply(members, make)


def _scalar_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """A binary op with a Python scalar per member, in every spelling; the
    scalar is an int or a float (`q * 2` vs `q * 2.0`), the same for every
    member or alternating between the int and the float of one value."""
    draw, b = f.draw, f.b
    op = draw(st.sampled_from(["add", "sub", "mul", "mul", "div"]))
    value = draw(st.sampled_from([2, 3, -1, 0]))
    if op == "div" and value == 0:
        value = 2
    spelling = draw(st.sampled_from(["operator", "reversed", "torch", "method"]))
    is_int = not members[0].value.dtype.is_floating_point
    mix = draw(st.sampled_from(["int", "float", "mixed"]))
    if mix == "mixed" and is_int and not feature_enabled("int-float-scalars"):
        mix = "int"
    if mix == "mixed":
        b.features.add("int and float scalars" + (" on int" if is_int else ""))
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}[op]
    tfn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
    b.reorders |= op == "div"  # torch divides by a scalar through its reciprocal

    def make(m: Val, i: int) -> None:
        scalar: int | float = value
        if mix == "float" or (mix == "mixed" and i % 2):
            scalar = float(value)
        if spelling == "operator":
            b.node("call_function", fn, (m.node, scalar), moves_data=False)
        elif spelling == "reversed" and op != "div":
            b.node("call_function", fn, (scalar, m.node), moves_data=False)
        elif spelling == "torch":
            b.node("call_function", tfn, (m.node, scalar), moves_data=False)
        else:
            b.node("call_method", op, (m.node, scalar), moves_data=False)

    return f.apply(members, make)


def _clamp_zero_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """clamp(min=0.0) or clamp(min=-0.0) per member (the sign of the zero
    is observable), sometimes followed by 1/x, which makes it +-inf."""
    draw, b = f.draw, f.b
    mixed = feature_enabled("signed-zero-clamp") and draw(st.booleans())
    negative = draw(st.booleans())
    if mixed:
        b.features.add("clamp(min=0.0) and clamp(min=-0.0)")
    if mixed or negative:
        b.features.add("clamp(min=-0.0)")
    results = f.apply(members, lambda m, i: b.node(
        "call_method", "clamp", (m.node,),
        {"min": -0.0 if (negative if not mixed else i % 2) else 0.0}, moves_data=False))
    if draw(st.booleans()):
        results = f.apply(results, lambda m, i: b.node(
            "call_function", torch.reciprocal, (m.node,), moves_data=False, reorders=True))
    return results


def _tensor_binary_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """A binary op with a tensor per member: its own parameter (full or
    broadcast), one shared buffer, the next member, `alpha`, or a `where`."""
    draw, b = f.draw, f.b
    form = draw(st.sampled_from(["param", "broadcast", "shared", "neighbour", "alpha", "where"]))
    op = draw(st.sampled_from([operator.add, operator.mul, operator.sub]))
    b.features.add(f"tensor binary {form}")
    shared: dict[tuple, torch.fx.Node] = {}

    def other(m: Val) -> torch.fx.Node | None:
        shape = tuple(m.value.shape)
        if form == "broadcast":
            shape = shape[-1:]
        key = (shape, m.value.dtype)
        if form == "shared" and key in shared:
            return shared[key]
        if m.value.dtype.is_floating_point and form != "shared":
            name = b.add_parameter(shape, m.value.dtype, f.next_seed(), False)
        else:
            name = b.add_buffer(shape, m.value.dtype, f.next_seed())
        got = b.node("get_attr", name, keep=False)
        if got is None:
            return None
        shared[key] = got[0]
        return got[0]

    def make(m: Val, i: int) -> None:
        if form == "neighbour":
            n = members[(i + 1) % len(members)]
            target = n.node if n.value.shape == m.value.shape else m.node
            b.node("call_function", op, (m.node, target), moves_data=False)
        elif form == "alpha":
            o = other(m)
            if o is not None:
                b.node("call_function", torch.add, (m.node, o), {"alpha": 2}, moves_data=False)
        elif form == "where":
            cond = b.node("call_function", operator.gt, (m.node, 0), moves_data=False, keep=False)
            if cond is not None:
                b.node("call_function", torch.where, (cond[0], m.node, 1), moves_data=False)
        else:
            o = other(m)
            if o is not None:
                b.node("call_function", op, (m.node, o), moves_data=False)

    return f.apply(members, make)


def _transpose_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """Every member transposed (a dense, non-contiguous view): the ops
    after it give eager results in that layout."""
    b = f.b
    b.features.add("transposed members")
    return f.apply(members, lambda m, i: b.node("call_method", "transpose", (m.node, -1, -2))
                   if m.value.dim() >= 2 else b.node("call_method", "t", (m.node,)))


def _inplace_layer(f: _Fusion, members: list[Val]) -> list[Val]:
    """An in-place write to one member or to every member (temporaries):
    the written members are barriers; the others still fuse."""
    draw, b = f.draw, f.b
    which = draw(st.sampled_from(["one", "all"]))
    kind = draw(st.sampled_from(["add_", "mul_", "relu_", "relu_fn", "iadd"]))
    b.features.add("in-place temporary")
    chosen = members if which == "all" else [members[draw(st.integers(0, len(members) - 1))]]
    for m in chosen:
        if kind == "add_":
            b.node("call_method", "add_", (m.node, 1), moves_data=False, keep=False)
        elif kind == "mul_":
            b.node("call_method", "mul_", (m.node, 2), moves_data=False, keep=False)
        elif kind == "relu_" and m.value.dtype.is_floating_point:
            b.node("call_method", "relu_", (m.node,), moves_data=False, keep=False)
        elif kind == "relu_fn" and m.value.dtype.is_floating_point:
            b.node("call_function", F.relu, (m.node,), {"inplace": True}, moves_data=False,
                   keep=False)
        elif kind == "iadd":
            b.node("call_function", operator.iadd, (m.node, 1), moves_data=False, keep=False)
    return members


_FLOAT_LAYERS: dict[str, Callable[[_Fusion, list[Val]], list[Val]]] = {
    "linear": _linear_layer,
    "layer_norm": _layer_norm_layer,
    "unary": _unary_layer,
    "scalar": _scalar_layer,
    "clamp-zero": _clamp_zero_layer,
    "tensor-binary": _tensor_binary_layer,
    "transpose": _transpose_layer,
    "inplace": _inplace_layer,
}
_FLOAT_WEIGHTS = ["linear"] * 4 + ["layer_norm"] * 2 + ["unary"] * 3 + ["scalar"] * 2 + [
    "clamp-zero", "clamp-zero", "tensor-binary", "tensor-binary", "transpose", "inplace"]
_INT_WEIGHTS = ["unary", "scalar", "scalar", "scalar", "tensor-binary", "inplace"]


@st.composite
def fusion_programs(draw: DrawFn, max_levels: int = 4) -> FxProgram:
    """A fusion-rich GraphModule: N parallel members (pieces of a split,
    chunk or unbind, or separate inputs) through 1..`max_levels` levels of
    the same op per member (linears with separate, shared or ragged weights
    and fan-outs, layer norms, unary ops, int and float scalars, clamps at
    +-0.0, tensor operands, transposes, in-place writes), then joined or
    returned. Features that hit known bugs are off while in
    `KNOWN_BUG_FEATURES`."""
    b = Builder()
    b.features.add("parallel members")
    f = _Fusion(draw, b)
    dtype = draw(st.sampled_from([torch.float32] * 5 + [torch.float64, torch.bfloat16,
                                                        torch.float16, torch.int64]))
    members = _fusion_members(f, dtype)
    first_members = list(members)
    weights = _FLOAT_WEIGHTS if dtype.is_floating_point else _INT_WEIGHTS
    if not feature_enabled("transposed-members"):
        weights = [w for w in weights if w != "transpose"]
    for level in range(draw(st.sampled_from([2, 1, *range(3, max_levels + 1)]))):
        if not members:
            break
        kind = draw(st.sampled_from(weights))
        if kind == "inplace" and level == 0:
            kind = "unary"  # the pieces are views of an input: a write would reach it
        if not members[0].value.dtype.is_floating_point and kind not in _INT_WEIGHTS:
            kind = "scalar"
        got = _FLOAT_LAYERS[kind](f, members)
        if len(got) >= 2 and draw(st.sampled_from([False] * 4 + [True])):
            f.join(got)
        members = got or members
    if not members:
        members = first_members
    outputs = _fusion_outputs(draw, b, members, f.may_join)
    if f.joins:
        outputs = (*(outputs if isinstance(outputs, tuple) else (outputs,)), *f.joins)
    b.output(outputs)
    gm = torch.fx.GraphModule(b.owner, b.graph)
    return FxProgram(gm, b.inputs, b.data_movement_only, b.source(
        [line.split("# ", 1)[1] for line in b.lines if "g.placeholder" in line]),
        b.ops, exact=not b.reorders, features=frozenset(b.features))


def _fusion_outputs(draw: DrawFn, b: Builder, members: list[Val], may_join: bool) -> Any:
    """The members in a tuple, a cat or stack of them, or their sum."""
    how = draw(st.sampled_from(["tuple", "tuple", "cat", "stack", "sum"]))
    if how == "cat" and not may_join:
        how = "tuple"
    nodes = [m.node for m in members]
    if how == "cat":
        got = b.node("call_function", torch.cat, (nodes,), {"dim": -1})
        if got is not None:
            return got[0]
    elif how == "stack":
        got = b.node("call_function", torch.stack, (nodes,))
        if got is not None:
            return got[0]
    elif how == "sum" and len(nodes) >= 2:
        total: torch.fx.Node | None = nodes[0]
        for node in nodes[1:]:
            got = b.node("call_function", operator.add, (total, node), moves_data=False)
            if got is None:
                break
            total = got[0]
        else:
            return total
    return tuple(nodes)
