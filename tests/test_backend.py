"""optimus-ir as a compiler stage: the torch.compile backend (options, the
factory, graph breaks and recompiles, fallback and strict mode, logging) and
the Inductor pre-grad hook (with Inductor's FX graph cache on and off)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from torch._dynamo.utils import counters
from torch._inductor import config as inductor_config

import optimus_ir
from optimus_ir.api import count_fx_ops
from optimus_ir.examples.recsys import make_recsys_model
from optimus_ir.backend import (
    BackendOptions,
    OptimusBackend,
    OptimusBackendError,
    OptimusFallbackWarning,
)
from optimus_ir.pipeline import PipelineError
from pipelines import FUSE_ALL
from plugins import miscompile_passes  # noqa: F401 - registers the test-only passes (test-miscompile, test-fail, ...)

ROOT = Path(__file__).resolve().parents[1]
FAILING = "raise-fx,test-fail{message=boom},lower-to-fx"


@pytest.fixture(autouse=True)
def _fresh_dynamo(monkeypatch: pytest.MonkeyPatch) -> None:
    torch._dynamo.reset()
    # these tests are about the backend's default: fall back, do not raise
    # (conftest makes the rest of the suite strict)
    monkeypatch.delenv("OPTIMUS_STRICT", raising=False)


class TwoGraphs(nn.Module):
    """Two tower blocks with a graph break between them: two Dynamo graphs."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.second = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cat([torch.relu(m(p)) for m, p in zip(self.first, torch.split(x, 8, dim=1))], dim=1)
        torch._dynamo.graph_break()
        return torch.cat([torch.tanh(m(p)) for m, p in zip(self.second, torch.split(y, 8, dim=1))], dim=1)


def _two_graphs() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return TwoGraphs().eval(), torch.randn(16, 32)


# --- options and the factory ------------------------------------------------------------


def test_factory_is_the_module_called_and_checks_options_at_once() -> None:
    made = optimus_ir.backend(inner="eager", remarks=True)
    assert isinstance(made, OptimusBackend)
    assert made.options == BackendOptions(inner="eager", remarks=True)
    assert repr(made) == "optimus_ir.backend(inner='eager', remarks=True)"
    with pytest.raises(TypeError, match="unknown option.*'bogus'.*known: pipeline"):
        optimus_ir.backend(bogus=1)
    with pytest.raises(ValueError, match="unknown inner compiler 'tvm'"):
        optimus_ir.backend(inner="tvm")
    with pytest.raises(TypeError, match="'freeze' must be True or False"):
        optimus_ir.backend(freeze="yes")
    with pytest.raises(PipelineError, match="unknown pass 'no-such-pass'"):
        optimus_ir.backend(pipeline="no-such-pass")


def test_factory_backend_optimizes_and_records_each_graph() -> None:
    model, (x,) = make_recsys_model(num_towers=16)
    made = optimus_ir.backend(inner="eager")
    compiled = torch.compile(model, backend=made)
    torch.testing.assert_close(compiled(x), model(x))
    (outcome,) = made.outcomes
    assert outcome.optimized and outcome.graph == "0/0"
    assert outcome.fusions >= 1
    assert outcome.report.ops_after["linear"] < outcome.report.ops_before["linear"]


def test_options_through_torch_compile() -> None:
    model, (x,) = make_recsys_model(num_towers=2)
    compiled = torch.compile(
        model, backend="optimus", options={"inner": "eager", "pipeline": "raise-fx,split-cat-simplify,lower-to-fx"}
    )
    torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    compiled = torch.compile(model, backend="optimus", options={"inner": "eager", "pipeline": "nope"})
    with pytest.raises(Exception, match="unknown pass 'nope'"):
        compiled(x)


@pytest.mark.slow  # Inductor compile (make test-all, CI)
def test_freeze_with_inductor_matches_under_no_grad() -> None:
    model, (x,) = make_recsys_model(num_towers=2)
    compiled = torch.compile(model, backend="optimus", options={"freeze": True})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))


def test_freeze_eager_computes_stacked_parameters_once() -> None:
    model, (x,) = make_recsys_model(num_towers=16)
    made = optimus_ir.backend(inner="eager", freeze=True)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend=made)(x), model(x))
    assert made.outcomes[0].fusions >= 1


# --- the one line per graph, counted as the report counts -------------------------------

OUTCOME_COUNTS = re.compile(
    r"(compute|view and metadata) ops (\d+) -> (\d+) per call(?: \(\+(\d+) on parameters alone, ([^)]*)\))?"
)


def outcome_counts(line: str) -> dict[str, tuple[int, int, int]]:
    """{"compute"/"view and metadata": (before, per call, once)} of an outcome line."""
    return {m[1]: (int(m[2]), int(m[3]), int(m[4] or 0)) for m in OUTCOME_COUNTS.finditer(line.split("; ")[0])}


@pytest.fixture
def optimized_graphs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[torch.fx.GraphModule, torch.fx.GraphModule, list]]:
    """(graph handed over, optimized graph, example inputs) of every graph
    the backend optimizes; Inductor's compile is replaced by running the
    graph (the counts are made before it; the test needs no C++ compile)."""
    backend_module = sys.modules["optimus_ir.backend"]
    real = backend_module.optimize_dynamo_graph
    seen: list[tuple[torch.fx.GraphModule, torch.fx.GraphModule, list]] = []

    def recording(gm, example_inputs, *args, **kwargs):
        optimized, outcome = real(gm, example_inputs, *args, **kwargs)
        seen.append((gm, optimized, list(example_inputs)))
        return optimized, outcome

    monkeypatch.setattr(backend_module, "optimize_dynamo_graph", recording)
    monkeypatch.setattr(backend_module, "inductor_compile_fx", lambda: lambda gm, inputs: gm.forward)
    return seen


def test_outcome_line_of_a_frozen_graph_counts_as_the_report(optimized_graphs) -> None:
    """Issue 34: under `freeze=True` the line said `75 -> 96 ops` (all
    nodes, the stacks Inductor folds included) while the report counted
    compute ops. Now both count compute and view ops per call, with the
    ops on parameters alone that Inductor's freezing folds apart; the
    numbers agree with each other and with `count_fx_ops` of the graphs."""
    from models import multi_task_dict
    from test_api import report_counts

    from optimus_ir.api import count_compute_ops, count_parameter_only_ops
    from optimus_ir.backend import FOLDED_BY_INDUCTOR

    model, batch = multi_task_dict()
    made = optimus_ir.backend(freeze=True)
    with torch.no_grad():
        out = torch.compile(model, backend=made)(batch)
    for task, value in model(batch).items():
        torch.testing.assert_close(out[task], value)
    (outcome,) = made.outcomes
    ((gm, optimized, _),) = optimized_graphs
    assert outcome.fusions >= 1
    line = outcome.describe()
    counts = outcome_counts(line)
    before, folded = count_fx_ops(gm), count_parameter_only_ops(optimized)
    per_call = count_fx_ops(optimized) - folded
    views = lambda c: sum(c.values()) - count_compute_ops(c)  # noqa: E731
    assert counts == {
        "compute": (count_compute_ops(before), count_compute_ops(per_call), count_compute_ops(folded)),
        "view and metadata": (views(before), views(per_call), views(folded)),
    }, line
    assert counts["compute"][2] > 0 and f"on parameters alone, {FOLDED_BY_INDUCTOR}" in line
    assert outcome.ops_before == sum(before.values())
    assert outcome.ops_after == sum(map(sum, zip(*[c[1:] for c in counts.values()])))  # per call + folded
    # the report of the same graph tells the same story
    from_report = report_counts(outcome.report.format())
    assert {k: from_report[k] for k in counts} == counts
    assert from_report["total"] == tuple(a + b for a, b in zip(counts["compute"], counts["view and metadata"]))
    assert "more ops than captured" not in line  # fewer per call, and fewer in all


def test_outcome_line_says_why_a_result_has_more_ops(optimized_graphs) -> None:
    """A forced fusion of two small linears (cost_model none) runs more ops
    per call than the captured graph: the line says so and why (the stacks
    of the weights, which Dynamo passes as graph inputs, made on every call)."""
    from optimus_ir.api import count_compute_ops, count_parameter_only_ops

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return self.a(x) + self.b(y)

    torch.manual_seed(0)
    model, x, y = Two().eval(), torch.randn(3, 4), torch.randn(3, 4)
    made = optimus_ir.backend(cost_model="none", inner="eager")
    torch.testing.assert_close(torch.compile(model, backend=made)(x, y), model(x, y))
    (outcome,) = made.outcomes
    ((gm, optimized, inputs),) = optimized_graphs
    line = outcome.describe()
    counts = outcome_counts(line)
    assert counts["compute"][1] > counts["compute"][0] == count_compute_ops(count_fx_ops(gm)), line
    assert counts["compute"][1] == count_compute_ops(count_fx_ops(optimized))
    parameters = {
        str(node.target)
        for node, value in zip(optimized.graph.find_nodes(op="placeholder"), inputs)
        if isinstance(value, nn.Parameter)
    }
    stacks = count_compute_ops(count_parameter_only_ops(optimized, parameters))
    assert stacks >= 2  # the weights' and the biases' stacks
    grown = counts["compute"][1] - counts["compute"][0]
    assert f"; more ops than captured: {grown} more compute ops per call (" in line
    assert f"{stacks} of them on parameters alone (stacks of weights), made on every call" in line


# --- graph breaks, recompiles -----------------------------------------------------------


def test_graph_break_gives_two_graphs_both_optimized() -> None:
    model, x = _two_graphs()
    made = optimus_ir.backend(inner="eager")
    compiled = torch.compile(model, backend=made)
    torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    assert [o.optimized for o in made.outcomes] == [True, True]
    assert all(o.fusions >= 1 for o in made.outcomes)
    assert len({o.graph for o in made.outcomes}) == 2  # named apart


def test_recompile_is_a_new_graph_with_its_own_name() -> None:
    model, (x,) = make_recsys_model(num_towers=4)
    made = optimus_ir.backend(inner="eager")
    compiled = torch.compile(model, backend=made, dynamic=False)
    for batch in (8, 12):
        batch_x = torch.randn(batch, x.shape[1])
        torch.testing.assert_close(compiled(batch_x), model(batch_x), rtol=0, atol=0)
    assert [o.graph for o in made.outcomes] == ["0/0", "0/1"]


def test_graph_without_operations_is_passed_through_with_a_reason(caplog: pytest.LogCaptureFixture) -> None:
    made = optimus_ir.backend(inner="eager")
    with caplog.at_level(logging.INFO, logger="optimus_ir"):
        out = torch.compile(lambda x: x, backend=made)(torch.ones(2))
    assert torch.equal(out, torch.ones(2))
    if made.outcomes:  # Dynamo may skip a graph without ops entirely
        assert not made.outcomes[0].optimized
        assert "no operations" in made.outcomes[0].reason


# --- a failing pass: fallback, strict mode ---------------------------------------------


def test_failing_pass_falls_back_with_one_warning_naming_the_pass() -> None:
    model, x = _two_graphs()
    made = optimus_ir.backend(inner="eager", pipeline=FAILING)
    with pytest.warns(OptimusFallbackWarning) as record:
        out = torch.compile(model, backend=made)(x)
    torch.testing.assert_close(out, model(x), rtol=0, atol=0)
    messages = [str(w.message) for w in record if w.category is OptimusFallbackWarning]
    assert len(messages) == 2  # one per graph
    for message in messages:
        assert "pass 'test-fail{message=\"boom\"}' failed (TestPassFailure: boom)" in message
        assert "running it unoptimized" in message
    assert [o.optimized for o in made.outcomes] == [False, False]
    assert "test-fail" in made.outcomes[0].reason


def test_failing_pass_with_inductor_still_runs() -> None:
    model, (x,) = make_recsys_model(num_towers=2)
    with pytest.warns(OptimusFallbackWarning, match="test-fail"):
        out = torch.compile(model, backend="optimus", options={"pipeline": FAILING})(x)
    torch.testing.assert_close(out, model(x))


def test_strict_mode_raises_naming_the_pass() -> None:
    model, (x,) = make_recsys_model(num_towers=2)
    compiled = torch.compile(model, backend=optimus_ir.backend(inner="eager", strict=True, pipeline=FAILING))
    with pytest.raises(Exception, match="graph 0/0: pass 'test-fail.*' failed") as info:
        compiled(x)
    assert any(isinstance(e, OptimusBackendError) for e in _chain(info.value))


def test_strict_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTIMUS_STRICT", "1")
    model, (x,) = make_recsys_model(num_towers=2)
    compiled = torch.compile(model, backend="optimus", options={"inner": "eager", "pipeline": FAILING})
    with pytest.raises(Exception, match="test-fail"):
        compiled(x)


def _chain(error: BaseException | None) -> list[BaseException]:
    found = []
    while error is not None:
        found.append(error)
        error = error.__cause__ or error.__context__
    return found


# --- observability ---------------------------------------------------------------------


def test_one_info_line_per_graph(caplog: pytest.LogCaptureFixture) -> None:
    model, x = _two_graphs()
    with caplog.at_level(logging.INFO, logger="optimus_ir"):
        torch.compile(model, backend="optimus", options={"inner": "eager"})(x)
    lines = [r.getMessage() for r in caplog.records if r.name == "optimus_ir.backend"]
    assert len(lines) == 2, lines
    for line in lines:
        assert line.startswith("optimus: graph ")
        assert " -> " in line and "batch fusion(s)" in line and "ms in optimus-ir" in line


def test_debug_logs_the_ir_after_each_pass_and_the_remarks(caplog: pytest.LogCaptureFixture) -> None:
    model, (x,) = make_recsys_model(num_towers=16)
    with caplog.at_level(logging.DEBUG, logger="optimus_ir"):
        torch.compile(model, backend="optimus", options={"inner": "eager"})(x)
    ir = [r.getMessage() for r in caplog.records if r.name == "optimus_ir.ir"]
    assert any(m.startswith("graph 0/0: IR after batch-fusion:") and "batch.linear" in m for m in ir)
    assert any("IR after lower-to-fx" in m for m in ir)
    remarks = [r.getMessage() for r in caplog.records if r.name == "optimus_ir.remarks"]
    assert any(m.startswith("graph 0/0: batch-fusion: fused 16 torch.linear") for m in remarks), remarks


def test_remarks_option_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    model, (x,) = make_recsys_model(num_towers=16)
    torch.compile(model, backend="optimus", options={"inner": "eager", "remarks": True})(x)
    err = capsys.readouterr().err
    assert "optimus: graph 0/0: remark: batch-fusion: fused 16 torch.linear" in err
    assert "not fused" in err  # and why the rest was not


SCRIPT = textwrap.dedent(
    """
    import os, sys, torch
    from torch import nn
    # (TORCH_LOGS="optimus_ir" imports the package to set up its logger)
    assert "optimus_ir" not in sys.modules or "TORCH_LOGS" in os.environ
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    x = torch.randn(3, 4)
    out = torch.compile(model, backend="optimus", options={"inner": "eager"})(x)
    torch.testing.assert_close(out, model(x), rtol=0, atol=0)
    assert "optimus_ir" in sys.modules
    print("OK", "optimus" in torch._dynamo.list_backends())
    """
)


def _run_fresh(env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(env_extra)
    # outside the checkout, so only the installed package (and its entry point) is found
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd="/", env=env, capture_output=True, text=True, timeout=300
    )


def test_entry_point_in_a_fresh_interpreter_without_importing_optimus_ir() -> None:
    done = _run_fresh({})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK True"


def test_torch_logs_enables_the_graph_line() -> None:
    done = _run_fresh({"TORCH_LOGS": "optimus_ir"})
    assert done.returncode == 0, done.stderr
    assert "optimus: graph 0/0: " in done.stderr and " -> " in done.stderr


def test_optimus_log_env_enables_the_graph_line() -> None:
    done = _run_fresh({"OPTIMUS_LOG": "info"})
    assert done.returncode == 0, done.stderr
    assert "[optimus_ir.backend] optimus: graph 0/0: " in done.stderr


# --- the Inductor pre-grad hook --------------------------------------------------------


@pytest.fixture
def inductor_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty Inductor cache directory for the test."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_inductor_pass_options() -> None:
    made = optimus_ir.inductor_pass(remarks=True)
    assert repr(made) == "optimus_ir.inductor_pass(remarks=True)"
    for name in ("inner", "freeze", "validate"):
        with pytest.raises(TypeError, match=f"'{name}' is not an option inside Inductor"):
            optimus_ir.inductor_pass(**{name: True})
    assert made.uuid() == optimus_ir.inductor_pass(remarks=True).uuid()
    assert made.uuid() != optimus_ir.inductor_pass(pipeline="raise-fx,lower-to-fx").uuid()


@pytest.mark.slow  # Inductor compiles (make test-all, CI)
def test_inductor_pass_with_the_fx_graph_cache(inductor_cache: Path) -> None:
    model, (x,) = make_recsys_model(num_towers=4)
    hook = optimus_ir.inductor_pass(pipeline=FUSE_ALL)
    with torch.no_grad(), inductor_config.patch(pre_grad_custom_pass=hook, fx_graph_cache=True):
        counters.clear()
        torch.testing.assert_close(torch.compile(model)(x), model(x))
        assert counters["inductor"]["fxgraph_cache_miss"] == 1
        assert hook.outcomes[0].optimized and hook.outcomes[0].fusions >= 1
        # the same set-up again: served from the cache (the pass identifies itself)
        torch._dynamo.reset()
        counters.clear()
        torch.testing.assert_close(torch.compile(model)(x), model(x))
        assert counters["inductor"]["fxgraph_cache_hit"] == 1
        assert counters["inductor"].get("fxgraph_cache_bypass", 0) == 0
    # another pipeline (a deliberately wrong one) must not get the cached graph
    wrong = optimus_ir.inductor_pass(pipeline="raise-fx,test-miscompile,lower-to-fx")
    torch._dynamo.reset()
    counters.clear()
    with torch.no_grad(), inductor_config.patch(pre_grad_custom_pass=wrong, fx_graph_cache=True):
        out = torch.compile(model)(x)
    assert counters["inductor"]["fxgraph_cache_miss"] == 1
    assert not torch.allclose(out, model(x))  # tanh became sigmoid: not a stale result


def test_inductor_pass_without_the_cache_and_a_failing_pass(inductor_cache: Path) -> None:
    model, (x,) = make_recsys_model(num_towers=2)
    hook = optimus_ir.inductor_pass(pipeline=FAILING)
    with torch.no_grad(), inductor_config.patch(pre_grad_custom_pass=hook, fx_graph_cache=False):
        with pytest.warns(OptimusFallbackWarning, match="optimus inductor pass: .*test-fail"):
            out = torch.compile(model)(x)
    torch.testing.assert_close(out, model(x))
    assert not hook.outcomes[0].optimized


@pytest.mark.slow  # Inductor compiles (make test-all, CI)
def test_backend_with_inductor_cache_on_and_off(inductor_cache: Path) -> None:
    model, (x,) = make_recsys_model(num_towers=16)
    seen = []
    for cached in (True, False, True):
        torch._dynamo.reset()
        counters.clear()
        with torch.no_grad(), inductor_config.patch(fx_graph_cache=cached):
            torch.testing.assert_close(torch.compile(model, backend="optimus")(x), model(x))
        seen.append((counters["inductor"]["fxgraph_cache_miss"], counters["inductor"]["fxgraph_cache_hit"]))
        # the module we hand Inductor pickles into its cache key (no report on it)
        assert counters["inductor"].get("fxgraph_cache_bypass", 0) == 0
    # the graph Inductor gets is ours: cached by its own content like any other
    assert seen == [(1, 0), (0, 0), (0, 1)]


# --- the model corpus, inference, static and dynamic ------------------------------------

from models import CASES, clone_inputs  # noqa: E402


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_corpus_inference_through_the_backend(case, dynamic: bool) -> None:
    """Every corpus model through `backend="optimus"` in strict mode (so a
    graph optimus-ir cannot handle fails the test instead of falling back):
    outputs and inputs written in place equal eager's."""
    model, inputs = case.factory()
    made = optimus_ir.backend(inner="eager", strict=True)
    compiled = torch.compile(model, backend=made, dynamic=dynamic)
    want_inputs, got_inputs = clone_inputs(inputs), clone_inputs(inputs)
    with torch.no_grad():
        want = model(*want_inputs)
        got = compiled(*got_inputs)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_inputs, want_inputs)
    assert made.outcomes and all(o.optimized or o.reason == "no operations to optimize" for o in made.outcomes)


@pytest.mark.slow  # Inductor compiles (make test-all, CI)
def test_inductor_pass_with_dynamic_batch(inductor_cache: Path) -> None:
    model, (x,) = make_recsys_model(num_towers=4)
    hook = optimus_ir.inductor_pass(pipeline=FUSE_ALL)
    with torch.no_grad(), inductor_config.patch(pre_grad_custom_pass=hook):
        compiled = torch.compile(model, dynamic=True)
        for batch in (3, 17):
            batch_x = torch.randn(batch, x.shape[1])
            torch.testing.assert_close(compiled(batch_x), model(batch_x))
    assert hook.outcomes and all(o.optimized for o in hook.outcomes)
    assert hook.outcomes[-1].fusions >= 1


def test_inductor_pass_leaves_a_graph_without_example_values_alone() -> None:
    gm = torch.fx.symbolic_trace(lambda x: torch.tanh(x) + 1)  # no node.meta: not from Dynamo
    before = gm.code
    hook = optimus_ir.inductor_pass()
    hook(gm.graph)
    assert gm.code == before
    assert not hook.outcomes[0].optimized
    assert "placeholders without example values: x" in hook.outcomes[0].reason


def test_ddp_bucket_subgraphs_are_named_apart() -> None:
    """DDPOptimizer hands the backend one submodule per DDP bucket, all under
    one compile id, each marked in its `compile_subgraph_reason`: they are
    named `submod_0`, `submod_1`, ... in the order they come (graph order),
    in the outcome and its log line (tests/test_distributed.py: under DDP)."""
    import types

    from optimus_ir.backend import GraphOutcome, split_subgraph

    reason = types.SimpleNamespace(reason="DDPOptimizer intentional graph-break (See Note [DDPOptimizer]).")
    bucket = types.SimpleNamespace(compile_subgraph_reason=reason)
    assert [split_subgraph(bucket, "97/3") for _ in range(3)] == ["submod_0", "submod_1", "submod_2"]
    assert split_subgraph(bucket, "98/0") == "submod_0"  # another compilation counts from 0
    whole = types.SimpleNamespace(compile_subgraph_reason=types.SimpleNamespace(reason="return_value"))
    assert split_subgraph(whole, "97/3") is None
    outcome = GraphOutcome("97/3", 10, 4, optimized=True, fusions=1, subgraph="submod_1")
    assert outcome.name == "97/3 submod_1"
    assert outcome.describe().startswith("optimus: graph 97/3 submod_1: 10 -> 4 ops, 1 batch fusion(s)")
    assert GraphOutcome("0/0", 3, 3, optimized=True).name == "0/0"
