"""The guard test matrix of issue 19 (point 2) and optimize()'s fallback on an
internal failure (point 8).

`optimize()` specializes its result on the example inputs; the result must
check on every call what it was specialized on and, for other inputs, run
a version made for them or the original model: never a wrong value, never a
raw error from generated code.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.api import guards
from optimus_ir.api import CaptureError
from optimus_ir.backend import OptimusFallbackWarning
from optimus_ir.api.guards import OptimusGuardWarning
from pipelines import FUSE_ALL
from plugins import miscompile_passes  # noqa: F401 - registers the test-only passes (test-miscompile, test-fail, ...)
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model

FAILING = "raise-fx,test-fail{message=boom},lower-to-fx"


def _same(got, want) -> None:
    """Same values, dtype and shape (NaN equal to NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


class Scaled(nn.Module):
    """Python scalars baked into the graph: a factor and a flag."""

    def forward(self, x: torch.Tensor, scale: float, flag: bool) -> torch.Tensor:
        y = x * scale
        return y.relu() if flag else y - 1


class Full(nn.Module):
    """The Python type of `value` decides the dtype (bool/int64/float32), and
    the sign of a zero is visible through 1 / value."""

    def forward(self, x: torch.Tensor, value) -> torch.Tensor:
        return x + 1 / torch.full((2, 3), value).double()


class FullDtype(nn.Module):
    def forward(self, x: torch.Tensor, value) -> tuple[torch.Tensor, torch.Tensor]:
        return x + 1, torch.full((2,), value)


class Branch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.shape[0] > 8 else x + 0


class BakedView(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape[0], 6, 32).sum(1)


def test_scalar_arguments_are_guarded() -> None:
    model, x = Scaled(), torch.randn(4, 3)
    opt = optimus_ir.optimize(model, (x, 2.0, True))
    _same(opt(x, 2.0, True), model(x, 2.0, True))
    assert opt.optimus_guard.reoptimizations == 0
    for scale, flag in [(5.0, False), (5.0, True), (2.0, False)]:
        _same(opt(x, scale, flag), model(x, scale, flag))
    assert opt.optimus_guard.reoptimizations == 3
    _same(opt(x, 5.0, False), model(x, 5.0, False))  # cached: not again
    assert opt.optimus_guard.reoptimizations == 3
    _same(opt(x, scale=2.0, flag=True), model(x, 2.0, True))  # keywords bind like positionals
    assert opt.optimus_guard.reoptimizations == 3


def test_same_value_of_another_python_type_is_another_specialization() -> None:
    model, x = FullDtype(), torch.randn(2)
    opt = optimus_ir.optimize(model, (x, 1.0))
    for value in (1.0, 1, True, 1.0):
        got, want = opt(x, value), model(x, value)
        _same(got[1], want[1])  # float32, int64, bool
    assert opt.optimus_guard.reoptimizations == 2  # 1 and True; 1.0 is the example


@pytest.mark.parametrize("example, other", [(0.0, -0.0), (-0.0, 0.0), (1.5, float("nan")), (float("nan"), 1.5)])
def test_float_arguments_are_compared_by_their_bits(example: float, other: float) -> None:
    model, x = Full(), torch.randn(2, 3, dtype=torch.float64)
    opt = optimus_ir.optimize(model, (x, example))
    _same(opt(x, other), model(x, other))
    _same(opt(x, example), model(x, example))
    assert opt.optimus_guard.reoptimizations == 1


def test_shape_dependent_branch() -> None:
    model = Branch()
    opt = optimus_ir.optimize(model, (torch.randn(8, 3),))
    x = torch.randn(16, 3)
    _same(opt(x), model(x))  # x * 2, not the x + 0 of batch 8
    guard = opt.optimus_guard
    assert guard.batch_generic is False  # Dynamo guards on the batch size
    assert guard.reoptimizations == 1
    _same(opt(torch.ones(8, 3)), torch.ones(8, 3))


def test_shape_baked_into_a_view() -> None:
    model = BakedView()
    opt = optimus_ir.optimize(model, (torch.randn(64, 192),))
    for batch in (8, 3, 64):
        x = torch.randn(batch, 192)
        _same(opt(x), model(x))  # no "shape '[64, 6, 32]' is invalid"
    assert opt.optimus_guard.batch_generic is False  # x.shape[0] is used as a value
    assert opt.optimus_guard.reoptimizations == 2


def test_other_dtype() -> None:
    model, x = Scaled(), torch.randn(4, 3)
    opt = optimus_ir.optimize(model, (x, 2.0, True))
    for other in (x.double(), x.half(), (x * 10).long()):
        _same(opt(other, 2.0, True), model(other, 2.0, True))
    assert opt.optimus_guard.reoptimizations == 3


def test_other_strides_are_a_specialization_of_their_own() -> None:
    """Dynamo's guard checks every input's strides: a transposed layout is
    optimized for once, then served from the cache."""
    model, (x,) = make_recsys_model(num_towers=4, batch=8)
    opt = optimus_ir.optimize(model, (x,))
    strided = x.t().contiguous().t()
    assert strided.stride() != x.stride()
    with torch.no_grad():
        torch.testing.assert_close(opt(strided), model(strided))
        torch.testing.assert_close(opt(strided * 2), model(strided * 2))
        torch.testing.assert_close(opt(x), model(x))
    assert opt.optimus_guard.reoptimizations == 1


@pytest.mark.parametrize("freeze", [False, True], ids=["fresh", "frozen"])
@pytest.mark.parametrize("variant", ["mixed", "uniform"])
def test_batch_generic_model_runs_at_any_batch_without_reoptimizing(variant: str, freeze: bool) -> None:
    model, (x,) = make_recsys_model(num_towers=16, batch=64, **VARIANTS[variant])
    # the fused graph the cost model picks: linears fuse once their stacks are constants
    opt = optimus_ir.optimize(model, (x,), FUSE_ALL if not freeze else None, freeze=freeze)
    fused = opt.optimus_report.statistics.by_pass("batch-fusion")
    assert sum(r.counters.get("groups fused", 0) for r in fused) > 0  # a fused graph, batch-generic
    guard = opt.optimus_guard
    assert guard.batch_generic is None  # proved lazily
    with torch.no_grad():
        for batch in (3, 8, 64, 100):
            xb = torch.randn(batch, x.shape[1])
            torch.testing.assert_close(opt(xb), model(xb))
    assert guard.batch_generic is True
    assert guard.reoptimizations == 0
    # one more guard (the dynamic capture's), the same module
    assert [s.runner for s in guard.specializations] == [guards._OWN_MODULE]
    # Dynamo specializes sizes 0 and 1: batch 1 is optimized on its own
    with torch.no_grad():
        x1 = torch.randn(1, x.shape[1])
        torch.testing.assert_close(opt(x1), model(x1))
    assert guard.reoptimizations == 1


def test_cache_bound_then_the_original_model_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guards, "MAX_SPECIALIZATIONS", 2)
    model = BakedView()
    opt = optimus_ir.optimize(model, (torch.randn(64, 192),))
    for batch in (2, 3):
        x = torch.randn(batch, 192)
        _same(opt(x), model(x))
    assert opt.optimus_guard.reoptimizations == 2
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for batch in (4, 5, 6, 4):
            x = torch.randn(batch, 192)
            _same(opt(x), model(x))
    messages = [str(w.message) for w in record if issubclass(w.category, OptimusGuardWarning)]
    assert len(messages) == 1, messages
    assert "runs the original model" in messages[0] and "x: tensor [4, 192]" in messages[0]
    assert opt.optimus_guard.reoptimizations == 2
    assert opt.optimus_guard.fell_back
    runners = [s.runner for s in opt.optimus_guard.specializations]
    assert len(runners) == 3 and runners[-1] is model  # bounded: two modules, then the model
    _same(opt(torch.ones(64, 192)), model(torch.ones(64, 192)))  # the example's own code


class WithKeywords(nn.Module):
    def forward(self, x: torch.Tensor, *, scale: float = 1.0, bias: torch.Tensor | None = None) -> torch.Tensor:
        y = x * scale
        return y if bias is None else y + bias


def test_keyword_inputs() -> None:
    model, x, b = WithKeywords(), torch.randn(4, 3), torch.randn(3)
    opt = optimus_ir.optimize(model, (x,), example_kwargs={"scale": 2.0, "bias": b})
    _same(opt(x, scale=2.0, bias=b), model(x, scale=2.0, bias=b))
    _same(opt(x, scale=3.0, bias=b), model(x, scale=3.0, bias=b))
    _same(opt(x, bias=b, scale=3.0), model(x, scale=3.0, bias=b))
    b2 = torch.randn(4, 3)  # another shape of a keyword tensor
    _same(opt(x, scale=2.0, bias=b2), model(x, scale=2.0, bias=b2))
    assert opt.optimus_guard.reoptimizations == 2


def test_model_is_kept_by_reference_and_not_changed() -> None:
    model, (x,) = make_recsys_model(num_towers=4, batch=8)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    opt = optimus_ir.optimize(model, (x,))
    assert opt.optimus_guard.model is model
    with torch.no_grad():
        opt(torch.randn(5, x.shape[1]))
        opt(torch.randn(1, x.shape[1]))
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key])
    assert not any(isinstance(v, torch._subclasses.FakeTensor) for v in model.state_dict().values())


def test_copies_keep_their_guard() -> None:
    model = BakedView()
    opt = optimus_ir.optimize(model, (torch.randn(64, 192),))
    clone = copy.deepcopy(opt)
    x = torch.randn(8, 192)
    _same(clone(x), model(x))
    assert clone.optimus_guard.reoptimizations == 1
    assert opt.optimus_guard.reoptimizations == 0


def test_the_torch_compile_backend_has_no_guard() -> None:
    """Dynamo guards itself: the backend's graph carries no check of ours."""
    from optimus_ir.backend import BackendOptions, optimize_dynamo_graph

    model, (x,) = make_recsys_model(num_towers=4, batch=8)
    gm = optimus_ir.capture(model, (x,))
    optimized, outcome = optimize_dynamo_graph(gm, [x], BackendOptions(inner="eager"), cache_parameters=True)
    assert outcome.optimized
    assert guards.GUARD_ATTRIBUTE not in optimized.__dict__
    assert "optimus_guard" not in optimized.code


def test_the_guard_is_cheap_code() -> None:
    model, (x,) = make_recsys_model(num_towers=4, batch=8)
    opt = optimus_ir.optimize(model, (x,))
    assert "self.optimus_guard.check(x) is False" in opt.code
    source = opt.optimus_guard.source
    assert "for " not in source and "_signature" not in source  # no loop, no generic walk


# --- point 8: an internal failure falls back unless strict --------------------------------


def test_a_failing_pass_returns_the_captured_graph_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPTIMUS_STRICT", raising=False)  # the default, not the suite's strict mode
    model, (x,) = make_recsys_model(num_towers=4, batch=8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        opt = optimus_ir.optimize(model, (x,), pipeline=FAILING)
    messages = [str(w.message) for w in record if issubclass(w.category, OptimusFallbackWarning)]
    assert len(messages) == 1, messages
    assert "pass 'test-fail{message=\"boom\"}' failed (TestPassFailure: boom)" in messages[0]
    assert "returning the captured graph unoptimized" in messages[0]
    report = opt.optimus_report
    assert "test-fail" in report.fallback and "not optimized" in report.format()
    assert report.ops_after == report.ops_before
    with torch.no_grad():
        _same(opt(x), model(x))
        xb = torch.randn(5, x.shape[1])  # still guarded
        torch.testing.assert_close(opt(xb), model(xb))
    assert opt.optimus_guard.model is model


def test_a_failing_pass_raises_when_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    from plugins.miscompile_passes import TestPassFailure

    model, (x,) = make_recsys_model(num_towers=2, batch=8)
    monkeypatch.delenv("OPTIMUS_STRICT", raising=False)
    with pytest.raises(TestPassFailure, match="boom"):
        optimus_ir.optimize(model, (x,), pipeline=FAILING, strict=True)
    monkeypatch.setenv("OPTIMUS_STRICT", "1")
    with pytest.raises(TestPassFailure, match="boom"):
        optimus_ir.optimize(model, (x,), pipeline=FAILING)
    with pytest.warns(OptimusFallbackWarning, match="test-fail"):
        optimus_ir.optimize(model, (x,), pipeline=FAILING, strict=False)


def test_capture_errors_and_bad_arguments_still_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPTIMUS_STRICT", raising=False)

    class DataDependent(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x if x.sum() > 0 else -x

    with pytest.raises(CaptureError):
        optimus_ir.optimize(DataDependent(), (torch.randn(3),))
    model, (x,) = make_recsys_model(num_towers=2, batch=8)
    with pytest.raises(Exception, match="unknown pass 'nope'"):
        optimus_ir.optimize(model, (x,), pipeline="nope")
    with pytest.raises(CaptureError, match="do not fit"):
        optimus_ir.optimize(model, (x, x))


def test_bench_guards_smoke() -> None:
    """benchmarks/bench_guards.py runs and checks its modules (figures not asserted)."""
    from benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_guards")
    results = bench.main(["--towers", "4", "--batch", "8", "--rounds", "2", "--sample-ms", "1"])
    figures = results["4"]
    assert figures["batch generic"] == 1.0 and figures["reoptimizations"] == 0.0
    assert set(figures) >= {"check", "guarded", "unguarded", "guard %"}


def test_variadic_graph_module_is_not_guarded_and_says_so() -> None:
    """A symbolically traced `forward(self, *xs)` binds a tuple placeholder
    the guard cannot check: the result says so instead of staying silent."""

    class Variadic(nn.Module):
        def forward(self, *xs):
            return xs[0] + xs[1]

    gm = torch.fx.symbolic_trace(Variadic())
    with pytest.warns(OptimusGuardWarning, match="variadic arguments"):
        opt = optimus_ir.optimize(gm, (torch.randn(2), torch.randn(2)))
    assert guards.GUARD_ATTRIBUTE not in opt.__dict__
    # a Dynamo-captured model with *xs is guarded: Dynamo names each argument
    opt = optimus_ir.optimize(Variadic(), (torch.randn(2), torch.randn(2)))
    a, b = torch.randn(3), torch.randn(3)
    _same(opt(a, b), a + b)
    assert opt.optimus_guard.batch_generic is True  # a + b works at any length
    _same(opt(a, 2.0), a + 2.0)  # a float for a tensor: optimized again for it
    assert opt.optimus_guard.reoptimizations == 1


def _graph_state(graph: torch.fx.Graph) -> list[tuple]:
    """Everything of `graph` a proof could change: each node's op, name,
    target, arguments, users and metadata keys, in order."""
    return [
        (n.op, n.name, n.target, repr(n.args), repr(n.kwargs), tuple(u.name for u in n.users), tuple(sorted(n.meta)))
        for n in graph.nodes
    ]


def test_batch_proof_reads_the_modules_own_graph_and_leaves_it_unchanged() -> None:
    """Nothing frozen: the guard keeps no copy of the graph (a copy of a 100k-node
    graph took a second), the proof runs the module's own graph, and neither
    the optimized graph, its code nor the model changes."""
    model, (x,) = make_recsys_model(num_towers=8, batch=16)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    opt = optimus_ir.optimize(model, (x,), FUSE_ALL, check_speed=False)
    guard = opt.optimus_guard
    assert guard.uncached_graph == guards.OWN_GRAPH
    before, code = _graph_state(opt.graph), opt.code
    with torch.no_grad():
        xb = torch.randn(5, x.shape[1])
        torch.testing.assert_close(opt(xb), model(xb))
    assert guard.batch_generic is True and guard.reoptimizations == 0
    assert _graph_state(opt.graph) == before
    assert opt.code == code
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key])
    # a copy proves with its own graph
    clone = copy.deepcopy(opt)
    assert clone.optimus_guard.uncached_graph == guards.OWN_GRAPH
    with torch.no_grad():
        x7 = torch.randn(7, x.shape[1])
        torch.testing.assert_close(clone(x7), model(x7))
    assert clone.optimus_guard.batch_generic is True and clone.optimus_guard.reoptimizations == 0
    assert _graph_state(opt.graph) == before


def test_frozen_values_are_proved_on_a_copy_of_the_graph_before_freezing() -> None:
    """With `freeze`, the module's graph reads values computed from the real
    parameters: the proof runs the graph as the pipeline made it (a copy)."""
    model, (x,) = make_recsys_model(num_towers=16, batch=64)
    opt = optimus_ir.optimize(model, (x,), freeze=True, check_speed=False)
    guard = opt.optimus_guard
    assert opt.optimus_report.cached_parameter_values > 0
    assert isinstance(guard.uncached_graph, torch.fx.Graph)
    assert guard.uncached_graph is not opt.graph
    with torch.no_grad():
        xb = torch.randn(5, x.shape[1])
        torch.testing.assert_close(opt(xb), model(xb))
    assert guard.batch_generic is True and guard.reoptimizations == 0
