"""The hand-off to Inductor: wide stacks of graph inputs become the opaque
`torch.ops.optimus.stack` (same values, no generated code), in inference and
in training."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.examples.recsys import make_recsys_model
from optimus_ir.inductor_handoff import OPAQUE_STACK_TARGET, make_wide_input_stacks_opaque
from pipelines import FUSE_ALL


def test_the_op_is_a_checked_custom_op_with_autograd() -> None:
    xs = [torch.randn(3, 4, requires_grad=True) for _ in range(10)]
    torch.library.opcheck(OPAQUE_STACK_TARGET, (xs, 1))
    stacked = torch.ops.optimus.stack(xs, 1)
    torch.testing.assert_close(stacked, torch.stack(xs, 1), rtol=0, atol=0)
    (stacked * torch.arange(10.0).view(1, 10, 1)).sum().backward()
    assert torch.equal(xs[3].grad, torch.full((3, 4), 3.0))


def _stacks_graph(count: int) -> torch.fx.GraphModule:
    """`count` inputs stacked three ways: wide stack of inputs (made opaque),
    a narrow one (Inductor's pointwise cat) and one of computed values
    (Inductor writes the producers into it)."""
    graph = torch.fx.Graph()
    xs = [graph.placeholder(f"x{i}") for i in range(count)]
    wide = graph.call_function(torch.stack, (xs,), {"dim": 1})
    narrow = graph.call_function(torch.stack, (xs[:3],))
    doubled = [graph.call_function(torch.mul, (x, 2)) for x in xs]
    computed = graph.call_function(torch.stack, (doubled,))
    graph.output((wide, narrow, computed))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_only_wide_stacks_of_graph_inputs_are_replaced() -> None:
    xs = [torch.randn(2, 3) for _ in range(10)]
    gm = _stacks_graph(10)
    want = gm(*xs)
    assert make_wide_input_stacks_opaque(gm) == 1
    stacks = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in (torch.stack, OPAQUE_STACK_TARGET)]
    assert [n.target for n in stacks] == [OPAQUE_STACK_TARGET, torch.stack, torch.stack]
    assert stacks[0].args[1] == 1
    for got, expected in zip(gm(*xs), want):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


def _recsys16() -> tuple[nn.Module, torch.Tensor]:
    model, (x,) = make_recsys_model(num_towers=16)
    return model, x


@pytest.mark.slow  # Inductor compiles (make test-all, CI)
def test_backend_with_inductor_inference_and_training_through_the_opaque_stack() -> None:
    torch._dynamo.reset()
    model, x = _recsys16()
    made = optimus_ir.backend(pipeline=FUSE_ALL)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend=made)(x), model(x))
    # the graph handed to Inductor stacks the 16 tower weights (and biases) opaquely
    assert made.outcomes[0].fusions >= 1 and made.outcomes[0].opaque_stacks >= 2

    torch._dynamo.reset()
    trained, reference = copy.deepcopy(model).train(), copy.deepcopy(model).train()
    made = optimus_ir.backend(pipeline=FUSE_ALL)
    compiled = torch.compile(trained, backend=made)
    x_got, x_want = x.clone().requires_grad_(), x.clone().requires_grad_()
    compiled(x_got).square().sum().backward()
    reference(x_want).square().sum().backward()
    assert made.outcomes[0].opaque_stacks >= 2  # its backward ran through the op's autograd
    torch.testing.assert_close(x_got.grad, x_want.grad, rtol=1e-4, atol=1e-5)
    for (name, got), want in zip(trained.named_parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5, msg=name)
