"""slices-to-split: sibling slices of one tensor become the pieces of one
split. The same views (values bit-equal, forward and backward), a backward
that concatenates the pieces' gradients once instead of summing a
zero-filled gradient of the whole source per slice, and sources written in
place left alone."""

from __future__ import annotations

import copy
import operator

import torch
from torch import nn

import optimus_ir
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model
from optimus_ir.passes.registry import DEFAULT_PIPELINE


class Sliced(nn.Module):
    """One hidden layer read back by indexing: two column ranges and one
    column (a select, left alone), each through its own op, and columns
    nobody reads."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.hidden = nn.Linear(16, 32)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.tanh(self.hidden(x))
        a = self.head(h[:, 0:8])
        b = torch.sigmoid(h[:, 8:20]).sum(dim=1, keepdim=True)
        c = h[:, 31] * 2.0
        return a * b, c


def _backward_nodes(output: torch.Tensor) -> list[str]:
    seen, pending, names = set(), [output.grad_fn], []
    while pending:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(node.name())
        pending.extend(next_node for next_node, _ in node.next_functions)
    return names


def _slices(module: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in module.graph.nodes if n.op == "call_function" and n.target is operator.getitem
            and isinstance(n.args[1], tuple) and any(isinstance(i, slice) and i != slice(None) for i in n.args[1])]


def test_sibling_slices_become_one_split_with_eager_values_and_gradients() -> None:
    model = Sliced().train()
    x = torch.randn(64, 16)
    opt = optimus_ir.optimize(copy.deepcopy(model), [x], check_speed=False)
    splits = [n for n in opt.graph.nodes if n.target is torch.split_with_sizes]
    assert len(splits) == 1 and splits[0].args[1:] == ([8, 12, 12], 1)
    assert _slices(opt) == []
    unsplit = optimus_ir.optimize(copy.deepcopy(model), [x], check_speed=False,
                                  pipeline=DEFAULT_PIPELINE.replace(",slices-to-split", ""))
    assert len(_slices(unsplit)) == 2  # the pass, not another one, made the split

    want = model(x)
    got = opt(x)
    for w, g in zip(want, got, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    # eager sums zero-filled gradients per slice; the split concatenates:
    # adding zeros is exact, so the gradients are bit-equal
    sum(o.sum() for o in want).backward()
    loss = sum(o.sum() for o in got)
    nodes = _backward_nodes(loss)
    assert "SplitWithSizesBackward0" in nodes and "SliceBackward0" not in nodes
    loss.backward()
    for (name, p), q in zip(model.named_parameters(), opt.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=0, atol=0, msg=name)


def test_fused_towers_read_their_rows_through_one_split_in_training() -> None:
    """lower-batch hands each consumer group its rows of a fused result as
    slices; with the pass they are one split, and a training step's
    gradients are eager's."""
    model, (x,) = make_recsys_model(num_towers=8, batch=16, seed=0, **VARIANTS["mixed"])
    model.train()
    opt_model = copy.deepcopy(model)
    opt = optimus_ir.optimize(opt_model, [x], check_speed=False, cost_model="none", parameter_stacks="shared")
    unsplit = optimus_ir.optimize(copy.deepcopy(model), [x], check_speed=False, cost_model="none",
                                  pipeline=DEFAULT_PIPELINE.replace(",slices-to-split", ""))
    assert [n for n in opt.graph.nodes if n.target is torch.split_with_sizes]
    out = opt(x)
    slices_now = _backward_nodes(out).count("SliceBackward0")
    slices_before = _backward_nodes(unsplit(x)).count("SliceBackward0")
    assert slices_now + 4 <= slices_before, (slices_now, slices_before)
    torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-6)
    model(x).sum().backward()
    out.sum().backward()
    for (name, p), q in zip(model.named_parameters(), opt_model.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)


class NoWrite(nn.Module):
    """`WritesBetween` without the write: its slices become one split."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[0:2] * 1.0, x[2:4] * 1.0


class WritesBetween(nn.Module):
    """Slices of an input written in place between them: the second slice
    reads the written values, so no split may be made before the write."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        first = x[0:2] * 1.0
        x.add_(1.0)
        second = x[2:4] * 1.0
        return first, second


def test_slices_of_a_tensor_written_in_place_are_left_alone() -> None:
    x = torch.randn(4, 3)
    unwritten = optimus_ir.optimize(NoWrite(), [x.clone()], check_speed=False)
    assert [n for n in unwritten.graph.nodes if n.target is torch.split_with_sizes]
    opt = optimus_ir.optimize(WritesBetween(), [x.clone()], check_speed=False)
    assert not [n for n in opt.graph.nodes if n.target is torch.split_with_sizes]
    mine, theirs = x.clone(), x.clone()
    want = WritesBetween()(theirs)
    got = opt(mine)
    for w, g in zip(want, got, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
