"""optimus_ir.analysis.layout: strides a value provably has, compared with
what torch computes, and the layout predicates, on hand-built IR."""

from __future__ import annotations

import pytest
import torch
from xdsl.ir import SSAValue

from optimus_ir.analysis import (
    contiguous_part,
    contiguous_strides,
    has_contiguous_result,
    is_elementwise_op,
    is_layout_exact_elementwise,
    known_contiguous,
    layout_insensitive,
    same_layout,
    strides_of,
    view_strides,
)
from optimus_ir.translate.parsing import parse_module

GRAPH = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<3x4x6xf32>
  %w = fx.placeholder "w" : tensor<6x6xf32>
  %s = torch.slice %x dim 2 start 0 end 6 step 2 : tensor<3x4x6xf32> -> tensor<3x4x3xf32>
  %p = torch.permute %x dims [2, 0, 1] : tensor<3x4x6xf32> -> tensor<6x3x4xf32>
  %t = torch.transpose %x dim0 0 dim1 1 : tensor<3x4x6xf32> -> tensor<4x3x6xf32>
  %e = torch.exp %t : tensor<4x3x6xf32> -> tensor<4x3x6xf32>
  %q = torch.exp %x : tensor<3x4x6xf32> -> tensor<3x4x6xf32>
  %h, %i = torch.split %x sections [1, 2] dim 0 : tensor<3x4x6xf32> -> tensor<1x4x6xf32>, tensor<2x4x6xf32>
  %u = torch.unsqueeze %h dim 0 : tensor<1x4x6xf32> -> tensor<1x1x4x6xf32>
  %m = torch.matmul %p, %p : tensor<6x3x4xf32>, tensor<6x3x4xf32> -> tensor<6x3x4xf32>
  %r = torch.relu %t : tensor<4x3x6xf32> -> tensor<4x3x6xf32>
  %k = torch.cat %r, %r dim 0 : tensor<4x3x6xf32>, tensor<4x3x6xf32> -> tensor<8x3x6xf32>
  %n = torch.sum %t dims [0] : tensor<4x3x6xf32> -> tensor<3x6xf32>
  fx.output (%s, %e, %q, %i, %u, %m, %k, %n, %w)
}
"""


@pytest.fixture(scope="module")
def v() -> dict[str, SSAValue]:
    module = parse_module(GRAPH)
    return {r.name_hint: r for op in module.walk() for r in op.results if r.name_hint}


def test_strides_match_torch(v) -> None:
    x = torch.randn(3, 4, 6)
    expect = {
        "x": x.stride(),
        "s": x[:, :, 0:6:2].stride(),
        "p": x.permute(2, 0, 1).stride(),
        "t": x.transpose(0, 1).stride(),
        "h": x[0:1].stride(),
        "i": x[1:3].stride(),
        "q": torch.exp(x).stride(),
        "k": torch.cat([x.transpose(0, 1)] * 2).stride(),
    }
    for name, strides in expect.items():
        assert strides_of(v[name]) == strides, name


def test_unknown_and_contiguous(v) -> None:
    assert strides_of(v["e"]) is None  # pointwise of a strided operand: unknown
    assert known_contiguous(v["m"]) and known_contiguous(v["n"])
    assert known_contiguous(v["i"]) and known_contiguous(v["u"])
    assert not known_contiguous(v["p"]) and not known_contiguous(v["s"])
    assert same_layout(v["x"], v["q"]) and not same_layout(v["t"], v["e"])
    assert contiguous_part(v["x"], 0) and not contiguous_part(v["x"], 1)


def test_layout_insensitive(v) -> None:
    assert layout_insensitive(v["r"])  # only a cat, then the output
    assert not layout_insensitive(v["t"])  # summed
    assert layout_insensitive(v["s"])  # returned


def test_op_class_predicates(v) -> None:
    assert has_contiguous_result(v["m"].owner) and has_contiguous_result(v["n"].owner)
    assert not has_contiguous_result(v["r"].owner)
    assert is_elementwise_op(v["r"].owner) and is_layout_exact_elementwise(v["r"].owner)
    assert not is_elementwise_op(v["k"].owner)


@pytest.mark.parametrize(
    "sizes,view", [((4, 6), (24,)), ((4, 6), (2, 2, 6)), ((2, 3, 4), (6, 4)), ((4, 6), (6, 4))]
)
def test_view_strides_like_torch(sizes, view) -> None:
    x = torch.randn(*sizes)
    assert view_strides(sizes, contiguous_strides(sizes), view) == x.view(*view).stride()
    tx = x.t() if len(sizes) == 2 else x.transpose(0, 1)
    try:
        want = tx.view(*view).stride()
    except RuntimeError:
        want = None
    assert view_strides(tuple(tx.shape), tx.stride(), view) == want


FX_SPLIT = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %t = fx.call_function "torch.transpose"(%x, 0, 1) : tensor<6x4xf32>
  %pieces = fx.call_function "torch.split_with_sizes"(%t, [2, 4], 0) : tuple<tensor<2x4xf32>, tensor<4x4xf32>>
  %a = fx.call_function "_operator.getitem"(%pieces, 1) : tensor<4x4xf32>
  %cols = fx.call_function "torch.split_with_sizes"(%x, [1, 5], 1) : tuple<tensor<4x1xf32>, tensor<4x5xf32>>
  %b = fx.call_function "_operator.getitem"(%cols, 1) : tensor<4x5xf32>
  %rows = fx.call_function "_operator.getitem"(%x, (slice(1, 3, 1),)) : tensor<2x6xf32>
  fx.output (%a, %b, %rows)
}
"""


def test_pieces_of_a_lowered_split_keep_its_input_strides() -> None:
    """A getitem of `torch.split_with_sizes`'s tuple (what `lower-to-fx`
    makes of a split) views the input with its strides, as torch says;
    a getitem of a tensor still gets torch's strides for its index."""
    graph = next(iter(parse_module(FX_SPLIT).ops))
    values = {r.name_hint: r for op in graph.body.block.ops for r in op.results}
    x = torch.randn(4, 6)
    want = {
        "a": torch.split_with_sizes(x.t(), [2, 4], 0)[1].stride(),
        "b": torch.split_with_sizes(x, [1, 5], 1)[1].stride(),
        "rows": x[1:3].stride(),
    }
    for name, strides in want.items():
        assert strides_of(values[name]) == strides, name
    assert not known_contiguous(values["a"]) and not known_contiguous(values["b"])
