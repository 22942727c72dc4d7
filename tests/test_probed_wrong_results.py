"""Issue 7, wrong results found by probing, and verification in production.

Each test here failed before the fix it names:

* CSE merged equal ops across an in-place write (directly, through a view,
  through `x[i] = v` between two split/cat expressions), also through
  `torch.compile(backend="optimus")`;
* CSE merged two equal graph outputs into one tensor returned twice;
* `optimize()` on a model that writes a buffer in forward left a FakeTensor
  in the model (Dynamo's replay of the assignment), and fake propagation of
  a GraphModule wrote the real buffer;
* a transposed input: the layout reasoning assumed contiguous inputs
  (results off in the last bits, output strides not eager's);
* keyword inputs could not be passed;
* production runs verified the whole module after every pass.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.api import CaptureError
from optimus_ir.dialects import fx
from optimus_ir.translate.importer import graph_of, import_graph
from optimus_ir.pipeline import run_pipeline

VERIFY_EACH_ENV = "OPTIMUS_VERIFY_EACH"  # optimus_ir.pipeline.VERIFY_EACH_ENV


def _clone_all(values):
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _assert_same(got, want) -> None:
    """Equal values (bit for bit) and equal strides, output by output."""
    got = got if isinstance(got, tuple | list) else (got,)
    want = want if isinstance(want, tuple | list) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
        assert g.stride() == w.stride()


# ---------------------------------------------------------------------------
# 1. CSE across in-place writes
# ---------------------------------------------------------------------------


class AddInPlace(nn.Module):
    def forward(self, x: torch.Tensor):
        y = x + 1
        x.add_(1)
        z = x + 1
        return y, z


class MulThroughView(nn.Module):
    def forward(self, x: torch.Tensor):
        a = x.view(-1)
        y = a * 2
        x.mul_(2)
        z = a * 2
        return y, z


class SetitemBetweenSplitCat(nn.Module):
    def forward(self, x: torch.Tensor):
        y = torch.cat(list(reversed(torch.split(x, 2, dim=1))), dim=1)
        x[1] = 0
        z = torch.cat(list(reversed(torch.split(x, 2, dim=1))), dim=1)
        return y, z


WRITERS = [
    (AddInPlace, (4,)),
    (MulThroughView, (2, 3)),
    (SetitemBetweenSplitCat, (3, 6)),
]


@pytest.mark.parametrize(("model_class", "shape"), WRITERS, ids=lambda v: getattr(v, "__name__", ""))
def test_cse_does_not_merge_across_an_in_place_write(model_class, shape) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    optimized = optimus_ir.optimize(model_class(), [x.clone()])
    got, want = optimized(x.clone()), model_class()(x.clone())
    _assert_same(got, want)
    assert not torch.equal(got[0], got[1])


@pytest.mark.parametrize("inner", ["eager", "inductor"])
def test_cse_barrier_through_torch_compile(inner: str) -> None:
    torch._dynamo.reset()
    options = {"inner": "eager"} if inner == "eager" else None
    compiled = torch.compile(AddInPlace(), backend="optimus", options=options)
    x = torch.zeros(4)
    y, z = compiled(x.clone())
    torch.testing.assert_close(y, torch.ones(4), rtol=0, atol=0)
    torch.testing.assert_close(z, torch.full((4,), 2.0), rtol=0, atol=0)
    torch._dynamo.reset()


def _cse(text: str):
    from optimus_ir.translate.parsing import parse_module

    module = parse_module(text)
    run_pipeline(module, "cse")
    return graph_of(module)


def test_cse_barrier_keeps_merging_what_no_write_reaches() -> None:
    graph = _cse(
        """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %y = fx.placeholder "y" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%y) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %w = fx.call_method "add_"(%x, 1) : tensor<4xf32, "cpu">
  %c = fx.call_function "torch.tanh"(%y) : tensor<4xf32, "cpu">
  %d = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %s = fx.call_function "torch.add"(%a, %c) : tensor<4xf32, "cpu">
  %t = fx.call_function "torch.add"(%b, %d) : tensor<4xf32, "cpu">
  fx.output (%s, %t, %w)
}
"""
    )
    tanhs = [op for op in graph.block.ops if isinstance(op, fx.CallFunctionOp) and op.target.data == "torch.tanh"]
    # tanh(y) merged (y is not written), tanh(x) before and after add_ kept
    assert [op.operands[0].name_hint for op in tanhs] == ["y", "x", "x"]


# ---------------------------------------------------------------------------
# 2. Distinct outputs stay distinct tensors
# ---------------------------------------------------------------------------


class TwoEqualOutputs(nn.Module):
    def forward(self, x: torch.Tensor):
        return x + 1, x + 1


class OutputAndViewOfEqualOutput(nn.Module):
    def forward(self, x: torch.Tensor):
        return x + 1, (x + 1).view(2, 2)


@pytest.mark.parametrize("model_class", [TwoEqualOutputs, OutputAndViewOfEqualOutput])
def test_equal_outputs_stay_distinct_tensors(model_class) -> None:
    x = torch.randn(4)
    optimized = optimus_ir.optimize(model_class(), [x])
    a, b = optimized(x)
    _assert_same((a, b), model_class()(x))
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    before = b.clone()
    a.add_(100)
    torch.testing.assert_close(b, before, rtol=0, atol=0)


def test_equal_ops_with_one_output_still_merge() -> None:
    class OneReturned(nn.Module):
        def forward(self, x: torch.Tensor):
            return (x + 1) * (x + 1)

    x = torch.randn(4)
    optimized = optimus_ir.optimize(OneReturned(), [x])
    torch.testing.assert_close(optimized(x), OneReturned()(x), rtol=0, atol=0)
    assert optimized.optimus_report.ops_after["add"] == 1


# ---------------------------------------------------------------------------
# 3. optimize() never changes the model
# ---------------------------------------------------------------------------


class Counter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count += 1
        return self.linear(x) * self.count


def _state(model: nn.Module) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    return {k: (v, v.detach().clone()) for k, v in model.state_dict(keep_vars=True).items()}


def test_optimize_leaves_a_buffer_writing_model_untouched() -> None:
    torch.manual_seed(0)
    model = Counter()
    before = _state(model)
    x = torch.randn(2, 4)
    optimized = optimus_ir.optimize(model, [x])
    after = model.state_dict(keep_vars=True)
    assert after.keys() == before.keys()
    for key, (tensor, value) in before.items():
        assert after[key] is tensor, key
        assert type(after[key]) is torch.Tensor or isinstance(after[key], nn.Parameter)
        torch.testing.assert_close(after[key], value, rtol=0, atol=0)

    # the optimized module writes the model's buffer as the model does
    twin = Counter()
    twin.load_state_dict(model.state_dict())
    for _ in range(2):
        torch.testing.assert_close(optimized(x), twin(x), rtol=0, atol=0)
        torch.testing.assert_close(model.count, twin.count, rtol=0, atol=0)
    assert model.count is before["count"][0]
    model(x)  # the model itself still runs
    torch.testing.assert_close(model.count, torch.full((1,), 3.0), rtol=0, atol=0)


def test_validation_leaves_a_buffer_writing_model_untouched() -> None:
    """validate=True runs the graph before and after every pass: each run
    starts from the model's state and puts it back, and the writes are
    compared like outputs."""
    torch.manual_seed(0)
    model = Counter()
    before = _state(model)
    x = torch.randn(2, 4)
    optimized = optimus_ir.optimize(model, [x], validate=True)
    for key, (tensor, value) in before.items():
        assert model.state_dict(keep_vars=True)[key] is tensor, key
        torch.testing.assert_close(tensor, value, rtol=0, atol=0)
    twin = Counter()
    twin.load_state_dict(model.state_dict())
    torch.testing.assert_close(optimized(x), twin(x), rtol=0, atol=0)
    torch.testing.assert_close(model.count, twin.count, rtol=0, atol=0)


def test_validation_catches_a_pass_that_drops_an_in_place_write() -> None:
    from optimus_ir.pipeline.validation import DifferentialValidator, ValidationError

    model = Counter()
    program = optimus_ir.import_graph(optimus_ir.capture(model, [torch.randn(2, 4)]), [torch.randn(2, 4)])
    validator = DifferentialValidator(program, inputs=[torch.randn(2, 4)])
    graph = program.module.body.block.first_op
    writes = [op for op in graph.body.block.ops if getattr(op, "target", None) is not None
              and "add" in op.target.data and op.results and op.results[0].uses]
    assert writes, str(program.module)
    write = writes[0]
    # a "pass" that replaces the in-place add by its operand (drops the write)
    write.results[0].replace_all_uses_with(write.operands[0])
    write.detach()
    with pytest.raises(ValidationError, match="written in place|outputs"):
        validator.after_pass("drop-write", program.module)


def test_shape_propagation_does_not_write_the_owners_buffers() -> None:
    root = nn.Module()
    root.register_buffer("count", torch.zeros(1))
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    bumped = graph.call_method("add_", (graph.get_attr("count"), 1))
    graph.output(graph.call_function(torch.mul, (x, bumped)))
    gm = torch.fx.GraphModule(root, graph)  # no metadata: shapes are propagated
    optimized = optimus_ir.optimize(gm, [torch.ones(3)])
    torch.testing.assert_close(gm.count, torch.zeros(1), rtol=0, atol=0)
    torch.testing.assert_close(optimized(torch.ones(3)), torch.ones(3), rtol=0, atol=0)
    torch.testing.assert_close(gm.count, torch.ones(1), rtol=0, atol=0)


def test_an_assignment_the_graph_cannot_do_is_a_capture_error_and_optimize_falls_back() -> None:
    class Rebinds(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.count = self.count + 1  # a new tensor: Dynamo's graph drops it
            return x * self.count

    model = Rebinds()
    count = model.count
    with pytest.raises(CaptureError, match="assigns 'Rebinds.count'"):
        optimus_ir.api.capture(model, [torch.ones(2)])
    assert model.count is count and type(model.count) is torch.Tensor
    # optimize() does not fail where torch.compile works (issue 21, item 7):
    # it returns a module that runs the model, so the assignment happens
    with pytest.warns(optimus_ir.OptimusFallbackWarning, match="assigns 'Rebinds.count'"):
        optimized = optimus_ir.optimize(model, [torch.ones(2)])
    assert model.count is count and type(model.count) is torch.Tensor
    torch.testing.assert_close(optimized(torch.ones(2)), torch.ones(2), rtol=0, atol=0)
    torch.testing.assert_close(model.count, torch.ones(1), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# 4. Non-contiguous inputs
# ---------------------------------------------------------------------------


class SumOfCatOfSplit(nn.Module):
    def forward(self, x: torch.Tensor):
        joined = torch.cat(torch.split(x, 4, dim=1), dim=1)
        return joined.sum(dim=1), joined * 2


def _transposed() -> torch.Tensor:
    return torch.randn(64, 64, generator=torch.Generator().manual_seed(1)).t()


def test_transposed_input_gives_eagers_values_and_strides() -> None:
    x = _transposed()
    optimized = optimus_ir.optimize(SumOfCatOfSplit(), [x])
    _assert_same(optimized(x), SumOfCatOfSplit()(x))


def test_other_strides_at_call_time_are_a_specialization_of_their_own() -> None:
    """Dynamo's guard of the capture checks the strides of every input: a
    call with another layout is optimized for once (the stride fallback of
    graphs captured otherwise is not needed) and gives eager's values and
    strides."""
    x = _transposed()
    optimized = optimus_ir.optimize(SumOfCatOfSplit(), [x])
    for inp in (x.contiguous(), x, x.contiguous()):
        _assert_same(optimized(inp), SumOfCatOfSplit()(inp))
    assert optimized.optimus_guard.reoptimizations == 1
    contiguous = optimus_ir.optimize(SumOfCatOfSplit(), [x.contiguous()])
    for inp in (x, x.contiguous(), x):
        _assert_same(contiguous(inp), SumOfCatOfSplit()(inp))
    assert contiguous.optimus_guard.reoptimizations == 1
    for module in (optimized, contiguous):
        assert "_optimus_fallback" not in module.code and "_optimus_fallback" not in module.__dict__
    assert set(contiguous.state_dict()) == set()


def test_a_graph_captured_otherwise_keeps_the_stride_guard() -> None:
    """A GraphModule given to optimize (no Dynamo guard) gets the stride
    check where a rewrite used the layout, and none where nothing did."""

    class Plain(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2

    x = torch.randn(4, 6)
    plain = optimus_ir.optimize(torch.fx.symbolic_trace(Plain()), [x])
    assert "_optimus_fallback" not in plain.code and "_optimus_fallback" not in plain.__dict__
    for inp in (x, x.t().contiguous().t()):
        _assert_same(plain(inp), Plain()(inp))
    contiguous = _transposed().contiguous()
    exported, _ = torch._dynamo.export(SumOfCatOfSplit(), assume_static_by_default=True)(contiguous)  # noqa: SLF001
    rewritten = optimus_ir.optimize(exported, [contiguous])
    assert "_optimus_fallback(" in rewritten.code
    calls = []
    fallback = rewritten._optimus_fallback
    rewritten.__dict__["_optimus_fallback"] = lambda *a: calls.append(1) or fallback(*a)
    _assert_same(rewritten(contiguous), SumOfCatOfSplit()(contiguous))
    assert calls == []
    _assert_same(rewritten(_transposed()), SumOfCatOfSplit()(_transposed()))
    assert calls == [1]


def test_import_records_non_contiguous_strides() -> None:
    root = nn.Module()
    root.register_buffer("w", torch.randn(3, 5).t())
    graph = torch.fx.Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    w = graph.get_attr("w")
    graph.output((graph.call_function(torch.add, (x, w)), y))
    gm = torch.fx.GraphModule(root, graph)
    program = import_graph(gm, [torch.randn(3, 5).t(), torch.randn(5, 3)])
    ops = {op.target.data: op for op in program.graph.block.ops if isinstance(op, fx.PlaceholderOp | fx.GetAttrOp)}
    assert fx.input_strides(ops["x"]) == (1, 5)
    assert fx.input_strides(ops["w"]) == (1, 5)
    assert ops["y"].strides is None and fx.input_strides(ops["y"]) == (3, 1)
    text = str(program.module)
    assert 'fx.placeholder "x" strides [1, 5]' in text
    assert 'fx.get_attr "w" strides [1, 5]' in text
    from optimus_ir.translate.parsing import parse_module

    assert str(parse_module(text)) == text


def test_strides_of_uses_the_recorded_strides() -> None:
    from optimus_ir.translate.parsing import parse_module
    from optimus_ir.analysis import known_contiguous, strides_of

    module = parse_module(
        """
fx.graph @g {
  %x = fx.placeholder "x" strides [1, 4] : tensor<4x4xf32>
  %y = fx.placeholder "y" : tensor<4x4xf32>
  fx.output (%x, %y)
}
"""
    )
    x, y = graph_of(module).output().operands
    assert strides_of(x) == (1, 4) and not known_contiguous(x)
    assert strides_of(y) == (4, 1) and known_contiguous(y)


# ---------------------------------------------------------------------------
# 5. Keyword inputs
# ---------------------------------------------------------------------------


class KeywordOnly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, *, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + y


def test_optimize_takes_example_kwargs() -> None:
    torch.manual_seed(0)
    model = KeywordOnly()
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    optimized = optimus_ir.optimize(model, [], example_kwargs={"x": x, "y": y})
    torch.testing.assert_close(optimized(x=x, y=y), model(x=x, y=y), rtol=0, atol=0)
    x2, y2 = torch.randn(2, 4), torch.randn(2, 4)
    torch.testing.assert_close(optimized(x=x2, y=y2), model(x=x2, y=y2), rtol=0, atol=0)


def test_example_kwargs_with_positional_inputs_and_validation() -> None:
    class Mixed(nn.Module):
        def forward(self, a: torch.Tensor, *, b: torch.Tensor) -> torch.Tensor:
            return torch.cat(torch.split(a, 2, dim=1), dim=1) + b

    a, b = torch.randn(2, 4), torch.randn(2, 4)
    optimized = optimus_ir.optimize(Mixed(), [a], example_kwargs={"b": b}, validate=True)
    torch.testing.assert_close(optimized(a, b=b), Mixed()(a, b=b), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# 6. Production verifies once; verify_each verifies after every pass
# ---------------------------------------------------------------------------


@pytest.fixture
def verify_calls(monkeypatch):
    import optimus_ir.foundation.diagnostics
    import optimus_ir.pipeline

    calls: list[str] = []
    original = optimus_ir.foundation.diagnostics.verify_module

    def counting(module, context=""):
        calls.append(context)
        return original(module, context)

    monkeypatch.setattr(optimus_ir.pipeline, "verify_module", counting)
    monkeypatch.setattr(optimus_ir.foundation.diagnostics, "verify_module", counting)
    monkeypatch.delenv(VERIFY_EACH_ENV, raising=False)
    return calls


def test_optimize_verifies_once_by_default(verify_calls) -> None:
    model, x = SumOfCatOfSplit(), torch.randn(3, 8)
    optimized = optimus_ir.optimize(model, [x])
    assert len(verify_calls) == 1
    passes = len(optimized.optimus_report.statistics.passes)
    verify_calls.clear()
    optimus_ir.optimize(model, [x], verify_each=True)
    assert len(verify_calls) == passes >= 5


def test_the_environment_variable_turns_verify_each_on(verify_calls, monkeypatch) -> None:
    monkeypatch.setenv(VERIFY_EACH_ENV, "1")
    optimized = optimus_ir.optimize(SumOfCatOfSplit(), [torch.randn(3, 8)])
    assert len(verify_calls) == len(optimized.optimus_report.statistics.passes)


def test_backend_verifies_once_unless_asked(verify_calls) -> None:
    x = torch.randn(3, 8)
    from optimus_ir.passes.registry import DEFAULT_PIPELINE_STAGES

    # and match-output-strides, which runs after the pipeline (its outputs
    # have known strides)
    every_pass = len(DEFAULT_PIPELINE_STAGES) + 1
    for options, expected in (({"inner": "eager"}, 1), ({"inner": "eager", "verify_each": True}, every_pass)):
        torch._dynamo.reset()
        verify_calls.clear()
        compiled = torch.compile(SumOfCatOfSplit(), backend="optimus", options=options)
        _assert_same(compiled(x), SumOfCatOfSplit()(x))
        assert len(verify_calls) == expected, options
    torch._dynamo.reset()


# ---------------------------------------------------------------------------
# Train/eval mode (issue 9): the captured graph bakes in the mode
# ---------------------------------------------------------------------------


class DropoutTower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.lin(x))


def test_optimized_module_refuses_the_other_mode_instead_of_running_the_wrong_one() -> None:
    x = torch.randn(8, 4)
    model = DropoutTower().eval()
    optimized = optimus_ir.optimize(model, [x])
    assert optimized.training is False
    torch.testing.assert_close(optimized(x), model(x), rtol=0, atol=0)  # eval: no dropout
    optimized.train()
    with pytest.raises(RuntimeError, match="optimized from a model in eval mode"):
        optimized(x)
    optimized.eval()
    torch.testing.assert_close(optimized(x), model(x), rtol=0, atol=0)
    model.eval()  # optimized.train() reached the shared submodules; the model is eval again

    trained = DropoutTower().train()
    optimized = optimus_ir.optimize(trained, [x])
    assert optimized.training is True
    out = optimized(x)
    assert (out == 0).any()  # training-mode dropout really runs
    optimized.training = False
    with pytest.raises(RuntimeError, match="in training mode"):
        optimized(x)


_WRONG_MODE_SCRIPT = """
import torch
from torch import nn
import optimus_ir

model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval()
x = torch.randn(8, 4)
optimized = optimus_ir.optimize(model, [x])
optimized.train()
optimized(x)
"""


def test_the_wrong_mode_error_is_shown_alone_without_a_line_of_tildes() -> None:
    """Issue 25: the error was raised inside the generated forward, which
    torch.fx prints first with its source line and a ~300-character line of
    `~` under it; now the user sees the traceback and the message alone."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-c", _WRONG_MODE_SCRIPT],
        capture_output=True, text=True, timeout=300,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode != 0
    assert "RuntimeError: this module was optimized from a model in eval mode" in done.stderr
    assert "generated forward function" not in done.stderr
    for line in done.stderr.splitlines():
        stripped = line.strip()
        assert not (len(stripped) >= 50 and set(stripped) <= set("~^")), line
