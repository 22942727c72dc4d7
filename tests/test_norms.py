"""`optimus_ir.kernels.norms.layer_norm`: what `lower-to-fx` emits for a
layer norm without a weight. The same values and gradients as
`F.layer_norm` bit for bit, under every mode a graph runs in, and the
exported graph of a model with such a layer norm calls it."""

from __future__ import annotations

import torch
import torch.nn.functional as F
import pytest
from torch._subclasses.fake_tensor import FakeTensorMode

import optimus_ir
from optimus_ir.kernels import norms

SHAPES = [((64, 256), [256]), ((8, 64, 256), [256]), ((5, 3, 7), [3, 7]), ((4, 33), [33])]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize(("shape", "normalized"), SHAPES)
def test_values_and_gradients_equal_f_layer_norm(dtype, shape, normalized) -> None:
    torch.manual_seed(0)
    x = (torch.randn(shape) * 3 + 1).to(dtype)
    bias = torch.randn(normalized, dtype=dtype)
    for b in (None, bias):
        torch.testing.assert_close(norms.layer_norm(x, normalized, None, b, 1e-6), F.layer_norm(x, normalized, None, b, 1e-6), rtol=0, atol=0)
    xa = x.clone().requires_grad_()
    xb = x.clone().requires_grad_()
    grad = torch.randn(shape, dtype=dtype)
    norms.layer_norm(xa, normalized).backward(grad)
    F.layer_norm(xb, normalized).backward(grad)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=0, atol=0)


def test_weight_made_in_inference_mode_serves_later_calls() -> None:
    """The cached ones are made outside inference mode: a later call outside
    it may use them (an inference tensor could not be saved for a backward,
    e.g. where the input needs no gradient but a later op's does)."""
    norms._UNIT_WEIGHTS.clear()
    with torch.inference_mode():
        norms.layer_norm(torch.randn(4, 19), [19])
    assert not next(iter(norms._UNIT_WEIGHTS.values())).is_inference()
    w = torch.randn(19, requires_grad=True)
    (norms.layer_norm(torch.randn(4, 19), [19]) * w).sum().backward()
    assert w.grad is not None


def test_the_faster_path_only_where_no_gradient_flows() -> None:
    norms._UNIT_WEIGHTS.clear()
    norms.layer_norm(torch.randn(4, 17, requires_grad=True), [17]).sum().backward()
    assert not norms._UNIT_WEIGHTS
    with torch.no_grad():
        norms.layer_norm(torch.randn(4, 17, requires_grad=True), [17])
    assert list(norms._UNIT_WEIGHTS) == [((17,), torch.device("cpu"))]


def test_fake_tensors_get_no_cached_real_weight() -> None:
    norms._UNIT_WEIGHTS.clear()
    with FakeTensorMode() as mode:
        out = norms.layer_norm(mode.from_tensor(torch.randn(3, 23)), [23])
    assert out.shape == (3, 23)
    assert not norms._UNIT_WEIGHTS  # a fake weight is never kept


def test_the_memory_tracker_sees_the_cached_weight_not_a_new_one() -> None:
    """The allocation tracker only observes: under it the call allocates what
    it does untracked (the result), not a fresh weight of ones; a mode that
    may trace still gets a fresh one."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from optimus_ir.memory import measure_call_memory

    x = torch.randn(64, 32)
    norms.stacked_layer_norm(x, [32])  # the weight cached
    measured = measure_call_memory(lambda: norms.stacked_layer_norm(x, [32]), method="dispatch")
    assert measured.allocations == 3  # the result, and the mean and rstd native_layer_norm returns
    assert measured.peak_bytes == 64 * 32 * 4 + 2 * 64 * 4

    made: list[torch.Size] = []

    class Tracing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            if func is torch.ops.aten.new_ones.default:
                made.append(args[1])
            return func(*args, **(kwargs or {}))

    with Tracing():
        norms.stacked_layer_norm(x, [32])
    assert made == [[32]]


def test_exported_graph_calls_it_and_matches_the_model() -> None:
    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 32)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(F.layer_norm(self.fc(x), [32]))

    model = Model().eval()
    x = torch.randn(8, 16)
    optimized = optimus_ir.optimize(model, (x,), check_speed=False)
    graph_module = getattr(optimized, "optimus_graph_module", optimized)
    targets = {node.target for node in graph_module.graph.nodes if node.op == "call_function"}
    assert norms.layer_norm in targets
    with torch.no_grad():
        torch.testing.assert_close(optimized(x), model(x), rtol=0, atol=0)


@pytest.mark.parametrize(("shape", "normalized"), SHAPES)
def test_stacked_layer_norm_forward_is_exact_and_gradient_within_an_ulp(shape, normalized) -> None:
    """`stacked_layer_norm` (over a batched layer norm's members) takes the
    faster path under autograd too: the same values, the input's gradient
    within rounding of F.layer_norm's."""
    torch.manual_seed(0)
    x = torch.randn(shape) * 3 + 1
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = norms.stacked_layer_norm(xa, normalized), F.layer_norm(xb, normalized)
    torch.testing.assert_close(ya, yb, rtol=0, atol=0)
    grad = torch.randn(shape)
    ya.backward(grad)
    yb.backward(grad)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-6, atol=1e-6)


def test_the_report_counts_both_helpers_as_layer_norms() -> None:
    from optimus_ir.api.op_counts import op_kind

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    for helper in (norms.layer_norm, norms.stacked_layer_norm):
        node = graph.call_function(helper, (x, [4]))
        assert op_kind(node) == "layer_norm"
