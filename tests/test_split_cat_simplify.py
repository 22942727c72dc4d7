"""split-cat-simplify: numerics, op counts, idempotence, safety.

Every model is captured (Dynamo, symbolic_trace, torch.export ATen), imported,
raised, simplified, lowered and exported; the exported module must compute
exactly (rtol=0, atol=0) what the captured graph computes -- outputs *and*
the inputs' contents afterwards (in-place ops) -- and running the pass a
second time must not change the IR.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch
from models import CASES, capture, clone_inputs
from torch import nn

import optimus_ir
from optimus_ir.translate.exporter import export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.pipeline import run_pipeline

PLUMBING = ("torch.split", "torch.cat", "torch.stack", "torch.unbind")


def torch_ops(module) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.name.startswith("torch."))


def plumbing(counts: Counter[str]) -> int:
    return sum(counts[name] for name in PLUMBING)


def _capture(model: nn.Module, inputs: tuple, how: str, dynamic_shapes: Any = None):
    if how == "symbolic":
        return torch.fx.symbolic_trace(model)
    if how == "dynamo":
        torch._dynamo.reset()
        gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(*clone_inputs(inputs))
        return gm
    program = torch.export.export(model, clone_inputs(inputs), dynamic_shapes=dynamic_shapes)
    return program.run_decompositions({}).module()


def _run(gm, inputs: tuple) -> tuple[Any, tuple]:
    args = clone_inputs(inputs)
    with torch.no_grad():
        out = gm(*args)
    return out, args


def check_same(reference, candidate, inputs: tuple) -> None:
    """Outputs and the inputs' final contents agree bit for bit."""
    want, want_args = _run(reference, inputs)
    got, got_args = _run(candidate, inputs)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(got_args, want_args, rtol=0, atol=0, equal_nan=True)


def simplify(gm, inputs: tuple, other_inputs: tuple | None = None):
    """import -> raise-fx -> split-cat-simplify (twice: idempotent) -> dce ->
    lower-to-fx -> export. Checks numerics; returns (torch op counts after
    raising, after simplifying, the simplified IR text, the exported module)."""
    imported = import_graph(gm, inputs)
    run_pipeline(imported.module, "raise-fx")
    before = torch_ops(imported.module)
    run_pipeline(imported.module, "split-cat-simplify")
    text = str(imported.module)
    run_pipeline(imported.module, "split-cat-simplify")
    assert str(imported.module) == text, "split-cat-simplify is not idempotent"
    run_pipeline(imported.module, "dce")
    after = torch_ops(imported.module)
    run_pipeline(imported.module, "lower-to-fx")
    exported = export_graph(imported)
    check_same(gm, exported, inputs)
    if other_inputs is not None:
        check_same(gm, exported, other_inputs)
    return before, after, text, exported


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


CAPTURES = ("dynamo", "symbolic", "aten")


# ---------------------------------------------------------------------------
# models, one rewrite each
# ---------------------------------------------------------------------------


class SplitCatAll(nn.Module):
    """split -> all pieces -> cat (negative dims: #121227, #102950)."""

    def forward(self, x):
        a, b, c = torch.split(x * 2, 4, dim=-1)
        y = torch.cat([a, b, c], dim=-1)
        p, q = (x + 1).split([1, 2], dim=-2)
        z = torch.cat((p, q), 0)
        return torch.relu(y), torch.tanh(z)


class SplitCatRun(nn.Module):
    """A consecutive run -> slice; other users of the pieces keep working."""

    def forward(self, x):
        a, b, c, d = torch.split(x.sigmoid(), [2, 3, 4, 3], dim=1)
        mid = torch.cat([b, c], dim=1)
        return mid.relu(), a.exp(), b * 2


class CoarserSplit(nn.Module):
    """Runs among other cat inputs: a coarser split."""

    def forward(self, x, z):
        a, b, c, d = torch.split(x.tanh(), [1, 3, 4, 4], dim=1)
        return torch.cat([c, d, z, a, b], dim=1).relu()


class NestedSplits(nn.Module):
    """Split of a split of a split, same dim."""

    def forward(self, x):
        a, b = x.split([4, 12], dim=1)
        c, d, e = b.split([3, 5, 4], dim=1)
        f, g = d.split([2, 3], dim=1)
        return a * 1, c * 2, f * 3, g * 4, e * 5


class SplitSqueeze(nn.Module):
    """split into size-1 pieces -> squeeze each -> unbind (then stack: x)."""

    def forward(self, x):
        a, b, c = x.split(1, dim=1)
        pieces = [a.squeeze(1), b.squeeze(1), c.squeeze(1)]
        return torch.stack(pieces, dim=1).relu(), pieces[0].tanh()


class StackUnbind(nn.Module):
    """stack -> unbind with a partial use."""

    def forward(self, a, b, c):
        s = torch.stack([a.tanh(), b.exp(), c.sigmoid()], dim=1)
        u = torch.unbind(s, dim=1)
        return u[0] + u[2]


class UnbindStackPartial(nn.Module):
    """#121228: a stack of part of an unbind keeps its shape."""

    def forward(self, x):
        u0, u1, u2, u3 = torch.unbind(x.relu(), dim=1)
        # users exact on strided inputs (Elementwise(layout_exact)): the
        # stacks may become views
        return torch.stack([u1, u2], dim=1).abs(), torch.stack([u0, u1, u2, u3], dim=1).neg()


class CatSplit(nn.Module):
    """cat -> split at the same boundaries."""

    def forward(self, a, b):
        p, q = torch.split(torch.cat([a.tanh(), b.exp()], dim=-1), [3, 5], dim=-1)
        return p.relu(), q.neg()


class Slices(nn.Module):
    """cat/stack of ordered slices and selects of one tensor."""

    def forward(self, x):
        y = x.tanh()
        k = torch.cat([y[:, 0:3], y[:, 3:7]], dim=1)
        s = torch.stack([y[1], y[2], y[3]])
        t = torch.stack([y[:, 0:2], y[:, 2:4], y[:, 4:6]], dim=0)
        return k.relu(), s.abs(), t * 2


class SizeZero(nn.Module):
    """size-0, size-1 and unequal sections."""

    def forward(self, x):
        a, b, c, d = torch.split(x.exp(), [0, 3, 0, 2], dim=0)
        return torch.cat([a, b, c, d], dim=0).relu(), torch.cat([b, c], 0).tanh()


class SingleJoin(nn.Module):
    """cat/stack of one tensor: the tensor / an unsqueeze of it (a graph
    input that is only read too)."""

    def forward(self, x):
        y = torch.cat([x.tanh()], dim=1)
        z = torch.stack([x.exp()], dim=1)
        w = torch.cat([x], dim=0)
        return y.relu(), z.sigmoid(), w.sum()


class CoarserSplitOfCat(nn.Module):
    """split of a cat whose pieces cover several whole inputs: smaller cats
    (dim 0: laid out alike; dim 1: only pointwise users)."""

    def forward(self, x):
        a, b, c = x.tanh(), x.exp(), x.sigmoid()
        p, q = torch.split(torch.cat([a, b, c], dim=0), [8, 4], dim=0)
        r, s = torch.split(torch.cat([c, a, b], dim=1), [3, 6], dim=1)
        return p.sum(), q.relu(), r * 2, s.relu()


class FinerSplitOfCat(nn.Module):
    """split of a cat whose pieces fall inside the inputs: a split of the
    input (views laid out alike on dim 0, so the reductions stay exact)."""

    def forward(self, x, y):
        a, b = x.tanh(), y.exp()
        p, q, r = torch.split(torch.cat([a, b], dim=0), [1, 3, 3], dim=0)
        return p.sum(), q.mean(), r.relu()


MODELS = {
    "split_cat_all": (SplitCatAll, lambda: (_randn(3, 12),)),
    "split_cat_run": (SplitCatRun, lambda: (_randn(4, 12),)),
    "coarser_split": (CoarserSplit, lambda: (_randn(4, 12), _randn(4, 3, seed=1))),
    "nested_splits": (NestedSplits, lambda: (_randn(2, 16),)),
    "split_squeeze": (SplitSqueeze, lambda: (_randn(4, 3, 5),)),
    "stack_unbind": (StackUnbind, lambda: (_randn(4, 3), _randn(4, 3, seed=1), _randn(4, 3, seed=2))),
    "unbind_stack_partial": (UnbindStackPartial, lambda: (_randn(2, 4, 3),)),
    "cat_split": (CatSplit, lambda: (_randn(4, 3), _randn(4, 5, seed=1))),
    "slices": (Slices, lambda: (_randn(5, 7),)),
    "size_zero": (SizeZero, lambda: (_randn(5, 2),)),
    "single_join": (SingleJoin, lambda: (_randn(4, 3),)),
    "coarser_split_of_cat": (CoarserSplitOfCat, lambda: (_randn(4, 3),)),
    "finer_split_of_cat": (FinerSplitOfCat, lambda: (_randn(4, 3), _randn(3, 3, seed=1))),
}

# Plumbing ops (split/cat/stack/unbind) left after the pass, per model.
EXPECTED_PLUMBING_AFTER = {
    "split_cat_all": 0,
    "split_cat_run": 1,  # the split stays for a and b
    "coarser_split": 2,  # a coarser split and a cat of 3 (not 5) inputs
    "nested_splits": 1,
    "split_squeeze": 1,  # the unbind for pieces[0]
    "stack_unbind": 0,
    "unbind_stack_partial": 0,
    "cat_split": 0,
    "slices": 0,
    "size_zero": 0,
    "single_join": 0,
    "coarser_split_of_cat": 2,  # one smaller cat per split
    "finer_split_of_cat": 1,  # a split of a
}


@pytest.mark.parametrize("how", CAPTURES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_rewrite_numerics(name: str, how: str) -> None:
    cls, make_inputs = MODELS[name]
    model = cls().eval()
    inputs = make_inputs()
    gm = _capture(model, inputs, how)
    before, after, text, _ = simplify(gm, inputs)
    assert plumbing(after) == EXPECTED_PLUMBING_AFTER[name], text
    if name == "coarser_split":  # five cat inputs became three
        assert "sections [4, 8] dim 1" in text, text
    else:
        assert plumbing(after) < plumbing(before), text


def test_split_squeeze_becomes_unbind() -> None:
    model = SplitSqueeze().eval()
    inputs = (_randn(4, 3, 5),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(model), inputs)
    assert after["torch.unbind"] == 1 and after["torch.split"] == 0, text
    assert after["torch.squeeze"] == 0 and after["torch.stack"] == 0, text


def test_nested_splits_become_one() -> None:
    inputs = (_randn(2, 16),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(NestedSplits()), inputs)
    assert after["torch.split"] == 1, text
    assert "sections [4, 3, 2, 3, 4] dim 1" in text


def test_optimize_api_reports_fewer_ops() -> None:
    model = SplitCatAll().eval()
    inputs = (_randn(3, 12),)
    optimized = optimus_ir.optimize(
        model, inputs, pipeline="raise-fx,split-cat-simplify,dce,lower-to-fx"
    )
    report = optimized.optimus_report
    assert report.ops_after["split"] == 0 and report.ops_after["cat"] == 0
    assert sum(report.ops_after.values()) < sum(report.ops_before.values())
    torch.testing.assert_close(optimized(*inputs), model(*inputs), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# safety
# ---------------------------------------------------------------------------


class MutatePiece(nn.Module):
    """#122379: an in-place write to a piece before the cat."""

    def forward(self, x):
        y = x * 2
        a, b = y.split([2, 3], dim=-1)
        a.add_(1)
        return torch.cat([a, b], dim=-1).relu(), y


class MutateInputLater(nn.Module):
    """The split input is written after the cat: the cat must stay a copy."""

    def forward(self, x):
        y = x * 2
        a, b = y.split(2, dim=1)
        k = torch.cat([a, b], dim=1)
        y.mul_(3)
        return k.relu() + y


class MutateResult(nn.Module):
    """The cat result is written: the write must not reach the input."""

    def forward(self, x):
        y = x * 2
        a, b = y.split(2, dim=1)
        k = torch.cat([a, b], dim=1)
        k.add_(5)
        return k.relu(), y.tanh()


class CopyIntoStack(nn.Module):
    """copy_ into an unbind piece after stack(unbind) made a copy."""

    def forward(self, x, z):
        y = x.tanh()
        u = torch.unbind(y, 0)
        s = torch.stack(u[0:2], 0)
        u[1].copy_(z)
        return s.exp(), y


class ReturnsCatOfInput(nn.Module):
    """cat(all pieces of a graph input) returned: must stay a fresh copy."""

    def forward(self, x):
        return torch.cat(torch.split(x, 2, dim=1), dim=1)


class ViewOfCat(nn.Module):
    """A stride-sensitive user (view) of a cat of middle pieces."""

    def forward(self, x):
        a, b, c = (x + 1).split([1, 2, 2], dim=1)
        return torch.cat([b, c], dim=1).view(-1).relu()


class SumOfMiddlePieces(nn.Module):
    """A reduction over a cat of middle pieces: a strided slice would sum in
    another order (not bit-exact), so the cat stays; on dim 0 the slice is
    contiguous and the rewrite happens."""

    def forward(self, x):
        a, b, c = torch.split(x * 3, 4, dim=1)
        d, e, f = torch.split(x * 5, 1, dim=0)
        return torch.cat([b, c], dim=1).sum() + torch.cat([e, f], dim=0).sum()


class ReturnsSingleJoinOfInput(nn.Module):
    """cat([x]) / stack([x]) of a graph input, returned: must stay copies."""

    def forward(self, x):
        return torch.cat([x], dim=0), torch.stack([x], dim=1)


class MutateSingleJoin(nn.Module):
    """The joined tensor is written after the join, the join result before
    use: both must stay copies."""

    def forward(self, x):
        y = x * 2
        k = torch.cat([y], dim=1)
        s = torch.stack([x * 3], dim=0)
        y.add_(1)
        s.mul_(2)
        return k.relu() + y, s


class StraddlingSplitOfCat(nn.Module):
    """A piece straddles a cat boundary (kept); a dim-1 coarser piece feeds
    a sum (a strided view of the cat where a contiguous cat would be: kept);
    the cat of a coarser piece is written in place (kept)."""

    def forward(self, x):
        a, b, c = x.tanh(), x.exp(), x.sigmoid()
        p, q, r = torch.split(torch.cat([a, b, c], dim=0), [2, 6, 4], dim=0)
        s, t = torch.split(torch.cat([a, b, c], dim=1), [6, 3], dim=1)
        k = torch.cat([c, a, b], dim=0)
        u, v = torch.split(k, [8, 4], dim=0)
        v.add_(1)
        return p.relu(), q.relu(), r.relu(), s.sum(), t.relu(), u.relu(), k


class DeadUnbind(nn.Module):
    """An unbind with a consecutive range of results used (kept as is) and
    one with none used (erased)."""

    def forward(self, x):
        y = x.tanh()
        u = torch.unbind(y, dim=0)
        torch.unbind(y, dim=1)
        return u[1] + u[2]


SAFETY = {
    "sum_of_middle_pieces": (SumOfMiddlePieces, lambda: (_randn(3, 12),)),
    "mutate_piece": (MutatePiece, lambda: (_randn(3, 5),)),
    "mutate_input_later": (MutateInputLater, lambda: (_randn(3, 4),)),
    "mutate_result": (MutateResult, lambda: (_randn(3, 4),)),
    "copy_into_stack": (CopyIntoStack, lambda: (_randn(3, 4), _randn(4, seed=1))),
    "returns_cat_of_input": (ReturnsCatOfInput, lambda: (_randn(3, 4),)),
    "view_of_cat": (ViewOfCat, lambda: (_randn(3, 5),)),
    "returns_single_join_of_input": (ReturnsSingleJoinOfInput, lambda: (_randn(3, 4),)),
    "mutate_single_join": (MutateSingleJoin, lambda: (_randn(3, 4),)),
    "straddling_split_of_cat": (StraddlingSplitOfCat, lambda: (_randn(4, 3),)),
    "dead_unbind": (DeadUnbind, lambda: (_randn(4, 3),)),
}


@pytest.mark.parametrize("how", ("symbolic", "dynamo"))
@pytest.mark.parametrize("name", sorted(SAFETY))
def test_safety_numerics(name: str, how: str) -> None:
    cls, make_inputs = SAFETY[name]
    inputs = make_inputs()
    gm = _capture(cls().eval(), inputs, how)
    simplify(gm, inputs)


def test_output_does_not_alias_input() -> None:
    inputs = (_randn(3, 4),)
    _, _, text, exported = simplify(torch.fx.symbolic_trace(ReturnsCatOfInput()), inputs)
    x = inputs[0].clone()
    out = exported(x)
    assert out.data_ptr() != x.data_ptr()
    out.add_(1)
    torch.testing.assert_close(x, inputs[0], rtol=0, atol=0)


def test_cat_stays_a_copy_after_write_to_input() -> None:
    inputs = (_randn(3, 4),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(MutateInputLater()), inputs)
    assert after["torch.cat"] == 1, text


def test_layout_sensitive_users_keep_the_copy() -> None:
    inputs = (_randn(3, 12),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(SumOfMiddlePieces()), inputs)
    assert after["torch.cat"] == 1, text  # dim 1 kept; dim 0 became a slice
    assert "torch.slice %mul.1 dim 0 start 1 end 3" in text, text


def test_single_join_of_returned_input_stays_a_copy() -> None:
    inputs = (_randn(3, 4),)
    gm = torch.fx.symbolic_trace(ReturnsSingleJoinOfInput())
    _, after, text, exported = simplify(gm, inputs)
    assert after["torch.cat"] == 1 and after["torch.stack"] == 1, text
    x = inputs[0].clone()
    k, s = exported(x)
    assert k.data_ptr() != x.data_ptr() and s.data_ptr() != x.data_ptr()


def test_single_join_of_mutated_stays_a_copy() -> None:
    inputs = (_randn(3, 4),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(MutateSingleJoin()), inputs)
    assert after["torch.cat"] == 1 and after["torch.stack"] == 1, text


def test_single_join_rewrites() -> None:
    inputs = (_randn(4, 3),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(SingleJoin()), inputs)
    assert after["torch.cat"] == 0 and after["torch.stack"] == 0, text
    assert after["torch.unsqueeze"] == 1, text


def test_split_of_cat_regrouped() -> None:
    inputs = (_randn(4, 3),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(CoarserSplitOfCat()), inputs)
    assert after["torch.cat"] == 2 and after["torch.split"] == 0, text
    inputs = (_randn(4, 3), _randn(3, 3, seed=1))
    _, after, text, _ = simplify(torch.fx.symbolic_trace(FinerSplitOfCat()), inputs)
    assert after["torch.cat"] == 0 and after["torch.split"] == 1, text
    assert "sections [1, 3] dim 0" in text, text


def test_split_of_cat_left_alone() -> None:
    inputs = (_randn(4, 3),)
    _, after, text, _ = simplify(torch.fx.symbolic_trace(StraddlingSplitOfCat()), inputs)
    assert after["torch.cat"] == 3, text  # no cat is removed or added
    assert "sections [2, 6, 4] dim 0" in text and "sections [8, 4] dim 0" in text, text
    # the dim-1 piece that is exactly `c` is forwarded; the other stays a
    # (strided) view of the cat
    assert "torch.slice %cat.1 dim 1 start 0 end 6" in text, text


def test_dead_unbind() -> None:
    inputs = (_randn(4, 3),)
    for how in CAPTURES:
        gm = _capture(DeadUnbind(), inputs, how)
        before, after, text, _ = simplify(gm, inputs)
        assert after["torch.unbind"] <= 1, text
        assert after["torch.unbind"] + after["torch.select"] >= 1, text
    _, after, text, _ = simplify(torch.fx.symbolic_trace(DeadUnbind()), inputs)
    assert after["torch.unbind"] == 1 and "dim 0" in text, text


def test_symbolic_batch() -> None:
    """Dynamic batch (torch.export with a Dim): the rewrite still happens
    where the result is provably equal, and runs on another batch size."""
    model = SplitCatRun().eval()
    inputs = (_randn(6, 12),)
    batch = torch.export.Dim("batch", min=2, max=64)
    gm = _capture(model, inputs, "aten", dynamic_shapes=({0: batch},))
    before, after, text, _ = simplify(gm, inputs, other_inputs=(_randn(9, 12, seed=3),))
    assert "?x" in text
    assert after["torch.cat"] == 0, text


# ---------------------------------------------------------------------------
# the shared corpus: the pass never changes results
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_corpus(case) -> None:
    gm, inputs = capture(case)
    other = case.other_inputs() if case.other_inputs is not None else None
    simplify(gm, inputs, other)


# ---------------------------------------------------------------------------
# layout reasoning (split_cat_common.strides_of) against torch
# ---------------------------------------------------------------------------


def _chains():
    from optimus_ir.dialects import torch as t

    yield "slice", lambda v: t.SliceOp(v, 2, 2, 10, 2), lambda x: x[:, :, 2:10:2]
    yield "select", lambda v: t.SelectOp(v, 0, 1), lambda x: x.select(0, 1)
    yield "permute", lambda v: t.PermuteOp(v, [2, 0, 1]), lambda x: x.permute(2, 0, 1)
    yield "movedim", lambda v: t.MovedimOp(v, [1], [0]), lambda x: x.movedim(1, 0)
    yield "unflatten", lambda v: t.UnflattenOp(v, 2, [3, 4]), lambda x: x.unflatten(2, (3, 4))
    yield "squeeze", lambda v: t.SqueezeOp(t.SliceOp(v, 0, 0, 1).result, [0]), lambda x: x[0:1].squeeze(0)
    yield (
        "fold",  # unflatten -> movedim -> flatten: no view exists, reshape copies
        lambda v: t.FlattenOp(
            t.MovedimOp(t.UnflattenOp(v, 2, [3, 4]).result, [2], [0]).result, 0, 1
        ),
        lambda x: x.unflatten(2, (3, 4)).movedim(2, 0).flatten(0, 1),
    )
    yield (
        "reshape_view",
        lambda v: t.ReshapeOp(t.SliceOp(v, 0, 1, 3).result, [4, 12]),
        lambda x: x[1:3].reshape(4, 12),
    )


@pytest.mark.parametrize("name", [n for n, _, _ in _chains()])
def test_strides_of_matches_torch(name: str) -> None:
    from optimus_ir.dialects import fx
    from optimus_ir.analysis import strides_of
    from optimus_ir.foundation.types import tensor_type
    from optimus_ir.foundation.types import element_type_of

    build, reference = next((b, r) for n, b, r in _chains() if n == name)
    ty = tensor_type((3, 2, 12), element_type_of(torch.float32), "cpu")
    x = fx.PlaceholderOp("x", ty)
    op = build(x.result)
    expected = reference(torch.randn(3, 2, 12)).stride()
    got = strides_of(op.results[0])
    sizes = reference(torch.randn(3, 2, 12)).shape
    assert got is not None
    assert [g for g, n in zip(got, sizes) if n != 1] == [e for e, n in zip(expected, sizes) if n != 1]
