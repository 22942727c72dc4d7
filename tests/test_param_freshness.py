"""Parameter freshness (issue 19, point 1): every documented way to change a
parameter or buffer of the original model is followed by the module
`optimize()` returned, fused or not, called under `no_grad` or with grad
(where the gradients must match the model's too); `freeze=True` treats the
parameters as constants and a backward through frozen values raises.

Each case: optimize the model, change it by one route, compare `opt(x)`
with `model(x)` (and, with grad, every parameter's gradient)."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.api.param_cache import FROZEN_GUARD_ATTRIBUTE

TOWERS = 8
FUSED = "raise-fx,split-cat-simplify,batch-fusion{cost-model=none},lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
UNFUSED = "raise-fx,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"


class Towers(nn.Module):
    """`TOWERS` towers of `Linear(8, 8)` over one input scaled by a buffer,
    concatenated: batch fusion stacks every weight and bias."""

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.towers = nn.ModuleList(nn.Linear(8, 8) for _ in range(TOWERS))
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=generator))
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * self.scale
        return torch.cat([tower(x) for tower in self.towers], dim=1)


def _x() -> torch.Tensor:
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(1))


def _make_grads(model: nn.Module, x: torch.Tensor) -> None:
    model.zero_grad(set_to_none=True)
    model(x).square().mean().backward()


def _optimizer_route(cls: type, **flags: object) -> Callable[[nn.Module, torch.Tensor], None]:
    def route(model: nn.Module, x: torch.Tensor) -> None:
        if cls is torch.optim.Muon:  # matrices only
            params = [p for p in model.parameters() if p.ndim == 2]
        else:
            params = list(model.parameters())
        optimizer = cls(params, **flags)
        for _ in range(2):
            _make_grads(model, x)
            if cls is torch.optim.LBFGS:
                optimizer.step(lambda: model(x).square().mean())
            else:
                optimizer.step()

    return route


def _optimizer_routes() -> dict[str, Callable[[nn.Module, torch.Tensor], None]]:
    """Every torch.optim optimizer (SparseAdam takes sparse gradients only,
    which a linear does not make), plain and with each of its foreach /
    fused / capturable flags that this machine supports (fused and
    capturable steps do not bump the parameters' version counters)."""
    routes = {}
    devices_for_capturable = torch.cuda.is_available()
    for name in sorted(dir(torch.optim)):
        cls = getattr(torch.optim, name)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
            continue
        if cls in (torch.optim.Optimizer, torch.optim.SparseAdam):
            continue
        routes[name] = _optimizer_route(cls)
        flags = inspect.signature(cls.__init__).parameters
        if "foreach" in flags:
            routes[f"{name}-foreach"] = _optimizer_route(cls, foreach=True)
        if "fused" in flags and cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.Adagrad):
            routes[f"{name}-fused"] = _optimizer_route(cls, fused=True)
        if "capturable" in flags and devices_for_capturable:  # CUDA only
            routes[f"{name}-capturable"] = _optimizer_route(cls, capturable=True)
    return routes


def _in_place(model: nn.Module, x: torch.Tensor) -> None:
    with torch.no_grad():
        model.towers[0].weight.add_(1)
        model.scale.mul_(2)


def _data_add(model: nn.Module, x: torch.Tensor) -> None:
    model.towers[1].weight.data.add_(1)
    model.towers[2].bias.data.mul_(-3)
    model.scale.data.add_(0.25)


def _data_sgd(model: nn.Module, x: torch.Tensor) -> None:
    _make_grads(model, x)
    for p in model.parameters():
        p.data -= 0.5 * p.grad


def _data_transposed(model: nn.Module, x: torch.Tensor) -> None:
    weight = model.towers[3].weight
    weight.data = weight.data.t()  # same storage, other strides


def _data_replaced(model: nn.Module, x: torch.Tensor) -> None:
    model.towers[4].weight.data = torch.full((8, 8), 0.125)


def _load_state_dict(model: nn.Module, x: torch.Tensor) -> None:
    other = Towers()
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(-1)
        other.scale.fill_(2.0)
    model.load_state_dict(other.state_dict())


def _load_state_dict_assign(model: nn.Module, x: torch.Tensor) -> None:
    other = Towers()
    with torch.no_grad():
        for p in other.parameters():
            p.add_(1)
        other.scale.fill_(-1.0)
    model.load_state_dict(other.state_dict(), assign=True)  # new tensor objects


def _reassign_parameter(model: nn.Module, x: torch.Tensor) -> None:
    model.towers[5].weight = nn.Parameter(torch.full((8, 8), -0.5))
    model.towers[6].bias = nn.Parameter(torch.arange(8.0))


def _reassign_buffer(model: nn.Module, x: torch.Tensor) -> None:
    model.scale = torch.full((8,), 3.0)


def _reassign_module(model: nn.Module, x: torch.Tensor) -> None:
    model.towers[7] = nn.Linear(8, 8)


def _convert(conversion: Callable[[nn.Module], object], dtype: torch.dtype | None = None):
    def route(model: nn.Module, x: torch.Tensor) -> torch.dtype | None:
        conversion(model)
        return dtype

    return route


def _to_overwriting(model: nn.Module, x: torch.Tensor) -> torch.dtype:
    """`.to()` where torch replaces the Parameter objects."""
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        model.to(torch.float64)
    finally:
        torch.__future__.set_overwrite_module_params_on_conversion(False)
    return torch.float64


ROUTES: dict[str, Callable[[nn.Module, torch.Tensor], object]] = {
    "in-place": _in_place,
    "data-add": _data_add,
    "data-sgd": _data_sgd,
    "data-transposed": _data_transposed,
    "data-replaced": _data_replaced,
    "load_state_dict": _load_state_dict,
    "load_state_dict-assign": _load_state_dict_assign,
    "reassign-parameter": _reassign_parameter,
    "reassign-buffer": _reassign_buffer,
    "reassign-module": _reassign_module,
    "to-double": _convert(lambda m: m.to(torch.float64), torch.float64),
    "double": _convert(lambda m: m.double(), torch.float64),
    "half": _convert(lambda m: m.half(), torch.float16),
    "to-overwriting": _to_overwriting,
    **_optimizer_routes(),
}


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize(
    ("pipeline", "stacks"),
    [(FUSED, "copy"), (UNFUSED, "copy"), (FUSED, "shared")],
    ids=["fused", "unfused", "fused-shared"],
)
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_update_is_followed(route: str, pipeline: str, stacks: str, grad: bool) -> None:
    """Every update route reaches the next call: with the stacks copied per
    call, and with the parameters living in shared stacks (which then either
    still hold them or are stacked for that call and re-homed)."""
    model = Towers()
    x = _x()
    opt = optimus_ir.optimize(model, (x,), pipeline, parameter_stacks=stacks)
    assert opt.optimus_report.shared_parameter_stacks == (2 if stacks == "shared" else 0)
    linears = opt.optimus_report.ops_after["linear"] + opt.optimus_report.ops_after.get("baddbmm", 0)
    if pipeline == FUSED:
        assert opt.optimus_report.ops_before["linear"] == TOWERS and linears < TOWERS
    else:
        assert opt.optimus_report.ops_after["linear"] == TOWERS
    with torch.no_grad():
        torch.testing.assert_close(opt(x), model(x))  # the first call, before the update
    dtype = ROUTES[route](model, x)
    if isinstance(dtype, torch.dtype):
        x = x.to(dtype)
    model.zero_grad(set_to_none=True)
    with torch.set_grad_enabled(grad):
        expected = model(x)
        if grad:
            expected.square().mean().backward()
            expected_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
            model.zero_grad(set_to_none=True)
        actual = opt(x)
        torch.testing.assert_close(actual, expected)
        if grad:
            actual.square().mean().backward()
            grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
            assert grads.keys() == expected_grads.keys()
            for name, gradient in expected_grads.items():
                torch.testing.assert_close(grads[name], gradient, msg=name)


def test_a_second_update_is_followed_too() -> None:
    """Not only the first change after a call: a training loop's every step."""
    model = Towers()
    x = _x()
    opt = optimus_ir.optimize(model, (x,), FUSED)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1, fused=True)
    for _ in range(3):
        optimizer.zero_grad()
        opt(x).square().mean().backward()
        optimizer.step()
        with torch.no_grad():
            torch.testing.assert_close(opt(x), model(x))


def test_freeze_treats_parameters_as_constants() -> None:
    model = Towers()
    x = _x()
    frozen = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    assert frozen.optimus_report.cached_parameter_values > 0
    with torch.no_grad():
        before = model(x)
        torch.testing.assert_close(frozen(x), before)
        model.towers[0].weight.add_(1)  # documented: not followed
        torch.testing.assert_close(frozen(x), before)


def test_freeze_backward_raises_a_clear_error() -> None:
    model = Towers()
    x = _x()
    frozen = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    out = frozen(x)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match=r"freeze=True, which treats parameters as constants.*without freeze=True"):
        out.sum().backward()


def test_freeze_forward_with_grad_and_gradients_of_the_input_only() -> None:
    """With grad mode on the frozen module still computes the right values,
    and gradients that need no frozen parameter (parameters that do not
    require grad; the input's gradient only) are fine."""
    model = Towers()
    x = _x()
    frozen = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    torch.testing.assert_close(frozen(x), model(x))
    xr = x.clone().requires_grad_(True)
    (grad_x,) = torch.autograd.grad(frozen(xr).sum(), xr)
    reference = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(model(reference).sum(), reference)
    torch.testing.assert_close(grad_x, expected)
    model.requires_grad_(False)
    out = frozen(xr)
    out.sum().backward()
    torch.testing.assert_close(xr.grad, expected)


def test_freeze_guard_costs_nothing_under_no_grad() -> None:
    """Under no_grad the frozen values are handed out as they are (no
    autograd node, the very buffers)."""
    model = Towers()
    x = _x()
    frozen = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    guard = getattr(frozen, FROZEN_GUARD_ATTRIBUTE)
    values = tuple(b for n, b in frozen.named_buffers() if n.startswith("frozen_"))
    assert values
    with torch.no_grad():
        assert all(a is b for a, b in zip(guard.values(*values), values))
    tied = guard.values(*values)
    assert all(t.requires_grad and t.grad_fn is not None for t in tied)


def test_optimized_module_copy_reads_its_own_parameters() -> None:
    model = Towers()
    x = _x()
    opt = optimus_ir.optimize(model, (x,), FUSED)
    clone = copy.deepcopy(opt)
    with torch.no_grad():
        model.towers[0].weight.add_(1)
        torch.testing.assert_close(opt(x), model(x))
        assert not torch.allclose(clone(x), model(x))


@pytest.mark.parametrize("pipeline", [FUSED, UNFUSED], ids=["fused", "unfused"])
def test_parameters_changed_on_the_optimized_module_itself_are_followed(pipeline: str) -> None:
    # The optimized module reads the model's tensors, except where its own
    # attribute no longer is the tensor it was made with: reassigned on the
    # module itself, that one is what the user asked to compute with.
    model = Towers()
    x = _x()
    opt = optimus_ir.optimize(model, (x,), pipeline)
    replaced = {name: torch.randn_like(value) for name, value in opt.named_parameters()}
    reference = copy.deepcopy(model)
    with torch.no_grad():
        for (_, theirs), mine in zip(reference.named_parameters(), replaced.values()):
            theirs.copy_(mine)  # the same order: both are the model's parameters
        torch.testing.assert_close(torch.func.functional_call(opt, replaced, (x,)), reference(x))
        torch.testing.assert_close(opt(x), model(x))  # functional_call restored them
        opt.load_state_dict({**opt.state_dict(), **replaced}, assign=True)
        torch.testing.assert_close(opt(x), reference(x))
        # the model's own later changes are no longer what `opt` computes with
        model.towers[0].weight.add_(1)
        torch.testing.assert_close(opt(x), reference(x))
