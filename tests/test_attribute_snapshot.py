"""The prologue's snapshot of the model's dicts
(`optimus_ir.translate.attribute_snapshot`): a call whose dicts still hold
what the last call read skips the reads, and every way of changing them
(or of re-pointing a shared stack's member) is seen by the next call."""

from __future__ import annotations

import copy
import logging
import pickle

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.api.shared_stacks import WatchedParameter, shared_stacks, unshare_parameters
from optimus_ir.translate.attribute_snapshot import (
    MAX_MISS_SCORE,
    MISS_COST,
    SNAPSHOT_ATTRIBUTE,
    AttributeSnapshot,
    WatchedDict,
)

FUSED = "raise-fx,split-cat-simplify,batch-fusion{cost-model=none},lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"


class ScaledTowers(nn.Module):
    """Four `Linear(8, 8)` towers and a one-element scale."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.towers = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.tanh(tower(x)) for tower in self.towers], dim=1) * self.scale


def _setup(stacks: str = "shared") -> tuple[nn.Module, torch.fx.GraphModule, torch.Tensor, AttributeSnapshot]:
    model = ScaledTowers()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    opt = optimus_ir.optimize(model, (x,), FUSED, parameter_stacks=stacks)
    snapshot = opt.__dict__[SNAPSHOT_ATTRIBUTE]
    with torch.no_grad():
        for _ in range(3):  # the first call records, the next ones use the snapshot
            torch.testing.assert_close(opt(x), model(x))
    assert snapshot.values is not None and snapshot.valid()
    return model, opt, x, snapshot


def _check(model: nn.Module, opt: torch.fx.GraphModule, x: torch.Tensor) -> None:
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(opt(x), model(x))


@pytest.mark.parametrize("stacks", ["copy", "shared"])
def test_a_valid_snapshot_is_used_and_gives_the_same_values(stacks: str) -> None:
    model, opt, x, snapshot = _setup(stacks)
    with torch.no_grad():
        model.towers[1].weight.mul_(3)  # in place: the dicts hold the same objects
    assert snapshot.valid()
    _check(model, opt, x)


def test_a_one_element_parameter_replaced_by_an_equal_one_is_followed() -> None:
    """`==` of two one-element tensors of equal value is True: the snapshot
    compares such entries by identity, so later in-place updates of the new
    parameter reach the call."""
    model, opt, x, snapshot = _setup()
    model.scale = nn.Parameter(torch.tensor(2.0))
    assert not snapshot.valid()
    _check(model, opt, x)
    with torch.no_grad():
        model.scale.add_(1.0)
    _check(model, opt, x)


def test_a_direct_write_into_the_parameter_dict_is_followed() -> None:
    model, opt, x, snapshot = _setup()
    model.towers[2]._parameters["bias"] = nn.Parameter(torch.randn(8))  # noqa: SLF001  (as functional_call does)
    assert not snapshot.valid()
    _check(model, opt, x)


@pytest.mark.parametrize(
    "route", ["set_", "data", "data-transposed", "data-of-another-member", "t_", "as_strided_", "to-double-and-back"]
)
def test_a_member_repointed_behind_the_dicts_is_followed(route: str) -> None:
    """Re-pointing keeps the Parameter object, so the dicts do not change;
    the member (a `WatchedParameter`) tells its stack, which is tested
    member by member on the next call: the call stacks the members and the
    stack re-homes. A later in-place update reaches the call too."""
    model, opt, x, snapshot = _setup()
    weight = model.towers[0].weight
    with torch.no_grad():
        if route == "set_":
            weight.set_(torch.randn(8, 8))
        elif route == "data":
            weight.data = torch.randn(8, 8)
        elif route == "data-transposed":
            weight.data = weight.data.t()  # the same storage and pointer, other strides
        elif route == "data-of-another-member":
            weight.data = model.towers[1].weight.data  # tied: the same storage, another offset
        elif route == "t_":
            weight.t_()
        elif route == "as_strided_":
            weight.as_strided_((8, 8), (1, 8))
        else:
            model.double().float()  # `_apply`: `p.data = ...` for every parameter
    stack = shared_stacks(opt)[0]
    assert not stack.verified and not snapshot.valid()
    _check(model, opt, x)
    with torch.no_grad():
        model.towers[1].weight.add_(1.0)
    _check(model, opt, x)


def test_homed_members_stay_parameters_and_the_untouched_stack_needs_no_member_test() -> None:
    """A homed member is a `WatchedParameter`: a `Parameter` to `isinstance`,
    optimizers and `state_dict`; a stack no route touched is verified, so a
    valid snapshot hands it out without testing each member, and in-place
    value updates (an optimizer's) keep it verified. `unshare_parameters`
    gives back plain Parameters."""
    model, opt, x, snapshot = _setup()
    stack = shared_stacks(opt)[0]
    assert stack.verified
    assert all(type(m) is WatchedParameter and isinstance(m, nn.Parameter) for m in stack.members)
    calls: list[int] = []
    original = type(stack).holds
    type(stack).holds = lambda self, members: calls.append(1) or original(self, members)  # type: ignore[method-assign]
    try:
        with torch.no_grad():
            model.towers[3].weight.mul_(0.5)
        _check(model, opt, x)
    finally:
        type(stack).holds = original  # type: ignore[method-assign]
    assert calls == [] and stack.verified and snapshot.valid()
    assert optimus_ir.unshare_parameters(model) == sum(len(s.members) for s in shared_stacks(opt))
    assert all(type(p) is nn.Parameter for p in model.parameters())
    _check(model, opt, x)


def test_without_the_snapshot_every_member_is_tested_on_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """`OPTIMUS_SNAPSHOT=0`: even a re-pointing no `WatchedParameter` route
    sees (the base class's `set_`, called directly) is followed."""
    monkeypatch.setenv("OPTIMUS_SNAPSHOT", "0")
    model, opt, x, snapshot = _setup_unrecorded()
    with torch.no_grad():
        torch.Tensor.set_(model.towers[0].weight, torch.randn(8, 8))
    _check(model, opt, x)


def _setup_unrecorded() -> tuple[nn.Module, torch.fx.GraphModule, torch.Tensor, AttributeSnapshot]:
    model = ScaledTowers()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    opt = optimus_ir.optimize(model, (x,), FUSED, parameter_stacks="shared")
    snapshot = opt.__dict__[SNAPSHOT_ATTRIBUTE]
    _check(model, opt, x)
    assert snapshot.values is None
    return model, opt, x, snapshot


def test_a_replaced_submodule_is_followed() -> None:
    model, opt, x, snapshot = _setup()
    model.towers[1] = nn.Linear(8, 8)
    assert not snapshot.valid()
    _check(model, opt, x)


def test_training_steps_through_the_snapshot_match_eager() -> None:
    """Gradients flow through the reads a valid snapshot gives (a fresh
    differentiable view of each stack per call)."""
    model, opt, x, _ = _setup()
    reference = ScaledTowers()
    reference.load_state_dict(model.state_dict())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    reference_optimizer = torch.optim.Adam(reference.parameters(), lr=1e-2)
    for _ in range(5):
        for module, opt_ in ((opt, optimizer), (reference, reference_optimizer)):
            opt_.zero_grad(set_to_none=True)
            module(x).square().mean().backward()
            opt_.step()
    for (name, got), want in zip(model.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(got, want, msg=name)


def test_a_snapshot_that_is_stale_on_most_calls_stops_recording(caplog: pytest.LogCaptureFixture) -> None:
    model, opt, x, snapshot = _setup()
    with caplog.at_level(logging.DEBUG, logger="optimus_ir.translate.attribute_snapshot"):
        for i in range(MAX_MISS_SCORE // MISS_COST + 2):
            model.scale = nn.Parameter(torch.tensor(float(i)))
            _check(model, opt, x)
    assert not snapshot.enabled and snapshot.values is None
    assert any("stale on most calls" in r.getMessage() for r in caplog.records)
    _check(model, opt, x)


def test_without_a_snapshot_the_dicts_are_read_on_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTIMUS_SNAPSHOT", "0")
    model = ScaledTowers()
    x = torch.randn(4, 8)
    opt = optimus_ir.optimize(model, (x,), FUSED, parameter_stacks="shared")
    snapshot = opt.__dict__[SNAPSHOT_ATTRIBUTE]
    _check(model, opt, x)
    assert not snapshot.enabled and snapshot.values is None


def test_under_torch_compile_the_dicts_are_read() -> None:
    """Dynamo traces the prologue's full read (the snapshot says it is not
    valid while compiling) and the compiled module follows updates."""
    model, opt, x, _ = _setup()
    compiled = torch.compile(opt, backend="eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        model.towers[0].weight.mul_(0.5)
        torch.testing.assert_close(compiled(x), model(x))


def test_with_shared_stacks_the_module_dicts_are_watched_and_not_compared() -> None:
    """The model's dicts become `WatchedDict`s: while nothing writes to one,
    a valid snapshot does not compare them (its copies are never looked at)."""
    model, opt, x, snapshot = _setup()
    assert snapshot.watched and all(type(table) is WatchedDict for table in snapshot.dicts)
    assert type(model.towers[0]._parameters) is WatchedDict  # noqa: SLF001
    snapshot.copies = [object()] * len(snapshot.dicts)  # would compare unequal
    assert snapshot.valid()
    _check(model, opt, x)


_DICT_WRITES = {
    "setitem": lambda table, new: table.__setitem__("bias", new),
    "update": lambda table, new: table.update(bias=new),
    "ior": lambda table, new: table.__ior__({"bias": new}),
    "pop-setdefault": lambda table, new: (table.pop("bias"), table.setdefault("bias", new)),
    "popitem-setitem": lambda table, new: (table.popitem(), table.__setitem__("bias", new)),
    "del-setitem": lambda table, new: (table.__delitem__("bias"), table.__setitem__("bias", new)),
    "clear-update": lambda table, new: (
        weight := table["weight"],
        table.clear(),
        table.update({"weight": weight, "bias": new}),
    ),
}


@pytest.mark.parametrize("route", sorted(_DICT_WRITES))
def test_every_write_to_a_watched_dict_is_followed(route: str) -> None:
    model, opt, x, snapshot = _setup()
    new_bias = nn.Parameter(torch.randn(8))
    _DICT_WRITES[route](model.towers[2]._parameters, new_bias)  # noqa: SLF001
    assert model.towers[2].bias is new_bias
    assert not snapshot.valid()
    _check(model, opt, x)
    with torch.no_grad():
        new_bias.add_(1.0)
    _check(model, opt, x)


def test_a_snapshot_recorded_before_the_dicts_were_watched_reads_them_again() -> None:
    """Watching replaces the dict objects: a module optimized before (whose
    snapshot holds the replaced ones) reads the dicts again, so later writes
    to the watched ones reach it."""
    model = ScaledTowers()
    x = torch.randn(4, 8)
    earlier = optimus_ir.optimize(model, (x,), FUSED)
    _check(model, earlier, x)
    assert earlier.__dict__[SNAPSHOT_ATTRIBUTE].valid()
    optimus_ir.optimize(model, (x,), FUSED, parameter_stacks="shared")
    assert not earlier.__dict__[SNAPSHOT_ATTRIBUTE].valid()
    _check(model, earlier, x)
    model.towers[2]._parameters["bias"] = nn.Parameter(torch.randn(8))  # noqa: SLF001
    _check(model, earlier, x)


def test_copies_of_a_watched_model_have_plain_dicts_and_unshare_restores_them() -> None:
    model, opt, x, _ = _setup()
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert all(type(m._parameters) is dict and type(m._modules) is dict for m in clone.modules())  # noqa: SLF001
        torch.testing.assert_close(clone(x), model(x))
    compiled = torch.compile(model, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), model(x))
    unshare_parameters(model)
    assert all(type(m._parameters) is dict for m in model.modules())  # noqa: SLF001
    model.towers[2]._parameters["bias"] = nn.Parameter(torch.randn(8))  # noqa: SLF001
    _check(model, opt, x)
