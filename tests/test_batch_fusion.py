"""Numerical tests of batch fusion: each model runs before and after on real
inputs.

Tolerances: fusion moves members into one bmm/layer_norm/pointwise call.
The pointwise and layer-norm kernels compute each element as before (the
tests below see bit-identical results on this CPU, but a vectorized kernel
may round differently on another one); a batched matmul may sum its K
products in another order. So fp32 results are compared with
`rtol=1e-5, atol=1e-5` (a few ulps of the values these models produce) and
fp64 with `rtol=1e-12, atol=1e-12`; data movement alone (packs, unpacks,
cats) is exact.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from optimus_ir.examples.recsys import make_recsys_model
from optimus_ir.api import capture, optimize
from pipelines import FUSE_ALL

F32 = dict(rtol=1e-5, atol=1e-5)
F64 = dict(rtol=1e-12, atol=1e-12)


def _fused_kinds(gm: torch.fx.GraphModule) -> list[str]:
    return [r.message for r in gm.optimus_report.remarks if "batch-fusion: fused" in r.message]


def _calls(gm: torch.fx.GraphModule, name: str) -> int:
    return sum(
        1 for n in gm.graph.nodes
        if n.op in ("call_function", "call_method") and name in str(getattr(n.target, "__name__", n.target))
    )


@pytest.mark.parametrize(
    "variant",
    [
        dict(num_towers=8),
        dict(num_towers=9, tower_width=(16, 32, 64), tower_hidden=32,
             activations=("tanh", "relu", "sigmoid"), tower_depth=2),
    ],
    ids=["uniform", "mixed"],
)
def test_recsys_towers_fuse_and_match(variant):
    model, (x,) = make_recsys_model(batch=16, **variant)
    state = copy.deepcopy(model.state_dict())
    gm = optimize(model, (x,), pipeline=FUSE_ALL)
    captured = capture(model, (x,), {})
    with torch.no_grad():
        torch.testing.assert_close(gm(x), captured(x), **F32)
        other = torch.randn_like(x)
        torch.testing.assert_close(gm(other), captured(other), **F32)
    fused = " ".join(_fused_kinds(gm))
    for kind in ("batch.linear", "batch.layer_norm", "batch.pointwise"):
        assert kind in fused
    # The towers' linears are gone except the MLP's two.
    assert _calls(gm, "linear") == 2
    assert _calls(gm, "baddbmm") >= 1
    for key, value in model.state_dict().items():  # optimize() never changes the model
        assert torch.equal(value, state[key])


def test_fp64_towers_match_within_fp64_tolerance():
    model, (x,) = make_recsys_model(batch=8, num_towers=6)
    model = model.double()
    x = x.double()
    gm = optimize(model, (x,), pipeline=FUSE_ALL)
    assert _fused_kinds(gm)
    with torch.no_grad():
        torch.testing.assert_close(gm(x), model(x), **F64)


class FeatureAndExperts(nn.Module):
    """A per-feature linear (on its own [64, 4] input) beside six experts
    sharing one input: issue 34's remark read like a bug."""

    def __init__(self) -> None:
        super().__init__()
        self.feature = nn.Linear(4, 16)
        self.experts = nn.ModuleList(nn.Linear(16, 16) for _ in range(6))

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        shared = batch["shared"]
        return {
            "feature": torch.relu(self.feature(batch["f0"])),
            "experts": torch.cat([torch.relu(e(shared)) for e in self.experts], dim=1),
        }


def test_the_remark_of_a_linear_beside_a_shared_input_group_says_why_in_words():
    torch.manual_seed(0)
    model = FeatureAndExperts().eval()
    batch = {"f0": torch.randn(64, 4), "shared": torch.randn(64, 16)}
    gm = optimize(model, [batch], pipeline=FUSE_ALL)
    messages = [r.message for r in gm.optimus_report.remarks]
    assert any("fused 6 torch.linear" in m and "batch.linear_shared_input" in m for m in messages), messages
    (remark,) = [m for m in messages if "not fused with the 6-member group" in m]
    assert remark.endswith(
        ": its input is its own tensor, the group's members share one input (%l_batch_shared_); "
        "key also differs in weight shape ([16, 4] vs [16, 16])"
    ), remark
    assert "vs none" not in remark
    with torch.no_grad():
        for name, value in model(batch).items():
            torch.testing.assert_close(gm(batch)[name], value, **F32)


def test_group_key_mismatch_in_words():
    """`GroupKey.mismatch` for keys of different kinds, both ways, and of
    one kind (the fields alone)."""
    from optimus_ir.passes.batch_fusion import GroupKey

    own = GroupKey("linear", "torch.linear", (("input shape", (64, 4)), ("weight shape", (16, 4)), ("segment", 0)))
    shared = GroupKey(
        "linear-shared-input", "torch.linear",
        (("input", "%x"), ("weight shape", (16, 16)), ("input value", 1), ("segment", 0)),
    )
    grouped = GroupKey("grouped-linear", "torch.linear", (("input rank", 2), ("segment", 0)))
    assert own.mismatch(shared) == (
        "its input is its own tensor, the group's members share one input (%x); "
        "key also differs in weight shape ([16, 4] vs [16, 16])"
    )
    assert shared.mismatch(own) == (
        "its input (%x) is shared with other linears, the group's members each have their own input; "
        "key also differs in weight shape ([16, 16] vs [16, 4])"
    )
    assert grouped.mismatch(shared) == (
        "it fuses as a grouped linear (members of different shapes), the group as a linear on an input "
        "shared with other linears"
    )
    other = GroupKey("linear", "torch.linear", (("input shape", (64, 8)), ("weight shape", (16, 4)), ("segment", 1)))
    assert own.mismatch(other) == (
        "key differs in input shape ([64, 4] vs [64, 8]), segment (an op with side effects lies between them)"
    )


class MixedDtypes(nn.Module):
    """Two fp32 towers and one fp64 tower: PyTorch's Optimus fuses all three."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.c = nn.Linear(8, 8).double()

    def forward(self, x, y, z):
        return torch.tanh(self.a(x)), torch.tanh(self.b(y)), torch.tanh(self.c(z))


def test_members_of_different_dtypes_are_not_fused():
    model = MixedDtypes().eval()
    inputs = (torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8, dtype=torch.float64))
    gm = optimize(model, inputs, pipeline=FUSE_ALL)
    messages = [r.message for r in gm.optimus_report.remarks]
    assert any("fused 2 torch.linear" in m for m in messages)
    assert any("key differs in" in m and "dtype (f64 vs f32)" in m for m in messages)
    with torch.no_grad():
        for got, want in zip(gm(*inputs), model(*inputs)):
            assert got.dtype == want.dtype
            torch.testing.assert_close(got, want, **F32)


class PositionalArguments(nn.Module):
    """Towers whose pointwise ops take positional arguments PyTorch's
    Optimus drops (nan_to_num, clamp, dropout)."""

    def forward(self, x, y):
        outs = []
        for t in (x, y):
            t = torch.nan_to_num(t, 0.5, 7.0, -7.0)
            t = torch.clamp(t, -3.0, 3.0)
            t = F.dropout(t, 0.25, False)
            outs.append(torch.add(t, 1.0, alpha=2))
        return torch.cat(outs, dim=1)


def test_positional_arguments_of_members_are_kept():
    x = torch.tensor([[float("nan"), float("inf"), -float("inf"), 5.0, -5.0, 0.25]] * 3)
    y = torch.tensor([[1.0, float("nan"), 2.5, -float("inf"), float("inf"), -0.5]] * 3)
    model = PositionalArguments()
    gm = optimize(model, (x, y), pipeline=FUSE_ALL)
    fused = " ".join(_fused_kinds(gm))
    assert "torch.nan_to_num" in fused and "torch.clamp" in fused and "torch.add" in fused
    # exact: pointwise ops on stacked members compute every element as before
    torch.testing.assert_close(gm(x, y), model(x, y), rtol=0, atol=0)


class WritesATowerInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x, y):
        first = self.a(x)
        x.mul_(2)  # a write between the reads of x: nothing reading x may move
        second = self.b(x)
        return first, second, self.a(y)


def test_members_whose_inputs_are_written_in_place_are_not_fused():
    model = WritesATowerInput().eval()
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    gm = optimize(model, (x.clone(), y), pipeline=FUSE_ALL)
    messages = [r.message for r in gm.optimus_report.remarks]
    assert any("mutation" in m for m in messages)
    assert not any("fused" in m and "%x" in m for m in messages)
    x1, x2 = x.clone(), x.clone()
    with torch.no_grad():
        got = gm(x1, y)
        want = model(x2, y)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    torch.testing.assert_close(x1, x2, rtol=0, atol=0)


def test_training_backward_reaches_the_original_parameters():
    model, (x,) = make_recsys_model(batch=8, num_towers=4)
    reference = copy.deepcopy(model)
    gm = optimize(model, (x,), pipeline=FUSE_ALL)
    assert _fused_kinds(gm)
    gm(x).sum().backward()
    reference(x).sum().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, **F32)


def test_results_follow_parameter_updates_after_optimize():
    model, (x,) = make_recsys_model(batch=8, num_towers=4)
    gm = optimize(model, (x,), pipeline=FUSE_ALL)
    with torch.no_grad():
        before = gm(x)
        model.towers[1].weight.mul_(-1.5)  # in place (a shift would vanish in the layer_norm)
        torch.testing.assert_close(gm(x), model(x), **F32)
        assert not torch.allclose(gm(x), before)
        state = {k: v + 0.25 for k, v in model.state_dict().items()}
        model.load_state_dict(state)
        torch.testing.assert_close(gm(x), model(x), **F32)


def test_default_cost_model_leaves_tiny_groups_alone():
    """Two 4-element tanh members: stacking them costs more than one call saves."""

    class Tiny(nn.Module):
        def forward(self, x, y):
            return torch.tanh(x), torch.tanh(y)

    x, y = torch.randn(4), torch.randn(4)
    gm = optimize(Tiny(), (x, y))
    messages = [r.message for r in gm.optimus_report.remarks]
    assert any("not fused: unprofitable" in m for m in messages), messages
    assert _calls(gm, "tanh") == 2


@pytest.mark.parametrize("fused_slower", [True, False])
def test_speed_check_falls_back_when_the_fused_module_is_slower(monkeypatch, fused_slower):
    """The final check: a fused module measured slower than the captured
    graph is replaced by the pipeline without batch fusion (the timing is
    simulated here, so the test does not depend on the machine)."""
    from optimus_ir.api import speed_check

    def fake_timing(modules, args, kwargs):
        return [[2.0, 1.0] if fused_slower else [1.0, 2.0]] * 7

    monkeypatch.setattr(speed_check, "_per_call_rounds", fake_timing)
    model, (x,) = make_recsys_model(batch=8, num_towers=4)
    # freeze: the cost model fuses the small linears only when their stacks are free
    gm = optimize(model, (x,), check_speed=True, freeze=True)
    check = gm.optimus_report.speed_check
    assert check is not None and check.fell_back is fused_slower
    # counted after the rounds, on the real modules: a 4-tower model at batch 8 maps no fresh pages per call
    assert check.fused_faults is not None and check.captured_faults is not None
    assert 0 <= check.fused_faults < 64 and 0 <= check.captured_faults < 64
    assert ("batch-fusion" in gm.optimus_report.pipeline) is not fused_slower
    assert (_calls(gm, "baddbmm") == 0) is fused_slower
    with torch.no_grad():
        torch.testing.assert_close(gm(x), model(x), **F32)
    assert "speed check" in gm.optimus_report.format()


def test_speed_check_skips_graphs_with_side_effects():
    class Counts(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x, y):
            self.calls.add_(1)
            return self.a(x), self.b(y)

    model = Counts()
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    gm = optimize(model, (x, y), pipeline=FUSE_ALL, check_speed=True)
    assert gm.optimus_report.speed_check is None  # running it would count
    assert model.calls.item() == 0
