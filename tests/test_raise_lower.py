"""raise-fx and lower-to-fx: every spelling raises, and the round trip
import -> raise-fx -> lower-to-fx -> export is bitwise identical.

Models are captured three ways (torch.fx.symbolic_trace, torch._dynamo.export
and torch.export + run_decompositions for ATen graphs); for each, the test
checks that raise-fx turned the expected ops into torch-dialect ops, that
nothing fx-level that must stay fx was touched, and that the exported module
computes exactly (rtol=0, atol=0) what the captured graph computes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from models import CASES, ModelCase, capture, clone_inputs
from torch import nn

from optimus_ir.translate.context import make_context
from optimus_ir.translate.parsing import parse_module
from optimus_ir.dialects import fx
from optimus_ir.translate.exporter import export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.lowering.lower_to_fx import LowerToFxPass
from optimus_ir.passes.raise_fx import RaiseFxPass, annotate_modules

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def torch_op_counts(module) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.name.startswith("torch."))


def fx_targets(module) -> Counter[str]:
    return Counter(
        op.target.data for op in module.walk() if isinstance(op, fx.NodeOp)
    )


def raise_fx(module) -> None:
    RaiseFxPass().apply(make_context(), module)
    module.verify()


def lower_to_fx(module) -> None:
    LowerToFxPass().apply(make_context(), module)
    module.verify()


def _run(gm: torch.nn.Module, inputs: tuple[Any, ...]) -> Any:
    with torch.no_grad():
        return gm(*clone_inputs(inputs))


def _capture(model: nn.Module, inputs: tuple, how: str) -> torch.fx.GraphModule:
    if how == "symbolic":
        return torch.fx.symbolic_trace(model)
    if how == "dynamo":
        torch._dynamo.reset()
        gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(
            *clone_inputs(inputs)
        )
        return gm
    program = torch.export.export(model, clone_inputs(inputs))
    if how == "aten":
        program = program.run_decompositions({})
    return program.module()


def roundtrip(gm: torch.fx.GraphModule, inputs: tuple) -> tuple[Counter[str], Any]:
    """import -> raise-fx -> (counts) -> lower-to-fx -> export; checks the
    outputs bitwise and that the lowered IR is pure fx. Returns the
    torch-dialect op counts after raising and the raised module's text."""
    expected = _run(gm, inputs)
    imported = import_graph(gm, inputs)
    annotate_modules(imported.module, imported.owner)
    raise_fx(imported.module)
    counts = torch_op_counts(imported.module)
    raised_text = str(imported.module)
    # the raised IR prints and parses back identically
    assert str(parse_module(raised_text)) == raised_text
    lower_to_fx(imported.module)
    assert not torch_op_counts(imported.module), "lower-to-fx left torch ops"
    lowered_text = str(imported.module)
    assert str(parse_module(lowered_text)) == lowered_text
    exported = export_graph(imported)
    actual = _run(exported, inputs)
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    return counts, raised_text


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _build(cls, *args) -> nn.Module:
    state = torch.random.get_rng_state()
    torch.manual_seed(0)
    try:
        return cls(*args).eval()
    finally:
        torch.random.set_rng_state(state)


# ---------------------------------------------------------------------------
# models: one spelling per line
# ---------------------------------------------------------------------------


class Towers(nn.Module):
    """split -> linear -> layer_norm -> activation -> cat, in every spelling."""

    def __init__(self) -> None:
        super().__init__()
        self.lin0 = nn.Linear(8, 8)
        self.lin1 = nn.Linear(8, 8, bias=False)
        self.ln0 = nn.LayerNorm(8)
        self.ln1 = nn.LayerNorm(8, elementwise_affine=False)
        self.act0 = nn.ReLU()
        self.act1 = nn.GELU(approximate="tanh")
        self.act2 = nn.SiLU()
        self.act3 = nn.Sigmoid()
        self.act4 = nn.Tanh()
        self.drop = nn.Dropout(0.1)
        self.flat = nn.Flatten()
        self.unflat = nn.Unflatten(1, (4, 8))
        self.ident = nn.Identity()

    def forward(self, x):  # x: [4, 32]
        a, b, c, d = torch.split(x, 8, dim=1)
        e, f = x.split([16, 16], -1)
        g, h = torch.chunk(e, 2, dim=-1)
        t0 = self.act0(self.ln0(self.lin0(a)))
        t1 = self.act1(self.ln1(self.lin1(b)))
        t2 = self.act2(F.layer_norm(F.linear(c, self.lin0.weight, self.lin0.bias), (8,)))
        t3 = self.act3(torch.relu(F.relu(d)))
        t4 = self.act4(F.gelu(g) + F.silu(h))
        t5 = torch.tanh(f[:, :8]).sigmoid() + torch.sigmoid(f[:, 8:]).tanh()
        y = torch.cat([t0, t1, t2, t3], dim=-1)
        z = torch.concat((t4, t5), 1)
        u = self.unflat(self.ident(self.drop(y)))  # [4, 4, 8]
        return self.flat(u) + torch.cat([z, z], dim=1)


class Plumbing(nn.Module):
    def forward(self, x, y):  # x: [4, 6, 10], y: [6, 3]
        r = torch.unbind(x, dim=-1)
        s = torch.stack([r[0], r[1], r[2]], dim=-1) + torch.stack([r[3], r[-2], r[-1]], -1)
        a = x.unsqueeze(-1).squeeze(-1).squeeze()
        b = torch.transpose(a, 0, 1).transpose(-1, -2)
        c = b.permute(2, 1, 0).permute([2, 0, 1])
        d = torch.movedim(c, -1, 0).reshape(4, -1).view(4, 6, 10)
        e = torch.narrow(d, 1, 1, 3).select(-1, -2)
        f = torch.flatten(d, 1).unflatten(-1, (6, 10))
        g = torch.mm(y.t(), y) + torch.matmul(y.T, y) + y.t() @ y
        cols = y.unbind(1)
        return s, e + 1, f, g, torch.stack([cols[0], cols[1], cols[2]], 0).sum(0)


class Arith(nn.Module):
    def forward(self, x, y, n):
        a = x + y + 2 - (3.5 - x) * 0.5 / y
        b = 2.0 * x + 1.5 / (y.abs() + 1)
        c = torch.add(x, y, alpha=2) - torch.sub(x, 1, alpha=0.5) + torch.rsub(x, 2.0)
        d = x.mul(y).div(2).div(y + 5, rounding_mode="floor") + torch.div(x, 3, rounding_mode="trunc")
        e = -x + torch.neg(y) + x.exp().log() + torch.abs(y) + x.detach()
        f = torch.clamp(x, min=-0.5, max=0.5) + x.clamp_min(0.1) + x.clamp(max=1) + torch.clip(x, -1, 1)
        g = torch.nan_to_num(torch.log(x), nan=0.0, posinf=1.0, neginf=-1.0)
        h = n // 3 + n * 2 + torch.true_divide(n, 4).to(torch.int64)
        i = x.sum() + x.sum(1, keepdim=True) + torch.sum(x, dim=(0, 1)) + x.mean(-1).mean()
        j = torch.mean(x, [0], keepdim=True) + x.sum(dim=1, dtype=torch.float64).float().unsqueeze(1)
        return a, b, c, d, e, f, g, h, i, j


class Matmuls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 5))
        self.b = nn.Parameter(torch.randn(5))
        self.lin = nn.Linear(6, 5)
        self.lin3 = nn.Linear(5, 7)

    def forward(self, x, bx, by, bias):
        a = torch.matmul(x, self.w) + torch.addmm(self.b, x, self.w) + torch.mm(x, self.w)
        b = torch.bmm(bx, by) + torch.baddbmm(bias, bx, by, beta=0.5, alpha=2.0)
        c = self.lin(x) + x.addmm(x, torch.eye(6), beta=0.5)[:, :5]
        d = self.lin3(b)  # rank-3 input
        return a + c, d


# ---------------------------------------------------------------------------
# the round trips
# ---------------------------------------------------------------------------

CAPTURES = ["symbolic", "dynamo", "aten"]


def _towers():
    return _build(Towers), (_randn(4, 32),)


def _plumbing():
    return _build(Plumbing), (_randn(4, 6, 10), _randn(6, 3, seed=1))


def _arith():
    x = _randn(4, 5) + 0.1
    x[0, 0] = -1.0
    x[1, 1] = 0.0
    return _build(Arith), (x, _randn(4, 5, seed=1), torch.arange(-6, 14).reshape(4, 5))


def _matmuls():
    return _build(Matmuls), (
        _randn(4, 6),
        _randn(2, 3, 4, seed=1),
        _randn(2, 4, 5, seed=2),
        _randn(2, 3, 5, seed=3),
    )


# minimum torch-dialect op counts after raise-fx, per capture
EXPECTED: dict[str, dict[str, dict[str, int]]] = {
    "towers": {
        "symbolic": {
            "torch.split": 3,
            "torch.linear": 3,
            "torch.layer_norm": 3,
            "torch.relu": 3,
            "torch.gelu": 2,
            "torch.silu": 2,
            "torch.sigmoid": 3,
            "torch.tanh": 3,
            "torch.cat": 3,
            "torch.dropout": 1,
            "torch.flatten": 1,
            "torch.unflatten": 1,
        },
        "dynamo": {
            "torch.split": 3,
            "torch.linear": 3,
            "torch.layer_norm": 3,
            "torch.relu": 3,
            "torch.gelu": 2,
            "torch.cat": 3,
        },
        "aten": {
            "torch.split": 2,
            "torch.linear": 3,
            "torch.layer_norm": 3,
            "torch.relu": 3,
            "torch.gelu": 2,
            "torch.cat": 3,
        },
    },
    "plumbing": {
        "symbolic": {
            "torch.unbind": 2,
            "torch.stack": 3,
            "torch.squeeze": 2,
            "torch.unsqueeze": 1,
            "torch.transpose": 2,
            "torch.permute": 2,
            "torch.movedim": 1,
            "torch.reshape": 1,
            "torch.view": 1,
            "torch.slice": 1,
            "torch.select": 1,
            "torch.flatten": 1,
            "torch.unflatten": 1,
            "torch.mm": 1,
            "torch.matmul": 2,
        },
        "dynamo": {"torch.unbind": 2, "torch.stack": 3, "torch.permute": 2, "torch.mm": 1},
        "aten": {"torch.unbind": 2, "torch.stack": 3, "torch.permute": 2, "torch.select": 1},
    },
    "arith": {
        "symbolic": {
            "torch.add": 10,
            "torch.sub": 3,
            "torch.mul": 4,
            "torch.div": 6,
            "torch.clamp": 4,
            "torch.nan_to_num": 1,
            "torch.sum": 4,
            "torch.mean": 3,
        },
        "dynamo": {"torch.add": 10, "torch.sub": 3, "torch.div": 6, "torch.sum": 4},
        "aten": {"torch.add": 8, "torch.sub": 2, "torch.div": 3, "torch.sum": 3},
    },
    "matmuls": {
        "symbolic": {
            "torch.matmul": 1,
            "torch.addmm": 2,
            "torch.mm": 1,
            "torch.bmm": 1,
            "torch.baddbmm": 1,
            "torch.linear": 2,
        },
        "dynamo": {"torch.addmm": 2, "torch.bmm": 1, "torch.baddbmm": 1, "torch.linear": 2},
        "aten": {"torch.bmm": 1, "torch.linear": 2},
    },
}

MODELS = {"towers": _towers, "plumbing": _plumbing, "arith": _arith, "matmuls": _matmuls}


@pytest.mark.parametrize("how", CAPTURES)
@pytest.mark.parametrize("name", list(MODELS))
def test_spellings_roundtrip(name: str, how: str) -> None:
    model, inputs = MODELS[name]()
    gm = _capture(model, inputs, how)
    counts, text = roundtrip(gm, inputs)
    missing = {
        op: (n, counts[op]) for op, n in EXPECTED[name][how].items() if counts[op] < n
    }
    assert not missing, f"too few raised ops (expected, got): {missing}\n{text}"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_corpus_raise_lower(case: ModelCase) -> None:
    gm, inputs = capture(case)
    counts, _ = roundtrip(gm, inputs)
    if case.name.startswith("recsys"):
        for op in ("torch.split", "torch.linear", "torch.layer_norm", "torch.cat"):
            assert counts[op] >= 1, (op, counts)


def test_native_layer_norm_and_addmm_linear_in_aten() -> None:
    """The ATen decomposition of nn.Linear/nn.LayerNorm becomes torch.linear and
    torch.layer_norm: no addmm, permute or native_layer_norm is left."""
    model = _build(lambda: nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.ReLU()))
    inputs = (_randn(3, 8),)
    counts, text = roundtrip(_capture(model, inputs, "aten"), inputs)
    assert counts["torch.linear"] == 1 and counts["torch.layer_norm"] == 1, text
    assert "addmm" not in text and "permute" not in text and "native_layer_norm" not in text


# ---------------------------------------------------------------------------
# what must stay fx
# ---------------------------------------------------------------------------


class MustStay(nn.Module):
    def forward(self, x):
        b = x.size(0)
        y = x.view(b, -1)  # symbolic size: stays fx
        parts = torch.split(x, 2, dim=1)  # the tuple is used whole: stays fx
        z = torch.cat(parts, dim=1)
        w = x.clone()
        w.add_(1.0)  # in-place
        v = torch.cumsum(x, dim=-1)  # unknown to the dialect
        return y, z, w, v, parts


def test_must_stay_fx() -> None:
    model = MustStay()
    inputs = (_randn(3, 4),)
    gm = torch.fx.symbolic_trace(model)
    counts, text = roundtrip(gm, inputs)
    assert counts["torch.split"] == 0 and counts["torch.view"] == 0, text
    assert '"add_"' in text and '"torch.cumsum"' in text and '"view"' in text
    assert '"torch.functional.split"' in text
    assert counts["torch.cat"] == 0  # its operand is the (opaque) tuple itself


def test_inplace_module_stays() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True))
    inputs = (_randn(2, 4),)
    counts, text = roundtrip(torch.fx.symbolic_trace(model), inputs)
    assert counts["torch.linear"] == 1 and counts["torch.relu"] == 0, text


def test_call_module_without_description_stays() -> None:
    """Without `module_attrs` (e.g. a module with hooks) nn.Linear stays a call_module."""
    model = nn.Sequential(nn.Linear(4, 4))
    model[0].register_forward_hook(lambda m, i, o: o * 2)
    inputs = (_randn(2, 4),)
    gm = torch.fx.symbolic_trace(model)
    counts, text = roundtrip(gm, inputs)
    assert counts["torch.linear"] == 0 and "fx.call_module" in text


def test_raise_is_idempotent_and_dims_canonical() -> None:
    src = """
    fx.graph @forward {
      %x = fx.placeholder "x" : tensor<4x12xf32>
      %s = fx.call_function "torch.functional.split"(%x, 4, dim = -1) : tuple<tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>>
      %a = fx.call_function "_operator.getitem"(%s, 0) : tensor<4x4xf32>
      %b = fx.call_function "_operator.getitem"(%s, -1) : tensor<4x4xf32>
      %c = fx.call_method "unsqueeze"(%a, dim = -1) : tensor<4x4x1xf32>
      fx.output (%b, %c)
    }
    """
    module = parse_module(src)
    raise_fx(module)
    text = str(module)
    assert torch_op_counts(module) == Counter({"torch.split": 1, "torch.unsqueeze": 1}), text
    assert "getitem" not in text
    raise_fx(module)
    assert str(module) == text


_TANH_TEXT = """
fx.graph @forward {
  %x = fx.placeholder "x" : tensor<4x12xf32>
  %y = fx.call_function "torch.tanh"(%x) : tensor<4x12xf32>
  %z = fx.call_function "torch.tanh"(%x, 1, 2, 3) : tensor<4x12xf32>
  fx.output (%y, %z)
}
"""


def test_signature_mismatch_leaves_the_op_as_fx() -> None:
    """Arguments that do not fit the modelled signature are the explicit
    "cannot raise" signal: the op stays fx."""
    module = parse_module(_TANH_TEXT)
    raise_fx(module)
    assert torch_op_counts(module)["torch.tanh"] == 1
    assert fx_targets(module)["torch.tanh"] == 1


def test_type_error_inside_a_binder_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TypeError raised by a binder's body is a bug: it must reach the
    caller instead of silently leaving the op unraised."""
    from optimus_ir.passes import raise_fx as raise_module

    def broken(r, x):
        return len(x)  # SSAValue has no len(): a bug in the binder

    monkeypatch.setitem(raise_module.FUNCTIONS, "torch.tanh", broken)
    with pytest.raises(TypeError, match="len"):
        raise_fx(parse_module(_TANH_TEXT.replace(", 1, 2, 3", "")))
