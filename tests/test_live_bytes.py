"""optimus_ir.analysis.live_bytes on hand-built graphs (exact byte counts),
and the memory budget's text (`optimus_ir.analysis.cost_model.parse_memory_budget`)
as the pass, the pipeline parser and `OptimizeOptions` take it."""

from __future__ import annotations

import math

import pytest
from xdsl.ir import SSAValue

from optimus_ir.analysis import live_bytes, tensor_bytes
from optimus_ir.analysis.symbolic_dims import SymbolicDims
from optimus_ir.analysis.cost_model import DEFAULT_MEMORY_BUDGET, MemoryBudget, parse_memory_budget
from optimus_ir.dialects import fx
from optimus_ir.options import OptimizeOptions
from optimus_ir.translate.parsing import parse_module
from optimus_ir.pipeline import PipelineError, parse_pipeline, pipeline_text


def _block(text: str):
    module = parse_module(text)
    graph = next(op for op in module.ops if isinstance(op, fx.GraphOp))
    values: dict[str, SSAValue] = {}
    for op in graph.block.ops:
        for r in op.results:
            if r.name_hint:
                values[r.name_hint] = r
    return graph.block, values


CHAIN = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %w = fx.get_attr "w" : tensor<8x8xf32>
  %a = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %b = torch.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %c = torch.sigmoid %b : tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output (%c)
}
"""


def test_a_chain_holds_an_op_s_input_and_output() -> None:
    block, v = _block(CHAIN)
    result = live_bytes(block)
    # x, w: inputs and parameters, not counted; each 4x8 f32 result is 128 B,
    # held from its op to its last reader; c, returned, to the end
    assert result.live == (0, 0, 128, 256, 256, 128)
    assert result.peak == 256 and result.peak_position == 3
    assert result.at(v["c"].owner) == 256
    assert result.held_at(v["a"], 3) and not result.held_at(v["a"], 4)
    assert result.held_at(v["c"], 5)


VIEWS = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %y = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a, %b = torch.split %y sections [4, 4] dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %r = torch.relu %a : tensor<4x4xf32> -> tensor<4x4xf32>
  %u = torch.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = torch.sigmoid %r : tensor<4x4xf32> -> tensor<4x4xf32>
  %t = torch.tanh %b : tensor<4x4xf32> -> tensor<4x4xf32>
  %xs = torch.slice %x dim 0 start 0 end 2 : tensor<4x8xf32> -> tensor<2x8xf32>
  fx.output (%s, %t, %xs)
}
"""


def test_views_keep_their_base_alive_and_allocate_nothing() -> None:
    block, v = _block(VIEWS)
    result = live_bytes(block)
    # y (128 B) lives until its last piece %b is read by %t (position 6);
    # the split and the slice of x allocate nothing; %u is never read:
    # held while its op runs only
    y, r, u, s, t = 128, 64, 128, 64, 64
    assert result.live == (0, y, y, y + r, y + r + u, y + r + s, y + s + t, s + t, s + t)
    assert result.peak == y + r + u
    assert result.peak_position == 4
    assert not result.held_at(v["y"], 7)


def test_symbolic_dims_count_at_their_example_size() -> None:
    block, v = _block("""
fx.graph @g {
  %x = fx.placeholder "x" symbols ["s0", ""] hints [10, 16] : tensor<?x16xf32>
  %z = fx.placeholder "z" symbols ["s0", ""] hints [10, 16] : tensor<?x16xf16>
  %y = torch.relu %x : tensor<?x16xf32> -> tensor<?x16xf32>
  %h = torch.relu %z : tensor<?x16xf16> -> tensor<?x16xf16>
  fx.output (%y, %h)
}
""")
    dims = SymbolicDims(block)
    assert tensor_bytes(v["y"], dims) == 10 * 16 * 4
    assert tensor_bytes(v["h"], dims) == 10 * 16 * 2
    assert tensor_bytes(v["y"]) == 64 * 16 * 4  # no hints: DEFAULT_SYMBOLIC_SIZE
    assert live_bytes(block).peak == 10 * 16 * 4 + 10 * 16 * 2


def test_the_walk_is_one_pass_over_a_large_block() -> None:
    lines = ['%x = fx.placeholder "x" : tensor<4x8xf32>']
    previous = "x"
    for i in range(3000):
        lines.append(f"%v{i} = torch.relu %{previous} : tensor<4x8xf32> -> tensor<4x8xf32>")
        previous = f"v{i}"
    lines.append(f"fx.output (%{previous})")
    block, _ = _block("fx.graph @g {\n" + "\n".join(lines) + "\n}")
    result = live_bytes(block)
    assert result.peak == 256 and len(result.live) == 3002


# --- the budget's text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ratio", "allowance"),
    [
        ("1.5x", 1.5, None),
        ("+50%", 1.5, None),
        ("2X", 2.0, None),
        (" 1.0 x ", 1.0, None),
        ("1.5x+1MiB", 1.5, 2**20),
        ("+25%+64KiB", 1.25, 2**16),
        ("64MiB", None, 64 * 2**20),
        ("1GiB", None, 2**30),
        ("500MB", None, 500 * 10**6),
        ("1048576", None, 2**20),
        (2.0, 2.0, None),
        (4096, None, 4096),
    ],
)
def test_budget_forms(text, ratio, allowance) -> None:
    budget = parse_memory_budget(text)
    assert budget == MemoryBudget(ratio=ratio, bytes=allowance)
    assert parse_memory_budget(budget.text()) == budget


def test_budget_limits_and_words() -> None:
    mib = 2**20
    assert parse_memory_budget("none").unlimited and parse_memory_budget("none").limit(mib) == math.inf
    assert parse_memory_budget("1.5x").limit(2 * mib) == 3 * mib
    assert parse_memory_budget("1.5x+1MiB").limit(2 * mib) == 4 * mib
    assert parse_memory_budget("64MiB").limit(2 * mib) == 64 * mib
    assert parse_memory_budget("1.5x").describe(2 * mib) == "budget 1.50x of the captured peak 2.00 MiB = 3.00 MiB"
    assert parse_memory_budget(DEFAULT_MEMORY_BUDGET).describe(2 * mib) == (
        "budget 1.50x of the captured peak 2.00 MiB + 1.00 MiB = 4.00 MiB"
    )
    assert parse_memory_budget("64MiB").describe(2 * mib) == "budget 64.00 MiB (the captured peak is 2.00 MiB)"


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("lots", "is not a budget: give a ratio over the captured graph's peak ('1.5x', '+50%')"),
        ("50%", "a percentage is over the captured peak: write '+50%', or '0.5x' for half of it"),
        ("0x", "the ratio must be positive"),
        ("0", "at least one byte"),
        ("-1", "is not a budget"),
        ("1.5x+", "is not a budget"),
        ("12 parsecs", "is not a budget"),
        (True, "is not a budget"),
        (0, "in bytes must be positive"),
        (-2.0, "ratio must be a positive finite number"),
        (float("nan"), "ratio must be a positive finite number"),
    ],
)
def test_bad_budgets_say_which_forms_there_are(bad, says) -> None:
    with pytest.raises(ValueError, match="memory budget") as error:
        parse_memory_budget(bad)
    assert says in str(error.value)


def test_the_pass_option_parses_once_and_is_refused_where_written() -> None:
    (fusion,) = parse_pipeline('batch-fusion{memory-budget="1.5x+1MiB"}')
    assert fusion.memory_budget == "1.5x+1MiB"
    (fusion,) = parse_pipeline("batch-fusion{memory-budget=2x}")
    assert parse_pipeline(pipeline_text([fusion]))[0].memory_budget == "2x"
    (fusion,) = parse_pipeline("batch-fusion{memory-budget=1048576}")
    assert fusion.memory_budget == 1048576
    with pytest.raises(PipelineError) as error:
        parse_pipeline('dce,batch-fusion{memory-budget="lots"}')
    message = error.value.format()
    assert "invalid options for pass 'batch-fusion': memory-budget: memory budget 'lots' is not a budget" in message
    assert error.value.column == 5


def test_the_knob_reaches_every_default_batch_fusion() -> None:
    assert OptimizeOptions().memory_budget == DEFAULT_MEMORY_BUDGET
    assert OptimizeOptions().pipeline_to_run() is None
    text = OptimizeOptions(memory_budget="2x").pipeline_to_run()
    assert 'batch-fusion{memory_budget="2x"}' in text
    assert "memory_budget=2.0" in OptimizeOptions(memory_budget=2.0).pipeline_to_run()
    # a pipeline that sets the option keeps it
    own = OptimizeOptions(pipeline='batch-fusion{memory-budget="3x"}', memory_budget="2x").pipeline_to_run()
    assert own == 'batch-fusion{memory_budget="3x"}'
    with pytest.raises(ValueError, match="optimus: option 'memory_budget': memory budget 'lots' is not a budget"):
        OptimizeOptions(memory_budget="lots")
