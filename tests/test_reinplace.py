"""reinplace (issue 37, item 1): out-of-place calls whose operand dies there
are written in place again before export, through grad-guarded forms
(`optimus_ir.kernels.inplace`), so a graph where nothing fused does not pay
for value semantics; with autograd on they stay out of place, so backward
works where an earlier op saved the operand."""

from __future__ import annotations

import copy
import operator
import pickle

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.kernels import inplace


class Block(nn.Module):
    """A residual block as torchvision/timm write it: in-place ReLUs and
    `out += identity`, plus a tanh whose saved result an in-place write
    would corrupt under autograd."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.a(x))
        out = self.b(out)
        out += x
        out = self.relu(out)
        t = torch.tanh(out)  # saves its result for backward
        return t * 2.0  # `t` dies here: in place only without autograd


def _reinplaced(module: nn.Module) -> int:
    stats = module.optimus_report.statistics.by_pass("reinplace")
    return sum(record.counters.get("calls made in place", 0) for record in stats)


def _guarded_calls(module: nn.Module) -> list[str]:
    return [str(n.target.__name__) for n in module.graph.nodes
            if n.op == "call_function" and getattr(n.target, "__module__", "") == inplace.__name__]


def test_the_models_in_place_writes_come_back_and_values_are_bit_equal() -> None:
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(8, 16)
    x_before = x.clone()
    with torch.no_grad():
        want = model(x)
        opt = optimus_ir.optimize(model, [x])
        got = opt(x)
    assert torch.equal(got, want)
    assert torch.equal(x, x_before)  # an input is never written
    calls = _guarded_calls(opt)
    # relu, +=, relu, tanh, * 2.0: every write on a dead temporary
    assert _reinplaced(opt) == len(calls) == 5, opt.code
    assert calls == ["torch__relu", "torch__add", "torch__relu", "torch__tanh", "torch__mul"]


def test_with_autograd_the_calls_stay_out_of_place_and_backward_matches() -> None:
    torch.manual_seed(0)
    model = Block().train()
    x = torch.randn(8, 16)
    reference = copy.deepcopy(model)
    opt = optimus_ir.optimize(model, [x])
    assert _reinplaced(opt) > 0
    got = opt(x)
    want = reference(x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    got.sum().backward()  # a tanh result written in place would raise here
    want.sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0, msg=name)


def test_values_an_output_or_later_reader_holds_are_never_written() -> None:
    class Shared(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            h = self.lin(x)
            r = torch.relu(h)  # h is returned: stays
            v = h.view(16)
            s = torch.sigmoid(v)
            return h, r, s, s + 1.0  # s is read by the add and returned

    model = Shared().eval()
    x = torch.randn(4, 4)
    with torch.no_grad():
        want = model(x)
        opt = optimus_ir.optimize(model, [x])
        got = opt(x)
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    assert len({t.data_ptr() for t in got}) == len(got)  # distinct outputs stay distinct
    assert _guarded_calls(opt) == []


def test_the_guarded_forms_pickle_and_choose_by_grad_mode() -> None:
    form = inplace.torch__relu
    assert pickle.loads(pickle.dumps(form)) is form
    x = torch.randn(5)
    with torch.no_grad():
        assert form(x) is x  # in place
    y = torch.randn(5)
    assert form(y) is not y  # autograd on: out of place
    assert inplace.inplace_form_name("call_function", "torch._C._nn.linear") is None
    assert inplace.inplace_form_name("call_function", "torch.relu_") is None  # in place already
    with pytest.raises(AttributeError):
        inplace.torch__nn__functional__gelu  # noqa: B018  (no inplace parameter)


def test_an_optimized_module_pickles_with_its_guarded_calls() -> None:
    model = Block().eval()
    x = torch.randn(2, 16)
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x])
        assert _guarded_calls(opt)
        again = pickle.loads(pickle.dumps(opt.graph))
    assert any(getattr(n.target, "__module__", "") == inplace.__name__ for n in again.nodes)


def test_a_module_pickled_under_no_grad_still_trains_after_loading() -> None:
    """Unpickling retraces the module's code: each guarded form records
    itself as a call (`kernels.tracing.traced_as_leaf`) instead of having the
    in-place path of that moment's grad mode baked in, which made the loaded
    module's backward raise (a saved tanh output written in place)."""
    model = Block().eval()
    reference = copy.deepcopy(model)
    x = torch.randn(2, 16)
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x])
        twin = pickle.loads(pickle.dumps(opt))
        assert sorted(map(str, _guarded_calls(twin))) == sorted(map(str, _guarded_calls(opt)))
        assert torch.equal(twin(x), opt(x))
    xg = torch.randn(2, 16, requires_grad=True)
    twin(xg).sum().backward()
    xr = xg.detach().clone().requires_grad_()
    reference(xr).sum().backward()
    torch.testing.assert_close(xg.grad, xr.grad)


def test_the_report_counts_in_place_ops_before_and_after() -> None:
    model = Block().eval()
    x = torch.randn(2, 16)
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x])
    report = opt.optimus_report
    # the model writes in place three times: two ReLU(inplace=True), one +=
    assert (report.inplace_before.total, report.inplace_before.grad_guarded) == (3, 0)
    assert (report.inplace_after.total, report.inplace_after.grad_guarded) == (5, 5)
    assert "in-place ops: 3 -> 5 (5 of them in place without autograd, out of place with it)" in report.format()
    # five [2, 16] fp32 results are their operands' storage: 640 bytes a call not allocated
    assert "5 call(s) write their dead operand in place (0.6 KiB not allocated)" in report.format()
    # the op table counts a guarded form as the op it computes
    assert report.ops_after["relu"] == 2 and "torch__relu" not in report.ops_after


def test_a_logit_accumulated_with_plus_equals_is_written_in_place_again() -> None:
    """deepctr's DeepFM: `logit = x.new_zeros(B, 1); logit += ...` on a
    [B, 1] value (size-1 dims do not keep a call out of place)."""

    class Logits(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(8, 1)
            self.b = nn.Linear(8, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            logit = x.new_zeros((x.shape[0], 1))
            logit += self.a(x)
            logit += self.b(x)
            return torch.sigmoid(logit)

    model = Logits().eval()
    x = torch.randn(16, 8)
    with torch.no_grad():
        want = model(x)
        opt = optimus_ir.optimize(model, [x])
        got = opt(x)
    assert torch.equal(got, want) and got.stride() == want.stride()
    report = opt.optimus_report
    assert report.inplace_before.total == 2
    assert report.inplace_after.grad_guarded >= 2, opt.code  # both += back in place


def test_the_rows_of_a_fused_groups_stack_are_activated_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37, item 2: with every group fused, the layer norms' stacked
    result is cut into the activations' slices (`tanh(stack[0:2])`,
    `relu(stack[2:4])`, ...); each is written in place into the stack's
    storage (`is_private_rows`). The values are those of the same graph
    with the slices' activations out of place, bit for bit, and the call
    makes fewer allocations; with autograd they stay out of place and the
    gradients are eager's."""
    from optimus_ir.examples.recsys import VARIANTS, make_recsys_model
    from optimus_ir.memory import measure_call_memory
    from optimus_ir.passes import reinplace as reinplace_pass

    model, (x,) = make_recsys_model(num_towers=6, batch=16, seed=0, hidden=32, **VARIANTS["mixed"])
    model.eval()
    with torch.no_grad():
        opt = optimus_ir.optimize(model, [x], cost_model="none", check_speed=False)
        with monkeypatch.context() as patch:
            patch.setattr(reinplace_pass, "is_private_rows", lambda *_: False)
            plain = optimus_ir.optimize(model, [x], cost_model="none", check_speed=False)
        got, want = opt(x), plain(x)
        assert torch.equal(got, want)
        torch.testing.assert_close(got, model(x))
        on_rows = [
            n for n in opt.graph.nodes
            if n.op == "call_function" and getattr(n.target, "__module__", "") == inplace.__name__
            and isinstance(n.args[0], torch.fx.Node) and n.args[0].target is operator.getitem
        ]
        assert {n.target.__name__ for n in on_rows} >= {"torch__tanh", "torch__relu", "torch__sigmoid"}, opt.code
        assert len(on_rows) >= 4
        ours = measure_call_memory(opt, x, method="dispatch")
        theirs = measure_call_memory(plain, x, method="dispatch")
        assert ours.allocations <= theirs.allocations - len(on_rows)
    trained = copy.deepcopy(model).train()
    reference = copy.deepcopy(model).train()
    step = optimus_ir.optimize(trained, [x], cost_model="none", check_speed=False)
    step(x).sum().backward()  # an activation written into the saved stack would raise here
    reference(x).sum().backward()
    for (name, p), q in zip(trained.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
