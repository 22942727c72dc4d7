"""Tests of the `torch` operator dialect (dialects/torch/).

* builders infer the result types torch gives, and verify;
* every verifier rejection raises a VerifyException naming the op and the
  mismatch (in memory here, and one case each in tests/lit/.../invalid.mlir,
  which this file also runs);
* every op prints, parses and prints again identically;
* hypothesis checks the shape and dtype rules against torch itself.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Block, Region
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from optimus_ir.translate.parsing import parse_module
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.fx import GraphOp, OutputOp, PlaceholderOp, RefAttr, float_literal
from optimus_ir.foundation.types import DYNAMIC, element_type_of, tensor_type

F32, F16, BF16, F64 = Float32Type(), Float16Type(), BFloat16Type(), Float64Type()
I64, I32, I1 = IntegerType(64), IntegerType(32), IntegerType(1)
U8 = IntegerType(8, Signedness.UNSIGNED)

LIT_DIR = Path(__file__).parent / "lit" / "dialects" / "torch"


def tt(*shape: int, element: Attribute = F32, device: str | None = "cpu"):
    return tensor_type(tuple(shape), element, device)


def arg(*shape: int, element: Attribute = F32, device: str | None = "cpu", name: str = "x"):
    """A placeholder op standing for a graph input of the given type."""
    return PlaceholderOp(name, tt(*shape, element=element, device=device))


def shape_of(op) -> tuple[int, ...]:
    return op.results[0].type.get_shape()


def verify_fails(op, message: str) -> None:
    with pytest.raises(VerifyException) as info:
        op.verify()
    assert message in str(info.value), str(info.value)


# ---------------------------------------------------------------------------
# Builders and inference
# ---------------------------------------------------------------------------


def test_split_builder_infers_piece_types():
    x = arg(2, 12)
    op = T.SplitOp(x, sections=[4, 8], dim=1)
    op.verify()
    assert [r.type for r in op.results] == [tt(2, 4), tt(2, 8)]
    assert T.ints(op.sections) == (4, 8) and op.dim.data == 1
    assert T.infer_split_types(tt(2, 12), [4, 8], 1) == [tt(2, 4), tt(2, 8)]


def test_split_builder_explicit_result_types():
    x = arg(2, 12)
    op = T.SplitOp(x, [6, 6], 1, result_types=[tt(2, 6), tt(2, 6)])
    op.verify()
    bad = T.SplitOp(x, [6, 6], 1, result_types=[tt(2, 6), tt(2, 5)])
    verify_fails(bad, "'torch.split' result #1 has shape 2x5, expected 2x6")


def test_split_sections_helper():
    assert T.split_sections(10, 4) == [4, 4, 2]
    assert T.split_sections(8, 4) == [4, 4]
    assert T.split_sections(3, 5) == [3]


@pytest.mark.parametrize(
    "build, shape, element",
    [
        (lambda: T.LinearOp(arg(2, 12), arg(8, 12), arg(8)), (2, 8), F32),
        (lambda: T.LinearOp(arg(3, 5, 12), arg(8, 12)), (3, 5, 8), F32),
        (lambda: T.MmOp(arg(2, 12), arg(12, 4)), (2, 4), F32),
        (lambda: T.AddmmOp(arg(4), arg(2, 12), arg(12, 4), beta=0.5, alpha=2), (2, 4), F32),
        (lambda: T.BmmOp(arg(3, 2, 12), arg(3, 12, 4)), (3, 2, 4), F32),
        (lambda: T.BaddbmmOp(arg(1, 2, 4), arg(3, 2, 12), arg(3, 12, 4)), (3, 2, 4), F32),
        (lambda: T.MatmulOp(arg(5, 1, 2, 12), arg(3, 12, 4)), (5, 3, 2, 4), F32),
        (lambda: T.MatmulOp(arg(12), arg(12)), (), F32),
        (lambda: T.MatmulOp(arg(2, 12), arg(12)), (2,), F32),
        (lambda: T.MatmulOp(arg(12), arg(3, 12, 4)), (3, 4), F32),
        (lambda: T.LayerNormOp(arg(2, 12), [12], arg(12), arg(12), eps=1e-6), (2, 12), F32),
        (lambda: T.LayerNormOp(arg(2, 3, 4, element=BF16), [3, 4], arg(3, 4)), (2, 3, 4), BF16),
        (lambda: T.CatOp([arg(2, 4), arg(3, 4), arg(DYNAMIC, 4)], 0), (DYNAMIC, 4), F32),
        (lambda: T.CatOp([arg(2, 4), arg(2, 4, element=F64)], 1), (2, 8), F64),
        (lambda: T.CatOp([arg(0), arg(2, 4)], 0), (2, 4), F32),
        (lambda: T.StackOp([arg(2, 4), arg(2, 4)], 2), (2, 4, 2), F32),
        (lambda: T.StackOp([arg(2, DYNAMIC), arg(2, 4)], 0), (2, 2, 4), F32),
        (lambda: T.SqueezeOp(arg(1, 2, 1), [2, 0]), (2,), F32),
        (lambda: T.UnsqueezeOp(arg(2, 3), 2), (2, 3, 1), F32),
        (lambda: T.ReshapeOp(arg(2, 12), [4, -1]), (4, 6), F32),
        (lambda: T.ReshapeOp(arg(DYNAMIC, 12), [-1, 3]), (DYNAMIC, 3), F32),
        (lambda: T.ViewOp(arg(2, 12), [24]), (24,), F32),
        (lambda: T.FlattenOp(arg(2, 3, 4), 1), (2, 12), F32),
        (lambda: T.FlattenOp(arg()), (1,), F32),
        (lambda: T.UnflattenOp(arg(2, 12), 1, [3, -1]), (2, 3, 4), F32),
        (lambda: T.PermuteOp(arg(2, 3, 4), [2, 0, 1]), (4, 2, 3), F32),
        (lambda: T.TransposeOp(arg(2, 3, 4), 0, 2), (4, 3, 2), F32),
        (lambda: T.MovedimOp(arg(2, 3, 4), [0], [2]), (3, 4, 2), F32),
        (lambda: T.SliceOp(arg(2, 12), 1, 2, 12, 3), (2, 4), F32),
        (lambda: T.SliceOp(arg(2, DYNAMIC), 1, 1, sys.maxsize), (2, DYNAMIC), F32),
        (lambda: T.SelectOp(arg(2, 12), 1, 3), (2,), F32),
        (lambda: T.TanhOp(arg(2, element=I64)), (2,), F32),
        (lambda: T.ReluOp(arg(2, element=I64)), (2,), I64),
        (lambda: T.GeluOp(arg(2), "tanh"), (2,), F32),
        (lambda: T.NanToNumOp(arg(2), nan=0.0, posinf=1e30), (2,), F32),
        (lambda: T.ClampOp(arg(2, element=I64), min=0.5), (2,), F32),
        (lambda: T.ClampOp(arg(2, element=I64), max=3), (2,), I64),
        (lambda: T.DropoutOp(arg(2), 0.1, train=True), (2,), F32),
        (lambda: T.AddOp(arg(2, 12), arg(12), alpha=2), (2, 12), F32),
        (lambda: T.AddOp(arg(2, element=I64), 2.5), (2,), F32),
        (lambda: T.AddOp(arg(2, element=F16), arg(element=F64)), (2,), F16),
        (lambda: T.SubOp(arg(2), 1, reverse=True, alpha=3), (2,), F32),
        (lambda: T.MulOp(arg(2, element=I64), arg(2, element=BF16)), (2,), BF16),
        (lambda: T.MulOp(arg(2, element=U8), True), (2,), U8),
        (lambda: T.DivOp(arg(2, element=I64), arg(2, element=I64)), (2,), F32),
        (lambda: T.DivOp(arg(2, element=I64), 2, rounding_mode="floor"), (2,), I64),
        (lambda: T.SumOp(arg(2, 3, element=I32)), (), I64),
        (lambda: T.SumOp(arg(2, 3), [1], keepdim=True, dtype=F64), (2, 1), F64),
        (lambda: T.MeanOp(arg(2, 3, 4), [2, 0]), (3,), F32),
        (lambda: T.MeanOp(arg(2, 3, element=I64), [1], dtype=F32), (2,), F32),
    ],
)
def test_builders_infer_result_types(build, shape, element):
    op = build()
    op.verify()
    assert shape_of(op) == shape
    assert op.results[0].type.element_type == element


def test_unbind_builder():
    op = T.UnbindOp(arg(3, 4), 0)
    op.verify()
    assert [r.type for r in op.results] == [tt(4)] * 3
    with pytest.raises(VerifyException, match="dim 0 is dynamic"):
        T.UnbindOp(arg(DYNAMIC, 4), 0)
    dynamic = T.UnbindOp(arg(DYNAMIC, 4), 0, result_types=[tt(4), tt(4)])
    dynamic.verify()


def test_unknown_device_matches_any_and_propagates():
    op = T.AddOp(arg(2, device=None), arg(2, device="cuda:0"))
    op.verify()
    assert op.result.type == tt(2, device="cuda:0")
    # a 0-d CPU tensor may meet a CUDA tensor, as in torch
    op = T.MulOp(arg(2, device="cuda:0"), arg(device="cpu"))
    op.verify()
    assert op.result.type == tt(2, device="cuda:0")


def test_builder_rejects_non_tensor_operand():
    from optimus_ir.dialects.fx import VALUE

    with pytest.raises(VerifyException, match="'torch.tanh' operand #0 \\(input\\) must be a tensor"):
        T.TanhOp(PlaceholderOp("n", VALUE))


def test_builder_inference_errors_name_the_op():
    with pytest.raises(VerifyException, match="'torch.cat' operand #1 has rank 3, expected 2"):
        T.CatOp([arg(2, 4), arg(2, 4, 1)], 0)
    with pytest.raises(VerifyException, match="'torch.mm' .* mismatched inner dims"):
        T.MmOp(arg(2, 3), arg(4, 5))


# ---------------------------------------------------------------------------
# Verifier rejections, in memory
# ---------------------------------------------------------------------------

REJECTIONS = [
    (lambda: T.LinearOp(arg(2, 12), arg(8, 10), result_type=tt(2, 8)),
     "'torch.linear' operand #0 (input) has 12 features"),
    (lambda: T.LinearOp(arg(2, 12), arg(8, 12, element=F16), result_type=tt(2, 8)),
     "'torch.linear' operand #1 (weight) has element type f16 but operand #0 (input) has f32"),
    (lambda: T.LinearOp(arg(2, 12), arg(8, 12, device="cuda:0"), result_type=tt(2, 8)),
     "'torch.linear' operand #1 (weight) is on device \"cuda:0\" but operand #0 (input) is on \"cpu\""),
    (lambda: T.MmOp(arg(2, 12), arg(12, 4), result_type=tt(2, 5)),
     "'torch.mm' result #0 has shape 2x5, expected 2x4"),
    (lambda: T.AddmmOp(arg(3, 4), arg(2, 12), arg(12, 4), result_type=tt(2, 4)),
     "'torch.addmm' operand #0 (input) of shape 3x4 does not broadcast to 2x4"),
    (lambda: T.BmmOp(arg(3, 2, 12), arg(4, 12, 5), result_type=tt(3, 2, 5)),
     "'torch.bmm' operand #0 (lhs) and operand #1 (rhs) have different batch sizes (3 vs 4)"),
    (lambda: T.LayerNormOp(arg(2, 12), [12], arg(6), result_type=tt(2, 12)),
     "'torch.layer_norm' operand #1 (weight) has shape 6, expected 12"),
    (lambda: T.SplitOp(arg(2, 12), [4, 4], 1, result_types=[tt(2, 4), tt(2, 4)]),
     "'torch.split' sections [4, 4] sum to 8 but dim 1 of the input has size 12"),
    (lambda: T.SplitOp(arg(2, 12), [4, 8], 1, result_types=[tt(2, 4)]),
     "'torch.split' has 1 results, expected 2"),
    (lambda: T.UnbindOp(arg(2, 12), 2, result_types=[tt(2), tt(2)]),
     "'torch.unbind' dim 2 is out of range for rank 2"),
    (lambda: T.CatOp([arg(2, 4), arg(2, 5)], 0, result_type=tt(4, 4)),
     "'torch.cat' operand #1 dim 1 has size 5, expected 4"),
    (lambda: T.StackOp([arg(2, 4), arg(2, 4)], 0, result_type=tt(2, 4, 2)),
     "'torch.stack' result #0 has shape 2x4x2, expected 2x2x4"),
    (lambda: T.SqueezeOp(arg(2, 3), [0], result_type=tt(3)),
     "'torch.squeeze' cannot squeeze dim 0 of size 2"),
    (lambda: T.ReshapeOp(arg(2, 12), [5, -1], result_type=tt(5, 5)),
     "'torch.reshape' cannot reshape a tensor of 24 elements into shape [5, -1]"),
    (lambda: T.FlattenOp(arg(2, 3, 4), 2, 1, result_type=tt(2, 3, 4)),
     "'torch.flatten' start_dim 2 is after end_dim 1"),
    (lambda: T.UnflattenOp(arg(2, 12), 1, [5, 2], result_type=tt(2, 5, 2)),
     "'torch.unflatten' cannot reshape dim 1 of 12 elements into sizes [5, 2]"),
    (lambda: T.PermuteOp(arg(2, 3), [1, 1], result_type=tt(3, 3)),
     "'torch.permute' dims [1, 1] is not a permutation of 0..1"),
    (lambda: T.TransposeOp(arg(2, 3), 0, 5, result_type=tt(3, 2)),
     "'torch.transpose' dim1 5 is out of range for rank 2"),
    (lambda: T.MovedimOp(arg(2, 3), [0], [0, 1], result_type=tt(2, 3)),
     "'torch.movedim' source [0] and destination [0, 1] have different lengths"),
    (lambda: T.SliceOp(arg(2, 12), 1, 5, 3, result_type=tt(2, 0)),
     "'torch.slice' start 5 and end 3 are not canonical"),
    (lambda: T.SelectOp(arg(2, 12), 0, -1, result_type=tt(12)),
     "'torch.select' index -1 is out of range for dim 0 of size 2"),
    (lambda: T.TanhOp(arg(2, element=I64), result_type=tt(2, element=I64)),
     "'torch.tanh' result #0 has element type i64, expected f32"),
    (lambda: T.SiluOp(arg(2, element=I64), result_type=tt(2, element=I64)),
     "'torch.silu' does not support element type i64"),
    (lambda: T.GeluOp(arg(2), "erf", result_type=tt(2)),
     "'torch.gelu' approximate must be one of \"none\" | \"tanh\", got \"erf\""),
    (lambda: T.ClampOp(arg(2), result_type=tt(2)),
     "'torch.clamp' needs at least one of min and max"),
    (lambda: T.DropoutOp(arg(2), -0.1, result_type=tt(2)),
     "'torch.dropout' p must be in [0, 1], got -0.1"),
    (lambda: T.ExpOp(arg(2), result_type=tt(2, device="cuda:0")),
     "'torch.exp' result #0 is on device \"cuda:0\", expected \"cpu\""),
    (lambda: T.AddOp(arg(2, 3), arg(4, 3), result_type=tt(2, 3)),
     "'torch.add' operands have shapes 2x3 and 4x3 that do not broadcast (dim 0: 2 vs 4)"),
    (lambda: T.SubOp(arg(2, element=I1), arg(2, element=I1), result_type=tt(2, element=I1)),
     "'torch.sub' does not support operands of element types i1 and i1"),
    (lambda: T.SubOp(arg(2), arg(2), reverse=True, result_type=tt(2)),
     "'torch.sub' reverse is only meaningful with a scalar"),
    (lambda: T.MulOp(arg(2, element=I64), arg(2), result_type=tt(2, element=I64)),
     "'torch.mul' result #0 has element type i64, expected f32"),
    (lambda: T.DivOp(arg(2), 2, rounding_mode="round", result_type=tt(2)),
     "'torch.div' rounding_mode must be one of \"none\" | \"trunc\" | \"floor\", got \"round\""),
    (lambda: T.AddOp(arg(2, device="cuda:0"), arg(2, device="cuda:1"), result_type=tt(2)),
     "'torch.add' operand #1 (rhs) is on device \"cuda:1\" but operand #0 (lhs) is on \"cuda:0\""),
    (lambda: T.SumOp(arg(2, 3), [0, 0], result_type=tt(3)),
     "'torch.sum' dims [0, 0] has a repeated dim"),
    (lambda: T.MeanOp(arg(2, 3, element=I64), [1], result_type=tt(2, element=I64)),
     "'torch.mean' does not support element type i64"),
]


@pytest.mark.parametrize("build, message", REJECTIONS)
def test_verifier_rejections(build, message):
    verify_fails(build(), message)


def test_binary_needs_exactly_one_rhs():
    op = T.AddOp(arg(2), arg(2))
    op.properties["scalar"] = T.number_attr(1)
    verify_fails(op, "'torch.add' needs exactly one of an rhs operand and a scalar")


# ---------------------------------------------------------------------------
# The lit files, run here until optimus-opt exists
# ---------------------------------------------------------------------------


def _filecheck() -> str | None:
    local = Path(sys.executable).parent / "filecheck"
    return str(local) if local.exists() else shutil.which("filecheck")


def _roundtrip(text: str) -> str:
    module = parse_module(text)
    module.verify()
    printed = str(module)
    again = parse_module(printed)
    again.verify()
    assert str(again) == printed
    return printed


def test_roundtrip_lit_file():
    path = LIT_DIR / "roundtrip.mlir"
    printed = _roundtrip(path.read_text())
    filecheck = _filecheck()
    if filecheck is None:
        pytest.skip("filecheck is not installed")
    result = subprocess.run(
        [filecheck, str(path)], input=printed, text=True, capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr


def _invalid_cases() -> list[tuple[str, str]]:
    text = (LIT_DIR / "invalid.mlir").read_text()
    cases = []
    for chunk in text.split("// -----"):
        expected = re.search(r"expected-error@\+1 \{\{(.*)\}\}", chunk)
        assert expected is not None, chunk
        cases.append((chunk, expected.group(1)))
    return cases


@pytest.mark.parametrize("chunk, message", _invalid_cases())
def test_invalid_lit_file(chunk, message):
    module = parse_module(chunk)
    with pytest.raises(VerifyException) as info:
        module.verify()
    assert message in str(info.value)


# ---------------------------------------------------------------------------
# Text round trip of ops built in memory
# ---------------------------------------------------------------------------


def _all_ops_graph() -> ModuleOp:
    x, w, b = arg(2, 12, name="x"), arg(8, 12, name="w"), arg(8, name="b")
    i = arg(2, 12, element=I64, name="i")
    bx, bm = arg(3, 2, 12, name="bx"), arg(3, 12, 4, name="bm")
    m, g = arg(12, 4, name="m"), arg(12, name="g")
    mask = arg(12, element=I1, name="mask")
    ops = [x, w, b, i, bx, bm, m, g, mask]
    add = ops.append
    add(T.LinearOp(x, w, b))
    add(mm := T.MmOp(x, m))
    add(T.AddmmOp(mm, x, m, beta=0.5, alpha=2))
    add(bmm := T.BmmOp(bx, bm))
    add(T.BaddbmmOp(bmm, bx, bm, alpha=-1))
    add(T.MatmulOp(bx, m))
    add(T.LayerNormOp(x, [12], eps=1e-6))
    add(T.LayerNormOp(x, [12], None, g))
    add(split := T.SplitOp(x, [4, 8], 1))
    add(unbind := T.UnbindOp(x, 0))
    add(T.UnbindCopyOp(x, 1))
    add(T.CatOp([split.results[0], split.results[0]], 1))
    add(T.StackOp(list(unbind.results), 0))
    add(unsq := T.UnsqueezeOp(x, 0))
    add(T.SqueezeOp(unsq, [0]))
    add(T.ReshapeOp(x, [-1]))
    add(T.ViewOp(x, [3, 8]))
    add(T.FlattenOp(bx, 0, 1))
    add(T.UnflattenOp(x, 1, [2, 6]))
    add(T.PermuteOp(bx, [1, 2, 0]))
    add(T.TransposeOp(x, 1, 0))
    add(T.MovedimOp(bx, [2, 0], [0, 1]))
    add(T.SliceOp(x, 1, 0, 6, 2))
    add(T.UnfoldOp(x, 1, 4, 3))
    add(T.SelectOp(x, 1, 11))
    for cls in (T.TanhOp, T.SigmoidOp, T.ReluOp, T.SiluOp, T.ExpOp, T.LogOp, T.NegOp, T.AbsOp, T.DetachOp):
        add(cls(x))
    add(T.GeluOp(x, "tanh"))
    for cls in (T.ErfOp, T.HardswishOp, T.HardsigmoidOp, T.MishOp, T.SqrtOp, T.RsqrtOp,
                T.ReciprocalOp, T.SinOp, T.CosOp, T.Log1pOp, T.Expm1Op, T.EluOp, T.LeakyReluOp):
        add(cls(x))
    add(T.SoftplusOp(x, properties={"beta": float_literal(2.0)}))
    add(T.HardtanhOp(x, properties={"min_val": float_literal(0.0), "max_val": float_literal(6.0)}))
    add(T.NanToNumOp(x, nan=float("nan"), neginf=-1e30))
    add(T.ClampOp(x, min=-1, max=1.5))
    add(T.DropoutOp(x, 0.25, train=False))
    add(T.DropoutOp(x, 0.25))
    add(T.AddOp(x, x, alpha=0.5))
    add(T.SubOp(x, 2, reverse=True))
    add(T.MulOp(i, True))
    add(T.DivOp(i, i, rounding_mode="trunc"))
    add(T.DivOp(x, 3.0, reverse=True))
    add(T.SumOp(i, [1], keepdim=True, dtype=F64))
    add(T.MeanOp(x))
    add(T.SoftmaxOp(x, 1))
    add(T.LogSoftmaxOp(i, 0, F64))
    add(T.WhereOp(mask, x, float("-inf")))
    add(T.WhereOp(mask, x, x))
    add(T.MaskedFillOp(i, mask, 7))
    add(OutputOp(ArrayAttr([RefAttr(0)]), [x.results[0]]))
    return ModuleOp([GraphOp("f", Region(Block(ops)))])


def test_every_op_roundtrips_through_text():
    module = _all_ops_graph()
    module.verify()
    printed = str(module)
    names = {op.name for op in module.walk() if op.name.startswith("torch.")}
    assert names == {cls.name for cls in T.TORCH.operations}
    assert _roundtrip(printed) == printed


def test_defaults_are_left_out_of_the_text():
    printed = str(_all_ops_graph())  # %0 is the input x
    assert "torch.add %0, %0 alpha 0.5 :" in printed
    assert "torch.sub %0 scalar 2 reverse :" in printed
    assert "torch.layer_norm %0 normalized_shape [12] eps 1.0e-06 :" in printed
    assert "torch.slice %0 dim 1 start 0 end 6 step 2 :" in printed
    assert "torch.dropout %0 p 0.25 :" in printed
    assert "torch.dropout %0 p 0.25 train :" in printed
    assert "torch.nan_to_num %0 nan nan neginf -1.0e+30 :" in printed
    assert "torch.mean %0 :" in printed
    assert "torch.softplus %0 beta 2.0 :" in printed
    assert "torch.hardtanh %0 min_val 0.0 max_val 6.0 :" in printed
    assert "torch.leaky_relu %0 :" in printed


# ---------------------------------------------------------------------------
# Traits and families
# ---------------------------------------------------------------------------


def test_every_op_is_pure_except_dropout():
    for cls in T.TORCH.operations:
        assert cls.has_trait(Pure) == (cls is not T.DropoutOp), cls.name


def test_dropout_effects_depend_on_train():
    x = arg(2)
    assert not T.is_pure(T.DropoutOp(x, 0.5, train=True))
    assert T.is_pure(T.DropoutOp(x, 0.5, train=False))
    assert T.is_pure(T.TanhOp(x))


def test_family_tuples():
    assert len(T.UNARY_POINTWISE_OPS) == 28
    assert set(T.BINARY_POINTWISE_OPS) == {T.AddOp, T.SubOp, T.MulOp, T.DivOp}
    assert all(issubclass(c, T.UnaryPointwiseOp) for c in T.UNARY_POINTWISE_OPS)
    assert all(issubclass(c, T.BinaryPointwiseOp) for c in T.BINARY_POINTWISE_OPS)


def test_other_accessor():
    x = arg(2)
    assert T.AddOp(x, x).other is x.results[0]
    assert T.number_value(T.AddOp(x, 2.5).other) == 2.5
    assert T.number_value(T.MulOp(x, True).other) is True


# ---------------------------------------------------------------------------
# Property-based checks against torch
# ---------------------------------------------------------------------------

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_split_section_sums(data):
    shape = data.draw(nonempty_shapes)
    dim = data.draw(st.integers(0, len(shape) - 1))
    sections = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    x = arg(*shape)
    pieces = [tt(*shape[:dim], s, *shape[dim + 1 :]) for s in sections]
    op = T.SplitOp(x, sections, dim, result_types=pieces)
    if sum(sections) == shape[dim]:
        op.verify()
        expected = torch.empty(shape).split(sections, dim)
        assert [p.get_shape() for p in pieces] == [tuple(t.shape) for t in expected]
    else:
        verify_fails(op, f"sum to {sum(sections)} but dim {dim}")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_permutation_validity(data):
    shape = data.draw(shapes)
    dims = data.draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), min_size=len(shape), max_size=len(shape)))
    is_permutation = sorted(dims) == list(range(len(shape)))
    if is_permutation:
        op = T.PermuteOp(arg(*shape), dims)
        op.verify()
        assert shape_of(op) == tuple(torch.empty(shape).permute(dims).shape)
    else:
        op = T.PermuteOp(arg(*shape), dims, result_type=tt(*shape))
        verify_fails(op, "is not a permutation")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_movedim_matches_torch(data):
    shape = data.draw(nonempty_shapes)
    rank = len(shape)
    count = data.draw(st.integers(0, rank))
    source = data.draw(st.permutations(range(rank)))[:count]
    destination = data.draw(st.permutations(range(rank)))[:count]
    op = T.MovedimOp(arg(*shape), source, destination)
    op.verify()
    assert shape_of(op) == tuple(torch.empty(shape).movedim(source, destination).shape)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_broadcast_matches_torch(data):
    a = data.draw(st.lists(st.sampled_from([1, 2, 3]), max_size=4).map(tuple))
    b = data.draw(st.lists(st.sampled_from([1, 2, 3]), max_size=4).map(tuple))
    try:
        expected = tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        with pytest.raises(VerifyException, match="do not broadcast"):
            T.broadcast_shapes(a, b)
        return
    assert T.broadcast_shapes(a, b) == expected
    # a dynamic dim is compatible with whatever the other side has
    if a:
        dyn = (DYNAMIC, *a[1:])
        result = T.broadcast_shapes(dyn, b)
        assert all(r in (e, DYNAMIC) for r, e in zip(result, expected))


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.uint8, torch.bool]


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(DTYPES),
    st.sampled_from(DTYPES),
    st.booleans(),
    st.booleans(),
    st.sampled_from([T.AddOp, T.SubOp, T.MulOp, T.DivOp]),
)
def test_binary_promotion_matches_torch(lhs_dtype, rhs_dtype, lhs_0d, rhs_0d, cls):
    a = torch.ones(() if lhs_0d else (2,), dtype=lhs_dtype)
    b = torch.ones(() if rhs_0d else (2,), dtype=rhs_dtype)
    fn = {T.AddOp: torch.add, T.SubOp: torch.sub, T.MulOp: torch.mul, T.DivOp: torch.div}[cls]
    x = arg(*a.shape, element=element_type_of(lhs_dtype), name="a")
    y = arg(*b.shape, element=element_type_of(rhs_dtype), name="b")
    try:
        expected = fn(a, b)
    except RuntimeError:
        with pytest.raises(VerifyException, match="does not support operands"):
            cls(x, y)
        return
    op = cls(x, y)
    op.verify()
    assert op.result.type.element_type == element_type_of(expected.dtype)
    assert shape_of(op) == tuple(expected.shape)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DTYPES), st.sampled_from([1, 2.5, True]), st.sampled_from([T.AddOp, T.MulOp, T.DivOp]))
def test_scalar_promotion_matches_torch(dtype, scalar, cls):
    a = torch.ones((2,), dtype=dtype)
    fn = {T.AddOp: torch.add, T.MulOp: torch.mul, T.DivOp: torch.div}[cls]
    x = arg(2, element=element_type_of(dtype))
    try:
        expected = fn(a, scalar)
    except RuntimeError:
        with pytest.raises(VerifyException):
            cls(x, scalar)
        return
    op = cls(x, scalar)
    op.verify()
    assert op.result.type.element_type == element_type_of(expected.dtype)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_reshape_matches_torch(data):
    shape = data.draw(shapes)
    numel = 1
    for s in shape:
        numel *= s
    target = data.draw(st.lists(st.integers(1, 6), max_size=3))
    if data.draw(st.booleans()):
        target.insert(data.draw(st.integers(0, len(target))), -1)
    x = arg(*shape)
    try:
        expected = tuple(torch.empty(shape).reshape(target).shape)
    except RuntimeError:
        with pytest.raises(VerifyException, match="cannot reshape"):
            T.ReshapeOp(x, target)
        return
    op = T.ReshapeOp(x, target)
    op.verify()
    assert shape_of(op) == expected


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_matmul_matches_torch(data):
    a = data.draw(st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=4).map(tuple))
    b = data.draw(st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=4).map(tuple))
    x, y = arg(*a, name="a"), arg(*b, name="b")
    try:
        expected = tuple(torch.matmul(torch.empty(a), torch.empty(b)).shape)
    except RuntimeError:
        with pytest.raises(VerifyException):
            T.MatmulOp(x, y)
        return
    op = T.MatmulOp(x, y)
    op.verify()
    assert shape_of(op) == expected


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_reductions_match_torch(data):
    shape = data.draw(nonempty_shapes)
    dtype = data.draw(st.sampled_from([torch.float32, torch.int64, torch.bool, torch.float16]))
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    keepdim = data.draw(st.booleans())
    cls, fn = data.draw(st.sampled_from([(T.SumOp, torch.sum), (T.MeanOp, torch.mean)]))
    x = arg(*shape, element=element_type_of(dtype))
    try:
        expected = fn(torch.ones(shape, dtype=dtype), dim=dims or None, keepdim=keepdim)
    except RuntimeError:
        with pytest.raises(VerifyException, match="does not support"):
            cls(x, dims, keepdim)
        return
    op = cls(x, dims, keepdim)
    op.verify()
    assert shape_of(op) == tuple(expected.shape)
    assert op.result.type.element_type == element_type_of(expected.dtype)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_slice_matches_torch(data):
    size = data.draw(st.integers(0, 8))
    start = data.draw(st.integers(0, size))
    end = data.draw(st.integers(start, size))
    step = data.draw(st.integers(1, 3))
    op = T.SliceOp(arg(2, size), 1, start, end, step)
    op.verify()
    assert shape_of(op) == tuple(torch.empty(2, size)[:, start:end:step].shape)


def _wrong_type(ty: Attribute) -> Attribute:
    """A tensor type the op cannot give: one more dimension of size 3."""
    return TensorType(ty.element_type, [*ty.get_shape(), 3], ty.encoding)


def test_every_op_checks_its_declared_result_types():
    """Every torch op's verifier compares each declared result type with
    its type inference (issue 19): a wrong declared type is a verifier error
    naming the op and the result, for every op of the dialect."""
    module = _all_ops_graph()
    checked: set[str] = set()
    for op in list(module.walk()):
        if not isinstance(op, T.TorchOp):
            continue
        op.verify()
        for index in range(len(op.results)):
            types = [r.type for r in op.results]
            types[index] = _wrong_type(types[index])
            wrong = type(op).create(
                operands=op.operands,
                result_types=types,
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            try:
                with pytest.raises(VerifyException, match=rf"'{re.escape(op.name)}' result #{index} has rank"):
                    wrong.verify()
            finally:
                wrong.erase()  # drops its uses of the graph's values
        checked.add(op.name)
    assert checked == {cls.name for cls in T.TORCH.operations}
