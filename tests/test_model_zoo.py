"""The model zoo (issue 34): recommendation models written by others --
FuxiCTR, torchrec and torchfm, built by `benchmarks/zoo_models.py` -- as
their users call them: optimized once (`optimize(model, example)`, live and
with `freeze=True`), then called at three batch sizes with fresh inputs
each (the example's, a larger and a smaller one; batch 1 too for FuxiCTR's
DeepFM), every output equal to the model's own, with at most an
`OptimusGuardWarning` where a specialization runs the model instead; a few
training steps through the optimized FuxiCTR DeepFM leave the parameters
equal to the model's copy; and the same models through
`torch.compile(backend=optimus)`.

The zoo's packages come with `make test` (`.venv/.zoo`); a model whose
package is missing is skipped with the reason.

Every call must equal the model's: the calls that miss the example's guard
(other batch sizes, fresh jagged inputs with other bag lengths, the nested
inputs of FuxiCTR's LongCTR models, which `forward` writes into) go through
the size proof or are optimized again, and at most an `OptimusGuardWarning`
may say that the model itself ran.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

from benchmark_scripts import load_benchmark
import optimus_ir
from optimus_ir.api.guards import OptimusGuardWarning

zoo = load_benchmark("zoo_models")

EXAMPLE_BATCH = 16
CALL_BATCHES = (16, 64, 4)
"""The example's batch size (fresh inputs), a larger and a smaller one."""
BATCH_ONE_MODEL = "fuxictr.DeepFM"
"""The model also called at batch 1 (Dynamo specializes sizes 0 and 1)."""

"""How each model fails `optimize()` and its calls today, live and frozen alike
(the error of the first call that fails)."""

QUICK = {("fuxictr.DeepFM", False), ("fuxictr.DIN", True), ("torchrec.DLRM", False), ("torchfm.FFM", True)}
"""The (model, freeze) cases `make test` runs (one per input structure);
the rest are `slow` (several seconds each once they optimize again per
batch size)."""


def _skip_if_missing(name: str) -> None:
    missing = zoo.ZOO[name].missing()
    if missing is not None:
        pytest.skip(missing)


def _case(name: str, freeze: bool) -> Any:
    marks = []
    if (name, freeze) not in QUICK:
        marks.append(pytest.mark.slow)
    return pytest.param(name, freeze, marks=marks, id=f"{name}-{'frozen' if freeze else 'live'}")


def _call_allowing_guard_warnings(module: Callable[..., Any], inputs: tuple[Any, ...]) -> Any:
    """`module(*inputs)` without autograd; an optimus-ir warning other than
    `OptimusGuardWarning` (a fallback inside optimus-ir) fails the test."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            result = module(*inputs)
    ours = [
        f"{w.category.__name__}: {w.message}" for w in caught
        if w.category.__module__.startswith("optimus_ir") and not issubclass(w.category, OptimusGuardWarning)
    ]
    assert not ours, ours
    return result


def _expected(name: str, model: torch.nn.Module, batch: int, seed: int) -> Any:
    # inputs of their own: FuxiCTR's LongCTR models write into their item dict
    with torch.no_grad():
        return model(*zoo.make_inputs(name, batch, seed))


def test_the_zoo_holds_the_models_the_issue_names() -> None:
    fuxictr = [m for m in zoo.ZOO.values() if m.module == "fuxictr"]
    assert len([m for m in fuxictr if "dict of 2" not in m.structure]) >= 3  # CTR models
    assert any("MultiTaskModel" in m.origin for m in fuxictr)  # multi-task, dict in and dict out
    assert sum("(in the wheel)" in m.origin for m in fuxictr) >= 3  # FuxiCTR's own code, unmodified
    assert {"torchrec.DLRM", "torchrec.DLRM_DCN", "torchfm.FFM"} <= set(zoo.ZOO)
    assert sum(m.module == "torchfm" for m in zoo.ZOO.values()) >= 2


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_the_builders_make_seeded_models_and_fresh_inputs(name: str) -> None:
    """Same seed, same model; eval and train variants; inputs of other
    seeds differ (torchrec's bag lengths too, at one batch size); outputs
    vary over the batch (a wrong value shows)."""
    _skip_if_missing(name)
    model = zoo.build(name)
    assert not model.training and zoo.build(name, train=True).training
    twin = zoo.build(name)
    for mine, theirs in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.equal(mine, theirs)
    first, second = zoo.make_inputs(name, 8, seed=1), zoo.make_inputs(name, 8, seed=2)
    leaves = [torch.utils._pytree.tree_leaves(x) for x in (first, second)]  # noqa: SLF001
    if name.startswith("torchrec."):
        leaves = [[args[0], args[1].values(), args[1].lengths()] for args in (first, second)]
        assert not torch.equal(leaves[0][2], leaves[1][2])  # other bag lengths at the same batch size
    assert any(a.shape != b.shape or not torch.equal(a, b) for a, b in zip(*leaves, strict=True))
    with torch.no_grad():
        outputs = torch.utils._pytree.tree_leaves(model(*first))  # noqa: SLF001
    assert all(output.shape[0] == 8 and output.float().std() > 1e-2 for output in outputs)


@pytest.mark.parametrize(("name", "freeze"), [_case(name, freeze) for name in zoo.ZOO for freeze in (False, True)])
def test_optimized_zoo_model_equals_the_model_at_three_batch_sizes(name: str, freeze: bool) -> None:
    _skip_if_missing(name)
    model = zoo.build(name)
    optimized = optimus_ir.optimize(model, zoo.make_inputs(name, EXAMPLE_BATCH, seed=0), freeze=freeze)
    batches = CALL_BATCHES + ((1,) if name == BATCH_ONE_MODEL else ())
    for seed, batch in enumerate(batches, start=1):
        got = _call_allowing_guard_warnings(optimized, zoo.make_inputs(name, batch, seed))
        torch.testing.assert_close(got, _expected(name, model, batch, seed), msg=lambda m: f"batch {batch}: {m}")


def test_optimize_takes_a_keyed_jagged_tensor_the_model_has_read() -> None:
    """A user calls DLRM on a batch, then optimizes it with that batch as
    the example: the `KeyedJaggedTensor` now carries the per-key split the
    call cached on it, and the result still equals the model on it."""
    _skip_if_missing("torchrec.DLRM")
    model = zoo.build("torchrec.DLRM")
    example = zoo.make_inputs("torchrec.DLRM", EXAMPLE_BATCH, seed=0)
    with torch.no_grad():
        want = model(*example)
    optimized = optimus_ir.optimize(model, example)
    torch.testing.assert_close(_call_allowing_guard_warnings(optimized, example), want)


def _bce_steps(module: torch.nn.Module, parameters: Any, batches: tuple[int, ...]) -> list[float]:
    """SGD steps of FuxiCTR's DeepFM on fresh inputs and labels; the losses."""
    sgd = torch.optim.SGD(parameters, lr=0.05)
    losses = []
    for seed, batch in enumerate(batches, start=100):
        (features,) = zoo.make_inputs("fuxictr.DeepFM", batch, seed)
        labels = torch.randint(0, 2, (batch, 1), generator=torch.Generator().manual_seed(seed)).float()
        sgd.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy(module(features)["y_pred"], labels)
        loss.backward()
        sgd.step()
        losses.append(loss.item())
    return losses


def _train_both(batches: tuple[int, ...]) -> None:
    _skip_if_missing("fuxictr.DeepFM")
    model, copy = zoo.build("fuxictr.DeepFM", train=True), zoo.build("fuxictr.DeepFM", train=True)
    optimized = optimus_ir.optimize(model, zoo.make_inputs("fuxictr.DeepFM", EXAMPLE_BATCH, seed=0))
    assert optimized.optimus_report.groups_fused > 0  # the steps run fused ops
    ours = _bce_steps(optimized, model.parameters(), batches)
    theirs = _bce_steps(copy, copy.parameters(), batches)
    torch.testing.assert_close(ours, theirs)
    for (name, mine), other in zip(model.named_parameters(), copy.parameters(), strict=True):
        torch.testing.assert_close(mine, other, msg=lambda m: f"{name}: {m}")  # noqa: B023
    untrained = zoo.build("fuxictr.DeepFM", train=True)
    assert any(not torch.equal(a, b) for a, b in zip(model.parameters(), untrained.parameters(), strict=True))


def test_optimized_fuxictr_deepfm_trains_like_the_model() -> None:
    """Forward, backward and SGD through the optimized module (three steps,
    fresh inputs at the example's batch size): losses and parameters equal
    the model's copy trained eagerly."""
    _train_both((EXAMPLE_BATCH, EXAMPLE_BATCH, EXAMPLE_BATCH))


@pytest.mark.slow
def test_optimized_fuxictr_deepfm_trains_like_the_model_across_batch_sizes() -> None:
    _train_both((EXAMPLE_BATCH, 64, 4))


@pytest.mark.parametrize(
    "name",
    [name if name == "torchrec.DLRM" else pytest.param(name, marks=pytest.mark.slow)
     for name in zoo.ZOO],
)
def test_zoo_model_through_the_backend_equals_the_model_at_three_batch_sizes(name: str) -> None:
    """torch.compile(backend=optimus, inner eager): every graph Dynamo
    hands over is optimized, every call equals the model."""
    _skip_if_missing(name)
    torch._dynamo.reset()  # noqa: SLF001 - no recompile budget spent by an earlier test
    model = zoo.build(name)
    backend = optimus_ir.backend(inner="eager", strict=True)
    compiled = torch.compile(model, backend=backend)
    for seed, batch in enumerate(CALL_BATCHES, start=1):
        got = _call_allowing_guard_warnings(compiled, zoo.make_inputs(name, batch, seed))
        torch.testing.assert_close(got, _expected(name, model, batch, seed), msg=lambda m: f"batch {batch}: {m}")
    assert backend.outcomes and all(outcome.optimized for outcome in backend.outcomes)
