"""Hypothesis strategies that generate valid torch.fx programs, and the
differential check every generated program must pass.

`fx_programs()` draws an `FxProgram`: a GraphModule built node by node with
`torch.fx.Graph` (no tracing), its owner's seeded parameters and buffers
(`get_attr` nodes, `nn.Linear`/`nn.LayerNorm` `call_module` nodes), seeded
example inputs, and whether the graph only moves data (then the optimized
module must give bit-identical outputs; otherwise the dtype tolerances of
`optimus_ir.pipeline.validation.tolerance_for`).

Every op is executed eagerly on build-time copies while the graph is built,
so the generated program is valid by construction: a draw torch rejects
(a view of a non-contiguous tensor, an in-place write to a multi-output
view that requires grad, a dtype an op does not support on this CPU) is
dropped from the graph instead of being rejected.

The drawn program's `repr` is Python source that rebuilds it with
`torch.fx.Graph` calls and the helpers below (`tensor`, `parameter`,
`linear_module`, `layer_norm_module`): hypothesis prints it for the shrunk
failing example, ready to be pasted into `tests/test_fuzz_regressions.py`.

The graphs are shaped to make the passes fire: groups of sibling ops
(linear, layer_norm, pointwise) over the pieces of one split (batch
fusion), split -> cat/stack chains, nested splits and view chains
(split-cat-simplify), in-place writes between them (the barriers).

`fusion_programs()` draws fusion-rich programs (issue 19): N parallel
members through levels of the same op per member, with the cases batch
fusion must keep apart or get right (ragged widths, int vs float scalars,
+-0.0 clamp bounds, nan/inf/-0.0 inputs, transposed and stride-0 inputs,
shared weights, in-place writes). Its features that hit known, unfixed bugs
are off while named in `KNOWN_BUG_FEATURES`.
"""

from __future__ import annotations

import copy
import math
import operator
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from hypothesis import strategies as st
from torch import nn
from torch.utils import _pytree as pytree

import optimus_ir
from optimus_ir.pipeline.validation import tolerance_for

# ---------------------------------------------------------------------------
# Seeded values (used by the strategy and by the regression tests)
# ---------------------------------------------------------------------------

FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
INT_DTYPES = (torch.int64, torch.int32)


def tensor(shape: Sequence[int], dtype: torch.dtype = torch.float32, seed: int = 0,
           special: bool = False) -> torch.Tensor:
    """A seeded tensor: standard normal for floats, -5..5 for ints; with
    `special`, a few elements are nan/inf/-inf (for nan_to_num and friends)."""
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        value = torch.randn(tuple(shape), generator=generator, dtype=torch.float64)
        if special and value.numel() >= 3:
            flat = value.view(-1)
            flat[0], flat[value.numel() // 2], flat[-1] = math.nan, math.inf, -math.inf
        return value.to(dtype)
    return torch.randint(-5, 6, tuple(shape), generator=generator, dtype=dtype)


def parameter(shape: Sequence[int], dtype: torch.dtype = torch.float32, seed: int = 0,
              requires_grad: bool = True) -> nn.Parameter:
    """A seeded parameter (scaled like a default init, so layers stay tame)."""
    value = tensor(shape, dtype, seed) / math.sqrt(max(1, shape[-1] if shape else 1))
    return nn.Parameter(value, requires_grad=requires_grad)


def linear_module(in_features: int, out_features: int, bias: bool = True,
                  dtype: torch.dtype = torch.float32, seed: int = 0,
                  requires_grad: bool = True) -> nn.Linear:
    """An `nn.Linear` with seeded weights."""
    module = nn.Linear(in_features, out_features, bias=bias, dtype=dtype)
    module.weight = parameter((out_features, in_features), dtype, seed, requires_grad)
    if bias:
        module.bias = parameter((out_features,), dtype, seed + 1, requires_grad)
    return module


def layer_norm_module(shape: Sequence[int], affine: bool = True, eps: float = 1e-5,
                      dtype: torch.dtype = torch.float32, seed: int = 0,
                      requires_grad: bool = True) -> nn.LayerNorm:
    """An `nn.LayerNorm` with seeded weight and bias."""
    module = nn.LayerNorm(list(shape), eps=eps, elementwise_affine=affine, dtype=dtype)
    if affine:
        module.weight = parameter(tuple(shape), dtype, seed, requires_grad)
        module.bias = parameter(tuple(shape), dtype, seed + 1, requires_grad)
    return module


def fuzz_helper(x: torch.Tensor) -> torch.Tensor:
    """A module-level function the compiler knows nothing about (an unknown call)."""
    return x * 2 - 1


def fuzz_scale_(x: torch.Tensor) -> torch.Tensor:
    """Unknown code that writes its argument in place."""
    return x.mul_(0.5)


# ---------------------------------------------------------------------------
# The differential check
# ---------------------------------------------------------------------------


class FxProgram:
    """A generated program: the GraphModule, its example inputs, whether it
    only moves data, and the Python source that rebuilds it (its `repr`; a
    plain class, not a dataclass, so that hypothesis prints that source)."""

    def __init__(self, gm: torch.fx.GraphModule, inputs: list[torch.Tensor],
                 data_movement_only: bool, source: str, ops: list[str],
                 exact: bool | None = None, features: frozenset[str] = frozenset()) -> None:
        self.gm = gm
        self.inputs = inputs
        self.data_movement_only = data_movement_only
        self.source = source
        self.ops = ops
        # bit-identical results expected: no arithmetic that a fused or
        # reordered evaluation may round differently (matmul, normalization,
        # transcendental functions, division)
        self.exact = data_movement_only if exact is None else exact
        self.features = features

    def __repr__(self) -> str:
        return (
            f"FxProgram(data_movement_only={self.data_movement_only}, exact={self.exact}, "
            f"features={sorted(self.features)})\n"
            f"# --- builder ---\n{self.source}\n# --- gm.code ---{self.gm.code}"
        )


def _clone(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer (by name), cloned."""
    return {k: v.detach().clone() for k, v in module.state_dict(keep_vars=True).items()}


def _restore(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    live = module.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, value in state.items():
            live[name].copy_(value)


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _assert_equal(got: Any, want: Any, exact: bool, what: str, code: str,
                  tolerance: tuple[float, float] | None = None) -> None:
    """Equal dtype, shape and values: bit-identical when `exact` (NaN at the
    same positions, and the sign of every zero: `1/x` observes it), else
    within `tolerance` (default: the dtype's, `tolerance_for`)."""
    if not isinstance(want, torch.Tensor):
        assert got == want, f"{what}: {got!r} != {want!r}\n{code}"
        return
    assert isinstance(got, torch.Tensor), f"{what}: not a tensor: {type(got)}\n{code}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}\n{code}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}\n{code}"
    rtol, atol = (0.0, 0.0) if exact else (tolerance or tolerance_for(want))
    torch.testing.assert_close(
        got.detach(), want.detach(), rtol=rtol, atol=atol, equal_nan=True,
        msg=lambda m: f"{what}: {m}\n{code}",
    )
    if exact and want.dtype.is_floating_point:
        zeros = want == 0
        signs_differ = zeros & (torch.signbit(got.detach()) != torch.signbit(want.detach()))
        assert not bool(signs_differ.any()), (
            f"{what}: the sign of {int(signs_differ.sum())} zero(s) differs "
            f"(first at {tuple(signs_differ.nonzero()[0].tolist())})\n{code}"
        )


def _layout(tensor: torch.Tensor) -> tuple[int | None, ...]:
    """The strides that address memory: a dim of size 1 is never stepped
    over, so its stride is arbitrary (torch's own contiguity checks ignore
    it, and views give it different values: `x.permute(...).unsqueeze(0)`
    and its folded form differ only there)."""
    return tuple(s if n > 1 else None for n, s in zip(tensor.shape, tensor.stride()))


def run_reference(gm: torch.nn.Module, inputs: Sequence[Any]):
    """Run `gm` on clones of `inputs`: (outputs, inputs after the call)."""
    args = [_clone(v) for v in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = gm(*args)
    return out, args


def assert_optimized_matches(
    gm: torch.fx.GraphModule,
    inputs: Sequence[Any],
    exact: bool,
    *,
    validate: bool = True,
    pipeline: str | None = None,
    tolerance: tuple[float, float] | None = None,
) -> torch.fx.GraphModule:
    """Optimize `gm` and check the result against it on clones of `inputs`:
    equal outputs (bit-identical when `exact`, dtype tolerance otherwise) of
    the same structure, dtype, shape and strides; the same aliasing between
    outputs and between outputs and inputs; the same in-place writes to the
    inputs and to the parameters and buffers; and `gm` itself unchanged.
    `tolerance` (rtol, atol) replaces the dtype's where not `exact` (the
    Triton kernels round their own way). Returns the optimized module."""
    code = gm.code
    state = _state(gm)
    attributes = {k: id(v) for k, v in gm.state_dict(keep_vars=True).items()}
    want, want_inputs = run_reference(gm, inputs)
    want_state = _state(gm)
    _restore(gm, state)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = optimus_ir.optimize(gm, [_clone(v) for v in inputs], pipeline, validate=validate)

    assert gm.code == code, "optimize() changed the original GraphModule's code"
    for name, value in _state(gm).items():
        _assert_equal(value, state[name], True, f"optimize() changed {name} of the original", code)
    assert {k: id(v) for k, v in gm.state_dict(keep_vars=True).items()} == attributes, (
        "optimize() rebound a parameter or buffer of the original"
    )

    got, got_inputs = run_reference(result, inputs)
    got_state = _state(gm)
    _restore(gm, state)

    want_leaves, want_spec = pytree.tree_flatten(want)
    got_leaves, got_spec = pytree.tree_flatten(got)
    assert got_spec == want_spec, f"output structure {got_spec} != {want_spec}\n{code}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        _assert_equal(g, w, exact, f"output {i}", code, tolerance)
        if isinstance(w, torch.Tensor) and w.numel() > 1:
            assert _layout(g) == _layout(w), f"output {i}: strides {g.stride()} != {w.stride()}\n{code}"
    for i, (g, w) in enumerate(zip(got_inputs, want_inputs)):
        _assert_equal(g, w, exact, f"input {i} after the call", code, tolerance)
    for name, w in want_state.items():
        _assert_equal(got_state[name], w, exact, f"{name} after the call", code, tolerance)

    # What aliases what: output/output and output/input storage sharing.
    def aliasing(leaves: list[Any], args: list[Any]) -> set[tuple[str, int, int]]:
        found = set()
        tensors = [(i, t) for i, t in enumerate(leaves) if isinstance(t, torch.Tensor)]
        for a, (i, x) in enumerate(tensors):
            for j, y in tensors[a + 1:]:
                if _same_storage(x, y):
                    found.add(("output", i, j))
            for k, arg in enumerate(args):
                if isinstance(arg, torch.Tensor) and _same_storage(x, arg):
                    found.add(("input", i, k))
        return found

    want_alias = aliasing(want_leaves, want_inputs)
    got_alias = aliasing(got_leaves, got_inputs)
    assert got_alias == want_alias, (
        f"aliasing changed: optimized {sorted(got_alias)} vs original {sorted(want_alias)}\n{code}"
    )
    return result


def pipeline_changed(result: torch.fx.GraphModule) -> bool:
    """Did any rewrite pattern of the pipeline fire (beyond raising/lowering)?"""
    report = result.optimus_report  # type: ignore[attr-defined]
    return report.statistics is not None and report.statistics.budget.used > 0


# ---------------------------------------------------------------------------
# The builder
# ---------------------------------------------------------------------------

_TARGET_MODULES = (("torch", torch), ("F", F), ("operator", operator))


def _target_source(target: Any) -> str:
    if target in (fuzz_helper, fuzz_scale_):
        return f"fx_graph_strategies.{target.__name__}"
    name = getattr(target, "__name__", None)
    for prefix, module in _TARGET_MODULES:
        if name is not None and getattr(module, name, None) is target:
            return f"{prefix}.{name}"
    raise AssertionError(f"no source spelling for {target!r}")


def _value_source(value: Any, names: dict[torch.fx.Node, str]) -> str:
    if isinstance(value, torch.fx.Node):
        return names[value]
    if isinstance(value, tuple):
        inner = ", ".join(_value_source(v, names) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_value_source(v, names) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value_source(v, names)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    return repr(value)


@dataclass
class Val:
    """A tensor value of the graph being built and its build-time value."""

    node: torch.fx.Node
    value: torch.Tensor


class Builder:
    """Builds a GraphModule node by node, executing every node eagerly on
    build-time copies (so only valid nodes are kept), and records the Python
    source that rebuilds it."""

    def __init__(self) -> None:
        self.graph = torch.fx.Graph()
        self.owner = nn.Module()
        self.build_attrs: dict[str, Any] = {}
        self.names: dict[torch.fx.Node, str] = {}
        self.lines: list[str] = [
            "owner = nn.Module()",
            "g = torch.fx.Graph()",
        ]
        self.pool: list[Val] = []
        self.inputs: list[torch.Tensor] = []
        self.input_vals: list[Val] = []
        self.groups: list[tuple[list[Val], int]] = []
        self.data_movement_only = True
        self.reorders = False  # an op whose fused form may round differently
        self.features: set[str] = set()
        self.ops: list[str] = []
        self.counter = 0
        self.env: dict[torch.fx.Node, Any] = {}

    # -- owner attributes ---------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def add_parameter(self, shape: Sequence[int], dtype: torch.dtype, seed: int,
                      requires_grad: bool) -> str:
        name = self.fresh("p")
        self.owner.register_parameter(name, parameter(shape, dtype, seed, requires_grad))
        self.build_attrs[name] = _clone(getattr(self.owner, name)).requires_grad_(requires_grad)
        self.lines.append(
            f"owner.register_parameter({name!r}, fx_graph_strategies.parameter("
            f"{tuple(shape)!r}, {dtype}, seed={seed}, requires_grad={requires_grad}))"
        )
        return name

    def add_buffer(self, shape: Sequence[int], dtype: torch.dtype, seed: int) -> str:
        name = self.fresh("b")
        self.owner.register_buffer(name, tensor(shape, dtype, seed))
        self.build_attrs[name] = _clone(getattr(self.owner, name))
        self.lines.append(
            f"owner.register_buffer({name!r}, fx_graph_strategies.tensor({tuple(shape)!r}, {dtype}, seed={seed}))"
        )
        return name

    def add_module(self, module: nn.Module, source: str) -> str:
        name = self.fresh("m")
        self.owner.add_module(name, module)
        self.build_attrs[name] = copy.deepcopy(module)
        self.lines.append(f"owner.add_module({name!r}, {source})")
        return name

    # -- nodes ----------------------------------------------------------------

    def placeholder(self, value: torch.Tensor, source: str) -> Val:
        node = self.graph.placeholder(f"x{len(self.inputs)}")
        self.names[node] = node.name
        self.lines.append(f"{node.name} = g.placeholder({node.name!r})  # {source}")
        self.inputs.append(value)
        val = Val(node, _clone(value))
        self.env[node] = val.value
        self.input_vals.append(val)
        self.pool.append(val)
        return val

    def _build_value(self, arg: Any) -> Any:
        return torch.fx.node.map_arg(arg, lambda n: self.env[n])

    def node(self, kind: str, target: Any, args: tuple = (), kwargs: dict | None = None,
             *, moves_data: bool = True, keep: bool = True,
             reorders: bool = False) -> tuple[torch.fx.Node, Any] | None:
        """Add one node, executing it on the build-time values; None (and no
        node) when torch rejects it. `keep`: add tensor results to the pool;
        `reorders`: a fused evaluation may round it differently (results
        then compare within tolerance)."""
        kwargs = kwargs or {}
        real_args = self._build_value(args)
        real_kwargs = self._build_value(kwargs)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if kind == "call_function":
                    value = target(*real_args, **real_kwargs)
                elif kind == "call_method":
                    value = getattr(real_args[0], target)(*real_args[1:], **real_kwargs)
                elif kind == "call_module":
                    value = self.build_attrs[target](*real_args, **real_kwargs)
                else:  # get_attr
                    value = self.build_attrs[target]
        except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError):
            return None
        if isinstance(value, torch.Tensor) and value.numel() == 0:
            return None
        if isinstance(value, tuple | list) and any(
            isinstance(v, torch.Tensor) and v.numel() == 0 for v in value
        ):
            return None
        if kind == "get_attr":
            node = self.graph.get_attr(target)
            call = f"g.get_attr({target!r})"
        else:
            node = self.graph.create_node(kind, target, args, kwargs)
            shown = target if kind in ("call_method", "call_module") else None
            target_src = repr(shown) if shown is not None else _target_source(target)
            call = (
                f"g.{kind}({target_src}, {_value_source(args, self.names)}"
                + (f", {_value_source(kwargs, self.names)}" if kwargs else "")
                + ")"
            )
        self.names[node] = node.name
        self.lines.append(f"{node.name} = {call}")
        self.env[node] = value
        if not moves_data:
            self.data_movement_only = False
        self.reorders |= reorders
        self.ops.append(str(getattr(target, "__name__", target)))
        if keep and isinstance(value, torch.Tensor):
            self.pool.append(Val(node, value))
        return node, value

    def output(self, value: Any) -> None:
        self.graph.output(value)
        self.lines.append(f"g.output({_value_source(value, self.names)})")
        self.lines.append("gm = torch.fx.GraphModule(owner, g)")

    def source(self, inputs_source: list[str]) -> str:
        return "\n".join(self.lines + [f"inputs = [{', '.join(inputs_source)}]"])


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


def input_tensor(shape: Sequence[int], dtype: torch.dtype = torch.float32, seed: int = 0,
                 special: bool = False, layout: str = "contiguous") -> torch.Tensor:
    """A seeded input of `shape` in a memory layout: `contiguous`;
    `transposed` (the last two dims swapped on a contiguous tensor: dense
    but not contiguous); `expanded` (dim 0 broadcast from size 1: stride 0).
    With `special` (floats), the values include nan, inf, -inf, -0.0, +0.0
    and a denormal."""
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        base = (*shape[:-2], shape[-1], shape[-2])
    elif layout == "expanded" and len(shape) >= 1:
        base = (1, *shape[1:])
    else:
        base = shape
    value = tensor(base, dtype, seed)
    if special and dtype.is_floating_point and value.numel() >= 2:
        flat = value.view(-1)
        specials = [math.nan, -0.0, math.inf, 0.0, -math.inf, torch.finfo(dtype).tiny / 4]
        for i, v in enumerate(specials[: flat.numel()]):
            flat[(i * 7) % flat.numel()] = v
    if layout == "transposed" and len(shape) >= 2:
        return value.transpose(-1, -2)
    if layout == "expanded" and len(shape) >= 1:
        return value.expand(shape)
    return value


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
