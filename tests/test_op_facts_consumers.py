"""Issue 20: batch fusion, the batch dialect, the kernel lowering and the
cost model read each op's declared facts (`OpFacts`) instead of tables of
their own. A pointwise op declared only here is grouped, lowered and priced
without an edit to any of them."""

from __future__ import annotations

from typing import ClassVar

import pytest
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.parser import Parser
from xdsl.traits import Pure

from optimus_ir.translate.context import make_context
from optimus_ir.analysis.cost_model import KERNEL_KINDS, default_cost_model, measured_kind
from optimus_ir.dialects import batch as B
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import OpFacts, facts_of, unary_facts
from optimus_ir.kernels.programs import ACTIVATIONS, STEPS, parse_program
from optimus_ir.lowering.lower_batch import LowerBatch
from optimus_ir.lowering.lower_batch_kernels import MULTI_POINTWISE, activation_of
from optimus_ir.passes.batch_fusion import BatchFusion, _member_kernel, fusion_kind
from optimus_ir.foundation.traits import Elementwise


@irdl_op_definition
class ErfLikeOp(T.UnaryPointwiseOp):
    """A unary pointwise op declared only in this test: erf under another name."""

    name = "torch.issue20_erf_like"
    traits = traits_def(Pure(), Elementwise(layout_exact=False))
    FACTS: ClassVar[OpFacts] = unary_facts(
        "erf", functions=("torch.erf",), cost="transcendental", kernel="erf",
    )


def _towers(op_name: str, members: int = 4) -> str:
    """`members` calls of `op_name` on the pieces of one split."""
    pieces = ", ".join(["8"] * members)
    names = [f"%p{i}" for i in range(members)]
    lines = [
        "fx.graph @g {",
        f'  %x = fx.placeholder "x" : tensor<4x{8 * members}xf32>',
        f"  {', '.join(names)} = torch.split %x sections [{pieces}] dim 1 : "
        f"tensor<4x{8 * members}xf32> -> {', '.join(['tensor<4x8xf32>'] * members)}",
    ]
    for i in range(members):
        lines.append(f"  %y{i} = {op_name} %p{i} : tensor<4x8xf32> -> tensor<4x8xf32>")
    lines.append(f"  fx.output ({', '.join(f'%y{i}' for i in range(members))})")
    lines.append("}")
    return "\n".join(lines)


def _module(text: str):
    ctx = make_context()
    ctx.load_op(ErfLikeOp)
    return ctx, Parser(ctx, text).parse_module()


def test_every_declared_pointwise_op_is_a_candidate_and_a_batch_pointwise_member() -> None:
    declared = [cls for cls in T.TORCH.operations
                if (facts_of(cls) or OpFacts()).fusion in B.POINTWISE_FUSION_KINDS]
    assert len(declared) >= 15
    for cls in declared:
        assert B.pointwise_op_class(cls.name) is cls
    # and nothing else is
    for cls in T.TORCH.operations:
        if cls not in declared:
            with pytest.raises(Exception, match="not a pointwise torch op"):
                B.pointwise_op_class(cls.name)


def test_every_declared_kernel_program_parses_and_every_cost_class_is_measured() -> None:
    for cls in T.TORCH.operations:
        facts = facts_of(cls)
        if facts is None:
            continue
        assert measured_kind(facts.cost) in KERNEL_KINDS, cls.name
        if isinstance(facts.kernel, str):
            if issubclass(cls, T.BinaryPointwiseOp):
                parse_program(f"{facts.kernel}(other)")
            else:
                parse_program(facts.kernel)
    assert measured_kind("binary", tensor_operands=1) == "pointwise"
    assert measured_kind("binary", tensor_operands=2) == "binary"


def test_an_op_declared_only_in_a_test_is_grouped_lowered_and_priced() -> None:
    ctx, module = _module(_towers(ErfLikeOp.name))
    members = [op for op in module.walk() if isinstance(op, ErfLikeOp)]
    assert fusion_kind(members[0]) == "pointwise"
    assert _member_kernel("pointwise", members[0]) == ("transcendental", 32.0)
    model = default_cost_model("cpu")
    assert model.kernel_seconds(*_member_kernel("pointwise", members[0])) > 0
    BatchFusion(cost_model="none").apply(ctx, module)
    module.verify()
    fused = [op for op in module.walk() if isinstance(op, B.PointwiseOp)]
    assert len(fused) == 1 and fused[0].fn.data == ErfLikeOp.name
    assert fused[0].fn_class() is ErfLikeOp
    assert not any(isinstance(op, ErfLikeOp) for op in module.walk())
    # The kernel lowering takes its program from the declaration.
    LowerBatch(kernels="triton").apply(ctx, module)
    module.verify()
    calls = [op for op in module.walk()
             if getattr(getattr(op, "target", None), "data", None) == MULTI_POINTWISE]
    assert len(calls) == 1
    assert '"erf"' in str(calls[0])


def test_the_torch_lowering_applies_the_declared_op_to_the_stack() -> None:
    ctx, module = _module(_towers(ErfLikeOp.name))
    BatchFusion(cost_model="none").apply(ctx, module)
    LowerBatch(kernels="torch").apply(ctx, module)
    module.verify()
    applied = [op for op in module.walk() if isinstance(op, ErfLikeOp)]
    assert len(applied) == 1 and applied[0].result.type.get_shape()[0] == 4  # type: ignore[union-attr]


@pytest.mark.parametrize("op_name, program", [
    ("torch.log", "log"), ("torch.relu", "relu"), ("torch.tanh", "tanh"),
])
def test_kernel_lowering_programs_come_from_the_facts(op_name: str, program: str) -> None:
    ctx, module = _module(_towers(op_name))
    BatchFusion(cost_model="none").apply(ctx, module)
    fused = [op for op in module.walk() if isinstance(op, B.PointwiseOp)]
    assert len(fused) == 1
    assert (activation_of(fused[0]) is not None) == (program in ACTIVATIONS)
    LowerBatch(kernels="triton").apply(ctx, module)
    calls = [op for op in module.walk()
             if getattr(getattr(op, "target", None), "data", None) == MULTI_POINTWISE]
    assert len(calls) == 1 and f'"{program}"' in str(calls[0])


def test_epilogue_activations_are_the_table_s() -> None:
    assert set(ACTIVATIONS) == {"none"} | {s.name for s in STEPS if s.epilogue}


def test_declared_kernel_functions_choose_by_properties() -> None:
    from xdsl.dialects.builtin import FloatAttr, IntAttr, StringAttr, f64

    def step(cls, **props):
        return facts_of(cls).kernel_step(props)

    assert step(T.GeluOp) == "gelu"
    assert step(T.GeluOp, approximate=StringAttr("tanh")) == "gelu_tanh"
    assert step(T.AddOp, alpha=IntAttr(1)) == "add"
    assert step(T.SubOp, alpha=IntAttr(2)) is None
    assert step(T.MulOp) == "mul"
    assert step(T.DivOp, rounding_mode=StringAttr("none")) == "div"
    assert step(T.DivOp, rounding_mode=StringAttr("floor")) is None
    assert step(T.ClampOp, min=IntAttr(-1)) == "maximum(-1.0)"
    assert step(T.ClampOp, max=FloatAttr(float("inf"), f64)) is None
    assert step(T.NanToNumOp) is None
