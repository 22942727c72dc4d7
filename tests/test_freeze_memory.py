"""No weight kept twice under `freeze=True` (issue 24, memory).

`optimize(model, x, freeze=True)` computes the stacked weights of fused ops
once. The module then owns those stacks, and every other reader of a
stacked weight (its own registered parameters, the model it reads from, its
stride fallback, its guard's re-optimization and fall back) reads a view of
a stack, so once the caller drops the model the original weights are freed
and each weight is held once. The model itself is never changed. What must
be kept twice (a weight frozen in converted form) is reported
(`OptimizeReport.parameter_copy_bytes`); the default mode keeps nothing
computed from the parameters.

`held_bytes` (`benchmarks/bench_freeze_memory.py`) is the measure: the bytes of every distinct storage reachable
from the module (its parameters, buffers, tensor attributes of it and its
submodules, tensors in containers and in the objects it keeps, such as its
guard and the model it reads from), each storage counted once."""

from __future__ import annotations

import copy
import gc
import json
import pickle
import sys
import weakref
from pathlib import Path

import pytest
import torch
from torch import nn

import optimus_ir
from benchmark_scripts import load_benchmark
from optimus_ir.api.param_cache import (
    FROZEN_GUARD_ATTRIBUTE,
    MODEL_ATTRIBUTE,
    freeze_parameter_expressions,
    frozen_values,
    hand_over_to_frozen_values,
)

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT / "examples", ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

FUSED = "raise-fx,split-cat-simplify,batch-fusion{cost-model=none},lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
TOWERS = 6


_BENCH = load_benchmark("bench_freeze_memory")
held_bytes = _BENCH.held_bytes
"""Bytes of the distinct tensor storages reachable from a module."""
parameter_bytes = _BENCH.parameter_bytes
"""Bytes of the distinct storages of a model's parameters and buffers."""


class Towers(nn.Module):
    """`TOWERS` towers of `Linear(8, 8)` concatenated (batch fusion stacks
    every weight and bias); with `reuse`, tower 0's weight is also read
    outside its tower (a reader of a stacked weight that is not fused)."""

    def __init__(self, reuse: bool = False) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.towers = nn.ModuleList(nn.Linear(8, 8) for _ in range(TOWERS))
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=generator))
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8))
        self.reuse = reuse

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * self.scale
        out = torch.cat([tower(x) for tower in self.towers], dim=1)
        if self.reuse:
            out = out + (x * self.towers[0].weight[0]).sum(1).unsqueeze(1)
        return out


def _x(batch: int = 4) -> torch.Tensor:
    return torch.randn(batch, 8, generator=torch.Generator().manual_seed(1))


def _state(model: nn.Module) -> list[tuple[str, int, torch.Tensor]]:
    """(name, identity, value copy) of every parameter and buffer."""
    return [(n, id(t), t.detach().clone()) for n, t in (*model.named_parameters(), *model.named_buffers())]


def _assert_unchanged(model: nn.Module, before: list[tuple[str, int, torch.Tensor]]) -> None:
    after = _state(model)
    assert [(n, i) for n, i, _ in after] == [(n, i) for n, i, _ in before]
    for (_, _, a), (_, _, b) in zip(after, before):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def _frozen_storages(opt: torch.fx.GraphModule) -> set[int]:
    return {v.untyped_storage().data_ptr() for v in frozen_values(opt)}


def test_recsys_mixed_64_holds_each_weight_once() -> None:
    """The issue's model: 64 mixed towers, hidden 256, batch 64, eval."""
    from optimus_ir.examples.recsys import make_recsys_model
    from suite_models import RECSYS_VARIANTS

    model, (x,) = make_recsys_model(num_towers=64, hidden=256, batch=64, seed=0, **RECSYS_VARIANTS["mixed"])
    weights = parameter_bytes(model)
    before = _state(model)
    with torch.no_grad():
        expected = model(x)
    opt = optimus_ir.optimize(model, (x,), freeze=True)
    report = opt.optimus_report
    assert report.cached_parameter_values > 0 and report.frozen_bytes > 0
    assert report.parameter_copy_bytes == 0
    with torch.no_grad():
        torch.testing.assert_close(opt(x), expected, rtol=0, atol=0)
    _assert_unchanged(model, before)
    # the originals the stacks replaced: every weight and bias stacked
    guard = getattr(opt, FROZEN_GUARD_ATTRIBUTE)
    replaced = [r for r in guard.originals if r is not None]
    assert len(replaced) == len(guard.sources) > 100
    del model, before
    gc.collect()
    assert all(r() is None for r in replaced)
    assert held_bytes(opt) <= 1.05 * weights, f"{held_bytes(opt)} bytes held for {weights} bytes of weights"
    with torch.no_grad():
        torch.testing.assert_close(opt(x), expected, rtol=0, atol=0)


def test_a_weight_read_outside_its_stack_becomes_a_view_of_the_stack() -> None:
    model = Towers(reuse=True)
    x = _x()
    weights = parameter_bytes(model)
    before = _state(model)
    with torch.no_grad():
        expected = model(x)
    opt = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    assert opt.optimus_report.cached_parameter_values > 0
    _assert_unchanged(model, before)
    # the weight of tower 0 is read twice: in the stack, and by the sum
    reader = opt.__dict__[MODEL_ATTRIBUTE].towers[0].weight
    assert reader is not model.towers[0].weight
    assert reader.untyped_storage().data_ptr() in _frozen_storages(opt)
    torch.testing.assert_close(reader, model.towers[0].weight, rtol=0, atol=0)
    assert isinstance(reader, nn.Parameter) and reader.requires_grad
    originals = [weakref.ref(p) for p in model.parameters()]
    with torch.no_grad():
        first = opt(x)  # one linear over the stacked weights: rounding may differ
    torch.testing.assert_close(first, expected)
    del model, before
    gc.collect()
    assert all(r() is None for r in originals)
    assert held_bytes(opt) <= 1.05 * weights
    with torch.no_grad():
        torch.testing.assert_close(opt(x), first, rtol=0, atol=0)


def test_the_module_and_its_fallbacks_work_without_the_model() -> None:
    """After the model is gone: its own parameters are views of the stacks,
    other batch sizes (size proof), other shapes and strides (re-optimization
    of the stand-in) all compute the model's values, and
    copies and pickles of the module too."""
    model = Towers()
    reference = copy.deepcopy(model)
    x = _x()
    opt = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    del model
    gc.collect()
    frozen = _frozen_storages(opt)
    towers = [p for n, p in opt.named_parameters() if "towers" in n]
    assert towers and all(p.untyped_storage().data_ptr() in frozen for p in towers)
    with torch.no_grad():
        for inputs in (_x(7), _x(4).t().contiguous().t(), torch.randn(2, 3, 8)):
            torch.testing.assert_close(opt(inputs), reference(inputs))
        # the transposed layout and the 3-d input (Dynamo's guard checks strides)
        assert opt.optimus_guard.reoptimizations == 2
        for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
            torch.testing.assert_close(clone(x), reference(x))


def test_gradients_after_the_model_is_gone() -> None:
    """A backward through the frozen values still raises while the module's
    parameters require grad; with their requires_grad off, the input's
    gradient is computed."""
    model = Towers()
    x = _x()
    opt = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    del model
    gc.collect()
    with pytest.raises(RuntimeError, match="freeze=True"):
        opt(x).sum().backward()
    opt.requires_grad_(False)
    xr = x.clone().requires_grad_(True)
    opt(xr).sum().backward()
    assert xr.grad is not None


def test_default_mode_keeps_no_copy_and_says_so() -> None:
    """The default computes the stacks on every call: the module holds the
    model's tensors and nothing else."""
    model = Towers()
    x = _x()
    opt = optimus_ir.optimize(model, (x,), FUSED)
    assert opt.optimus_report.frozen_bytes == 0
    assert opt.optimus_report.parameter_copy_bytes == 0
    assert held_bytes(opt) == parameter_bytes(model)
    with torch.no_grad():
        torch.testing.assert_close(opt(x), model(x))


class Converted(nn.Module):
    """Two weights stacked and converted to float64: the frozen value is no
    view of them, so the weights stay and the stack is a reported copy."""

    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(4, 8))
        self.w2 = nn.Parameter(torch.randn(4, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.bmm(x, torch.stack([self.w1, self.w2]).double().transpose(1, 2))


def test_a_weight_frozen_in_converted_form_is_a_reported_copy() -> None:
    model = Converted()
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    weights = parameter_bytes(model)
    opt = optimus_ir.optimize(model, (x,), freeze=True)
    report = opt.optimus_report
    assert report.cached_parameter_values == 1
    copy_bytes = 2 * 4 * 8 * 8  # the float64 stack
    assert report.frozen_bytes == copy_bytes
    assert report.parameter_copy_bytes == copy_bytes
    del model
    gc.collect()
    assert held_bytes(opt) == weights + copy_bytes
    assert "copies of weights" in report.format()


def test_the_stand_in_shares_everything_it_does_not_replace() -> None:
    """Only the modules on the way to a replaced weight are copied, with
    their own dicts; the model's modules and dicts are the caller's, as
    they were."""
    model = Towers(reuse=True)
    dicts = [(m._parameters, dict(m._parameters), m._modules, dict(m._modules)) for m in model.modules()]
    opt = optimus_ir.optimize(model, (_x(),), FUSED, freeze=True)
    stand_in = opt.__dict__[MODEL_ATTRIBUTE]
    assert stand_in is not model and type(stand_in) is Towers and stand_in.reuse
    assert stand_in.scale is model.scale  # a buffer read as it is, not stacked
    for live, saved, live_modules, saved_modules in dicts:
        assert live == saved and live_modules == saved_modules
    guard = opt.optimus_guard
    assert guard.model is stand_in and guard.reoptimize.model is stand_in
    assert getattr(opt, FROZEN_GUARD_ATTRIBUTE).originals is not None


class Moved(nn.Module):
    """Weights moved into frozen values in several ways (stacked,
    transposed and made contiguous, concatenated, a slice of a stack) and
    one computed (a sum of two weights: no view of it exists)."""

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        for name in ("a", "b", "c", "d", "e"):
            setattr(self, name, nn.Parameter(torch.randn(3, 4, generator=generator)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        contiguous = torch.stack([self.a, self.b]).transpose(1, 2).contiguous()
        joined = torch.cat([self.c, self.d], dim=0)
        summed = self.e + self.a
        return (x @ contiguous).sum(0) + (x @ joined.t()).sum() + x @ summed.t()


def test_views_are_found_for_moved_weights_and_not_for_computed_ones() -> None:
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    model = Moved()
    gm = torch.fx.symbolic_trace(model)
    # with metadata: what each op returns is asked of torch (unknown may alias)
    from torch._subclasses.fake_tensor import FakeTensorMode

    FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(torch.randn(5, 4))
    assert freeze_parameter_expressions(gm) == 3
    guard = getattr(gm, FROZEN_GUARD_ATTRIBUTE)
    views = {next(n for n, p in model.named_parameters() if p is s): v for s, v in zip(guard.sources, guard.views)}
    assert set(views) == {"a", "b", "c", "d", "e"}
    frozen = _frozen_storages(gm)
    for name in "abcd":
        view = views[name]
        assert view is not None and view.untyped_storage().data_ptr() in frozen
        torch.testing.assert_close(view, getattr(model, name), rtol=0, atol=0)
    assert views["e"] is None  # only in the sum
    stand_in = hand_over_to_frozen_values(gm, model)
    assert all(getattr(stand_in, n).untyped_storage().data_ptr() in frozen for n in "abcd")
    assert stand_in.e is model.e and model.a is not stand_in.a
    x = torch.randn(2, 4)
    with torch.no_grad():
        torch.testing.assert_close(gm(x), model(x), rtol=0, atol=0)


def test_a_graph_module_model_is_not_kept_through_its_graph() -> None:
    """A GraphModule model may be the stride fallback itself: its stand-in
    owns a copy of the graph (the graph names its owner), the model's graph
    stays the model's."""
    model = torch.fx.symbolic_trace(Towers())
    graph, code = model.graph, model.code
    x = _x()
    weights = parameter_bytes(model)
    with torch.no_grad():
        expected = model(x)
    opt = optimus_ir.optimize(model, (x,), FUSED, freeze=True)
    assert opt.optimus_report.cached_parameter_values > 0
    assert model.graph is graph and graph.owning_module is model and model.code == code
    originals = [weakref.ref(p) for p in model.parameters()]
    del model, graph  # (the graph names the model)
    gc.collect()
    assert all(r() is None for r in originals)
    assert held_bytes(opt) <= 1.05 * weights
    with torch.no_grad():
        torch.testing.assert_close(opt(x), expected)
        torch.testing.assert_close(opt(x.t().contiguous().t()), expected)


def test_benchmark_smoke_run(tmp_path) -> None:
    results = _BENCH.main(["--towers", "4", "--hidden", "16", "--batch", "8", "--json", str(tmp_path / "out.json")])
    assert json.loads((tmp_path / "out.json").read_text()) == json.loads(json.dumps(results))
    default, frozen = results["modes"]["default"], results["modes"]["freeze"]
    assert default["frozen_bytes"] == default["parameter_copy_bytes"] == 0
    assert default["originals_alive"] == default["parameters"]  # the module reads the model
    assert frozen["ratio"] <= 1.05 and frozen["parameter_copy_bytes"] == 0


class StackedTwice(nn.Module):
    """Two weights stacked, and the first also stacked with a third: it
    lies in both stacks, so one of them holds a copy of it."""

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        for name in ("a", "b", "c"):
            setattr(self, name, nn.Parameter(torch.randn(3, 4, generator=generator)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first = torch.stack([self.a, self.b])
        second = torch.stack([self.a, self.c])
        return (x @ first.transpose(1, 2)).sum(0) + (x @ second.transpose(1, 2)).sum(0)


def test_a_weight_in_two_stacks_is_one_reported_copy() -> None:
    model = StackedTwice()
    x = torch.randn(2, 4)
    weights = parameter_bytes(model)
    opt = optimus_ir.optimize(model, (x,), freeze=True)
    report = opt.optimus_report
    assert report.cached_parameter_values == 2
    assert report.frozen_bytes == 2 * 2 * 3 * 4 * 4
    assert report.parameter_copy_bytes == 3 * 4 * 4  # `a`, once more
    del model
    gc.collect()
    assert held_bytes(opt) == weights + report.parameter_copy_bytes
