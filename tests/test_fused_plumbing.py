"""Issue 21 item 5: plumbing between fused ops. Consecutive fused groups stay
in the batched layout, and the lowering and the output boundary emit no op
that nobody needs (no `.contiguous()` on an output already contiguous, no
single-tensor stack/cat, no copy that only restores an unread layout), while
outputs keep eager's values, strides and distinctness."""

from __future__ import annotations

import collections

import torch
from torch import nn

from optimus_ir.api import op_kind, optimize
from pipelines import FUSE_ALL


def kinds(gm: torch.fx.GraphModule) -> collections.Counter[str]:
    """How many calls of each kind the optimized graph makes."""
    return collections.Counter(op_kind(n) for n in gm.graph.nodes if n.op.startswith("call"))


def single_tensor_joins(gm: torch.fx.GraphModule) -> int:
    """The `torch.stack`/`torch.cat` calls of the graph that join one tensor."""
    joins = (torch.stack, torch.cat)
    return sum(
        1 for n in gm.graph.nodes
        if n.op == "call_function" and n.target in joins and len(n.args[0]) == 1
    )


def assert_same_outputs(got: object, want: object) -> None:
    """Equal values and strides, output by output."""
    if isinstance(want, torch.Tensor):
        got, want = [got], [want]
    assert len(got) == len(want)  # type: ignore[arg-type]
    for g, w in zip(got, want):  # type: ignore[call-overload]
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride()


class AccumulatedLogit(nn.Module):
    """DeepFM's head: `logit = x.new_zeros(...)`, accumulated with `+=`, then
    `sigmoid(logit)`: row-major in eager and in the optimized graph."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 1)
        self.b = nn.Linear(8, 1)
        self.bias = nn.Parameter(torch.randn(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logit = x.new_zeros((x.shape[0], 1))
        logit += self.a(x)
        logit += torch.relu(self.b(x))
        logit += self.bias
        return torch.sigmoid(logit)


def test_no_contiguous_on_an_accumulated_logit() -> None:
    torch.manual_seed(0)
    model, x = AccumulatedLogit().eval(), torch.randn(16, 8)
    gm = optimize(model, (x,))
    assert kinds(gm)[".contiguous"] == 0, gm.code
    with torch.no_grad():
        assert_same_outputs(gm(x), model(x))


class TransposedAccumulator(nn.Module):
    """`t_()` changes strides in place: the output keeps eager's strides
    (a restore where the analysis cannot prove them)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.new_zeros((8, 16))
        z.t_()
        z += x
        return torch.sigmoid(z)


def test_an_in_place_transpose_keeps_eager_strides() -> None:
    model, x = TransposedAccumulator().eval(), torch.randn(16, 8)
    gm = optimize(model, (x,))
    with torch.no_grad():
        assert_same_outputs(gm(x), model(x))


class Towers(nn.Module):
    """N towers `sigmoid(b(relu(a(x))))` joined by a final cat along `dim`:
    every level fuses, and the cat reads the last batched value."""

    def __init__(self, n: int = 4, width: int = 6, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim
        self.a = nn.ModuleList(nn.Linear(width, width) for _ in range(n))
        self.b = nn.ModuleList(nn.Linear(width, 3) for _ in range(n))

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        towers = [torch.sigmoid(b(torch.relu(a(x)))) for a, b, x in zip(self.a, self.b, xs)]
        return torch.cat(towers, self.dim)


class Highway(nn.Module):
    """Branches `g(x) * sigmoid(t(x))`, each returned: distinct outputs."""

    def __init__(self, n: int = 4, width: int = 6) -> None:
        super().__init__()
        self.g = nn.ModuleList(nn.Linear(width, width) for _ in range(n))
        self.t = nn.ModuleList(nn.Linear(width, width) for _ in range(n))

    def forward(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [g(x) * torch.sigmoid(t(x)) for g, t, x in zip(self.g, self.t, xs)]


class ReadElsewhere(Towers):
    """The towers' cat, one tower's value read by a non-fused consumer too,
    and a fused member returned on its own."""

    def forward(self, xs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        hidden = [torch.relu(a(x)) for a, x in zip(self.a, xs)]
        towers = [torch.sigmoid(b(h)) for b, h in zip(self.b, hidden)]
        return torch.cat(towers, self.dim), towers[0].sum(), hidden[1]


def _inputs() -> list[torch.Tensor]:
    torch.manual_seed(1)
    return [torch.randn(5, 6) for _ in range(4)]


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    extent = sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1
    return start, start + extent * t.element_size()


def assert_no_shared_memory(outputs: list[torch.Tensor]) -> None:
    """No two outputs overlap in memory, and writing one leaves the others."""
    spans = sorted(_storage_span(t) for t in outputs)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
    before = [t.clone() for t in outputs]
    outputs[0].add_(1.0)
    for got, want in zip(outputs[1:], before[1:]):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_towers_cat_reads_the_batched_value_through_views() -> None:
    xs = _inputs()
    for dim, most in ((1, 15), (0, 14)):
        torch.manual_seed(0)
        model = Towers(dim=dim).eval()
        gm = optimize(model, [xs], pipeline=FUSE_ALL)
        found = kinds(gm)
        # no single-tensor stack, no unbind/restack, no restore on the output
        assert found["unbind"] == 0 and found["getitem"] == 0, gm.code
        assert found[".contiguous"] == 0, gm.code
        assert single_tensor_joins(gm) == 0, gm.code
        assert sum(found.values()) <= most, found
        with torch.no_grad():
            assert_same_outputs(gm(xs), model(xs))


def test_returned_members_share_no_storage_and_copy_once() -> None:
    torch.manual_seed(0)
    model, xs = Highway().eval(), _inputs()
    gm = optimize(model, [xs], pipeline=FUSE_ALL)
    with torch.no_grad():
        got, want = gm(xs), model(xs)
        assert_same_outputs(got, want)
        # one unbind_copy gives every returned member storage of its own
        # (no unbind and a copy per member)
        assert kinds(gm)["unbind_copy"] == 1 and kinds(gm)["cat"] == 0, gm.code
        assert_no_shared_memory(list(got))


def test_a_member_read_elsewhere_keeps_its_value() -> None:
    torch.manual_seed(0)
    model, xs = ReadElsewhere().eval(), _inputs()
    gm = optimize(model, [xs], pipeline=FUSE_ALL)
    with torch.no_grad():
        got, want = gm(xs), model(xs)
        assert_same_outputs(got, want)
        assert_no_shared_memory(list(got))
        # the returned hidden member is read alone: a select of the
        # batched relu, not an unbind and a getitem, and no copy of it
        assert kinds(gm)["select"] == 1 and single_tensor_joins(gm) == 0, gm.code


class GatedCat(nn.Module):
    """`cat([g(x) * sigmoid(t(y))])`: the linears fuse into one group whose
    halves are strided slices; the batched sigmoid and mul read them, and the
    final cat is the batched mul moved and flattened (row-major)."""

    def __init__(self, n: int = 4, width: int = 6) -> None:
        super().__init__()
        self.g = nn.ModuleList(nn.Linear(width, width) for _ in range(n))
        self.t = nn.ModuleList(nn.Linear(width, width) for _ in range(n))

    def forward(self, xs: list[torch.Tensor], ys: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat([g(x) * torch.sigmoid(t(y)) for g, t, x, y in zip(self.g, self.t, xs, ys)], 1)


def test_gated_cat_stays_batched_without_a_restore() -> None:
    torch.manual_seed(0)
    model, xs, ys = GatedCat().eval(), _inputs(), [x + 1 for x in _inputs()]
    gm = optimize(model, [xs, ys], pipeline=FUSE_ALL)
    found = kinds(gm)
    assert found["unbind"] == 0 and found["cat"] == 0 and found[".contiguous"] == 0, gm.code
    assert single_tensor_joins(gm) == 0, gm.code
    with torch.no_grad():
        assert_same_outputs(gm(xs, ys), model(xs, ys))
