"""Values computed from parameters alone (`optimus_ir.api.param_cache`): by
default computed on every call from the model's current tensors, so in-place
updates, `load_state_dict`, `.data` and reassigned parameters are followed
and gradients reach the parameters; `freeze=True` computes them once (the
parameters are constants); graphs that write a parameter or buffer in place
are not frozen across; results are bit-identical to the captured graph.
Every update route is in tests/test_param_freshness.py."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
import torch.fx
from torch import nn

import optimus_ir
from optimus_ir.api import _optimize, capture
from optimus_ir.api.param_cache import (
    FROZEN_GUARD_ATTRIBUTE,
    MODEL_ATTRIBUTE,
    FrozenValuesGuard,
    freeze_parameter_expressions,
)


def _assert_identical(actual, expected) -> None:
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


class Stacked(nn.Module):
    """Three same-shaped linears written as one batched matmul over stacked
    weights and biases (what batch fusion emits)."""

    def __init__(self, d: int = 8, h: int = 4, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        for i in range(1, 4):
            setattr(self, f"w{i}", nn.Parameter(torch.randn(h, d, generator=g)))
            setattr(self, f"b{i}", nn.Parameter(torch.randn(h, generator=g)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.stack([self.w1, self.w2, self.w3]).transpose(1, 2)
        b = torch.stack([self.b1, self.b2, self.b3]).unsqueeze(1)
        return torch.baddbmm(b, x, w)


def _x(batch: int = 5, d: int = 8) -> torch.Tensor:
    return torch.randn(3, batch, d, generator=torch.Generator().manual_seed(1))


def _param_name(gm: torch.fx.GraphModule, suffix: str) -> str:
    return next(n for n, _ in gm.named_parameters() if n.endswith(suffix))


@pytest.fixture
def stacked():
    model = Stacked()
    x = _x()
    return model, x, optimus_ir.optimize(model, (x,))


def test_stacks_are_computed_per_call_from_the_model(stacked) -> None:
    """The default keeps no value computed from parameters: nothing can go
    stale (`.data` writes and fused optimizers change no version counter)."""
    model, x, gm = stacked
    assert gm.optimus_report.cached_parameter_values == 0
    assert "parameter values" not in gm.optimus_report.format()
    code = gm.code
    assert code.count("torch.stack") == 2
    assert FROZEN_GUARD_ATTRIBUTE not in gm._modules
    assert gm.__dict__[MODEL_ATTRIBUTE] is model
    assert f"self.__dict__['{MODEL_ATTRIBUTE}']" in code
    captured = capture(Stacked(), (x,))
    _assert_identical(gm(x), captured(x))
    _assert_identical(gm(x), model(x))
    model.w1.data.add_(1)  # no version change
    _assert_identical(gm(x), model(x))


def test_in_place_update_is_followed(stacked) -> None:
    model, x, gm = stacked
    gm(x)
    with torch.no_grad():
        model.w1.add_(1)
        model.b3.mul_(-2)
    _assert_identical(gm(x), model(x))


def test_load_state_dict_is_followed(stacked) -> None:
    model, x, gm = stacked
    gm(x)
    other = Stacked(seed=5)
    model.load_state_dict(other.state_dict())
    _assert_identical(gm(x), other(x))


def test_reassigned_parameter_and_replaced_data_are_followed(stacked) -> None:
    model, x, gm = stacked
    gm(x)
    new = nn.Parameter(torch.full((4, 8), 0.5))
    setattr(gm, _param_name(gm, "w2"), new)
    model.w2 = new
    _assert_identical(gm(x), model(x))
    # `.data =` keeps the tensor and its version; its storage is new
    model.w3.data = torch.full((4, 8), -1.0)
    _assert_identical(gm(x), model(x))
    model.double()  # `.to()` replaces every parameter's data
    _assert_identical(gm(x.double()), model(x.double()))


def test_freeze_does_not_follow_and_has_no_checks() -> None:
    model = Stacked()
    x = _x()
    gm = optimus_ir.optimize(model, (x,), freeze=True)
    assert gm.optimus_report.cached_parameter_values == 2
    assert "frozen parameter values: 2" in gm.optimus_report.format()
    assert isinstance(getattr(gm, FROZEN_GUARD_ATTRIBUTE), FrozenValuesGuard)
    code = gm.code
    assert "torch.stack" not in code and "transpose" not in code
    assert "_buffers['frozen_" in code and "frozen_guard.values(" in code
    assert list(gm.state_dict()) == list(model.state_dict())  # the model's names; frozen values are not state
    before = model(x)
    _assert_identical(gm(x), before)
    with torch.no_grad():
        model.w1.add_(1)
    _assert_identical(gm(x), before)  # frozen: the update is not seen
    assert not torch.equal(model(x), before)


def test_backward_pass_equals_the_unoptimized_model(stacked) -> None:
    model, x, gm = stacked
    reference = copy.deepcopy(model)
    out = gm(x)
    assert out.requires_grad
    out.square().sum().backward()
    reference(x).square().sum().backward()
    for (name, ours), (_, theirs) in zip(model.named_parameters(), reference.named_parameters()):
        assert ours.grad is not None, name
        _assert_identical(ours.grad, theirs.grad)
    # and after a training step (an in-place update under no_grad) the
    # values follow in inference
    with torch.no_grad():
        for p in model.parameters():
            p.sub_(0.1 * p.grad)
        _assert_identical(gm(x), model(x))


def test_no_grad_and_inference_mode_calls() -> None:
    model = Stacked()
    x = _x()
    gm = optimus_ir.optimize(model, (x,))
    expected = model(x).detach()
    with torch.no_grad():
        _assert_identical(gm(x), expected)
    with torch.inference_mode():
        _assert_identical(gm(x), expected)
        with torch.no_grad():
            model.w1.add_(1)  # a normal tensor, updated in inference mode
    expected = model(x).detach()
    with torch.inference_mode():
        _assert_identical(gm(x), expected)
    _assert_identical(gm(x), expected)


def test_autocast_and_parameters_without_grad() -> None:
    model = Stacked()
    x = _x()
    gm = optimus_ir.optimize(model, (x,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _assert_identical(gm(x), model(x))
    model.requires_grad_(False)
    out = gm(x)
    assert not out.requires_grad
    _assert_identical(out, model(x))
    model.w1.requires_grad_(True)
    out = gm(x)
    assert out.requires_grad
    out.sum().backward()
    assert model.w1.grad is not None and model.w2.grad is None


def test_write_to_a_fresh_tensor_does_not_stop_hoisting() -> None:
    class WritesFresh(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w1 = nn.Parameter(torch.randn(4))
            self.w2 = nn.Parameter(torch.randn(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2
            y[0] = 0.0
            return y + torch.stack([self.w1, self.w2])

    model = WritesFresh()
    x = torch.randn(2, 4)
    gm = optimus_ir.optimize(model, (x,), freeze=True)
    assert gm.optimus_report.cached_parameter_values == 1
    _assert_identical(gm(x), model(x))


def test_optimize_leaves_the_model_unchanged() -> None:
    model = Stacked()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    params = dict(model.named_parameters())
    attrs = set(model.__dict__)
    gm = optimus_ir.optimize(model, (_x(),))
    gm(_x())
    assert set(model.__dict__) == attrs
    assert dict(model.named_parameters()) == params
    assert [name for name, _ in model.named_modules()] == [""]
    for key, value in model.state_dict().items():
        _assert_identical(value, state[key])
    assert all(p.grad is None for p in model.parameters())


def test_model_without_parameter_expressions_is_unchanged() -> None:
    from optimus_ir.examples.recsys import make_recsys_model

    model, inputs = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=5)
    no_fusion = "raise-fx,split-cat-simplify,dce,cse,lower-to-fx"  # fusion stacks weights
    gm = optimus_ir.optimize(model, inputs, no_fusion, freeze=True)
    assert gm.optimus_report.cached_parameter_values == 0
    assert FROZEN_GUARD_ATTRIBUTE not in gm._modules
    plain = _optimize(
        model,
        inputs,
        no_fusion,
        validate=False,
        statistics=None,
        example_kwargs=None,
        verify_each=None,
        guard_strides=True,
        freeze=True,
        cache_parameters=False,
    )
    # the same code but for optimize()'s input guard (two lines, first in forward)
    guard = "".join(line + "\n" for line in gm.code.splitlines() if "optimus_guard" in line)
    assert guard.count("\n") == 2
    assert gm.code.replace(guard, "") == plain.code


class WritesBuffer(nn.Module):
    """A stack of a buffer the graph writes in place, beside one it does not."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(4))
        self.register_buffer("other", torch.ones(4))
        self.a = nn.Parameter(torch.randn(4))
        self.b = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count.add_(1)
        written = torch.stack([self.count, self.other])
        untouched = torch.stack([self.a, self.b])
        return x * written + x * untouched


def test_written_buffer_is_not_hoisted_across() -> None:
    model = WritesBuffer()
    reference = copy.deepcopy(model)
    x = torch.randn(2, 4)
    gm = optimus_ir.optimize(model, (x,), freeze=True)
    assert gm.optimus_report.cached_parameter_values == 1
    assert gm.code.count("torch.stack") == 1  # the written buffer's stack stays
    with torch.no_grad():
        for _ in range(3):
            _assert_identical(gm(x), reference(x))
    _assert_identical(model.count, reference.count)


class BatchNormTraining(nn.Module):
    """Training-mode batch_norm writes its running statistics (a function
    `optimus_ir.foundation.effects` counts as pure by its name)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(4)
        self.o = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn(x)
        stats = torch.stack([self.bn.running_mean, self.o]).unsqueeze(1)
        return y.unsqueeze(0) + stats


def test_running_statistics_are_not_hoisted_across() -> None:
    model = BatchNormTraining()
    reference = copy.deepcopy(model)
    x = torch.randn(6, 4)
    gm = optimus_ir.optimize(model, (x,), freeze=True)
    assert gm.optimus_report.cached_parameter_values == 0
    with torch.no_grad():
        for _ in range(2):
            _assert_identical(gm(x), reference(x))


class Escapes(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.w1 = nn.Parameter(torch.randn(4, 4))
        self.w2 = nn.Parameter(torch.randn(4, 4))

    def forward(self, x: torch.Tensor):
        w = torch.stack([self.w1, self.w2]).flatten(1)
        if self.mode == "returned":
            return x @ w.view(2, 4, 4)[0], w.view(2, 4, 4)
        if self.mode == "written":
            w.mul_(2)
        return x @ w.view(2, 4, 4)[1]


@pytest.mark.parametrize("mode", ["returned", "written"])
def test_value_that_escapes_or_is_written_is_not_hoisted(mode: str) -> None:
    """A returned value is not hoisted (the caller would get the cache). A
    temporary written in place (`w.mul_(2)` on a stack of parameters) is,
    since issue 21: `maximize-value-semantics` makes the write out of place
    (`w * 2`), a pure function of the parameters, computed once like any
    other (`freeze`: parameters are constants); the values are the model's."""
    model = Escapes(mode)
    x = torch.randn(3, 4)
    gm = optimus_ir.optimize(model, (x,), freeze=True)
    assert gm.optimus_report.cached_parameter_values == (0 if mode == "returned" else 1)
    _assert_identical(gm(x), model(x))


def test_graph_that_writes_its_input_hoists_nothing() -> None:
    class WritesInput(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w1 = nn.Parameter(torch.randn(4))
            self.w2 = nn.Parameter(torch.randn(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x.add_(1)  # the caller may pass a parameter as x
            return torch.stack([self.w1, self.w2]) * 2 + x

    model = WritesInput()
    reference = copy.deepcopy(model)
    gm = optimus_ir.optimize(model, (torch.randn(4),), freeze=True)
    assert gm.optimus_report.cached_parameter_values == 0
    with torch.no_grad():
        _assert_identical(gm(model.w1), reference(reference.w1))


def test_positional_true_is_a_write_only_where_it_is_the_inplace_flag() -> None:
    # A positional True is an in-place write only where it is the target's
    # `inplace` parameter (`F.relu(t, True)`); `sum(x, [2], True)` is keepdim
    # and used to block the freezing of the whole graph.
    class Keepdim(Stacked):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) * torch.sum(x, [2], True)

    class WritesTemporary(Stacked):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) + torch.nn.functional.relu(x[..., :4] * 1, True)

    x = _x()
    for module in (Keepdim(), WritesTemporary()):
        reference = copy.deepcopy(module)
        gm = optimus_ir.optimize(module, (x,), freeze=True)
        if isinstance(module, Keepdim):
            assert gm.optimus_report.cached_parameter_values == 2
        with torch.no_grad():
            _assert_identical(gm(x), reference(x))
        assert _state_equal(module, reference)


def _state_equal(a: nn.Module, b: nn.Module) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


class SplitAndStack(Stacked):
    """A rewrite the stride guard depends on, beside the stacked weights."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.cat(torch.split(x, 4, dim=2), dim=2)
        return super().forward(x)


def test_other_strides_are_optimized_for_with_frozen_values() -> None:
    """Dynamo's guard checks the strides (no stride fallback of our own):
    another layout is a specialization of its own, frozen too."""
    model = SplitAndStack()
    x = _x()
    gm = optimus_ir.optimize(model, (x,), freeze=True)
    assert gm.optimus_report.cached_parameter_values == 2
    assert "_optimus_fallback" not in gm.code
    strided = x.transpose(1, 2).contiguous().transpose(1, 2)
    _assert_identical(gm(strided), model(strided))
    _assert_identical(gm(x), model(x))
    assert gm.optimus_guard.reoptimizations == 1


def test_other_strides_follow_a_reassigned_parameter() -> None:
    """The module optimized again for another layout reads the model's
    parameters as they are then, like the first one."""
    model = SplitAndStack()
    x = _x()
    gm = optimus_ir.optimize(model, (x,))
    strided = x.transpose(1, 2).contiguous().transpose(1, 2)
    model.w2 = nn.Parameter(torch.full((4, 8), 0.5))
    _assert_identical(gm(strided), model(strided))
    _assert_identical(gm(x), model(x))


def test_copies_and_pickling_read_their_own_parameters() -> None:
    model = Stacked()
    x = _x()
    gm = optimus_ir.optimize(model, (x,))
    gm(x)
    clone = copy.deepcopy(gm)
    with torch.no_grad():
        next(clone.parameters()).add_(1)  # the copy's own parameters
    _assert_identical(gm(x), model(x))
    assert not torch.equal(clone(x), model(x))
    restored = pickle.loads(pickle.dumps(gm))
    _assert_identical(restored(x), model(x))


def test_direct_call_counts_and_is_idempotent() -> None:
    model = Stacked()
    gm = capture(model, (_x(),))
    expected = gm(_x())
    assert freeze_parameter_expressions(gm) == 2
    assert freeze_parameter_expressions(gm) == 0
    _assert_identical(gm(_x()), expected)


def test_views_of_one_parameter_are_not_cached() -> None:
    class Views(nn.Module):
        def __init__(self, conversion: bool) -> None:
            super().__init__()
            self.conversion = conversion
            self.w = nn.Parameter(torch.randn(4, 6))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            w = self.w.contiguous() if self.conversion else self.w
            return x @ w.t()[:, 1:3]

    x = torch.randn(2, 6)
    for conversion in (False, True):
        # a view chain is left alone; a conversion that returned its input
        # (contiguous of a contiguous tensor) is computed, seen to share the
        # parameter's storage, and left alone too
        model = Views(conversion)
        gm = capture(model, (x,))
        code = gm.code
        assert freeze_parameter_expressions(gm) == 0
        assert gm.code == code


def test_dropped_candidate_leaves_consistent_frozen_values() -> None:
    class Mixed(Stacked):
        def __init__(self) -> None:
            super().__init__()
            self.v = nn.Parameter(torch.randn(4, 4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) @ self.v.contiguous().t()

    model = Mixed()
    x = _x()
    gm = capture(model, (x,))
    assert freeze_parameter_expressions(gm) == 2  # `v.contiguous()` is `v`: not frozen
    guard = getattr(gm, FROZEN_GUARD_ATTRIBUTE)
    assert len(guard.sources) == 6  # the weights and biases, not v
    with torch.no_grad():
        _assert_identical(gm(x), model(x))
        model.v.mul_(3)  # v stays live
        _assert_identical(gm(x), model(x))


def test_torch_compile_backend_and_compiling_the_optimized_module() -> None:
    model = Stacked()
    x = _x()
    compiled = torch.compile(model, backend="optimus", options={"inner": "eager"})
    _assert_identical(compiled(x), model(x))
    gm = optimus_ir.optimize(model, (x,))
    again = torch.compile(gm, backend="eager")  # Dynamo follows the reads from the model
    _assert_identical(again(x), model(x))
    with torch.no_grad():
        model.w1.add_(1)
        _assert_identical(again(x), model(x))


def test_inductor_compiles_the_optimized_module() -> None:
    from torch._inductor.compile_fx import compile_fx

    model = Stacked()
    x = _x()
    gm = optimus_ir.optimize(model, (x,))
    compiled = compile_fx(gm, [x])
    torch.testing.assert_close(compiled(x), model(x))
    compiled_backend = torch.compile(model, backend="optimus")
    torch.testing.assert_close(compiled_backend(x), model(x))


def test_benchmark_smoke_run(tmp_path) -> None:
    import json

    from benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_param_cache")
    threads = torch.get_num_threads()
    results = bench.main(
        ["--towers", "4", "--batch", "8", "--rounds", "2", "--sample-ms", "1", "--json", str(tmp_path / "out.json")]
    )
    assert torch.get_num_threads() == threads
    written = json.loads((tmp_path / "out.json").read_text())
    assert written == json.loads(json.dumps(results))
    assert {"captured", "default", "default, flat reads", "freeze"} <= set(written["ms"])
    assert all(value > 0 for value in written["ms"].values())
    assert set(written["ops"]) == {"captured", "default", "freeze"}


class WeightExpressionsIntoOwnForms(nn.Module):
    """Parameter expressions read by our grad-guarded forms: a scale applied
    in place (`reinplace`: `mul_(y, scale)`) and the weight of linears whose
    results are written into their join's slots (`write-into-join`)."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w1 = nn.Parameter(torch.randn(64, 64, generator=g))
        self.w2 = nn.Parameter(torch.randn(64, 64, generator=g))
        self.s1 = nn.Parameter(torch.randn(64, generator=g))
        self.s2 = nn.Parameter(torch.randn(64, generator=g))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = torch.stack([self.w1, self.w2]).sum(0)
        scale = torch.stack([self.s1, self.s2]).sum(0)
        y = torch.nn.functional.linear(x, weight) * scale
        z = torch.nn.functional.linear(x * 2.0, weight)
        return torch.cat([y, z], dim=1)


def test_our_grad_guarded_forms_write_only_their_first_argument() -> None:
    """They take parameter expressions as arguments but write and return only
    their first: `freeze` still computes the expressions once."""
    model = WeightExpressionsIntoOwnForms().eval()
    x = torch.randn(256, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        gm = optimus_ir.optimize(model, (x,), freeze=True, check_speed=False)
        targets = {getattr(n.target, "__module__", "") for n in gm.graph.nodes if n.op == "call_function"}
        assert {"optimus_ir.kernels.inplace", "optimus_ir.kernels.joins"} <= targets
        assert gm.optimus_report.cached_parameter_values == 2  # both stacks (0 when the forms were opaque)
        torch.testing.assert_close(gm(x), model(x))
