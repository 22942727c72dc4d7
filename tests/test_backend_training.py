"""Training through the torch.compile backend (issue 11).

Dynamo hands the backend the *forward* graph of a training step, with the
parameters as graph inputs; ours runs on it before AOTAutograd (Inductor)
or before plain autograd (`inner="eager"`) differentiates it. So backward
runs through the ops our lowering made: the batch ops lowered to
stack/unbind/baddbmm/layer_norm/pointwise torch ops, which differentiate
like any torch op.

Every test compiles a deep copy of a model in train mode with
`torch.compile(..., backend="optimus")`, runs forward + backward on the same
input as the uncompiled model, and compares the loss, the input's gradient
and every parameter's `.grad` (and where the model has them, buffers such as
batch-norm running statistics). Each also checks, from the `optimus_report`
of the module the backend made, that batch fusion really fused groups in the
training graph: a training test in which nothing fused proves nothing.

Tolerances (fp32): fusion turns N `linear`s into one `baddbmm` and the
weight gradients into one batched matmul, which may sum their K products in
another order, and the bias gradient of `baddbmm(bias[:, None], ...)` is a
reduction over a broadcast; everything else (layer norm over the stacked
members, pointwise ops, data movement) computes each element as before. So
values and gradients are compared with `rtol=1e-5, atol=1e-6` (a few ulps of
the O(0.01..1) values these models produce); Inductor (which fuses and
reorders reductions of its own) with `rtol=1e-4, atol=1e-5`. Measured on
this CPU (`pytest -s` prints them): at most 1.5e-8 with `inner="eager"`
(0 where only pointwise ops fused), 1.6e-7 through Inductor.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import _pytree as pytree

import optimus_ir.api as api
from optimus_ir.examples.recsys import make_recsys_model
from models import CASES_BY_NAME
from pipelines import FUSE_ALL


EAGER_TOL = dict(rtol=1e-5, atol=1e-6)
INDUCTOR_TOL = dict(rtol=1e-4, atol=1e-5)

Factory = Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]


# ---------------------------------------------------------------------------
# Models with batch-fusable structure
# ---------------------------------------------------------------------------


class MultiTaskRanking(nn.Module):
    """Multi-gate mixture of experts (MMoE) ranking: `experts` parallel
    expert MLPs on one shared input, one softmax gate per task mixing them,
    one tower per task. The experts' first linears share their input; the
    second linears, the gates and the task towers are parallel and equal."""

    def __init__(self, features: int = 24, experts: int = 4, tasks: int = 3, hidden: int = 16) -> None:
        super().__init__()
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            for _ in range(experts)
        )
        self.gates = nn.ModuleList(nn.Linear(features, experts) for _ in range(tasks))
        self.towers = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
            for _ in range(tasks)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        expert_out = torch.stack([e(x) for e in self.experts], dim=1)  # [B, E, H]
        logits = []
        for gate, tower in zip(self.gates, self.towers):
            weights = torch.softmax(gate(x), dim=-1).unsqueeze(-1)  # [B, E, 1]
            mixed = (expert_out * weights).sum(dim=1)
            logits.append(tower(mixed))
        return torch.cat(logits, dim=1)


class NormBranches(nn.Module):
    """Per-branch layer norms and pointwise ops: the input is cut into
    `branches` pieces, each normalized, projected, gated
    (`gelu(h) * sigmoid(g)`) and added back to its piece."""

    def __init__(self, branches: int = 6, width: int = 16) -> None:
        super().__init__()
        self.width = width
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(branches))
        self.proj = nn.ModuleList(nn.Linear(width, width) for _ in range(branches))
        self.gate = nn.ModuleList(nn.Linear(width, width) for _ in range(branches))
        self.head = nn.Linear(branches * width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = []
        for i, piece in enumerate(torch.split(x, self.width, dim=1)):
            h = self.norms[i](piece)
            y = F.gelu(self.proj[i](h)) * torch.sigmoid(self.gate[i](h))
            outs.append(piece + y * 0.5)
        return self.head(torch.cat(outs, dim=1))


class DropoutTowers(nn.Module):
    """Towers with a training-mode dropout between a linear and a layer
    norm. Dropout draws random numbers (a side effect): the linears before
    the dropouts may fuse, the dropouts themselves must stay separate calls
    in their order, or the random stream would differ."""

    def __init__(self, towers: int = 4, width: int = 8) -> None:
        super().__init__()
        self.width = width
        self.linears = nn.ModuleList(nn.Linear(width, width) for _ in range(towers))
        self.drops = nn.ModuleList(nn.Dropout(0.25) for _ in range(towers))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(towers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.width, dim=1)
        hidden = [lin(p) for lin, p in zip(self.linears, pieces)]
        dropped = [drop(h) for drop, h in zip(self.drops, hidden)]
        return torch.cat([torch.tanh(n(d)) for n, d in zip(self.norms, dropped)], dim=1)


class BatchNormTowers(nn.Module):
    """Towers with training-mode batch norms (which update their running
    statistics: a write, so a barrier). The towers' linears come first and
    fuse; the batch norms' operands and results count as written (the
    analysis does not know which arguments a batch norm writes), so the
    activations around them stay per tower."""

    def __init__(self, towers: int = 4, width: int = 8) -> None:
        super().__init__()
        self.width = width
        self.linears = nn.ModuleList(nn.Linear(width, width) for _ in range(towers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(width) for _ in range(towers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.width, dim=1)
        hidden = [torch.tanh(lin(p)) for lin, p in zip(self.linears, pieces)]
        normed = [bn(h) for bn, h in zip(self.norms, hidden)]
        return torch.cat([torch.relu(h) for h in normed], dim=1)


def _seeded(make: Callable[[], nn.Module], *shape: int, seed: int = 0) -> Factory:
    def factory() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        torch.manual_seed(seed)
        model = make().train()
        return model, (torch.randn(*shape),)

    return factory


def _recsys(**variant: Any) -> Factory:
    def factory() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        model, inputs = make_recsys_model(**variant)
        return model.train(), inputs

    return factory


def _corpus(name: str) -> Factory:
    def factory() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        model, inputs = CASES_BY_NAME[name].factory()
        return model.train(), tuple(inputs)

    return factory


RECSYS_UNIFORM = _recsys(num_towers=8, tower_width=16, hidden=64, batch=32)
RECSYS_MIXED = _recsys(
    num_towers=9, tower_width=(16, 32, 64), tower_hidden=32, hidden=32, batch=32,
    activations=("tanh", "relu", "sigmoid"), tower_depth=2,
)
RECSYS_SMALL = _recsys(num_towers=4, tower_width=8, hidden=16, batch=8)

EAGER_MODELS: dict[str, Factory] = {
    "recsys_uniform": RECSYS_UNIFORM,
    "recsys_mixed": RECSYS_MIXED,
    "multi_task_ranking": _seeded(MultiTaskRanking, 16, 24),
    "norm_branches": _seeded(NormBranches, 16, 96),
    "corpus_dynamic_batch": _corpus("dynamic_batch"),
}


# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------


@pytest.fixture
def optimized() -> Any:
    """The GraphModules the backend's optimizer made during the test (it
    calls `optimus_ir.api._optimize`, wrapped here to keep the result and
    its `optimus_report`); Dynamo's caches are reset before and after, so
    every model is compiled afresh."""
    made: list[torch.fx.GraphModule] = []
    original = api._optimize

    def recording(*args: Any, **kwargs: Any) -> torch.fx.GraphModule:
        result = original(*args, **kwargs)
        made.append(result)
        return result

    torch._dynamo.reset()
    api._optimize = recording
    try:
        yield made
    finally:
        api._optimize = original
        torch._dynamo.reset()


def _loss(out: Any) -> torch.Tensor:
    """A scalar from every floating output: a squared distance from a fixed
    target, so that every output element gets its own gradient."""
    total = torch.zeros(())
    for leaf in pytree.tree_leaves(out):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            target = torch.linspace(-1.0, 1.0, leaf.numel()).reshape(leaf.shape)
            total = total + ((leaf - target) ** 2).mean()
    return total


def _step(model: Callable[..., Any], inputs: tuple[torch.Tensor, ...]) -> dict[str, torch.Tensor]:
    """Forward + backward once; the loss, the inputs' and parameters' grads."""
    args = tuple(
        x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs
    )
    loss = _loss(model(*args))
    loss.backward()
    values = {"loss": loss.detach()}
    for i, x in enumerate(args):
        if x.is_floating_point():
            values[f"input {i} grad"] = x.grad
    return values


def _grads(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {name: p.grad for name, p in model.named_parameters()}


MEASURED: dict[str, float] = {}
"""The largest absolute difference seen per test (printed with `-s`)."""


@pytest.fixture(scope="module", autouse=True)
def _print_measured() -> Any:
    yield
    if MEASURED:
        print("\nlargest |ours - eager| per test:")
        for name, worst in sorted(MEASURED.items()):
            print(f"  {name}: {worst:.3g}")


def _compare(
    label: str,
    ours: dict[str, torch.Tensor | None],
    theirs: dict[str, torch.Tensor | None],
    tol: dict[str, float],
) -> float:
    """Every entry close; returns the largest absolute difference."""
    assert ours.keys() == theirs.keys()
    worst = 0.0
    for key, expected in theirs.items():
        got = ours[key]
        if expected is None:
            assert got is None, f"{label}: {key} has a gradient the model's lacks"
            continue
        assert got is not None, f"{label}: {key} got no gradient"
        torch.testing.assert_close(got, expected, **tol, msg=lambda m: f"{label}: {key}: {m}")
        worst = max(worst, (got - expected).abs().max().item() if got.numel() else 0.0)
    return worst


def _fused_groups(gm: torch.fx.GraphModule) -> int:
    report = gm.optimus_report
    return sum(r.counters.get("groups fused", 0) for r in report.statistics.by_pass("batch-fusion"))


COMPUTE_KINDS = frozenset("linear baddbmm bmm layer_norm".split())
"""The op kinds that compute (what fusion merges), by `count_fx_ops`'s
names (methods have a leading dot)."""


def _compute_calls(counts: Any) -> int:
    """Calls of `COMPUTE_KINDS` ops: fusion lowers their number; the stacks
    it adds are data movement (in a training graph the parameters are
    inputs, so their stacks are per-call copies); a fused layer norm is one
    layer norm without affine and a `mul` and an `add`."""
    return sum(n for kind, n in counts.items() if kind.lstrip(".") in COMPUTE_KINDS)


def _check_lowered_code(gm: torch.fx.GraphModule) -> None:
    """What autograd needs of the lowered graph: no in-place ops (autograd
    may have saved the tensor they write), no `.data`, no grad-mode
    switches (they would cut the graph)."""
    code = gm.code
    for bad in ("no_grad", "inference_mode", "set_grad_enabled", ".data", ".detach"):
        assert bad not in code, f"{bad} in the optimized training graph:\n{code}"
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
            assert not (name.endswith("_") and not name.endswith("__")), f"in-place {node.format_node()}"


def _compile(model: nn.Module, inner: str = "eager", pipeline: str | None = FUSE_ALL) -> Callable[..., Any]:
    options: dict[str, Any] = {"inner": inner}
    if pipeline is not None:
        options["pipeline"] = pipeline
    return torch.compile(model, backend="optimus", options=options)


def _train_once(
    factory: Factory,
    inner: str,
    optimized: list[torch.fx.GraphModule],
    tol: dict[str, float],
    pipeline: str | None = FUSE_ALL,
) -> tuple[float, torch.fx.GraphModule]:
    model, inputs = factory()
    compiled_model = copy.deepcopy(model)
    compiled = _compile(compiled_model, inner, pipeline)
    expected = _step(model, inputs)
    got = _step(compiled, inputs)
    assert len(optimized) == 1, f"expected one graph, the backend optimized {len(optimized)}"
    gm = optimized[0]
    worst = _compare("values", got, expected, tol)
    worst = max(worst, _compare("parameter grads", _grads(compiled_model), _grads(model), tol))
    return worst, gm


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EAGER_MODELS))
def test_training_step_matches_eager(name: str, optimized: list[torch.fx.GraphModule]) -> None:
    """Forward + backward through the optimized graph (`inner="eager"`):
    the loss, the input's grad and every parameter's grad as the uncompiled
    model's, with batch fusion applied in the training graph."""
    worst, gm = _train_once(EAGER_MODELS[name], "eager", optimized, EAGER_TOL)
    report = gm.optimus_report
    assert _fused_groups(gm) >= 1, report.format()
    assert _compute_calls(report.ops_after) < _compute_calls(report.ops_before), report.format()
    _check_lowered_code(gm)
    MEASURED[name] = worst


@pytest.mark.parametrize("name", ["recsys_mixed"])
def test_kernel_lowering_in_training(name: str, optimized: list[torch.fx.GraphModule]) -> None:
    """`lower-batch{kernels=triton}`: the batch ops become the
    `torch.ops.optimus.*` custom ops (their torch references off CUDA),
    whose registered autograd must give the eager model's gradients through
    Dynamo as well."""
    pipeline = FUSE_ALL.replace("lower-batch,", "lower-batch{kernels=triton},")
    worst, gm = _train_once(EAGER_MODELS[name], "eager", optimized, EAGER_TOL, pipeline=pipeline)
    assert "torch.ops.optimus" in gm.code, gm.code
    _check_lowered_code(gm)
    MEASURED[f"kernels {name}"] = worst


def test_default_pipeline_fuses_in_training(optimized: list[torch.fx.GraphModule]) -> None:
    """The default pipeline (the cost model deciding) on the recsys model's
    training graph: the parameters arrive as graph inputs, so the weight
    stacks are priced as per-call copies; the towers' activations still
    fuse (4 tanh and 4 relu into two batched pointwise ops), and the step
    matches eager."""
    worst, gm = _train_once(RECSYS_UNIFORM, "eager", optimized, EAGER_TOL, pipeline=None)
    fused = [r.message for r in gm.optimus_report.remarks if "batch-fusion: fused" in r.message]
    assert len(fused) >= 2 and all("batch.pointwise" in m for m in fused), gm.optimus_report.format()
    _check_lowered_code(gm)
    MEASURED["default pipeline recsys_uniform"] = worst


@pytest.mark.parametrize(
    "name, factory",
    [
        ("recsys_small", RECSYS_SMALL),
        # Inductor compiles forward and backward C++ kernels: about a minute
        # for the first model of a process on this 2-core machine, 25 s for
        # the next; one model in the quick run, the second with the slow ones.
        pytest.param("multi_task_ranking", _seeded(MultiTaskRanking, 8, 24), marks=pytest.mark.slow),
    ],
)
def test_training_step_through_inductor(
    name: str, factory: Factory, optimized: list[torch.fx.GraphModule]
) -> None:
    """The default inner compiler: AOTAutograd differentiates our graph and
    Inductor compiles forward and backward."""
    worst, gm = _train_once(factory, "inductor", optimized, INDUCTOR_TOL)
    assert _fused_groups(gm) >= 1, gm.optimus_report.format()
    MEASURED[f"inductor {name}"] = worst


def _sgd_steps(model: Callable[..., Any], params: list[nn.Parameter], batches: list[torch.Tensor]) -> list[float]:
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    losses = []
    for x in batches:
        optimizer.zero_grad()
        loss = _loss(model(x))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("name", ["recsys_mixed", "multi_task_ranking"])
def test_sgd_steps_match_eager(name: str, optimized: list[torch.fx.GraphModule]) -> None:
    """Three SGD steps (momentum 0.9, a new batch each) with the compiled
    model and the uncompiled one: the same losses and, after, the same
    parameters. The steps update the parameters in place between calls, so
    this also checks that nothing computed from them went stale."""
    model, (x,) = EAGER_MODELS[name]()
    compiled_model = copy.deepcopy(model)
    compiled = _compile(compiled_model)
    generator = torch.Generator().manual_seed(7)
    batches = [torch.randn(x.shape, generator=generator) for _ in range(3)]
    expected = _sgd_steps(model, list(model.parameters()), batches)
    got = _sgd_steps(compiled, list(compiled_model.parameters()), batches)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(expected), **EAGER_TOL)
    assert len(optimized) == 1 and _fused_groups(optimized[0]) >= 1
    params = dict(compiled_model.named_parameters())
    worst = 0.0
    for key, value in model.named_parameters():
        torch.testing.assert_close(params[key], value, **EAGER_TOL, msg=lambda m: f"{key}: {m}")
        worst = max(worst, (params[key] - value).abs().max().item())
    MEASURED[f"sgd {name}"] = worst


def test_parameters_are_read_fresh_in_training() -> None:
    """`optimize()` (the other entry point) captures the parameters as
    attributes; the module reads them from the model on every call and
    stacks the weights of fused linears on every call (nothing is cached:
    `optimus_ir.api.param_cache`). Through Dynamo's backend they are graph
    inputs. Here, in training, gradients must reach the parameters, every
    SGD update must be followed, and under `no_grad` the values must be
    those of the current parameters."""
    model, (x,) = RECSYS_MIXED()
    trained = copy.deepcopy(model)
    gm = api.optimize(trained, (x,), pipeline=FUSE_ALL)
    assert gm.optimus_report.cached_parameter_values == 0, gm.optimus_report.format()
    assert gm.__dict__["_optimus_model"] is trained
    assert _fused_groups(gm) >= 1
    generator = torch.Generator().manual_seed(3)
    batches = [torch.randn(x.shape, generator=generator) for _ in range(3)]
    # the module reads `trained`'s parameters (referenced, not copied)
    assert {id(p) for p in gm.parameters()} <= {id(p) for p in trained.parameters()}
    params, reference = list(trained.parameters()), list(model.parameters())
    expected = _sgd_steps(model, reference, batches)
    got = _sgd_steps(gm, params, batches)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(expected), **EAGER_TOL)
    with torch.no_grad():  # values of the updated parameters
        torch.testing.assert_close(gm(x), model(x), **EAGER_TOL)
        torch.testing.assert_close(gm(x), model(x), **EAGER_TOL)
    expected = _sgd_steps(model, reference, batches[:1])
    got = _sgd_steps(gm, params, batches[:1])
    torch.testing.assert_close(torch.tensor(got), torch.tensor(expected), **EAGER_TOL)
    ours = dict(trained.named_parameters())
    for key, value in model.named_parameters():
        torch.testing.assert_close(ours[key], value, **EAGER_TOL, msg=lambda m: f"{key}: {m}")


def test_dropout_in_training_is_not_fused(optimized: list[torch.fx.GraphModule]) -> None:
    """Training-mode dropout is random: each stays one call in its place, so
    with the same seed the compiled model draws the same masks as the
    uncompiled one (values and gradients as eager), while the linears
    before them do fuse."""
    model, (x,) = _seeded(DropoutTowers, 16, 32)()
    compiled_model = copy.deepcopy(model)
    compiled = _compile(compiled_model)
    torch.manual_seed(123)
    compiled(x.clone().requires_grad_())  # compile first, so the seeded calls below draw alike
    torch.manual_seed(11)
    expected = _step(model, (x,))
    torch.manual_seed(11)
    got = _step(compiled, (x,))
    _compare("values", got, expected, EAGER_TOL)
    _compare("parameter grads", _grads(compiled_model), _grads(model), EAGER_TOL)
    (gm,) = optimized
    assert _fused_groups(gm) >= 1, gm.optimus_report.format()
    dropouts = [n for n in gm.graph.nodes if "dropout" in str(n.target)]
    assert len(dropouts) == 4, gm.code
    _check_lowered_code(gm)


def test_batch_norm_in_training_is_a_barrier(optimized: list[torch.fx.GraphModule]) -> None:
    """Training-mode batch norms update their running statistics: the
    compiled model's statistics, values and gradients are the uncompiled
    model's, every batch norm is still called, and the linears before them
    fused (no batch norm is)."""
    model, (x,) = _seeded(BatchNormTowers, 16, 32)()
    compiled_model = copy.deepcopy(model)
    compiled = _compile(compiled_model)
    for _ in range(2):
        for m in (model, compiled_model):
            m.zero_grad()
        expected = _step(model, (x,))
        got = _step(compiled, (x,))
        _compare("values", got, expected, EAGER_TOL)
        _compare("parameter grads", _grads(compiled_model), _grads(model), EAGER_TOL)
        buffers = dict(compiled_model.named_buffers())
        for key, value in model.named_buffers():
            torch.testing.assert_close(buffers[key], value, **EAGER_TOL, msg=lambda m: f"{key}: {m}")
    (gm,) = optimized
    fused = [r.message for r in gm.optimus_report.remarks if "batch-fusion: fused" in r.message]
    # the linears before the norms; the activations after them too: a batch
    # norm writes its running statistics (torch's schema says so), not its
    # input or output
    assert any("4 torch.linear" in f for f in fused), gm.optimus_report.format()
    assert not any("batch_norm" in f for f in fused), gm.optimus_report.format()
    norms = [n for n in gm.graph.nodes if "batch_norm" in str(n.target)]
    assert len(norms) == 4, gm.code
