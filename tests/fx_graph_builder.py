"""The builder of generated FX programs (`fx_graph_strategies`): `Builder`
adds a GraphModule's nodes one by one, executing each on build-time copies
(so only nodes torch accepts are kept) and recording the Python source that
rebuilds the program; `Val` is a value of the graph being built.
"""

from __future__ import annotations

import copy
import math
import operator
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from fx_graph_check import _clone
from fx_graph_values import fuzz_helper, fuzz_scale_, parameter, tensor

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
