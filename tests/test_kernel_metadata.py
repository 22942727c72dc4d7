"""The launchers' metadata tables (`optimus_ir.kernels.metadata`): host
tables cached by value (a launch seen before builds and pins nothing; on
the CPU the cached table is the table), and capture-safe device copies
(pinned arena + a Triton copy kernel) while a stream is captured.

Without a GPU the capture is simulated: `stream_capturing` is patched to
say "capturing", the tables live on the CPU and the copy kernel runs in
Triton's interpreter, so the capture-time code path (arena slice, copy
kernel, pinned entry, autotuner bypass) runs for real and its numerics are
checked. The CUDA-graph capture and replay themselves are checked on the
device by `make bench-triton` (its CUDA-graph rows).
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from optimus_ir.kernels import metadata

pytestmark = [
    pytest.mark.gpu,  # the GPU check runs it on the device (`pytest -m gpu`)
    pytest.mark.skipif(
        os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
        reason="needs the Triton interpreter or a CUDA device",
    ),
]
DEVICE = torch.device("cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu")


@pytest.fixture
def fresh_tables(monkeypatch: pytest.MonkeyPatch) -> metadata.MetadataTables:
    """A private, empty cache for the launchers."""
    cache = metadata.MetadataTables(capacity=8)
    monkeypatch.setattr(metadata, "_TABLES", cache)
    return cache


@pytest.fixture
def capturing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stream counts as being captured (simulated on the CPU)."""
    from optimus_ir.kernels import grouped_gemm

    monkeypatch.setattr(metadata, "stream_capturing", lambda device: True)
    monkeypatch.setattr(grouped_gemm, "stream_capturing", lambda device: True)


def _reused(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two launches got the same cached table: on the CPU the host
    table itself; on CUDA each launch gets its own device copy of the one
    cached pinned host table (the cache's hit/miss counters show the reuse),
    so only the values can be compared."""
    if DEVICE.type == "cpu":
        return a is b
    return a.data_ptr() != b.data_ptr() and a.tolist() == b.tolist()


def test_same_values_reuse_one_table(fresh_tables) -> None:
    a = fresh_tables.table([1, 2, 3], DEVICE)
    b = fresh_tables.table([1, 2, 3], DEVICE)
    c = fresh_tables.table([1, 2, 4], DEVICE)
    assert _reused(a, b)
    assert not _reused(c, a) and c.tolist() == [1, 2, 4] and a.tolist() == [1, 2, 3]
    assert a.dtype == torch.int64 and a.device.type == DEVICE.type
    assert (fresh_tables.stats.hits, fresh_tables.stats.misses) == (1, 2)


def test_eager_tables_are_evicted_least_recently_used(fresh_tables) -> None:
    first = fresh_tables.table([0], DEVICE)
    for v in range(1, 8):
        fresh_tables.table([v], DEVICE)
    fresh_tables.table([0], DEVICE)  # still cached (8 of 8): now the most recent
    fresh_tables.table([8], DEVICE)  # evicts [1], the least recently used
    assert len(fresh_tables) == 8 and fresh_tables.stats.evictions == 1
    assert _reused(fresh_tables.table([0], DEVICE), first)
    misses = fresh_tables.stats.misses
    fresh_tables.table([1], DEVICE)
    assert fresh_tables.stats.misses == misses + 1


def test_captured_tables_are_copied_by_the_kernel_and_never_evicted(fresh_tables) -> None:
    values = list(range(-5, 2500, 7))  # several copy blocks
    captured = fresh_tables.table(values, DEVICE, capturing=True)
    assert captured.tolist() == values and fresh_tables.stats.captured_misses == 1
    again = fresh_tables.table(values, DEVICE, capturing=True)
    assert again.tolist() == values and again.data_ptr() != captured.data_ptr()  # a copy per launch
    eager = fresh_tables.table([42], DEVICE)
    assert fresh_tables.table([42], DEVICE, capturing=True).tolist() == [42]  # a hit pins it too
    for v in range(100):
        fresh_tables.table([1000 + v], DEVICE)
    fresh_tables.clear()
    assert fresh_tables.table(values, DEVICE).tolist() == values
    assert _reused(fresh_tables.table([42], DEVICE), eager)
    assert fresh_tables.stats.misses == 0 and fresh_tables.stats.hits == 2


def test_arena_slices_are_aligned_and_distinct() -> None:
    arena = metadata._PinnedArena(pin=False)
    arena.reserve()
    pieces = [arena.take(list(range(n))) for n in (3, 1, 4, metadata._ARENA_ELEMENTS)]
    for n, piece in zip((3, 1, 4), pieces):
        assert piece.tolist() == list(range(n)) and piece.data_ptr() % 16 == 0
    assert pieces[-1].numel() == metadata._ARENA_ELEMENTS  # a new block, the old one kept
    assert pieces[0].tolist() == [0, 1, 2]


def test_grouped_gemm_launch_reuses_its_table(fresh_tables) -> None:
    from optimus_ir.kernels import grouped_gemm as gemm

    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(m, k, generator=g).to(DEVICE) for m, k in ((5, 7), (33, 9))]
    ws = [torch.randn(n, k, generator=g).to(DEVICE) for n, k in ((6, 7), (40, 9))]
    ys = [torch.empty(5, 6, device=DEVICE), torch.empty(33, 40, device=DEVICE)]
    problems = [gemm._Problem(x, w.t(), y, None) for x, w, y in zip(xs, ws, ys)]
    for _ in range(3):  # the same operands at the same addresses: one table
        for y in ys:
            y.zero_()
        gemm._launch(problems, "none", gemm._EPILOGUE_ACTIVATION)
        for x, w, y in zip(xs, ws, ys):
            torch.testing.assert_close(y, F.linear(x, w), rtol=2e-5, atol=2e-5)
    assert (fresh_tables.stats.misses, fresh_tables.stats.hits) == (1, 2)


def test_pointwise_launch_reuses_its_table(fresh_tables) -> None:
    from optimus_ir.kernels import pointwise
    from optimus_ir.kernels.programs import parse_program

    xs = [torch.randn(4, 9).to(DEVICE), torch.randn(3, 5).to(DEVICE)]
    others = [torch.randn(9).to(DEVICE), torch.randn(3, 5).to(DEVICE)]
    outs = [torch.empty_like(x) for x in xs]
    steps = parse_program("mul(other);tanh")
    table = pointwise._check(xs, others, steps)
    for _ in range(2):
        pointwise._forward_chunks(xs, table, pointwise._chunks(steps), final=outs)
    for x, o, y in zip(xs, others, outs):
        torch.testing.assert_close(y, torch.tanh(x * o))
    assert (fresh_tables.stats.misses, fresh_tables.stats.hits) == (1, 1)


def test_every_kernel_under_a_simulated_capture(fresh_tables, capturing) -> None:
    # The capture-time path of all three launchers: tables from the arena
    # through the copy kernel, forward and backward, numerics unchanged.
    from optimus_ir.kernels import grouped_gemm as gemm
    from optimus_ir.kernels import layer_norm as ln
    from optimus_ir.kernels import pointwise

    tuned = set(gemm._TUNED_KEYS)
    g = torch.Generator().manual_seed(3)
    wide = torch.randn(6, 3 + 20 + 31, generator=g).to(DEVICE)
    xs = [wide[:, 3:23], wide[:, 23:]]  # split pieces at odd offsets
    ws = [torch.randn(8, 20, generator=g).to(DEVICE), torch.randn(5, 31, generator=g).to(DEVICE)]
    bs = [torch.randn(8, generator=g).to(DEVICE), None]
    ys = gemm.grouped_linear_forward(xs, ws, bs, "tanh")
    for x, w, b, y in zip(xs, ws, bs, ys):
        torch.testing.assert_close(y, torch.tanh(F.linear(x, w, b)), rtol=2e-5, atol=2e-5)
    dys = [torch.randn(y.shape, generator=g).to(DEVICE) for y in ys]
    dx, dw, _ = gemm.grouped_linear_backward(dys, xs, ws, bs, "tanh")
    leaves = [x.detach().requires_grad_() for x in xs]
    wl = [w.detach().requires_grad_() for w in ws]
    ref = [torch.tanh(F.linear(x, w, b)) for x, w, b in zip(leaves, wl, bs)]
    torch.autograd.backward(ref, dys)
    for got, want in zip([*dx, *dw], [*(x.grad for x in leaves), *(w.grad for w in wl)]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert gemm._TUNED_KEYS == tuned  # no autotuning inside a capture

    outs, _, _ = ln.batched_layer_norm_forward(xs, [None, ws[1][0]], [bs[0][:1].expand(20), None], 1e-5)
    torch.testing.assert_close(outs[0], F.layer_norm(xs[0], (20,), None, bs[0][:1].expand(20), 1e-5))
    torch.testing.assert_close(outs[1], F.layer_norm(xs[1], (31,), ws[1][0], None, 1e-5))
    (p0, p1) = pointwise.multi_pointwise_forward(xs, [], "sigmoid;mul(2.0)")
    torch.testing.assert_close(p0, torch.sigmoid(xs[0]) * 2.0)
    torch.testing.assert_close(p1, torch.sigmoid(xs[1]) * 2.0)
    assert fresh_tables.stats.captured_misses == fresh_tables.stats.misses > 0
    assert len(fresh_tables._pinned) == len(fresh_tables) and not fresh_tables._entries


def test_capture_copies_with_torch_where_the_copy_kernel_cannot(fresh_tables) -> None:
    # Where the warm-up found the copy kernel unable to read pinned memory,
    # a capture copies the same never-freed slice with torch instead.
    fresh_tables._no_kernel_copy.add(DEVICE)
    values = list(range(3000))
    table = fresh_tables.table(values, DEVICE, capturing=True)
    assert table.tolist() == values and fresh_tables.stats.captured_misses == 1
    assert fresh_tables.table(values, DEVICE).tolist() == values  # pinned for good


# ---------------------------------------------------------------------------
# On a CUDA device: real captures (skipped elsewhere; the device check
# `make bench-triton` runs the same at full size).

_cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1",
    reason="needs a CUDA device with compiled Triton kernels",
)


def _capture(fn):
    """`fn` warmed up on a side stream, then captured: (graph, outputs)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = fn()
    return graph, outputs


@_cuda
def test_cuda_graph_replays_every_kernel_with_new_input_values() -> None:
    from optimus_ir.kernels import ops as K

    wide = torch.randn(64, 3 + 40 + 72, device="cuda")
    xs = [wide[:, 3:43], wide[:, 43:]]  # split pieces, one at an odd offset
    ws = [torch.randn(24, 40, device="cuda"), torch.randn(8, 72, device="cuda")]
    bs = [torch.randn(24, device="cuda"), None]
    cases = [
        (lambda: torch.ops.optimus.grouped_linear(xs, ws, bs, "tanh"),
         lambda: K.grouped_linear_reference(xs, ws, bs, "tanh")),
        (lambda: torch.ops.optimus.batched_layer_norm(xs, [None, ws[1][0]], [None, None], 1e-5, "relu"),
         lambda: K.batched_layer_norm_reference(xs, [None, ws[1][0]], [None, None], 1e-5, "relu")),
        (lambda: torch.ops.optimus.multi_pointwise(xs, [], "sigmoid;mul(2.0)"),
         lambda: K.multi_pointwise_reference(xs, [], "sigmoid;mul(2.0)")),
    ]
    with torch.no_grad():
        for fn, reference in cases:
            graph, outputs = _capture(fn)
            for _ in range(2):
                wide.copy_(torch.randn_like(wide))  # new values, same addresses
                graph.replay()
                for got, want in zip(outputs, reference()):
                    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


@_cuda
def test_reduce_overhead_runs_our_kernels_in_cuda_graphs() -> None:
    import optimus_ir
    from torch._dynamo.utils import counters

    from optimus_ir.examples.recsys import make_recsys_model

    model, (x,) = make_recsys_model(num_towers=4, batch=16)
    model, x = model.cuda(), x.cuda()
    pipeline = ("raise-fx,split-cat-simplify,batch-fusion{cost-model=none grouped-linear=true},"
                "lower-batch{kernels=triton},split-cat-simplify,canonicalize,dce,cse,lower-to-fx")
    with torch.no_grad():
        ours = optimus_ir.optimize(model, (x,), pipeline=pipeline, check_speed=False)
        assert any("optimus" in str(n.target) for n in ours.graph.nodes)
        compiled = torch.compile(ours, mode="reduce-overhead")
        skips = counters["inductor"]["cudagraph_skips"]
        for _ in range(4):
            x.copy_(torch.randn_like(x))
            torch.testing.assert_close(compiled(x).clone(), model(x), rtol=1e-3, atol=1e-3)
        assert counters["inductor"]["cudagraph_skips"] == skips
