"""Regression tests for the bugs the generated-graph fuzzer found
(`tests/test_fuzz_pipeline.py`), one minimal graph per bug, each built by
hand with `torch.fx.Graph` and checked like the fuzzer checks
(`fx_graph_strategies.assert_optimized_matches`: optimize with differential
validation, then outputs, strides, aliasing and in-place writes against the
GraphModule itself).

Turning a new fuzzer failure into a test here:

1. Hypothesis prints the shrunk failing example: `program=FxProgram(...)`
   followed by `# --- builder ---`, Python source that rebuilds the graph
   (`owner`, `g`, one `g.call_function(...)` line per node, `gm`, `inputs`),
   then the graph's `gm.code`. Rerun it with the printed
   `@reproduce_failure(...)` / `--hypothesis-seed=...` if needed.
2. Paste the builder source into a new `test_...` function below, drop the
   nodes the failure does not need (rerun to confirm it still fails), and
   end with `assert_optimized_matches(gm, inputs, exact=...)` (`exact=True`
   when the graph only moves data, as the printed `data_movement_only` says).
3. Comment what broke and where it was fixed; add a lit case to the pass's
   file in tests/lit/passes when the bug is in a pass.
"""

from __future__ import annotations

import operator

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import fx_graph_strategies
from fx_graph_strategies import assert_optimized_matches


def test_abandoned_split_stack_rewrite_leaves_no_dangling_uses() -> None:
    # split-cat-simplify's split -> stack-to-view pattern built its view ops,
    # then refused the rewrite (alias check) without dropping them: the
    # detached ops still counted as uses of the layer_norm, so dce kept it
    # and lower-to-fx crashed erasing it ("Attempting to delete SSA value
    # that still has uses"). Fixed in passes/split_cat_views.py (_abandon).
    owner = nn.Module()
    g = torch.fx.Graph()
    x = g.placeholder("x")
    layer_norm = g.call_function(F.layer_norm, (x, [2]), {"eps": 1e-05})
    split = g.call_function(torch.split, (layer_norm, [1, 1]), {"dim": 0})
    a = g.call_function(operator.getitem, (split, 0))
    b = g.call_function(operator.getitem, (split, 1))
    stack = g.call_function(torch.stack, ([a, b], 2))
    g.call_function(F.gelu, (stack,))
    g.output((x,))
    gm = torch.fx.GraphModule(owner, g)
    inputs = [fx_graph_strategies.tensor((2, 2), torch.float32, seed=0)]
    assert_optimized_matches(gm, inputs, exact=False)


def test_returned_rank0_fused_members_get_a_copy_that_verifies() -> None:
    # batch-fusion gives every returned member a fresh copy (`cat([x])`, so
    # that outputs do not share the fused tensor's storage); on rank-0
    # members (pieces of an unbind of a 1-d tensor) that cat did not verify
    # and a VerifyException escaped from optimize(). Fixed in
    # passes/batch_fusion/rewrite.py (_fresh_copy).
    owner = nn.Module()
    g = torch.fx.Graph()
    x = g.placeholder("x")
    unbind = g.call_method("unbind", (x, 0))
    pieces = [g.call_function(operator.getitem, (unbind, i)) for i in (3, 4, 5)]
    relus = [g.call_function(torch.relu, (p,)) for p in pieces]
    g.output(tuple(relus))
    gm = torch.fx.GraphModule(owner, g)
    inputs = [fx_graph_strategies.tensor((6,), torch.float32, seed=0)]
    assert_optimized_matches(gm, inputs, exact=False)


def test_returned_whole_piece_after_an_in_place_op_stays_a_new_view() -> None:
    # x.add_(2) returns x itself; split-whole forwarded the returned whole
    # piece of that result to it, so the optimized graph returned the
    # caller's input object where the graph returns a new view of it
    # (validation: "aliasing changed: output #0 is input #0 itself").
    # Fixed in optimus_ir/analysis/aliasing.py (may_be_a_caller_object: an
    # fx op's result may be the caller's tensor object).
    owner = nn.Module()
    g = torch.fx.Graph()
    value = g.call_method("add_", (g.placeholder("x0"), 2))
    for _ in range(2):
        split = g.call_function(torch.split, (value, 1), {"dim": 0})
        value = g.call_function(operator.getitem, (split, -1))
    g.output((value,))
    gm = torch.fx.GraphModule(owner, g)
    inputs = [fx_graph_strategies.tensor((1,), torch.float32, seed=0, special=True)]
    assert_optimized_matches(gm, inputs, exact=False)


def test_fused_bf16_linears_compare_at_the_scale_of_their_terms() -> None:
    # Eight bf16 linears over split pieces, fused into one bmm: one output
    # element where terms of size ~1 cancel to ~0.01 came out 8.5e-4 away
    # (7% of that element, a few bf16 units at the terms' scale), beyond
    # a fixed rtol/atol. Not a wrong result: half-precision sums round at
    # the scale of their terms. Fixed in the comparison
    # (optimus_ir.pipeline.validation.tolerance_for: fp16/bf16 atol scales with the
    # output's magnitude), which validation and this harness share.
    owner = nn.Module()
    g = torch.fx.Graph()
    x0 = g.placeholder("x0")
    split = g.call_function(torch.split, (x0, 1), {"dim": -2})
    linears = []
    for i in range(8):
        piece = g.call_function(operator.getitem, (split, i - 8))
        for k, shape in enumerate(((1, 8), (1,))):
            name = f"p{2 * i + 1 + k}"
            owner.register_parameter(
                name,
                fx_graph_strategies.parameter(
                    shape, torch.bfloat16, seed=413 + 10 * i + k, requires_grad=False
                ),
            )
        weight, bias = g.get_attr(f"p{2 * i + 1}"), g.get_attr(f"p{2 * i + 2}")
        linears.append(g.call_function(F.linear, (piece, weight, bias)))
    g.output((x0, linears[1]))
    gm = torch.fx.GraphModule(owner, g)
    inputs = [fx_graph_strategies.tensor((7, 8, 8), torch.bfloat16, seed=16964, special=True)]
    assert_optimized_matches(gm, inputs, exact=False)


def test_strides_of_size_one_dims_are_not_compared() -> None:
    # The optimized graph returned x0.permute(0, 1, 3, 2).unsqueeze(0)
    # (through split/stack/split plumbing that folds away) with stride 1
    # instead of 2 on its last dim, which has size 1: no element is ever
    # reached through that stride, and torch treats it as arbitrary. The
    # harness compared it (fuzzer finding 5, a harness false positive;
    # fixed in fx_graph_check._layout).
    owner = nn.Module()
    g = torch.fx.Graph()
    x0 = g.placeholder("x0")
    permute = g.call_function(torch.permute, (x0, (0, 1, 3, 2)))
    split = g.call_function(torch.split, (permute, 1), {"dim": 0})
    piece = g.call_function(operator.getitem, (split, -1))
    stack = g.call_function(torch.stack, ([piece],), {"dim": 0})
    split_1 = g.call_function(torch.split, (stack, 1), {"dim": 0})
    g.call_method("unbind", (g.call_function(operator.getitem, (split_1, -1)), 0))
    g.output((g.call_method("unsqueeze", (piece, 0)),))
    gm = torch.fx.GraphModule(owner, g)
    inputs = [fx_graph_strategies.tensor((1, 1, 1, 2), torch.float32, seed=0)]
    assert_optimized_matches(gm, inputs, exact=True)
