"""Issue 21, items 4 and 5: returned members of a batched value get storage
of their own with one `torch.unbind_copy`, not an unbind and a copy each.

On 20 highway branches (batch 10, width 10) the module returns the 20
members of the batched mul. Distinct outputs must stay distinct tensors
(storage of their own: autograd refuses in-place writes to the views of one
unbind, and a write to one output must not change another), so each needs a
copy; `lower-batch` makes them all with one op. That brings the highway to
PyTorch's Optimus' count, 31 ops (getitems included), from 80.
"""

from __future__ import annotations

import torch

from optimus_ir.api import count_fx_ops, optimize
from test_fusion_plan_choice import F32, Highway


def _highway() -> tuple[Highway, list[torch.Tensor]]:
    torch.manual_seed(0)
    return Highway().eval(), [torch.randn(10, 10) for _ in range(20)]


def test_highway_ends_with_pytorchs_op_count_and_distinct_outputs() -> None:
    model, xs = _highway()
    gm = optimize(model, [xs], freeze=True)
    ops = count_fx_ops(gm)
    assert sum(ops.values()) <= 31, ops
    assert ops.get("unbind_copy") == 1 and "cat" not in ops and "unbind" not in ops, ops
    with torch.no_grad():
        got, want = gm(xs), model(xs)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **F32)
    storages = {g.untyped_storage().data_ptr() for g in got}
    assert len(storages) == len(got)
    assert all(g.is_contiguous() for g in got)
    # a write to one output leaves the others as they were
    before = [g.clone() for g in got[1:]]
    got[0].add_(1.0)
    for g, b in zip(got[1:], before):
        assert torch.equal(g, b)


def test_outputs_can_be_written_in_place_under_autograd() -> None:
    """Views of one unbind would raise here; copies do not."""
    model, xs = _highway()
    gm = optimize(model, [xs])
    got = gm(xs)
    assert all(g.requires_grad for g in got)
    got[3].mul_(2.0)
    sum(g.sum() for g in got).backward()
    want = model(xs)
    want[3].mul_(2.0)
    torch.testing.assert_close(got[3], want[3], **F32)


def test_unbind_copy_is_raised_and_lowered_back() -> None:
    """`torch.unbind_copy` in user code round-trips through the dialect."""

    class Pieces(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            a, b, c = torch.unbind_copy(x * 2, 1)
            return a + 1, b, c

    x = torch.randn(4, 3, 5)
    gm = optimize(Pieces(), [x], pipeline="raise-fx,lower-to-fx")
    assert "unbind_copy" in count_fx_ops(gm)
    got, want = gm(x), Pieces()(x)
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    assert len({g.untyped_storage().data_ptr() for g in got}) == 3
