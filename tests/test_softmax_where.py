"""softmax / log_softmax over the last dim and where / masked_fill with a
scalar (issue 20, lane E): every spelling raises, the round trip is bitwise
exact, and sixteen parallel calls on the pieces of one split are fused by
`optimize()` into one batched op.

Exactness: a softmax-like op computes each row along its dim on its own;
stacking N members of equal shapes along a new dim 0 and normalizing the
stack's last dim runs the same row kernel on the same rows, so the fused
results are compared bit for bit (rtol=0, atol=0, NaN equal to NaN), as are
where/masked_fill (a selection computes nothing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from optimus_ir.api import capture, optimize
from optimus_ir.dialects import batch as B
from optimus_ir.dialects import torch as T
from optimus_ir.translate.importer import import_graph
from optimus_ir.passes.raise_fx import annotate_modules
from optimus_ir.pipeline import run_pipeline
from test_raise_lower import _capture, roundtrip

EXACT = dict(rtol=0.0, atol=0.0, equal_nan=True)


# ---------------------------------------------------------------------------
# Raising: every spelling
# ---------------------------------------------------------------------------


class Spellings(nn.Module):
    """Each spelling of the four ops once (x: [2, 8] float, m: [2, 8] bool)."""

    def __init__(self) -> None:
        super().__init__()
        self.sm = nn.Softmax(dim=-1)
        self.lsm = nn.LogSoftmax(dim=0)

    def forward(self, x, m):
        softmaxes = (
            torch.softmax(x, -1),
            F.softmax(x, dim=1),
            F.softmax(x, 0, _stacklevel=5),
            x.softmax(-1),
            x.softmax(dim=0, dtype=torch.float64),
            self.sm(x),
            torch.softmax(x, 1, dtype=torch.float64),
            torch.special.softmax(x, 1),
        )
        log_softmaxes = (
            torch.log_softmax(x, 1),
            F.log_softmax(x, dim=-1, dtype=torch.float64),
            x.log_softmax(0),
            self.lsm(x),
            torch.special.log_softmax(x, -1),
        )
        selections = (
            torch.where(m, x, 0.0),
            torch.where(m, x, -1),
            torch.where(m, x, x * 2),
            x.where(m, float("-inf")),
            x.masked_fill(m, float("-inf")),
            torch.masked_fill(x, m, 1.5),
            x.masked_fill(~m, 0),
        )
        return softmaxes, log_softmaxes, selections


def _spelling_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(0))
    return x, x > 0.3


@pytest.mark.parametrize("how", ["symbolic", "dynamo", "aten"])
def test_every_spelling_raises_and_round_trips_exactly(how: str) -> None:
    inputs = _spelling_inputs()
    gm = _capture(Spellings(), inputs, how)
    counts, text = roundtrip(gm, inputs)  # asserts bitwise equal outputs
    assert counts["torch.softmax"] == 8, text
    assert counts["torch.log_softmax"] == 5, text
    assert counts["torch.where"] == 4, text
    assert counts["torch.masked_fill"] == 3, text
    for name in ("softmax", "where", "masked_fill"):
        assert f'call_function "torch.{name}"' not in text
        assert f'call_method "{name}"' not in text
    assert "dtype f64" in text


def test_spellings_left_alone_stay_fx() -> None:
    """where(cond, scalar, x), a 0-d tensor fill value and F.softmax
    without a dim are not represented: they stay fx calls and compute what
    they computed."""

    class Unraised(nn.Module):
        def forward(self, x, m, v):
            return torch.where(m, 1.0, x), x.masked_fill(m, v), F.softmax(x, dim=None, _stacklevel=3)

    x, m = _spelling_inputs()
    inputs = (x, m, torch.tensor(2.5))
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        gm = torch.fx.symbolic_trace(Unraised())
        counts, text = roundtrip(gm, inputs)
    assert not counts, text


# ---------------------------------------------------------------------------
# Type inference and verification
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, op_dtype",
    [(torch.float32, None), (torch.float16, torch.float32), (torch.int64, torch.float32),
     (torch.float32, torch.float64), (torch.bfloat16, None)],
)
def test_softmax_dtype_follows_torch(dtype, op_dtype) -> None:
    from optimus_ir.foundation.types import dtype_of, element_type_of, tensor_type

    x = torch.zeros(3, 5, dtype=dtype)
    element = None if op_dtype is None else element_type_of(op_dtype)
    for cls, fn in ((T.SoftmaxOp, torch.softmax), (T.LogSoftmaxOp, torch.log_softmax)):
        inferred = T.infer_softmax_type(cls.name, tensor_type((3, 5), element_type_of(dtype), "cpu"), 1, element)
        assert dtype_of(inferred.element_type) == fn(x, 1, dtype=op_dtype).dtype


def test_where_and_masked_fill_dtypes_follow_torch() -> None:
    from optimus_ir.foundation.types import dtype_of, element_type_of, tensor_type

    def ty(t: torch.Tensor):
        return tensor_type(tuple(t.shape), element_type_of(t.dtype), "cpu")

    mask = torch.tensor([True, False, True])
    for x, other in [
        (torch.arange(3), 0.5), (torch.arange(3), 2), (torch.ones(3, dtype=torch.float16), 0.5),
        (torch.ones(3, dtype=torch.float16), torch.ones(3)), (torch.ones(3), torch.tensor(1.0, dtype=torch.float64)),
        (torch.ones(3, dtype=torch.bool), True),
    ]:
        rhs = ty(other) if isinstance(other, torch.Tensor) else other
        assert dtype_of(T.infer_where_type(ty(mask), ty(x), rhs).element_type) == torch.where(mask, x, other).dtype
    for x, value in [(torch.arange(3), 1.7), (torch.ones(3, dtype=torch.bool), 2), (torch.ones(3), -1)]:
        got = T.infer_masked_fill_type(ty(x), ty(mask), value)
        assert dtype_of(got.element_type) == torch.masked_fill(x, mask, value).dtype
    # masked_fill broadcasts the input against the mask, as torch does
    wide = T.infer_masked_fill_type(ty(torch.ones(3)), ty(torch.ones(2, 3, dtype=torch.bool)), 0.0)
    assert wide.get_shape() == (2, 3)


# ---------------------------------------------------------------------------
# Fusion: sixteen calls on the pieces of one split
# ---------------------------------------------------------------------------


class SplitApply(nn.Module):
    """`torch.split(x, 4, dim=1)` -> `fn` per piece (with the matching piece
    of the mask) -> `torch.cat`."""

    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], width: int = 4) -> None:
        super().__init__()
        self.fn = fn
        self.width = width

    def forward(self, x, m):
        xs = torch.split(x, self.width, dim=1)
        ms = torch.split(m, self.width, dim=1)
        return torch.cat([self.fn(a, b) for a, b in zip(xs, ms)], dim=1)


FUSED = {
    "softmax": (lambda a, b: torch.softmax(a, -1), "torch.softmax"),
    "F.softmax": (lambda a, b: F.softmax(a, dim=1), "torch.softmax"),
    "log_softmax": (lambda a, b: a.log_softmax(dim=-1), "torch.log_softmax"),
    "softmax_f64": (lambda a, b: F.softmax(a, -1, dtype=torch.float64), "torch.softmax"),
    "where": (lambda a, b: torch.where(b, a, 0.0), "torch.where"),
    "where_tensor": (lambda a, b: torch.where(b, a, a * 0.5), "torch.where"),
    "masked_fill": (lambda a, b: a.masked_fill(b, float("-inf")), "torch.masked_fill"),
    "masked_softmax": (lambda a, b: a.masked_fill(b, float("-inf")).softmax(-1), "torch.softmax"),
}


def _inputs(rows: int = 8, cols: int = 64, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Real values with NaN, +-inf and large magnitudes in them, and a mask
    with fully masked rows in some pieces (softmax of all -inf is NaN)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g) * 4
    x[0, 3] = float("nan")
    x[1, 10] = float("inf")
    x[2, 20] = float("-inf")
    x[3, 30] = 1e30
    m = torch.rand(rows, cols, generator=g) > 0.6
    m[4, 0:4] = True  # one whole row of piece 0 masked
    m[0, 3] = False  # the NaN stays unmasked
    m[5, 8:12] = True
    return x, m


def _batch_ops(model: nn.Module, inputs: tuple) -> Counter[str]:
    """The batch ops the default pipeline's batch fusion leaves in the IR
    (run up to batch-fusion, with the tests' cost model)."""
    imported = import_graph(capture(model, inputs, {}), inputs)
    annotate_modules(imported.module, imported.owner)
    run_pipeline(imported.module, "raise-fx,split-cat-simplify,batch-fusion")
    return Counter(op.name for op in imported.module.walk() if op.dialect_name() == "batch")


def _fused_remarks(gm) -> list[str]:
    return [r.message for r in gm.optimus_report.remarks if "batch-fusion: fused" in r.message]


@pytest.mark.parametrize("case", list(FUSED))
def test_sixteen_split_pieces_fuse_exactly(case: str) -> None:
    fn, op_name = FUSED[case]
    model = SplitApply(fn)
    x, m = _inputs()
    gm = optimize(model, (x, m))
    report = gm.optimus_report
    assert sum(report.ops_after.values()) < sum(report.ops_before.values()), report
    assert any(f"fused 16 {op_name}" in r and "into batch.pointwise" in r for r in _fused_remarks(gm)), \
        [r.message for r in report.remarks]
    with torch.no_grad():
        for seed in (0, 1):
            x, m = _inputs(seed=seed)
            torch.testing.assert_close(gm(x, m), model(x, m), **EXACT)
    batch_ops = _batch_ops(model, _inputs())
    assert batch_ops["batch.pointwise"] >= 1 and batch_ops["batch.unpack"] >= 1, batch_ops


def test_fused_softmax_keeps_nan_and_inf_rows() -> None:
    """A fully masked row gives NaN in eager softmax, and so in the fused one;
    inf/NaN inputs propagate the same way."""
    model = SplitApply(FUSED["masked_softmax"][0])
    x, m = _inputs()
    gm = optimize(model, (x, m))
    with torch.no_grad():
        got, want = gm(x, m), model(x, m)
    assert torch.isnan(want[4, 0:4]).all() and torch.isnan(want[0, 0:4]).all()
    torch.testing.assert_close(got, want, **EXACT)


@pytest.mark.parametrize("width, cols", [(128, 2048), (1000, 16000)])
def test_fused_softmax_exact_on_long_rows(width: int, cols: int) -> None:
    """Long rows (the vectorized kernel's main loop and tail, several
    threads' worth of rows) are bit-identical too."""
    model = SplitApply(lambda a, b: torch.log_softmax(a, -1) + torch.softmax(a, -1), width=width)
    g = torch.Generator().manual_seed(3)
    x, m = torch.randn(16, cols, generator=g) * 3, torch.zeros(16, cols, dtype=torch.bool)
    gm = optimize(model, (x, m))
    assert any("fused 16 torch.softmax" in r for r in _fused_remarks(gm))
    with torch.no_grad():
        torch.testing.assert_close(gm(x, m), model(x, m), **EXACT)


def test_half_softmax_in_float32_fuses() -> None:
    """`F.softmax(x, -1, dtype=torch.float32)` on half pieces (attention
    scores in fp16): the dtype is a member property; the fused op keeps it."""
    model = SplitApply(lambda a, b: F.softmax(a, -1, dtype=torch.float32))
    x, m = _inputs()
    x = x.clamp(-100, 100).nan_to_num().half()
    gm = optimize(model, (x, m))
    assert any("fused 16 torch.softmax" in r for r in _fused_remarks(gm))
    with torch.no_grad():
        got, want = gm(x, m), model(x, m)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want, **EXACT)


# ---------------------------------------------------------------------------
# Left alone: softmax over another dim, members of different row lengths
# ---------------------------------------------------------------------------


def test_softmax_over_a_non_last_dim_is_not_fused() -> None:
    model = SplitApply(lambda a, b: torch.softmax(a, 0))
    x, m = _inputs()
    gm = optimize(model, (x, m))
    assert not _fused_remarks(gm)
    assert any("normalizes dim 0, not the last dim" in r.message for r in gm.optimus_report.remarks)
    assert gm.optimus_report.ops_after["softmax"] == 16
    assert not _batch_ops(model, (x, m))
    with torch.no_grad():
        torch.testing.assert_close(gm(x, m), model(x, m), **EXACT)


class RaggedSoftmax(nn.Module):
    """Softmaxes over the last dim of pieces of two widths (4 and 8): each
    row length forms its own group; none mixes the two."""

    def forward(self, x):
        pieces = torch.split(x, [4, 8, 4, 8, 4, 8], dim=1)
        return torch.cat([torch.softmax(p, -1) for p in pieces], dim=1)


def test_softmax_of_different_row_lengths_is_not_mixed() -> None:
    model = RaggedSoftmax()
    x, _ = _inputs(cols=36)
    gm = optimize(model, (x,), pipeline="raise-fx,split-cat-simplify,batch-fusion{cost-model=none},"
                  "lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx")
    fused = _fused_remarks(gm)
    assert len(fused) == 2 and all("fused 3 torch.softmax" in r for r in fused), fused
    with torch.no_grad():
        torch.testing.assert_close(gm(x), model(x), **EXACT)


def test_two_softmaxes_of_different_sizes_stay_apart() -> None:
    class Two(nn.Module):
        def forward(self, x):
            a, b = torch.split(x, [4, 8], dim=1)
            return torch.softmax(a, -1), torch.softmax(b, -1)

    x = _inputs()[0][:, :12]
    gm = optimize(Two(), (x,), pipeline="raise-fx,batch-fusion{cost-model=none},lower-batch,lower-to-fx")
    assert not _fused_remarks(gm)
    assert any("key differs in operand 0 shape" in r.message for r in gm.optimus_report.remarks)
    with torch.no_grad():
        for got, want in zip(gm(x), Two()(x)):
            torch.testing.assert_close(got, want, **EXACT)


def test_kinds_option_selects_softmax() -> None:
    """`kinds=pointwise` leaves softmax alone (its kind is "softmax"), and
    `kinds=softmax` fuses it."""
    model = SplitApply(FUSED["softmax"][0])
    x, m = _inputs()
    rest = "lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
    for kinds, fused in (("pointwise", False), ("softmax", True)):
        gm = optimize(model, (x, m), pipeline=f"raise-fx,split-cat-simplify,batch-fusion{{kinds={kinds}}},{rest}")
        assert any("fused 16 torch.softmax" in r for r in _fused_remarks(gm)) == fused, kinds
        with torch.no_grad():
            torch.testing.assert_close(gm(x, m), model(x, m), **EXACT)


def test_batch_pointwise_softmax_verifies_member_types() -> None:
    """batch.pointwise of softmax infers the member type from the op's own
    rules (an integral member without a dtype is refused)."""
    from xdsl.dialects.builtin import IntegerType, f32
    from xdsl.dialects.test import TestOp
    from xdsl.utils.exceptions import VerifyException

    from optimus_ir.foundation.types import tensor_type

    stack = TestOp(result_types=[tensor_type((3, 4, 8), f32, "cpu")])
    op = B.PointwiseOp("torch.softmax", [stack], [True], {"dim": T.number_attr(1)})
    assert op.result.type == stack.results[0].type
    ints = TestOp(result_types=[tensor_type((3, 4, 8), IntegerType(64), "cpu")])
    with pytest.raises(VerifyException, match="does not support element type i64"):
        B.PointwiseOp("torch.softmax", [ints], [True], {"dim": T.number_attr(1)})
