"""How the torch dialect's op families declare their ops (issue 35): each op
gives only its distinct facts, as class keywords of its family's base, and
the builders take Python values through what the op declares (its torch
arguments, its type function's arguments).

* the class keywords make the op a class body would have made: its name,
  traits, facts, properties and format;
* a declaration that misses a fact, or a builder call with a wrong
  argument, fails with a TypeError naming the class, as a Python call does;
* the builders set the same properties the hand-written ones did.
"""

from __future__ import annotations

import inspect
from typing import get_type_hints

import pytest
from xdsl.dialects.builtin import (
    ArrayAttr,
    ArrayOfConstraint,
    Float32Type,
    FloatAttr,
    IntAttr,
    StringAttr,
)
from xdsl.irdl import BaseAttr, irdl_op_definition
from xdsl.traits import Pure

from optimus_ir.dialects import batch as B
from optimus_ir.dialects import torch as T
from optimus_ir.dialects.fx import PlaceholderOp, float_literal
from optimus_ir.dialects.torch import pointwise, views
from optimus_ir.dialects.torch.facts import declared_facts, facts_of
from optimus_ir.foundation.traits import Elementwise, ViewLike
from optimus_ir.foundation.types import tensor_type

F32 = Float32Type()


def arg(*shape: int) -> PlaceholderOp:
    return PlaceholderOp("x", tensor_type(shape, F32, "cpu"))


VIEW_OPS = [
    T.SqueezeOp, T.UnsqueezeOp, T.FlattenOp, T.UnflattenOp, T.PermuteOp,
    T.TransposeOp, T.MovedimOp, T.SliceOp, T.UnfoldOp, T.SelectOp,
]
"""The view ops declared by `torch_name`, `relation` and `infer`."""


# ---------------------------------------------------------------------------
# What the class keywords declare
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", VIEW_OPS, ids=lambda op: op.name)
def test_a_view_op_has_its_type_function_arguments_as_properties(op: type) -> None:
    infer = op.INFER
    hints = get_type_hints(infer)
    parameters = list(inspect.signature(infer).parameters.values())[1:]
    definitions = op.get_irdl_definition().properties
    assert [name for name, _ in op.FORMAT] == [p.name for p in parameters]
    assert set(definitions) == {p.name for p in parameters}
    for p in parameters:
        constraint = definitions[p.name].constr
        assert (definitions[p.name].default_value is None) == (p.default is p.empty), p.name
        if hints[p.name] is int:
            assert constraint == BaseAttr(IntAttr), p.name
        else:
            assert isinstance(constraint, ArrayOfConstraint), p.name
    assert op.get_trait(ViewLike) is not None and op.has_trait(Pure)
    assert op.name == f"torch.{op.INFER.__name__.removeprefix('infer_').removesuffix('_type')}"


def test_the_slice_step_default_comes_from_the_type_function() -> None:
    assert T.SliceOp.get_irdl_definition().properties["step"].default_value == IntAttr(1)
    op = T.SliceOp(arg(8, 6), 1, 0, 4)
    assert op.properties["step"] == IntAttr(1)
    assert op.result.type.get_shape() == (8, 4)


def test_pointwise_keywords_make_name_traits_and_facts() -> None:
    assert T.ExpOp.name == "torch.exp"
    assert T.ExpOp.get_trait(Elementwise).layout_exact is False
    assert T.ReluOp.get_trait(Elementwise).layout_exact is True
    assert T.ExpOp.has_trait(Pure)
    assert facts_of(T.ExpOp).kernel == "exp" and facts_of(T.ExpOp).cost == "transcendental"
    assert declared_facts("torch.exp") is facts_of(T.ExpOp)
    # add/sub are exact only with alpha == 1: a function of the op
    assert callable(T.AddOp.get_trait(Elementwise).layout_exact)
    assert facts_of(T.AddOp).fusion == "binary-pointwise"
    assert facts_of(T.SubOp).spellings.custom == ("torch.sub", "torch.rsub", "operator.sub")


def test_nn_activation_spells_the_functional_and_module_forms() -> None:
    spelled = facts_of(T.HardswishOp).spellings
    assert spelled.functions == ("torch.nn.functional.hardswish", "torch._C._nn.hardswish")
    assert spelled.methods == ()
    assert spelled.modules == ("torch.nn.modules.activation.Hardswish",)
    assert spelled.aten == ("hardswish.default",)
    assert facts_of(T.HardswishOp).lowers_to == "torch.nn.functional.hardswish"
    hardtanh = facts_of(T.HardtanhOp).spellings.modules
    assert hardtanh == ("torch.nn.modules.activation.Hardtanh", "torch.nn.modules.activation.ReLU6")
    # an explicit function list is kept, and lowers to its first entry
    assert facts_of(T.SoftplusOp).lowers_to == "torch._C._nn.softplus"


def test_a_declaration_missing_a_fact_is_refused() -> None:
    with pytest.raises(TypeError, match="layout_exact"):
        class _NoExactness(pointwise._PlainUnaryOp, torch_name="nope"):
            """Declares no `layout_exact`."""
    with pytest.raises(TypeError, match="without a torch_name"):
        class _NoName(pointwise._PlainUnaryOp, layout_exact=True, kernel="relu"):
            """Declares facts of no op."""
    with pytest.raises(TypeError, match="relation and infer"):
        class _NoRelation(views._ViewLikeOp, torch_name="nope", infer=T.infer_permute_type):
            """Declares no relation."""


def test_a_keyword_declared_op_in_a_test_is_a_full_op() -> None:
    """A unary op declared outside the dialect by keywords alone is an op
    xDSL accepts, registered by name."""

    @irdl_op_definition
    class Issue35ExpLikeOp(
        pointwise._PlainUnaryOp, torch_name="issue35_exp_like", layout_exact=False,
        functions=("torch.exp",), cost="transcendental", kernel="exp",
    ):
        """`torch.exp` under another name."""

    op = Issue35ExpLikeOp(arg(4))
    op.verify()
    assert op.name == "torch.issue35_exp_like"
    assert declared_facts("torch.issue35_exp_like").kernel == "exp"


# ---------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------


def test_view_builders_take_their_properties_positionally_or_by_name() -> None:
    x = arg(2, 3, 4)
    assert T.TransposeOp(x, 0, 2).properties == T.TransposeOp(x, dim1=2, dim0=0).properties
    assert T.TransposeOp(x, 0, 2).result.type.get_shape() == (4, 3, 2)
    assert T.PermuteOp(x, [2, 0, 1]).properties["dims"] == ArrayAttr([IntAttr(2), IntAttr(0), IntAttr(1)])
    assert T.MovedimOp(x, source=[0], destination=[2]).result.type.get_shape() == (3, 4, 2)
    assert T.UnflattenOp(x, 2, [2, -1]).result.type.get_shape() == (2, 3, 2, 2)
    assert T.SelectOp(x, 1, 2).result.type.get_shape() == (2, 4)
    assert T.UnfoldOp(x, 2, 2, 2).result.type.get_shape() == (2, 3, 2, 2)
    assert T.SqueezeOp(arg(1, 3, 1), [2, 0]).properties["dims"] == ArrayAttr([IntAttr(0), IntAttr(2)])
    assert T.FlattenOp(x, 1).result.type.get_shape() == (2, 12)


def test_view_builders_refuse_wrong_arguments() -> None:
    x = arg(2, 3)
    with pytest.raises(TypeError, match="TransposeOp.*missing argument 'dim1'"):
        T.TransposeOp(x, 0)
    with pytest.raises(TypeError, match="TransposeOp.*unexpected keyword argument 'dim'"):
        T.TransposeOp(x, 0, 1, dim=1)
    with pytest.raises(TypeError, match="TransposeOp.*takes 2 arguments"):
        T.TransposeOp(x, 0, 1, 1)
    with pytest.raises(TypeError, match="multiple values for argument 'dim0'"):
        T.TransposeOp(x, 0, 1, dim0=1)


def test_unary_builders_bind_the_declared_arguments() -> None:
    x = arg(4)
    softplus = T.SoftplusOp(x, 2.0)
    assert softplus.properties == {"beta": float_literal(2.0), "threshold": float_literal(20.0)}
    assert T.LeakyReluOp(x, negative_slope=0.2).negative_slope == float_literal(0.2)
    assert T.GeluOp(x).properties == {"approximate": StringAttr("none")}
    assert T.GeluOp(x, "tanh").approximate == StringAttr("tanh")
    clamp = T.ClampOp(x, max=3)
    assert "min" not in clamp.properties and clamp.properties["max"] == IntAttr(3)
    nan_to_num = T.NanToNumOp(x, 0.0, posinf=1e30)
    assert isinstance(nan_to_num.properties["nan"], FloatAttr)
    assert nan_to_num.properties["posinf"] == float_literal(1e30)
    assert "neginf" not in nan_to_num.properties
    assert T.TanhOp(x).properties == {}
    # the attributes themselves, as the raise binders pass them
    hardtanh = T.HardtanhOp(x, properties={"min_val": float_literal(0.0), "max_val": float_literal(6.0)})
    assert hardtanh.max_val == float_literal(6.0)
    for op in (softplus, clamp, nan_to_num, hardtanh):
        op.verify()


def test_unary_builders_refuse_wrong_arguments() -> None:
    x = arg(4)
    with pytest.raises(TypeError, match="TanhOp.*takes 0 arguments"):
        T.TanhOp(x, 1.0)
    with pytest.raises(TypeError, match="ClampOp.*unexpected keyword argument 'low'"):
        T.ClampOp(x, low=0)
    with pytest.raises(TypeError, match="arguments or properties, not both"):
        T.SoftplusOp(x, 2.0, properties={})


def test_binary_builders_take_alpha_and_rounding_mode_where_the_op_has_them() -> None:
    x = arg(4)
    assert T.AddOp(x, x).properties["alpha"] == IntAttr(1)
    assert T.SubOp(x, x, alpha=0.5).alpha == float_literal(0.5)
    assert T.DivOp(x, x).rounding_mode == StringAttr("none")
    assert T.DivOp(x, x, rounding_mode=None).rounding_mode == StringAttr("none")
    assert T.DivOp(x, 2, rounding_mode="floor").rounding_mode == StringAttr("floor")
    assert "alpha" not in T.MulOp(x, 2.0).properties
    with pytest.raises(TypeError, match="MulOp.*unexpected keyword argument 'alpha'"):
        T.MulOp(x, x, alpha=2)
    with pytest.raises(TypeError, match="AddOp.*unexpected keyword argument 'rounding_mode'"):
        T.AddOp(x, x, rounding_mode="floor")


def test_torch_and_batch_layer_norm_share_their_declaration() -> None:
    from optimus_ir.dialects.torch.normalization import LayerNormLikeOp

    for op in (T.LayerNormOp, B.LayerNormOp):
        assert issubclass(op, LayerNormLikeOp)
        assert op.FORMAT == LayerNormLikeOp.FORMAT
    assert not issubclass(B.LayerNormOp, T.LayerNormOp)
    x, w = arg(8, 16), arg(16)
    single = T.LayerNormOp(x, [16], w, eps=1e-6)
    assert single.result.type == x.results[0].type
    stacked, weights = arg(3, 8, 16), arg(3, 16)
    batched = B.LayerNormOp(stacked, [16], weights, eps=1e-6)
    batched.verify()
    assert batched.result.type == stacked.results[0].type
    assert batched.eps == single.eps == float_literal(1e-6)
