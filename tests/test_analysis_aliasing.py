"""optimus_ir.analysis.aliasing: alias classes, mutation, outputs -- the
walking queries and `AliasAnalysis` (built once, kept up to date by a
rewriter listener) on hand-built IR."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from optimus_ir.analysis import (
    AliasAnalysis,
    alias_class,
    alias_roots,
    can_forward_as_alias,
    class_is_mutated,
    is_graph_input,
    is_graph_input_view,
    is_join_op,
    is_view_op,
    may_alias_operands,
    may_be_mutated,
    may_write_operands,
    reaches_output,
    stride_sensitive,
    view_closure,
)
from optimus_ir.translate.parsing import parse_module
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as t
from optimus_ir.foundation.rewriting import apply_patterns

GRAPH = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a, %b = torch.split %y sections [4, 4] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %at = torch.transpose %a dim0 0 dim1 1 : tensor<4x4xf32> -> tensor<4x4xf32>
  %m = fx.call_method "add_"(%b, 1) : tensor<4x4xf32>
  %k = torch.cat %at, %b dim 1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  %kv = torch.unsqueeze %k dim 0 : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xs = torch.slice %x dim 0 start 0 end 2 : tensor<4x8xf32> -> tensor<2x8xf32>
  %v = torch.view %xs shape [16] : tensor<2x8xf32> -> tensor<16xf32>
  %r = torch.relu %k : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%kv, %r, %v)
}
"""


def _parse(text: str = GRAPH):
    module = parse_module(text)
    values: dict[str, SSAValue] = {}
    for op in module.walk():
        for r in op.results:
            if r.name_hint:
                values[r.name_hint] = r
    return module, values


def test_op_class_predicates() -> None:
    _, v = _parse()
    assert is_view_op(v["a"].owner) and is_view_op(v["at"].owner)
    assert not is_view_op(v["y"].owner) and not is_view_op(v["k"].owner)
    assert is_join_op(v["k"].owner)
    assert may_alias_operands(v["m"].owner)  # add_ returns self
    assert may_write_operands(v["m"].owner)
    assert not may_write_operands(v["k"].owner) and not may_alias_operands(v["k"].owner)


def test_alias_class_follows_views_up_and_down() -> None:
    _, v = _parse()
    cls = alias_class(v["a"])
    assert {v["y"], v["a"], v["b"], v["at"], v["m"]} <= cls
    assert v["k"] not in cls and v["x"] not in cls
    assert view_closure(v["y"]) >= {v["a"], v["b"], v["at"]}
    assert view_closure(v["a"]) == {v["a"], v["at"]}
    assert alias_class(v["k"]) == {v["k"], v["kv"]}
    assert alias_roots(v["at"]) == {v["y"]}
    assert is_graph_input(v["x"]) and not is_graph_input(v["xs"])
    assert is_graph_input_view(v["v"]) and not is_graph_input_view(v["at"])


def test_mutation_and_outputs_walked() -> None:
    _, v = _parse()
    assert may_be_mutated(v["a"])  # a sibling is written in place
    assert not may_be_mutated(v["k"])
    assert class_is_mutated({v["b"]}) and not class_is_mutated({v["a"]})
    assert reaches_output(alias_class(v["k"]))
    assert not reaches_output(alias_class(v["y"]))
    assert stride_sensitive({v["xs"]}) and not stride_sensitive({v["k"]})


def test_alias_analysis_matches_walked_classes() -> None:
    module, v = _parse()
    aliases = AliasAnalysis(module)
    for value in v.values():
        walked = alias_class(value)
        assert walked <= set(aliases.members(value))
        assert aliases.is_mutated(value) == class_is_mutated(walked)
        assert aliases.reaches_output(value) == reaches_output(walked)
    assert aliases.same_class(v["a"], v["y"]) and not aliases.same_class(v["k"], v["y"])
    assert aliases.same_class(v["v"], v["x"])


def test_can_forward_as_alias_same_answer_with_analysis() -> None:
    module, v = _parse()
    aliases = AliasAnalysis(module)
    for fresh, source in [("k", "y"), ("r", "x"), ("k", "x"), ("kv", "y")]:
        for whole in (False, True):
            walked = can_forward_as_alias(v[fresh], v[source], whole=whole)
            fast = can_forward_as_alias(v[fresh], v[source], whole=whole, aliases=aliases)
            assert walked == fast, (fresh, source, whole)


class _ReplaceOutput(RewritePattern):
    """Test pattern: the returned `%v` is replaced by `%r` (a fresh value)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, t.ViewOp) and op.result.first_use is not None:
            relu = next(o for o in op.parent.ops if isinstance(o, t.ReluOp))  # type: ignore[union-attr]
            rewriter.replace_all_uses_with(op.result, relu.result)


def test_alias_analysis_kept_up_to_date_by_listener() -> None:
    module, v = _parse()
    aliases = AliasAnalysis(module)
    assert aliases.reaches_output(v["x"])  # through %v
    assert not aliases.same_class(v["r"], v["k"])
    apply_patterns(module, _ReplaceOutput(), listeners=[aliases.listener()])
    assert aliases.reaches_output(v["r"])
    assert not aliases.reaches_output(v["x"])  # %v no longer returned
    # a new view of a fresh value joins its class
    y = v["y"]
    r = v["r"]
    block = y.owner.parent  # type: ignore[union-attr]

    class _ViewOfR(RewritePattern):
        def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
            if op is r.owner and not any(isinstance(u.operation, t.UnsqueezeOp) for u in r.uses):
                rewriter.insert(t.UnsqueezeOp(r, 0))

    assert not aliases.same_class(r, v["k"])
    apply_patterns(module, _ViewOfR(), listeners=[aliases.listener()])
    new_view = next(u.operation for u in r.uses if isinstance(u.operation, t.UnsqueezeOp))
    assert aliases.same_class(new_view.results[0], r)
    assert new_view.parent is block


def test_alias_analysis_sees_a_write_moved_onto_a_value() -> None:
    module, v = _parse(
        """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32>
  %k = torch.relu %x : tensor<4xf32> -> tensor<4xf32>
  %kv = torch.unsqueeze %k dim 0 : tensor<4xf32> -> tensor<1x4xf32>
  %p = torch.neg %x : tensor<4xf32> -> tensor<4xf32>
  %m = fx.call_method "add_"(%p, 1) : tensor<4xf32>
  fx.output (%kv, %m)
}
"""
    )
    aliases = AliasAnalysis(module)
    assert aliases.is_mutated(v["p"]) and not aliases.is_mutated(v["kv"])

    class _WriteIntoK(RewritePattern):
        def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
            if isinstance(op, t.NegOp) and op.result.first_use is not None:
                rewriter.replace_all_uses_with(op.result, v["k"])

    apply_patterns(module, _WriteIntoK(), listeners=[aliases.listener()])
    assert aliases.is_mutated(v["kv"])  # a view of the value now written
    assert class_is_mutated(alias_class(v["kv"]))
