"""maximize-value-semantics (issue 21, items 1, 3 and 7): in-place writes to
temporaries become out-of-place ops, so they no longer block fusion; eval
dropout and rewritten in-place ops leave the graph side-effect free; a
forward that assigns attributes no longer makes optimize() fail."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.foundation.diagnostics import OptimusFallbackWarning


class InPlaceTowers(nn.Module):
    """4 linears, each with nn.ReLU(inplace=True), `y += 1`, and a cat."""

    def __init__(self) -> None:
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(16, 32) for _ in range(4))
        self.act = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = []
        for linear in self.linears:
            y = self.drop(self.act(linear(x)))
            y += 1
            outs.append(y)
        return torch.cat(outs, dim=1)


def _remarks(module: torch.nn.Module) -> list[str]:
    return [str(r) for r in module.optimus_report.remarks]


def _counter(module: torch.nn.Module, name: str) -> int:
    stats = module.optimus_report.statistics.by_pass("maximize-value-semantics")
    return sum(record.counters.get(name, 0) for record in stats)


def test_inplace_relu_and_iadd_on_temporaries_no_longer_block_fusion() -> None:
    torch.manual_seed(0)
    model = InPlaceTowers().eval()
    x = torch.randn(8, 16)
    state = copy.deepcopy(model.state_dict())
    with torch.no_grad():
        want = model(x)
        opt = optimus_ir.optimize(model, [x])
        got = opt(x)
    torch.testing.assert_close(got, want)
    remarks = _remarks(opt)
    assert not [r for r in remarks if "written in place" in r], remarks
    assert _counter(opt, "in-place ops made out of place") == 8  # 4 relus, 4 +=
    assert _counter(opt, "in-place ops kept") == 0
    # the linears reach batch fusion as candidates (fused or priced), not barriers
    assert any("batch-fusion" in r and "torch.linear" in r for r in remarks) or any(
        r.counters.get("groups fused", 0) for r in opt.optimus_report.statistics.by_pass("batch-fusion")
    )
    assert opt.optimus_report.side_effect_free
    # the model given is never changed
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, state[key], rtol=0, atol=0)
    assert model.act.inplace


def test_traced_module_relu_inplace_call_module_is_rewritten() -> None:
    torch.manual_seed(0)
    model = InPlaceTowers().eval()
    traced = torch.fx.symbolic_trace(model)
    assert any(n.op == "call_module" and n.target == "act" for n in traced.graph.nodes)
    x = torch.randn(8, 16)
    with torch.no_grad():
        want = model(x)
        opt = optimus_ir.optimize(traced, [x])
        got = opt(x)
    torch.testing.assert_close(got, want)
    # symbolic tracing records `y += 1` as operator.add: the 4 ReLU module calls
    assert _counter(opt, "in-place ops made out of place") == 4
    assert not [r for r in _remarks(opt) if "written in place" in r]


def test_pass_alone_keeps_values_on_real_inputs() -> None:
    """Before/after on real inputs with only the new pass (and the export)."""

    class Chains(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(6, 6)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            h = self.lin(x)
            early = h.sigmoid()
            h.add_(2.0)
            h.mul_(torch.full((6,), 0.5))
            torch.relu_(h)
            late = h * 3
            return early, h, late, torch.nn.functional.leaky_relu(h.exp(), 0.1, inplace=True)

    torch.manual_seed(0)
    model = Chains()
    x = torch.randn(5, 6)
    with torch.no_grad():
        want = model(x)
        opt = optimus_ir.optimize(model, [x], pipeline="maximize-value-semantics")
        got = opt(x)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b)
    assert _counter(opt, "in-place ops made out of place") == 4
    assert not any(
        str(n.target).endswith("_") or n.kwargs.get("inplace") for n in opt.graph.nodes if n.op not in ("output", "placeholder")
    )


def test_inplace_writes_to_inputs_still_happen() -> None:
    class WritesInput(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x.add_(1.0)
            t = x * 2
            t.relu_()
            return t

    model = WritesInput()
    x = torch.randn(4, 3)
    expected_input = x + 1.0
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x.clone()])
        y = x.clone()
        got = opt(y)
    torch.testing.assert_close(y, expected_input)  # the input was written
    torch.testing.assert_close(got, torch.relu(expected_input * 2))
    assert _counter(opt, "in-place ops made out of place") == 1  # relu_ on the temporary
    assert _counter(opt, "in-place ops kept") == 1  # add_ on the input
    assert any("kept in place" in r and "graph input" in r for r in _remarks(opt))


def test_dtype_promoting_iadd_stays_in_place() -> None:
    class Promotes(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            t = x.exp()
            t += y  # f32 += f64 stays f32 in place; f64 out of place
            return t

    x, y = torch.randn(3, 4), torch.randn(3, 4, dtype=torch.float64)
    with torch.no_grad():
        opt = optimus_ir.optimize(Promotes(), [x, y])
        got = opt(x, y)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, (x.exp() + y).float())
    assert any("type promotion" in r for r in _remarks(opt))


class AssignsAttribute(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x).relu()
        self.saved = y
        return y * 2


def test_forward_assigning_attributes_falls_back_with_a_warning() -> None:
    torch.manual_seed(0)
    model = AssignsAttribute().eval()
    x = torch.randn(2, 4)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt = optimus_ir.optimize(model, [x])
    assert "saved" not in vars(model)  # optimize() did not change the model
    messages = [str(w.message) for w in caught if issubclass(w.category, OptimusFallbackWarning)]
    assert len(messages) == 1 and "assigns 'AssignsAttribute.saved'" in messages[0]
    assert "assigns" in opt.optimus_report.fallback
    with torch.no_grad():
        got = opt(x)
    torch.testing.assert_close(got, model.lin(x).relu() * 2)
    # the optimized module performs the model's attribute write
    torch.testing.assert_close(model.saved, model.lin(x).relu())


def test_deepctr_autoint_optimizes_where_torch_compile_works() -> None:
    pytest.importorskip("deepctr_torch")
    from deepctr_torch.inputs import DenseFeat, SparseFeat
    from deepctr_torch.models import AutoInt

    torch.manual_seed(0)
    cols = [SparseFeat(f"s{i}", vocabulary_size=20, embedding_dim=4) for i in range(3)] + [DenseFeat("d", 1)]
    model = AutoInt(cols, cols, device="cpu").eval()
    x = torch.cat([torch.randint(0, 20, (8, 3)).float(), torch.randn(8, 1)], dim=1)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model(x)
        opt = optimus_ir.optimize(model, [x])
        torch.testing.assert_close(opt(x), want)
    assert hasattr(model.int_layers[0], "normalized_att_scores")
