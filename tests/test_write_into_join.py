"""write-into-join (issue 37): the pieces of a join computed in their slots of
its result, so the pieces and the join are not live at once; bit-equal
values, a lower peak at the allocator, and with autograd the plain
`torch.cat` (gradients as eager's)."""

from __future__ import annotations

import copy
import pickle

import torch
from torch import nn

import optimus_ir
from optimus_ir.api import capture
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model
from optimus_ir.kernels import joins
from optimus_ir.memory import measure_call_memory


class Towers(nn.Module):
    """Linear -> tanh towers joined along dim 1, a matmul piece joined
    along dim 0, and a relu piece (no writer: copied by the join)."""

    def __init__(self, towers: int = 4, width: int = 64) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.towers = nn.ModuleList(nn.Linear(width, width) for _ in range(towers))
        self.w = nn.Parameter(torch.randn(width, width))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        wide = torch.cat([torch.tanh(tower(x)) for tower in self.towers] + [torch.relu(x)], dim=1)
        tall = torch.cat([torch.mm(x, self.w), torch.sigmoid(x)], dim=0)
        return wide, tall


def _joins_written(module: nn.Module) -> int:
    stats = module.optimus_report.statistics.by_pass("write-into-join")
    return sum(record.counters.get("joins written in place", 0) for record in stats)


def _join_calls(module: nn.Module) -> list[str]:
    return [n.target.__name__ for n in module.graph.nodes
            if n.op == "call_function" and getattr(n.target, "__module__", "") == joins.__name__]


def test_joined_pieces_are_written_in_their_slots_bit_equal() -> None:
    model = Towers().eval()
    x = torch.randn(256, 64)
    with torch.no_grad():
        want = model(x)
        opt = optimus_ir.optimize(model, [x], check_speed=False)
        got = opt(x)
    assert _joins_written(opt) == 2
    assert _join_calls(opt).count("written_join") == 2 and "linear_into" in _join_calls(opt)
    pieces = sum(r.counters["pieces written in their slots"] for r in opt.optimus_report.statistics.by_pass("write-into-join"))
    written = opt.optimus_report.written_in_place_text()
    assert f"{pieces} piece(s) of 2 join(s) computed in their slots" in written
    assert f"({pieces * 256 * 64 * 4 / 2**10:.1f} KiB not allocated apart from the join)" in written
    assert written in opt.optimus_report.format()
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w) and g.is_contiguous()
    with torch.inference_mode():
        for g, w in zip(opt(x), want, strict=True):
            assert torch.equal(g, w)


def test_with_autograd_the_join_is_a_cat_and_gradients_match() -> None:
    model = Towers().train()
    reference = copy.deepcopy(model)
    x = torch.randn(256, 64)
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x], check_speed=False)
    assert _joins_written(opt) == 2
    wide, tall = opt(x)
    (wide.square().sum() + tall.sum()).backward()
    want_wide, want_tall = reference(x)
    (want_wide.square().sum() + want_tall.sum()).backward()
    torch.testing.assert_close(wide, want_wide)
    for got, want in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(got.grad, want.grad)


def test_two_calls_give_distinct_results() -> None:
    """The buffer is allocated per call: an earlier result is not overwritten."""
    model = Towers().eval()
    x, y = torch.randn(256, 64), torch.randn(256, 64)
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x], check_speed=False)
        first = opt(x)[0]
        kept = first.clone()
        second = opt(y)[0]
    assert first.data_ptr() != second.data_ptr() and torch.equal(first, kept)


def test_the_towers_peak_drops_below_the_captured_graphs() -> None:
    """The recsys model (8 mixed towers, batch 256): its 64 KiB tower outputs
    and their 512 KiB join were live at once; written in place they are not."""
    model, (x,) = make_recsys_model(num_towers=8, batch=256, seed=0, **VARIANTS["mixed"])
    model.eval()
    with torch.no_grad():
        opt = optimus_ir.optimize(model, (x,), check_speed=False)
        captured = capture(model, (x,))
        assert torch.equal(opt(x), captured(x))
        assert _joins_written(opt) == 1
        ours = measure_call_memory(opt, x, method="dispatch").peak_bytes
        theirs = measure_call_memory(captured, x, method="dispatch").peak_bytes
    join_bytes = 256 * 8 * 32 * 4
    assert ours <= theirs - join_bytes // 2, (ours, theirs)


def test_an_optimized_module_with_written_joins_pickles() -> None:
    model = Towers().eval()
    x = torch.randn(256, 64)
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x], check_speed=False)
        twin = pickle.loads(pickle.dumps(opt))  # retraces the code: the calls stay calls
        assert sorted(_join_calls(twin)) == sorted(_join_calls(opt))
        for g, w in zip(twin(x), opt(x), strict=True):
            assert torch.equal(g, w)


def test_the_writers_choose_by_grad_mode() -> None:
    x, w, b = torch.randn(8, 4), torch.randn(6, 4), torch.randn(6)
    with torch.no_grad():
        buffer, slots = joins.join_slots(x, [8, 12], torch.float32, [6, 6], 1)
    assert joins.join_slots(x, [8, 12], torch.float32, [6, 6], 1) == (None, (None, None))  # nothing allocated
    slot = slots[0]
    with torch.no_grad():
        assert joins.linear_into(slot, x, w, b) is slot
    fresh = joins.linear_into(slot, x, w, b)
    assert fresh is not slot and torch.equal(fresh, slot)
    pieces = [fresh, torch.randn(8, 6)]
    with torch.no_grad():
        assert joins.written_join(buffer, slots, pieces, 1) is buffer
    assert torch.equal(buffer, torch.cat(pieces, 1))
    assert joins.written_join(buffer, slots, pieces, 1) is not buffer



def test_a_join_along_dim_one_keeps_the_code_batch_generic() -> None:
    """The buffer of a join along dim 1 takes its rows from the first
    written piece's input at run time: other batch sizes run the same code
    (the guard's size proof holds), with the join still written in place."""
    model, (x,) = make_recsys_model(num_towers=8, batch=256, seed=0, **VARIANTS["mixed"])
    model.eval()
    with torch.no_grad():
        opt = optimus_ir.optimize(model, (x,), check_speed=False)
        assert _joins_written(opt) == 1
        for batch in (100, 300):
            xb = torch.randn(batch, x.shape[1])
            assert torch.equal(opt(xb), capture(model, (xb,))(xb))
    assert opt.optimus_guard.reoptimizations == 0 and opt.optimus_guard.batch_generic is True


def _stack_into_calls(module: nn.Module) -> int:
    return _join_calls(module).count("stack_into")


def test_a_fused_groups_interleaved_members_are_stacked_into_the_join() -> None:
    """The 64-tower model at batch 64 with every group fused (no cost model,
    as a calibration on a fast machine fuses them). The first-layer groups'
    batched matmuls are joined along dim 0 for one layer norm: each writes
    its slot (rank 3, contiguous; its rows follow the input). The groups'
    members reach the join through lower-batch's stack
    of moved dims and a flatten: the stack writes its slot of the join (one
    copy where there were two), bit-equal at the example batch and others;
    the stack's result is not allocated, so the forward peak drops below
    the same pipeline's without the pass."""
    model, (x,) = make_recsys_model(num_towers=64, batch=64, seed=0, **VARIANTS["mixed"])
    model.eval()
    with torch.no_grad():
        opt = optimus_ir.optimize(model, (x,), check_speed=False, cost_model="none")
        captured = capture(model, (x,))
        assert opt.optimus_report.groups_fused >= 8
        # the join of the tower outputs, and the 64-member layer norm's input: the
        # three first-layer groups' batched matmuls written into one stack
        assert _stack_into_calls(opt) == 1 and _joins_written(opt) == 2
        assert _join_calls(opt).count("baddbmm_into") == 3
        assert torch.equal(opt(x), captured(x))
        for batch in (17, 200):
            xb = torch.randn(batch, x.shape[1])
            assert torch.equal(opt(xb), capture(model, (xb,))(xb))
        without = optimus_ir.optimize(
            model, (x,), check_speed=False, cost_model="none",
            pipeline=opt.optimus_report.pipeline.replace(",write-into-join", ""),
        )
        assert _stack_into_calls(without) == 0 and torch.equal(without(x), captured(x))
        ours = measure_call_memory(opt, x, method="dispatch")
        theirs = measure_call_memory(without, x, method="dispatch")
    pieces = sum(r.counters["pieces written in their slots"] for r in opt.optimus_report.statistics.by_pass("write-into-join"))
    assert pieces == 4
    assert ours.peak_bytes < theirs.peak_bytes and ours.allocations == theirs.allocations - pieces, (ours, theirs)
    assert opt.optimus_guard.reoptimizations == 0
    twin = pickle.loads(pickle.dumps(opt))
    with torch.no_grad():
        assert torch.equal(twin(x), opt(x))
    assert _stack_into_calls(twin) == 1
    model.train()
    reference = copy.deepcopy(model)
    opt(x).sum().backward()  # with autograd: the plain stack and cat
    reference(x).sum().backward()
    for got, want in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(got.grad, want.grad)


def test_stack_into_writes_the_slot_seen_in_the_stacks_shape() -> None:
    a, b = torch.randn(5, 3, 4), torch.randn(5, 3, 4)
    with torch.no_grad():
        buffer, (slot, rest) = joins.join_slots(a, [5, 26], torch.float32, [24, 2], 1, True)
        stacked = joins.stack_into(slot, [a, b], 2, shape=[-1, 3, 2, 4])
        assert stacked.data_ptr() == slot.data_ptr()
        piece = stacked.flatten(1, 3)
        other = torch.randn(5, 2)
        assert joins.written_join(buffer, [slot, rest], [piece, other], 1) is buffer
    assert torch.equal(buffer, torch.cat([torch.stack([a, b], 2).flatten(1, 3), other], 1))
    fresh = joins.stack_into(slot, [a, b], 2, shape=[-1, 3, 2, 4])  # gradients recorded: a fresh stack
    assert fresh.data_ptr() != slot.data_ptr() and torch.equal(fresh.flatten(1, 3), slot)


def test_shared_parameter_stacks_read_by_the_writers_stay_shared() -> None:
    """With `parameter_stacks="shared"` a group's weights feed its batched
    matmul's writer (`baddbmm_into(slot, bias, x, weight)`), which only reads
    them: they are still read from their shared stack, not stacked per call,
    and values and gradients are the captured graph's."""
    model, (x,) = make_recsys_model(num_towers=64, batch=64, seed=0, **VARIANTS["mixed"])
    model.eval()
    reference = copy.deepcopy(model)
    with torch.no_grad():
        opt = optimus_ir.optimize(model, (x,), check_speed=False, cost_model="none", parameter_stacks="shared")
        assert _join_calls(opt).count("baddbmm_into") == 3
        per_call_parameter_stacks = [
            n for n in opt.graph.nodes
            if n.target is torch.stack and all(a.op == "get_attr" for a in n.args[0])
        ]
        assert per_call_parameter_stacks == []
        assert torch.equal(opt(x), capture(reference, (x,))(x))
    opt(x).sum().backward()
    reference(x).sum().backward()
    for got, want in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(got.grad, want.grad)
