"""The unary pointwise ops, driven by their declared facts (issue 20).

Every spelling an op declares in `FACTS.spellings` (torch function, `F.*`,
Tensor method, `nn.Module` class, aten overload) is raised by raise-fx to
the op, lowered back by lower-to-fx and computes exactly what eager torch
computes, special values included; non-default parameters round-trip;
`inplace=True` is never raised; graphs captured by symbolic_trace, Dynamo
and torch.export raise the new ops; and sixteen parallel calls on the
pieces of one split go through `optimize()` fused, with eager's values.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from xdsl.dialects.builtin import TensorType, f32, i64
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from optimus_ir import optimize
from optimus_ir.translate.context import make_context
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import INPLACE, facts_of, resolve_target
from optimus_ir.translate.exporter import export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.lowering.lower_to_fx import LowerToFxPass
from optimus_ir.translate.parsing import parse_module
from optimus_ir.passes.raise_fx import RaiseFxPass

EXACT = dict(rtol=0.0, atol=0.0, equal_nan=True)

NEW_OPS = (
    T.ErfOp, T.SoftplusOp, T.HardswishOp, T.LeakyReluOp, T.EluOp, T.MishOp, T.HardsigmoidOp,
    T.SqrtOp, T.RsqrtOp, T.ReciprocalOp, T.SinOp, T.CosOp, T.Log1pOp, T.Expm1Op, T.HardtanhOp,
)
"""The ops issue 20 adds (each one declaration in dialects/torch/pointwise.py)."""

DECLARED = tuple(
    cls for cls in T.UNARY_POINTWISE_OPS
    if (s := facts_of(cls).spellings).functions or s.methods or s.modules or s.aten
)
"""Every unary op whose spellings raise-fx reads from its facts."""


def _special_values() -> torch.Tensor:
    """float32 inputs with the values activations treat specially: signed
    zeros, infinities, NaN, the kinks of hardswish/hardtanh/relu6, softplus's
    threshold, tiny and huge magnitudes, and random values."""
    special = torch.tensor(
        [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 3.0, -3.0, 6.0, 20.0,
         20.5, -20.0, 1e-7, -1e-7, 1e-40, 88.0, -88.0, 1e30, -1e30, 0.5, -0.5, 2.0, -2.0],
        dtype=torch.float32,
    )
    rest = torch.randn(40, generator=torch.Generator().manual_seed(0)) * 4
    return torch.cat([special, rest]).reshape(4, 16)


class _Call(nn.Module):
    """A module calling `fn` (a module attribute for module spellings)."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


def _graph(kind: str, spelling: str, kwargs: dict[str, Any]) -> torch.fx.GraphModule:
    """A one-call FX graph of `spelling` (kind: function, method, module, aten)."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    root = nn.Module()
    if kind == "function":
        out = graph.call_function(resolve_target(spelling), (x,), kwargs)
    elif kind == "aten":
        out = graph.call_function(resolve_target(f"torch.ops.aten.{spelling}"), (x,), kwargs)
    elif kind == "method":
        out = graph.call_method(spelling, (x,), kwargs)
    else:
        root.m = resolve_target(spelling)(**kwargs)
        out = graph.call_module("m", (x,))
    graph.output(out)
    return torch.fx.GraphModule(root, graph)


def _spellings(ops: tuple[type, ...]) -> list[tuple[type, str, str]]:
    out = []
    for cls in ops:
        spelled = facts_of(cls).spellings
        for kind, names in (
            ("function", spelled.functions), ("method", spelled.methods),
            ("module", spelled.modules), ("aten", spelled.aten),
        ):
            out.extend((cls, kind, name) for name in names)
    return out


def _raise(gm: torch.fx.GraphModule, inputs: tuple) -> Any:
    imported = import_graph(gm, inputs)
    RaiseFxPass().apply(make_context(), imported.module)
    imported.module.verify()
    return imported


def _torch_ops(module: Any) -> list[Any]:
    return [op for op in module.walk() if op.name.startswith("torch.")]


def _lower_and_run(imported: Any, inputs: tuple) -> torch.Tensor:
    text = str(imported.module)
    assert str(parse_module(text)) == text  # the raised IR prints and parses back
    LowerToFxPass().apply(make_context(), imported.module)
    imported.module.verify()
    assert not _torch_ops(imported.module), "lower-to-fx left torch ops"
    with torch.no_grad():
        return export_graph(imported)(*inputs)


def _eager(gm: torch.fx.GraphModule, inputs: tuple) -> torch.Tensor:
    with torch.no_grad():
        return gm(*[t.clone() for t in inputs])


# ---------------------------------------------------------------------------
# Every declared spelling raises, lowers back and computes eager's values
# ---------------------------------------------------------------------------


def test_every_new_op_is_in_the_dialect() -> None:
    names = {cls.name for cls in T.TORCH.operations}
    assert {cls.name for cls in NEW_OPS} <= names
    assert set(NEW_OPS) <= set(T.UNARY_POINTWISE_OPS)
    assert len(names) >= 55


@pytest.mark.parametrize(
    "cls, kind, spelling", _spellings(DECLARED), ids=lambda v: getattr(v, "name", v)
)
def test_spelling_raises_and_lowers_exactly(cls: type, kind: str, spelling: str) -> None:
    inputs = (_special_values(),)
    gm = _graph(kind, spelling, {})
    expected = _eager(gm, inputs)
    imported = _raise(gm, inputs)
    raised = _torch_ops(imported.module)
    assert [op.name for op in raised] == [cls.name], str(imported.module)
    assert not [op for op in imported.module.walk() if isinstance(op, fx.CallModuleOp | fx.CallFunctionOp | fx.CallMethodOp)]
    torch.testing.assert_close(_lower_and_run(imported, inputs), expected, **EXACT)


# non-default parameters: (function spelling, kwargs, module spelling kwargs, properties)
NON_DEFAULT = {
    T.SoftplusOp: (F.softplus, {"beta": 2.0, "threshold": 5.0}),
    T.LeakyReluOp: (F.leaky_relu, {"negative_slope": 0.2}),
    T.EluOp: (F.elu, {"alpha": 0.5}),
    T.HardtanhOp: (F.hardtanh, {"min_val": -2.0, "max_val": 3.0}),
    T.GeluOp: (F.gelu, {"approximate": "tanh"}),
}
MODULES = {
    T.SoftplusOp: nn.Softplus, T.LeakyReluOp: nn.LeakyReLU, T.EluOp: nn.ELU,
    T.HardtanhOp: nn.Hardtanh, T.GeluOp: nn.GELU,
}


def test_every_parameterized_op_has_a_non_default_case() -> None:
    with_arguments = {
        cls for cls in DECLARED
        if any(a != INPLACE for a in facts_of(cls).spellings.arguments)
    }
    assert with_arguments == set(NON_DEFAULT)


@pytest.mark.parametrize(
    "cls, how",
    [
        (cls, how) for cls in NON_DEFAULT for how in ("keyword", "positional", "module")
        if not (cls is T.GeluOp and how == "positional")  # approximate is keyword-only
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_non_default_parameters_roundtrip(cls: type, how: str) -> None:
    fn, kwargs = NON_DEFAULT[cls]
    inputs = (_special_values(),)
    if how == "keyword":
        model = _Call(lambda x: fn(x, **kwargs))
    elif how == "positional":
        model = _Call(lambda x: fn(x, *kwargs.values()))
    else:
        model = _Call(MODULES[cls](**kwargs))
    gm = torch.fx.symbolic_trace(model)
    expected = _eager(gm, inputs)
    imported = _raise(gm, inputs)
    raised = _torch_ops(imported.module)
    assert [op.name for op in raised] == [cls.name], str(imported.module)
    for name, value in kwargs.items():
        prop = raised[0].properties[name]
        assert (prop.data if isinstance(value, str) else prop.value.data) == value
        # printed, since it differs from the default
        assert f"{name} " in str(raised[0])
    torch.testing.assert_close(_lower_and_run(imported, inputs), expected, **EXACT)


def test_default_parameters_are_not_printed_nor_passed() -> None:
    gm = _graph("function", "torch.nn.functional.elu", {"alpha": 1})  # an int: still the default
    inputs = (_special_values(),)
    imported = _raise(gm, inputs)
    (op,) = _torch_ops(imported.module)
    assert "alpha" not in str(op)
    LowerToFxPass().apply(make_context(), imported.module)
    (call,) = [o for o in imported.module.walk() if isinstance(o, fx.CallFunctionOp)]
    assert call.target.data == "torch.nn.functional.elu" and not call.kwargs.data


INPLACE_SPELLINGS = [
    (cls, name) for cls in DECLARED if INPLACE in facts_of(cls).spellings.arguments
    for name in facts_of(cls).spellings.functions + facts_of(cls).spellings.modules
    # the F.* functions and the modules take `inplace` (torch.relu and the
    # torch._C builtins do not)
    if name.startswith("torch.nn.functional.") or ".modules." in name
]


@pytest.mark.parametrize("cls, spelling", INPLACE_SPELLINGS, ids=lambda v: getattr(v, "name", v))
def test_inplace_true_is_not_raised(cls: type, spelling: str) -> None:
    kind = "module" if ".modules." in spelling else "function"
    gm = _graph(kind, spelling, {"inplace": True})
    imported = _raise(gm, (_special_values(),))
    assert not _torch_ops(imported.module), str(imported.module)


def test_non_literal_or_unknown_arguments_are_not_raised() -> None:
    module = parse_module("""
    fx.graph @g {
      %x = fx.placeholder "x" : tensor<4xf32>
      %s = fx.placeholder "s" : !fx.value
      %a = fx.call_function "torch.nn.functional.leaky_relu"(%x, %s) : tensor<4xf32>
      %b = fx.call_function "torch._C._nn.gelu"(%x, approximate = "erf") : tensor<4xf32>
      %c = fx.call_function "torch.ops.aten.elu.default"(%x, 1.0, 2.0) : tensor<4xf32>
      %d = fx.call_function "torch._C._nn.softplus"(%x, beta = none) : tensor<4xf32>
      %e = fx.call_function "torch.nn.functional.elu"(%x, 1.0, inplace = 0) : tensor<4xf32>
      %f = fx.call_function "torch.nn.functional.hardtanh"(%x, min = 0.0) : tensor<4xf32>
      %g = fx.call_method "sqrt"(%x, 1) : tensor<4xf32>
      %h = fx.call_module "m"(%x) {module_type = "torch.nn.modules.activation.ELU", module_attrs = {inplace = false}} : tensor<4xf32>
      %ok = fx.call_function "torch.nn.functional.elu"(%x, 1.0, inplace = false) : tensor<4xf32>
      fx.output (%a, %b, %c, %d, %e, %f, %g, %h, %ok)
    }
    """)
    RaiseFxPass().apply(make_context(), module)
    # only the last call, whose arguments are all literals torch accepts
    assert [(op.name, op.results[0].name_hint) for op in _torch_ops(module)] == [
        ("torch.elu", "ok")
    ], str(module)


def test_relu6_raises_to_hardtanh_zero_six() -> None:
    inputs = (_special_values(),)
    for gm in (
        _graph("function", "torch.nn.functional.relu6", {}),
        _graph("function", "torch._C._nn.relu6", {}),
        _graph("aten", "relu6.default", {}),
        _graph("module", "torch.nn.modules.activation.ReLU6", {}),
    ):
        expected = _eager(gm, inputs)
        imported = _raise(gm, inputs)
        (op,) = _torch_ops(imported.module)
        assert isinstance(op, T.HardtanhOp)
        assert (op.min_val.value.data, op.max_val.value.data) == (0.0, 6.0)
        torch.testing.assert_close(_lower_and_run(imported, inputs), expected, **EXACT)
    assert not _torch_ops(
        _raise(_graph("function", "torch.nn.functional.relu6", {"inplace": True}), inputs).module
    )


def test_kernel_steps_assume_the_default_parameters() -> None:
    """softplus and elu name their program step only at the parameters the
    step computes (beta 1 / threshold 20, alpha 1)."""
    value = Block(arg_types=[TensorType(f32, [4])]).args[0]
    assert facts_of(T.SoftplusOp).kernel_step(T.SoftplusOp(value).properties) == "softplus"
    beta2 = T.SoftplusOp(value, properties={"beta": fx.float_literal(2.0)})
    assert facts_of(T.SoftplusOp).kernel_step(beta2.properties) is None
    assert facts_of(T.EluOp).kernel_step(T.EluOp(value).properties) == "elu"
    assert facts_of(T.EluOp).kernel_step(
        T.EluOp(value, properties={"alpha": fx.float_literal(0.5)}).properties
    ) is None
    assert facts_of(T.ErfOp).kernel_step(T.ErfOp(value).properties) == "erf"


def test_integral_inputs_follow_torch_dtypes() -> None:
    """The dtype probe is each op's reference function: erf of an int64
    tensor is float32, hardtanh keeps int64, softplus refuses it."""
    value = Block(arg_types=[TensorType(i64, [4])]).args[0]
    assert T.ErfOp(value).result.type.element_type == f32
    assert T.SqrtOp(value).result.type.element_type == f32
    assert T.HardtanhOp(value).result.type.element_type == i64
    with pytest.raises(VerifyException, match="softplus_cpu"):
        T.SoftplusOp(value)


# ---------------------------------------------------------------------------
# What torch's capture front ends record raises
# ---------------------------------------------------------------------------


class _AllNew(nn.Module):
    """Every new op, in the spellings user code writes."""

    def __init__(self) -> None:
        super().__init__()
        self.elu = nn.ELU(0.5)
        self.mish = nn.Mish()
        self.relu6 = nn.ReLU6()
        self.softplus = nn.Softplus(beta=2.0)
        self.leaky = nn.LeakyReLU(0.2)
        self.hardswish = nn.Hardswish()
        self.hardsigmoid = nn.Hardsigmoid()
        self.hardtanh = nn.Hardtanh(-2, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = x.abs() + 0.5
        return (
            torch.erf(x), torch.special.erf(x), F.softplus(x, beta=2.0), F.hardswish(x),
            F.leaky_relu(x, 0.2), F.elu(x, 0.5), F.mish(x), F.hardsigmoid(x), a.sqrt(),
            torch.rsqrt(a), a.reciprocal(), torch.sin(x), x.cos(), torch.log1p(a),
            torch.special.expm1(x), F.hardtanh(x, -2.0, 2.0), F.relu6(x),
            self.elu(x), self.mish(x), self.relu6(x), self.softplus(x), self.leaky(x),
            self.hardswish(x), self.hardsigmoid(x), self.hardtanh(x),
        )


def _capture(model: nn.Module, inputs: tuple, how: str) -> torch.fx.GraphModule:
    if how == "symbolic":
        return torch.fx.symbolic_trace(model)
    if how == "dynamo":
        torch._dynamo.reset()
        gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)
        return gm
    return torch.export.export(model, inputs).run_decompositions({}).module()


@pytest.mark.parametrize("how", ["symbolic", "dynamo", "aten"])
def test_captured_spellings_raise_every_new_op(how: str) -> None:
    model = _AllNew().eval()
    inputs = (_special_values(),)
    gm = _capture(model, inputs, how)
    expected = _eager(gm, inputs)
    imported = _raise(gm, inputs)
    names = {op.name for op in _torch_ops(imported.module)}
    missing = {cls.name for cls in NEW_OPS} - names
    assert not missing, f"not raised ({how}): {missing}\n{imported.module}"
    torch.testing.assert_close(_lower_and_run(imported, inputs), expected, **EXACT)


# ---------------------------------------------------------------------------
# Sixteen parallel calls on the pieces of one split are fused
# ---------------------------------------------------------------------------


PARALLEL = {
    T.ErfOp: torch.erf,
    T.SoftplusOp: F.softplus,
    T.HardswishOp: F.hardswish,
    T.LeakyReluOp: lambda t: F.leaky_relu(t, 0.2),
    T.EluOp: F.elu,
    T.MishOp: F.mish,
    T.HardsigmoidOp: F.hardsigmoid,
    T.SqrtOp: torch.sqrt,
    T.RsqrtOp: torch.rsqrt,
    T.ReciprocalOp: torch.reciprocal,
    T.SinOp: torch.sin,
    T.CosOp: torch.cos,
    T.Log1pOp: torch.log1p,
    T.Expm1Op: torch.expm1,
    T.HardtanhOp: F.relu6,
}


class _Parallel(nn.Module):
    """`fn` on each of the 16 pieces of one split, concatenated."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 4, dim=1)
        return torch.cat([self.fn(pieces[i]) for i in range(16)], dim=1)


def _call_ops(gm: torch.fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


def test_every_new_op_has_a_parallel_case() -> None:
    assert set(PARALLEL) == set(NEW_OPS)


@pytest.mark.parametrize("cls", list(PARALLEL), ids=lambda c: c.name)
def test_sixteen_parallel_calls_are_fused(cls: type) -> None:
    model = _Parallel(PARALLEL[cls])
    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(1))
    x[0, :8] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3.0, -3.0, 6.0])
    captured = torch.fx.symbolic_trace(model)
    optimized = optimize(model, (x,))
    # split, 16 getitems, 16 calls, cat
    assert _call_ops(optimized) < _call_ops(captured) == 34
    fused = [r.message for r in optimized.optimus_report.remarks if "batch-fusion: fused 16" in r.message]
    assert fused and cls.name in fused[0], [r.message for r in optimized.optimus_report.remarks]
    with torch.no_grad():
        torch.testing.assert_close(optimized(x.clone()), model(x.clone()), equal_nan=True)
