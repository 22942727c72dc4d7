"""The alias facts answered without running the call (issue 36, compile time
at scale): a tuple's getitem from its type, and builtin ATen calls whose
schema returns fresh storage. Each shortcut must say what running the call
on fake tensors says."""

from __future__ import annotations

import pytest

from optimus_ir.analysis import alias_facts
from optimus_ir.dialects import fx
from optimus_ir.translate.parsing import parse_module

GRAPH = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x12xf32>
  %y = fx.placeholder "y" : tensor<4x12xf32>
  %p0 = fx.placeholder "p0" : tensor<4x12xf32>
  %p1 = fx.placeholder "p1" : tensor<4x12xf32>
  %p2 = fx.placeholder "p2" : tensor<4x12xf32>
  %p3 = fx.placeholder "p3" : tensor<4x12xf32>
  %p4 = fx.placeholder "p4" : tensor<4x12xf32>
  %p5 = fx.placeholder "p5" : tensor<4x12xf32>
  %p6 = fx.placeholder "p6" : tensor<4x12xf32>
  %p7 = fx.placeholder "p7" : tensor<4x12xf32>
  %p8 = fx.placeholder "p8" : tensor<4x12xf32>
  %p9 = fx.placeholder "p9" : tensor<4x12xf32>
  %p10 = fx.placeholder "p10" : tensor<4x12xf32>
  %p11 = fx.placeholder "p11" : tensor<4x12xf32>
  %p12 = fx.placeholder "p12" : tensor<4x12xf32>
  %p13 = fx.placeholder "p13" : tensor<4x12xf32>
  %p14 = fx.placeholder "p14" : tensor<4x12xf32>
  %p15 = fx.placeholder "p15" : tensor<4x12xf32>
  %t = fx.call_function "torch.split_with_sizes"(%x, [4, 4, 4], 1) : tuple<tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>>
  %a = fx.call_function "_operator.getitem"(%t, 0) : tensor<4x4xf32>
  %b = fx.call_function "_operator.getitem"(%t, -1) : tensor<4x4xf32>
  %u = fx.call_function "torch.unbind"(%x, 0) : tuple<tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>>
  %c = fx.call_function "_operator.getitem"(%u, 2) : tensor<12xf32>
  %s = fx.call_function "torch.stack"([%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15], 0) : tensor<16x4x12xf32>
  %k = fx.call_function "torch.cat"([%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15], 1) : tensor<4x192xf32>
  %narrow = fx.call_function "torch.cat"([%x, %y], 1) : tensor<4x24xf32>
  %r = fx.call_function "torch.relu"(%x) : tensor<4x12xf32>
  %d = fx.call_function "torch.dropout"(%x, 0.5, false) : tensor<4x12xf32>
  %i = fx.call_function "torch.relu_"(%x) : tensor<4x12xf32>
  %v = fx.call_function "torch.reshape"(%x, [48]) : tensor<48xf32>
  %o = fx.call_function "torch.ops.aten.add.Tensor"(%x, %y) : tensor<4x12xf32>
  fx.output (%a, %b, %c, %s, %k, %narrow, %r, %d, %i, %v, %o)
}
"""


def _calls() -> dict[str, fx.CallFunctionOp]:
    module = parse_module(GRAPH)
    return {op.results[0].name_hint: op for op in module.walk() if isinstance(op, fx.CallFunctionOp)}


@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_a_tuple_item_s_facts_are_what_running_it_shows(name: str) -> None:
    op = _calls()[name]
    assert alias_facts._tuple_item_facts(op, None) == alias_facts.run_call(op)


@pytest.mark.parametrize(
    ("name", "fresh"),
    [("s", True), ("k", True),
     # narrow calls are run (cheap), whatever their schema
     ("narrow", False), ("r", False), ("o", False),
     # composite (eval dropout returns its input), in place, a possible view
     ("d", False), ("i", False), ("v", False), ("t", False)],
)
def test_schema_freshness_agrees_with_running_the_call(name: str, fresh: bool) -> None:
    op = _calls()[name]
    assert alias_facts.fresh_by_schema(op) is fresh
    if fresh:  # never claims more than a run shows
        assert alias_facts.run_call(op).fresh
