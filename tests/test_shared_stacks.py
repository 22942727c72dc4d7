"""`optimize(parameter_stacks="shared")`: the fused groups' parameters live in
one storage per group, read without a copy (`optimus_ir.api.shared_stacks`).
The update routes of `tests/test_param_freshness.py` run with it too."""

from __future__ import annotations

import copy
import logging
import pickle

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.api.shared_stacks import SharedStack, shared_stacks

FUSED = "raise-fx,split-cat-simplify,batch-fusion{cost-model=none},lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"


class Towers(nn.Module):
    """Eight `Linear(width, width)` towers over one input, concatenated."""

    def __init__(self, towers: int = 8, width: int = 8) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.towers = nn.ModuleList(nn.Linear(width, width) for _ in range(towers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.tanh(tower(x)) for tower in self.towers], dim=1)


def _x(batch: int = 4) -> torch.Tensor:
    return torch.randn(batch, 8, generator=torch.Generator().manual_seed(1))


def _shared(model: nn.Module, x: torch.Tensor) -> torch.fx.GraphModule:
    return optimus_ir.optimize(model, (x,), FUSED, parameter_stacks="shared")


def test_members_live_in_one_storage_and_are_the_same_parameters() -> None:
    model = Towers()
    before = list(model.parameters())
    values = [p.detach().clone() for p in before]
    opt = _shared(model, _x())
    assert opt.optimus_report.shared_parameter_stacks == 2
    assert list(model.parameters()) == before or all(a is b for a, b in zip(model.parameters(), before, strict=True))
    for p, value in zip(model.parameters(), values, strict=True):
        assert torch.equal(p, value)
    weights = [tower.weight for tower in model.towers]
    assert len({w.untyped_storage().data_ptr() for w in weights}) == 1
    assert all(w.is_contiguous() for w in weights)
    with torch.no_grad():
        torch.testing.assert_close(opt(_x()), model(_x()))
    assert "shared parameter stacks: 2" in opt.optimus_report.format()


def test_the_fused_op_reads_the_stack_without_a_copy() -> None:
    model = Towers()
    opt = _shared(model, _x())
    stacks = shared_stacks(opt)
    assert stacks and all(s.holds(s.members) for s in stacks)
    code = opt.code
    assert "read_shared_stack" in code and "torch.stack([towers_0_weight" not in code
    with torch.no_grad():  # the value read is the storage itself
        assert stacks[0].read(stacks[0].members) is stacks[0].stack
    sites = [v for k, v in vars(opt).items() if k.startswith("_optimus_shared_stacks_")]
    weights = next(s for s in sites if s.stack.label.endswith("weight"))
    assert weights.views  # the fused op's view of the stack (a flatten for a shared-input linear), folded in
    members = weights.stack.members
    with torch.no_grad():  # the view of the storage is made once, while the stack holds
        first = weights.read(members)
        assert weights.read(members) is first and first.untyped_storage().data_ptr() == weights.stack.stack.data_ptr()
    with torch.enable_grad():
        assert weights.read(members).requires_grad


@pytest.mark.parametrize("width", [8, 128])
def test_ten_adam_steps_equal_eager_steps_and_gradients_keep_their_strides(width: int) -> None:
    """Width 8: every stack is small, so under autograd it is stacked per
    call; width 128: the weights (64 KiB each) are read through the
    differentiable view of the storage, the biases stacked."""
    model, reference = Towers(width=width), Towers(width=width)
    x0 = torch.randn(4, width, generator=torch.Generator().manual_seed(1))
    opt = optimus_ir.optimize(model, (x0,), FUSED, parameter_stacks="shared")
    with torch.enable_grad():
        grad_fns = {type(s.differentiable(s.members).grad_fn).__name__ for s in shared_stacks(opt)}
    assert grad_fns == ({"StackBackward0"} if width == 8 else {"StackBackward0", "_StackViewBackward"})
    adam = torch.optim.Adam(model.parameters(), lr=1e-2)
    adam_reference = torch.optim.Adam(reference.parameters(), lr=1e-2)
    for step in range(10):
        x = torch.randn(4 + step % 3, width)  # other batch sizes too: the guard's other graphs share the same stacks
        for module, optimizer in ((opt, adam), (reference, adam_reference)):
            optimizer.zero_grad()
            module(x).square().mean().backward()
        for p, q in zip(model.parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad)
            assert p.grad.stride() == q.grad.stride()
        adam.step()
        adam_reference.step()
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    assert all(s.holds(s.members) and not s.retired for s in shared_stacks(opt))


def test_a_repointed_parameter_is_stacked_for_that_call_and_rehomed_once(caplog: pytest.LogCaptureFixture) -> None:
    model = Towers()
    opt = _shared(model, _x())
    weights = next(s for s in shared_stacks(opt) if s.label.endswith("weight"))
    x = _x()
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="optimus_ir.shared_stacks"):
        model.towers[3].weight.data = model.towers[3].weight.data * 2 + 1
        torch.testing.assert_close(opt(x), model(x))
        assert weights.rehomed == 1 and not weights.retired and weights.holds(weights.members)
        assert "re-pointed or replaced" in caplog.text
        torch.testing.assert_close(opt(x), model(x))
        model.towers[5].weight.data = model.towers[5].weight.data.t().contiguous()  # again: gives up
        torch.testing.assert_close(opt(x), model(x))
        assert weights.retired
        model.towers[5].weight.data.mul_(3)
        torch.testing.assert_close(opt(x), model(x))


def test_a_transposed_view_of_the_slice_is_not_mistaken_for_it() -> None:
    model = Towers()
    opt = _shared(model, _x())
    with torch.no_grad():
        model.towers[0].weight.data = model.towers[0].weight.data.t()  # same storage and offset, other strides
        torch.testing.assert_close(opt(_x()), model(_x()))


def test_a_reassigned_parameter_is_adopted() -> None:
    model = Towers()
    opt = _shared(model, _x())
    model.towers[2].weight = nn.Parameter(torch.full((8, 8), 0.25))
    with torch.no_grad():
        torch.testing.assert_close(opt(_x()), model(_x()))
    weights = next(s for s in shared_stacks(opt) if s.label.endswith("weight"))
    assert weights.members[2] is model.towers[2].weight and weights.holds(weights.members)
    with torch.no_grad():
        torch.testing.assert_close(opt(_x()), model(_x()))


def test_conversions_and_assigning_loads_are_followed() -> None:
    model = Towers()
    opt = _shared(model, _x())
    state = {k: v * 0.5 for k, v in model.state_dict().items()}
    model.load_state_dict(state, assign=True)
    with torch.no_grad():
        torch.testing.assert_close(opt(_x()), model(_x()))
    model.double()
    with torch.no_grad():
        torch.testing.assert_close(opt(_x().double()), model(_x().double()))


def test_a_stack_the_model_returns_is_not_shared() -> None:
    class Returns(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Parameter(torch.randn(3))
            self.b = nn.Parameter(torch.randn(3))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x + 1, torch.stack([self.a, self.b])

    model = Returns()
    opt = optimus_ir.optimize(model, (torch.randn(3),), parameter_stacks="shared")
    assert opt.optimus_report.shared_parameter_stacks == 0
    out = opt(torch.randn(3))[1]
    assert out.untyped_storage().data_ptr() != model.a.untyped_storage().data_ptr()


def test_unshare_gives_each_parameter_its_own_storage() -> None:
    model = Towers()
    opt = _shared(model, _x())
    assert optimus_ir.unshare_parameters(model) == 16
    storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    assert len(storages) == 16
    assert all(s.retired for s in shared_stacks(opt))
    with torch.no_grad():
        model.towers[1].bias.add_(1)
        torch.testing.assert_close(opt(_x()), model(_x()))
    assert optimus_ir.unshare_parameters(model) == 0


def test_copies_of_the_module_stack_per_call() -> None:
    model = Towers()
    opt = _shared(model, _x())
    for twin in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert all(isinstance(s, SharedStack) and s.retired for s in shared_stacks(twin))
        with torch.no_grad():
            torch.testing.assert_close(twin(_x()), opt(_x()))


def test_freeze_wins_over_shared_and_unoptimized_results_release_the_stacks() -> None:
    model = Towers()
    frozen = optimus_ir.optimize(model, (_x(),), FUSED, freeze=True, parameter_stacks="shared")
    assert frozen.optimus_report.shared_parameter_stacks == 0
    assert len({p.untyped_storage().data_ptr() for p in model.parameters()}) == 16


def test_a_bad_choice_names_the_option() -> None:
    with pytest.raises(ValueError, match="parameter_stacks"):
        optimus_ir.optimize(Towers(), (_x(),), parameter_stacks="views")


@pytest.mark.parametrize("inner", ["eager", "inductor"])
def test_torch_compile_passes_each_stack_as_one_input(inner: str) -> None:
    """Under torch.compile the parameters are graph inputs: the backend
    re-homes them and hands the compiled graph each stack as one more input;
    training steps and a re-pointed parameter come out as in eager."""
    model, reference = Towers(), Towers()
    torch._dynamo.reset()
    backend = optimus_ir.backend(inner=inner, parameter_stacks="shared", cost_model="none")
    compiled = torch.compile(model, backend=backend)
    sgd, sgd_reference = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference))
    for _ in range(3):
        for module, optimizer in ((compiled, sgd), (reference, sgd_reference)):
            optimizer.zero_grad()
            module(_x()).square().mean().backward()
            optimizer.step()
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    assert sum(o.report.shared_parameter_stacks for o in backend.outcomes if o.report) >= 1
    assert len({p.untyped_storage().data_ptr() for p in model.parameters()}) < 16
    with torch.no_grad():
        for m in (model, reference):
            m.towers[1].weight.data = m.towers[1].weight.data * 3
        torch.testing.assert_close(compiled(_x()), reference(_x()))
    torch._dynamo.reset()


class WideTowers(nn.Module):
    """Eight `Linear(128, 128)` towers at a tiny batch: stacking 0.5 MiB of
    weights per call costs more than the seven op calls fusion saves, which
    pay for checking the 16 members of shared stacks on every call."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.towers = nn.ModuleList(nn.Linear(128, 128) for _ in range(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.relu(t(xi)) for t, xi in zip(self.towers, x.split(128, 1), strict=True)], 1)


def test_the_report_names_the_option_that_would_fuse_groups_declined_for_copies() -> None:
    x = torch.randn(2, 1024)
    # In training mode the shared stacks' autograd views cost more than the
    # copies save here: the report must not name an option that would not fuse.
    trained = optimus_ir.optimize(WideTowers().train(), (x,), check_speed=False, cost_model="default")
    assert trained.optimus_report.declined_for_parameter_copies == (0, 0)
    assert "parameter_stacks='shared'" not in trained.optimus_report.format()
    shared_trained = optimus_ir.optimize(
        WideTowers().train(), (x,), check_speed=False, cost_model="default", parameter_stacks="shared"
    )
    assert shared_trained.optimus_report.groups_fused == trained.optimus_report.groups_fused
    copied = optimus_ir.optimize(WideTowers().eval(), (x,), check_speed=False, cost_model="default")
    declined, gain_ns = copied.optimus_report.declined_for_parameter_copies
    assert declined == 1 and gain_ns > 0
    assert "parameter_stacks='shared'" in copied.optimus_report.format()
    remark = next(str(r) for r in copied.optimus_report.remarks if "parameter_stacks='shared'" in str(r))
    assert "torch.linear" in remark and "unprofitable" in remark
    shared = optimus_ir.optimize(
        WideTowers().eval(), (x,), check_speed=False, cost_model="default", parameter_stacks="shared"
    )
    assert shared.optimus_report.declined_for_parameter_copies == (0, 0)
    assert shared.optimus_report.groups_fused == copied.optimus_report.groups_fused + 1
    with torch.no_grad():
        torch.testing.assert_close(shared(x), WideTowers()(x))


def test_shared_stacks_are_priced_with_their_per_call_check() -> None:
    """A shared stack is free to read but checked on every call: in an
    optimized module once per stack (its members are `WatchedParameter`s),
    under torch.compile member by member. The estimate says which."""
    x = torch.randn(2, 1024)
    shared = optimus_ir.optimize(
        WideTowers().eval(), (x,), check_speed=False, cost_model="default", parameter_stacks="shared"
    )
    fused = [str(r) for r in shared.optimus_report.remarks if "torch.linear" in str(r) and "fused" in str(r)]
    assert any("checks 2 shared stacks (~0.4 us)" in r for r in fused), fused
    # In training mode the stacks are read under autograd: members under
    # GRAD_VIEW_MIN_BYTES (the biases) are stacked per call, priced as the
    # copies they are; larger ones pay the view's autograd function per member.
    trained = optimus_ir.optimize(
        WideTowers().train(), (x,), check_speed=False, cost_model="default", parameter_stacks="shared"
    )
    remarks = [str(r) for r in trained.optimus_report.remarks if "torch.linear" in str(r)]
    assert any("shared members" in r and "copies" in r for r in remarks), remarks

    class FourTowers(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.towers = nn.ModuleList(nn.Linear(256, 256) for _ in range(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([torch.relu(t(xi)) for t, xi in zip(self.towers, x.split(256, 1), strict=True)], 1)

    pipeline = (
        "raise-fx,batch-fusion{cost-model=default constant-parameters=true checked-parameters=true target=inductor},"
        "lower-batch,lower-to-fx"
    )
    four = optimus_ir.optimize(FourTowers(), (x,), pipeline, check_speed=False)
    linear = [str(r) for r in four.optimus_report.remarks if "torch.linear" in str(r)]
    assert len(linear) == 1 and "target inductor" in linear[0] and "checks 8 shared members (~2.4 us)" in linear[0], linear
