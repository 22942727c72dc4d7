"""Dynamic shapes through the torch.compile backend (issue 11).

With `dynamic=True` or `mark_dynamic(x, 0)` the batch dim reaches us as a
SymInt: it is imported as `?` with its symbol (`s77`) and example size on
the placeholder, batch fusion fuses members whose batch dims are proven one
symbol, and the exported graph runs for any batch size without a second
backend call. Each test compiles once, runs several batch sizes, compares
with eager and counts the ops of the graph we hand on.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from optimus_ir.kernels.norms import COUNTS_AS_ATTRIBUTE
from optimus_ir.backend import optimus_backend
from optimus_ir.translate.importer import import_graph

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import models  # noqa: E402
from optimus_ir.examples.recsys import make_recsys_model  # noqa: E402
from pipelines import FUSE_ALL


BATCHES = (3, 8, 33)

MIXED = dict(
    tower_width=(16, 32, 64), tower_hidden=32, activations=("tanh", "relu", "sigmoid"), tower_depth=2
)


class Compiled:
    """A model compiled with the optimus backend through a counting wrapper:
    the graphs Dynamo captured and the graphs optimus-ir produced."""

    def __init__(self, model: nn.Module, *, dynamic: bool | None, options: dict[str, Any]) -> None:
        self.captured: list[torch.fx.GraphModule] = []
        self.optimized: list[torch.fx.GraphModule] = []
        import optimus_ir.api as api

        original = api._optimize

        def recording(gm, *args, **kwargs):  # type: ignore[no-untyped-def]
            result = original(gm, *args, **kwargs)
            self.optimized.append(result)
            return result

        def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            self.captured.append(gm)
            api._optimize = recording
            try:
                return optimus_backend(gm, example_inputs, options=options)
            finally:
                api._optimize = original

        torch._dynamo.reset()
        self.fn = torch.compile(model, backend=backend, dynamic=dynamic)

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def op_counts(gm: torch.fx.GraphModule) -> collections.Counter:
    """Calls per target name (`linear`, `layer_norm`, `baddbmm`, ...;
    `reinplace`'s grad-guarded forms by the call they stand for, the
    lowering's layer norm helpers as `layer_norm`)."""
    counts: collections.Counter = collections.Counter()
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            target = getattr(node.target, "optimus_out_of_place", node.target)
            name = getattr(target, COUNTS_AS_ATTRIBUTE, None) or getattr(target, "__name__", str(target))
            counts[name] += 1
    return counts


def run_batches(
    model: nn.Module, width: int, *, mark: bool, dynamic: bool | None, options: dict[str, Any],
    batches: tuple[int, ...] = BATCHES, exact: bool = False,
) -> Compiled:
    """Compile once, run every batch size, compare with eager; no backend
    call after the first batch. (With Inductor, Dynamo restarts the first
    compile of this frame once, `[0/0_1]`, and calls the backend twice
    before the first batch runs; plain `backend="inductor"` does the same.)"""
    compiled = Compiled(model, dynamic=dynamic, options=options)
    torch.manual_seed(0)
    first_calls = None
    for batch in batches:
        x = torch.randn(batch, width)
        if mark:
            torch._dynamo.mark_dynamic(x, 0)
        with torch.no_grad():
            got = compiled(x)
            want = model(x)
        tol = dict(rtol=0, atol=0) if exact else dict(rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got, want, **tol)
        if first_calls is None:
            first_calls = len(compiled.captured)
    assert len(compiled.captured) == first_calls, "no backend call after the first batch size"
    if options.get("inner") == "eager":
        assert first_calls == 1
    return compiled


EAGER = {"inner": "eager", "pipeline": FUSE_ALL}


@pytest.mark.parametrize("mark", [False, True], ids=["dynamic=True", "mark_dynamic"])
def test_recsys_fuses_with_symbolic_batch(mark: bool) -> None:
    model, (x,) = make_recsys_model(num_towers=4)
    compiled = run_batches(model, x.shape[1], mark=mark, dynamic=None if mark else True, options=EAGER)
    before, after = op_counts(compiled.captured[-1]), op_counts(compiled.optimized[-1])
    assert before["linear"] == 6
    assert after["linear"] == 2 and after["baddbmm"] == 1  # 4 tower linears -> one bmm
    assert after["tanh"] + after["relu"] < before["tanh"] + before["relu"]
    if mark:  # eps stays a constant: the layer norms fuse too
        assert after["layer_norm"] == 1 and before["layer_norm"] == 4
    else:  # eps is a runtime `.item()`: left alone
        assert after["layer_norm"] == 4 and after["item"] == 4


def test_recsys_mixed_widths_dynamic() -> None:
    model, (x,) = make_recsys_model(num_towers=6, **MIXED)
    compiled = run_batches(model, x.shape[1], mark=False, dynamic=True, options=EAGER)
    before, after = op_counts(compiled.captured[-1]), op_counts(compiled.optimized[-1])
    assert before["linear"] == 14
    # per width 2 first-layer linears -> 3 bmms; the 6 second-layer ones -> 1
    assert after["baddbmm"] == 4 and after["linear"] == 2
    assert sum(after[a] for a in ("tanh", "relu", "sigmoid")) < sum(
        before[a] for a in ("tanh", "relu", "sigmoid")
    )


def test_recsys_default_inner_inductor() -> None:
    model, (x,) = make_recsys_model(num_towers=4)
    compiled = run_batches(
        model, x.shape[1], mark=False, dynamic=True, options={"pipeline": FUSE_ALL}, batches=(3, 8)
    )
    after = op_counts(compiled.optimized[-1])
    assert after["baddbmm"] == 1 and after["linear"] == 2


def test_dynamic_batch_model_mark_dynamic() -> None:
    compiled = run_batches(models.DynamicBatch(), 16, mark=True, dynamic=None, options=EAGER)
    before, after = op_counts(compiled.captured[-1]), op_counts(compiled.optimized[-1])
    assert before["layer_norm"] == 2 and after["layer_norm"] == 1
    # the reshape to the batch size reads the SymInt input, no baked-in size
    code = compiled.optimized[-1].code
    assert "reshape(s" in code or "reshape(l_x_.size(0)" in code or "-1" in code


def test_nested_splits_dynamic_simplified_like_static() -> None:
    dynamic = run_batches(models.NestedSplits(), 32, mark=False, dynamic=True,
                          options={"inner": "eager"}, exact=True)
    static = Compiled(models.NestedSplits(), dynamic=False, options={"inner": "eager"})
    static(torch.randn(8, 32))
    assert op_counts(dynamic.optimized[0]) == op_counts(static.optimized[0])
    assert op_counts(dynamic.optimized[0])["cat"] == 1


class TwoInputs(nn.Module):
    """Two same-shaped towers over two inputs with independent batch dims."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 8)
        self.b = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(self.a(x)), torch.relu(self.b(y))


def test_different_symbolic_batch_dims_not_fused() -> None:
    model = TwoInputs()
    compiled = Compiled(model, dynamic=None, options=EAGER)
    for bx, by in ((4, 6), (7, 3), (33, 9)):
        x, y = torch.randn(bx, 16), torch.randn(by, 16)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(y, 0)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x, y), model(x, y), rtol=0, atol=0)
    assert len(compiled.captured) == 1
    after = op_counts(compiled.optimized[-1])
    assert after["linear"] == 2 and after["baddbmm"] == 0 and after["relu"] == 2


def test_import_records_symbols_and_hints() -> None:
    model, (x,) = make_recsys_model(num_towers=2)
    compiled = Compiled(model, dynamic=True, options={"inner": "eager"})
    compiled(torch.randn(5, x.shape[1]))
    imported = import_graph(compiled.captured[-1])
    text = str(imported.module)
    assert 'symbols ["s' in text and f"hints [5, {x.shape[1]}]" in text
    from optimus_ir.translate.parsing import parse_module

    assert str(parse_module(text)) == text  # the custom syntax round-trips
