"""`optimus_ir.register_replacement` and the `user-replacements` pass.

End to end through `optimize()` (sigmoid(x) * x -> F.silu(x) on a small
module: ops counted, numerics compared), what must not be rewritten (an
escaping inner value, an in-place write in between, another dtype, symbolic
sizes, extra_check False), naming replacements in pipelines, bisection, and
the registration check's refusals with their messages.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import optimus_ir
from optimus_ir.foundation.diagnostics import collect_diagnostics
from optimus_ir.translate.importer import import_graph
from optimus_ir.translate.parsing import parse_module
from optimus_ir.passes.registry import DEFAULT_PIPELINE, DEFAULT_PIPELINE_STAGES, PASSES, get_pass_class
from optimus_ir.passes.user_replacements import ANY_LAYOUT, CONTIGUOUS, REPLACEMENTS, ReplacementMatch
from optimus_ir.pipeline import PipelineError, run_pipeline
from optimus_ir.replacements import (
    LAYOUT_KINDS,
    LayoutFinding,
    _layout_variant,
    check_layouts,
    unregister_replacement,
)

SILU = "sigmoid-mul-to-silu"


def sigmoid_mul(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * x


def silu(x: torch.Tensor) -> torch.Tensor:
    return F.silu(x)


@pytest.fixture
def clean() -> Iterator[None]:
    """Every replacement a test registers is gone after it."""
    before = set(REPLACEMENTS)
    yield
    for name in set(REPLACEMENTS) - before:
        unregister_replacement(name)


@pytest.fixture
def silu_registered(clean) -> None:
    optimus_ir.register_replacement(SILU, sigmoid_mul, silu, [torch.randn(4, 8)])


class TwoSwishes(nn.Module):
    """Linear -> x * sigmoid(x) twice (the way users write SiLU by hand)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        h = torch.sigmoid(h) * h
        g = self.b(h)
        return torch.sigmoid(g) * g + 1


def _calls(gm: torch.fx.GraphModule) -> list[object]:
    """The call targets, `reinplace`'s grad-guarded forms as what they stand for."""
    return [
        getattr(n.target, "optimus_out_of_place", n.target)
        for n in gm.graph.nodes
        if n.op in ("call_function", "call_method")
    ]


def _remarks(report) -> list[str]:
    return [d.message for d in report.remarks if d.message.startswith("user-replacements")]


# ---------------------------------------------------------------------------
# End to end
# ---------------------------------------------------------------------------


def test_silu_end_to_end_through_optimize(silu_registered) -> None:
    torch.manual_seed(0)
    model = TwoSwishes().eval()
    x = torch.randn(5, 8)
    expected = model(x)
    optimized = optimus_ir.optimize(model, (x,))
    calls = _calls(optimized)
    assert calls.count(F.silu) == 2
    assert torch.sigmoid not in calls and operator.mul not in calls
    torch.testing.assert_close(optimized(x), expected)
    other = torch.randn(5, 8) * 10
    torch.testing.assert_close(optimized(other), model(other))
    report = optimized.optimus_report
    assert _remarks(report) == [f"user-replacements: '{SILU}' applied"] * 2
    record = next(p for p in report.statistics.passes if p.name == "user-replacements")
    assert record.patterns[SILU].rewrites == 2
    # the model itself is untouched
    assert torch.sigmoid in _calls(torch.fx.symbolic_trace(model))


def test_without_registrations_the_pass_changes_nothing(clean) -> None:
    model = TwoSwishes().eval()
    x = torch.randn(5, 8)
    optimized = optimus_ir.optimize(model, (x,))
    assert _calls(optimized).count(torch.sigmoid) == 2
    record = next(p for p in optimized.optimus_report.statistics.passes if p.name == "user-replacements")
    assert record.patterns == {} or all(p.rewrites == 0 for p in record.patterns.values())


def test_default_pipeline_runs_it_right_after_raise_fx() -> None:
    stages = list(DEFAULT_PIPELINE_STAGES)
    assert stages[stages.index("raise-fx") + 1] == "user-replacements"


# ---------------------------------------------------------------------------
# What must not be rewritten
# ---------------------------------------------------------------------------


def _run(source: str, pipeline: str = "user-replacements", **kwargs):
    module = parse_module(source)
    with collect_diagnostics() as diagnostics:
        stats = run_pipeline(module, pipeline, **kwargs)
    return str(module), [d.message for d in diagnostics], stats


GRAPH = """
fx.graph @g {{
  %x = fx.placeholder "x" : {t}
  %s = torch.sigmoid %x : {t} -> {t}
  {between}
  %m = torch.mul %s, %x : {t}, {t} -> {t}
  fx.output {out}
}}
"""


def _graph(t: str = "tensor<4x8xf32>", between: str = "", out: str = "%m") -> str:
    return GRAPH.format(t=t, between=between, out=out)


def test_rewrites_the_plain_graph(silu_registered) -> None:
    text, remarks, _ = _run(_graph("tensor<6x3xf32>"))
    assert "torch.silu %x : tensor<6x3xf32> -> tensor<6x3xf32>" in text
    assert "torch.sigmoid" not in text and "torch.mul" not in text
    assert remarks == [f"user-replacements: '{SILU}' applied"]


@pytest.mark.parametrize(
    ("graph", "reason"),
    [
        (_graph(out="(%m, %s)"), "the inner value %s escapes: it is used by 'fx.output' outside the match"),
        (
            _graph(between='%w = fx.call_method "mul_"(%x, 2.0) : tensor<4x8xf32>'),
            "'mul_' (fx.call_method) may write in place to input 'x' between the matched ops",
        ),
        (_graph("tensor<4x8xf64>"), "input 'x': %x has dtype float64; the replacement was checked for float32"),
        (_graph("tensor<?x8xf32>"), "input 'x': %x has symbolic sizes (tensor<?x8xf32>)"),
        (_graph("tensor<2x4x8xf32>"), "input 'x': %x has rank 3, the pattern's input has rank 2"),
    ],
    ids=["escape", "inplace", "dtype", "symbolic", "rank"],
)
def test_declined(silu_registered, graph: str, reason: str) -> None:
    text, remarks, stats = _run(graph)
    assert "torch.silu" not in text and "torch.mul" in text
    assert remarks == [f"user-replacements: '{SILU}' not applied: {reason}"]
    assert stats.passes[0].patterns[SILU].rewrites == 0


def test_write_through_a_view_of_the_input_is_a_barrier(silu_registered) -> None:
    between = (
        '%v = fx.call_method "view"(%x, 32) : tensor<32xf32>\n'
        '  %w = fx.call_method "add_"(%v, 1.0) : tensor<32xf32>'
    )
    text, remarks, _ = _run(_graph(between=between))
    assert "torch.silu" not in text
    assert remarks == [f"user-replacements: '{SILU}' not applied: 'add_' (fx.call_method) may write in place "
                       "to input 'x' between the matched ops"]


def test_in_place_write_through_optimize_keeps_values(silu_registered) -> None:
    class WritesInput(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            s = torch.sigmoid(x)
            x.add_(1)
            return s * x

    x = torch.randn(4, 8)
    expected = WritesInput()(x.clone())
    optimized = optimus_ir.optimize(WritesInput(), (x.clone(),))
    assert F.silu not in _calls(optimized)
    torch.testing.assert_close(optimized(x.clone()), expected)


def test_extra_check(clean) -> None:
    seen: list[ReplacementMatch] = []

    def only_width_8(match: ReplacementMatch) -> bool:
        seen.append(match)
        return match.input_shapes[0][-1] == 8

    optimus_ir.register_replacement(SILU, sigmoid_mul, silu, [torch.randn(4, 8)], extra_check=only_width_8)
    text, remarks, _ = _run(_graph("tensor<4x8xf32>"))
    assert "torch.silu" in text
    text, remarks, _ = _run(_graph("tensor<4x16xf32>"))
    assert "torch.silu" not in text
    assert remarks == [f"user-replacements: '{SILU}' not applied: extra_check returned False"]
    match = seen[0]
    assert match.name == SILU
    assert match.input_names == ("x",)
    assert match.input_dtypes == (torch.float32,)
    assert match.input_shapes == ((4, 8),)
    assert [op.name for op in match.ops] == ["torch.sigmoid", "torch.mul"]
    assert match.root is match.ops[-1] and match.outputs == (match.root.results[0],)
    assert match.inputs[0].name_hint == "x" and match.input_types[0] == match.inputs[0].type


# ---------------------------------------------------------------------------
# Pipelines, statistics, bisection
# ---------------------------------------------------------------------------


def test_each_replacement_is_a_pass_and_only_selects(clean) -> None:
    optimus_ir.register_replacement(SILU, sigmoid_mul, silu, [torch.randn(4, 8)])
    optimus_ir.register_replacement(
        "tanh-half-to-sigmoid",
        lambda x: torch.tanh(x) * 0.5 + 0.5,
        lambda x: torch.sigmoid(2 * x),
        [torch.randn(16)],
    )
    assert get_pass_class(SILU).name == SILU
    text, _, stats = _run(_graph(), SILU)
    assert "torch.silu" in text and [p.name for p in stats.passes] == [SILU]
    text, _, _ = _run(_graph(), "user-replacements{only=tanh-half-to-sigmoid}")
    assert "torch.silu" not in text
    with pytest.raises(PipelineError, match="unknown replacement.*'nope'.*registered: sigmoid-mul-to-silu, tanh-half-to-sigmoid"):
        run_pipeline(parse_module(_graph()), "user-replacements{only=nope}")
    unregister_replacement(SILU)
    assert SILU not in PASSES


def test_bisect_rewrites_isolates_one_replacement_rewrite(silu_registered) -> None:
    source = """
fx.graph @two {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %s = torch.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %m = torch.mul %s, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = torch.sigmoid %m : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = torch.mul %t, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  fx.output %n
}
"""
    text, _, stats = _run(source, max_rewrites=1)
    assert text.count("torch.silu") == 1 and text.count("torch.sigmoid") == 1
    assert [(r.pass_name, r.pattern) for r in stats.rewrite_log] == [("user-replacements", SILU)]
    text, _, stats = _run(source)
    assert text.count("torch.silu") == 2


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------


def test_silu_registers_and_agrees_at_infinities(clean) -> None:
    # the issue's example: sigmoid(x) * x and F.silu(x) are both inf at +inf
    # and NaN at -inf and NaN, which the non-finite variant checks
    optimus_ir.register_replacement(SILU, sigmoid_mul, silu, [torch.randn(4, 8)])
    assert REPLACEMENTS[SILU].inputs[0].fixed_dims == (None, None)


def test_wrong_replacement_is_refused_with_where_it_differs(clean) -> None:
    with pytest.raises(ValueError) as info:
        optimus_ir.register_replacement(
            "off-by-a-bit", sigmoid_mul, lambda x: F.silu(x) + 1e-3, [torch.randn(4, 8)]
        )
    message = str(info.value)
    assert message.startswith(
        "register_replacement('off-by-a-bit'): the functions differ on the example inputs "
        "(input shapes [4, 8]): output #0 at index [0, 0]: the pattern gives "
    )
    assert "32 of 32 elements differ; largest absolute difference 0.001" in message
    assert "rtol 1.3e-06, atol 1e-05" in message
    assert "off-by-a-bit" not in REPLACEMENTS and "off-by-a-bit" not in PASSES


def test_naive_sigmoid_is_refused_on_large_magnitudes(clean) -> None:
    with pytest.raises(ValueError, match=r"differ on large magnitudes .*: output #0 at index \[.*\]: "
                       r"the pattern gives nan, the replacement 1\.0"):
        optimus_ir.register_replacement(
            "naive-sigmoid",
            lambda x: torch.exp(x) / (1 + torch.exp(x)),
            lambda x: torch.sigmoid(x),
            [torch.randn(4, 8)],
        )


def test_different_at_infinity_is_refused(clean) -> None:
    # x * 0 is NaN at +-inf and NaN; sigmoid(x) * 0 only at NaN
    with pytest.raises(ValueError, match=r"differ on infinities and NaN .*the pattern gives nan, the replacement 1\.0"):
        optimus_ir.register_replacement(
            "times-zero", lambda x: x * 0.0 + 1.0, lambda x: torch.sigmoid(x) * 0.0 + 1.0, [torch.randn(8)]
        )


def test_shape_specific_pattern_matches_only_the_example_shape(clean) -> None:
    optimus_ir.register_replacement(
        "relu-then-flatten",
        lambda x: torch.relu(x).reshape(32),
        lambda x: torch.relu(x.reshape(32)),
        [torch.randn(4, 8)],
    )
    assert REPLACEMENTS["relu-then-flatten"].inputs[0].fixed_dims == (4, 8)


def test_size_one_dims_stay_fixed(clean) -> None:
    optimus_ir.register_replacement(
        "broadcast-silu", lambda x, y: torch.sigmoid(x + y) * (x + y), lambda x, y: F.silu(x + y),
        [torch.randn(4, 1), torch.randn(4, 8)],
    )
    assert [p.fixed_dims for p in REPLACEMENTS["broadcast-silu"].inputs] == [(None, 1), (None, None)]


@pytest.mark.parametrize(
    ("name", "pattern", "replacement", "examples", "message"),
    [
        ("Bad_Name", sigmoid_mul, silu, [torch.randn(2)], "the name must be kebab-case"),
        ("cse", sigmoid_mul, silu, [torch.randn(2)], "'cse' is the name of a pass"),
        ("default", sigmoid_mul, silu, [torch.randn(2)], "'default' is the name of a pipeline"),
        ("no-op", lambda x: x, silu, [torch.randn(2)], "the pattern has no op (it returns its inputs)"),
        (
            "branchy", lambda x: x if x.sum() > 0 else -x, silu, [torch.randn(2)],
            "the pattern cannot be traced by torch.fx.symbolic_trace: TraceError",
        ),
        ("two-args", lambda x, y: x * y, silu, [torch.randn(2)], "the pattern takes 2 argument(s) but 1 example"),
        ("not-tensor", sigmoid_mul, silu, [1.0], "example input #0 is a float, not a tensor"),
        (
            "in-place", lambda x: x.add_(1) * 2, lambda x: (x + 1) * 2, [torch.randn(2)],
            "the pattern's op 'fx.call_method add_' has effects",
        ),
        (
            "identity", lambda x: torch.relu(x) - torch.relu(-x), lambda x: x.to(torch.float32), [torch.randn(2)],
            "output #0 of the replacement shares storage with an input (a view or the input itself), "
            "the pattern's is a new tensor",
        ),
        (
            "two-outputs", lambda x: (x.sin(), x.cos()), lambda x: (x.sin(), x.cos()), [torch.randn(2)],
            "the pattern's output #0 is not computed on the way to its last output",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v else None,
)
def test_registration_refusals(clean, name, pattern, replacement, examples, message) -> None:
    with pytest.raises(ValueError) as info:
        optimus_ir.register_replacement(name, pattern, replacement, examples)
    assert message in str(info.value)
    assert str(info.value).startswith(f"register_replacement({name!r}): ")


def test_name_taken_twice(silu_registered) -> None:
    with pytest.raises(ValueError, match="a replacement named 'sigmoid-mul-to-silu' is already registered"):
        optimus_ir.register_replacement(SILU, sigmoid_mul, silu, [torch.randn(4, 8)])


def test_refused_replacement_never_runs(clean) -> None:
    with pytest.raises(ValueError):
        optimus_ir.register_replacement("wrong-silu", sigmoid_mul, lambda x: F.silu(x) * 2, [torch.randn(4, 8)])
    text, remarks, _ = _run(_graph())
    assert "torch.silu" not in text and remarks == []
    with pytest.raises(PipelineError, match="unknown pass 'wrong-silu'"):
        run_pipeline(parse_module(_graph()), "wrong-silu")


def test_an_input_used_twice_binds_one_value(silu_registered) -> None:
    gm = torch.fx.symbolic_trace(lambda a, b: torch.sigmoid(a) * b + torch.sigmoid(b) * b)
    imported = import_graph(gm, (torch.randn(4, 8), torch.randn(4, 8)))
    run_pipeline(imported.module, "raise-fx,user-replacements")
    text = str(imported.module)
    assert text.count("torch.silu") == 1 and "torch.silu %b" in text
    assert "torch.sigmoid %a" in text


def test_commuted_spelling_matches(silu_registered) -> None:
    assert len(REPLACEMENTS[SILU].templates) == 2
    gm = torch.fx.symbolic_trace(lambda a: a * torch.sigmoid(a))
    imported = import_graph(gm, (torch.randn(3, 8),))
    run_pipeline(imported.module, "raise-fx,user-replacements")
    text = str(imported.module)
    assert "torch.silu %a" in text and "torch.mul" not in text


def test_validate_each_accepts_the_replacement(silu_registered) -> None:
    model = TwoSwishes().eval()
    x = torch.randn(5, 8)
    optimized = optimus_ir.optimize(model, (x,), validate=True)
    assert _calls(optimized).count(F.silu) == 2


def test_a_pattern_over_another_replacement_result_matches_next_round(silu_registered) -> None:
    optimus_ir.register_replacement(
        "double-silu", lambda x: F.silu(x) * 2.0, lambda x: F.silu(x) + F.silu(x), [torch.randn(4, 8)]
    )
    text, remarks, stats = _run(_graph(between="", out="%d").replace(
        "fx.output %d", "%d = torch.mul %m scalar 2.0 : tensor<4x8xf32> -> tensor<4x8xf32>\n  fx.output %d"
    ))
    assert text.count("torch.silu") == 2 and "torch.mul" not in text and "torch.add" in text
    assert remarks == [f"user-replacements: '{SILU}' applied", "user-replacements: 'double-silu' applied"]


def _tanh_pair(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = torch.tanh(x)
    return h, h * 2.0


def _tanh_pair_replacement(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = torch.tanh(x)
    return h, h + h


PAIR_GRAPH = """
fx.graph @pair {{
  %x = fx.placeholder "x" : tensor<4xf32>
  %h = torch.tanh %x : tensor<4xf32> -> tensor<4xf32>
  {before}
  %d = torch.mul %h scalar 2.0 : tensor<4xf32> -> tensor<4xf32>
  %r = torch.relu %h : tensor<4xf32> -> tensor<4xf32>
  fx.output ({outputs})
}}
"""


def test_several_outputs(clean) -> None:
    optimus_ir.register_replacement("tanh-pair", _tanh_pair, _tanh_pair_replacement, [torch.randn(4)])
    text, remarks, _ = _run(PAIR_GRAPH.format(before="", outputs="%d, %r"))
    assert "torch.mul" not in text and "torch.add" in text
    assert "torch.relu %tanh" in text  # the earlier output's reader follows the new tanh
    assert remarks == ["user-replacements: 'tanh-pair' applied"]
    # a reader of the earlier output before the root: the replacement,
    # computed at the root, would come too late for it
    before = "%e = torch.exp %h : tensor<4xf32> -> tensor<4xf32>"
    text, remarks, _ = _run(PAIR_GRAPH.format(before=before, outputs="%d, %r, %e"))
    assert "torch.mul" in text
    assert remarks == ["user-replacements: 'tanh-pair' not applied: the output %h is read by 'torch.exp' before the root"]


def test_a_library_function_with_defaulted_parameters_is_a_replacement_as_it_is() -> None:
    """`F.silu(input, inplace=False)` given as the replacement is traced as a
    function of the one example (its `inplace` keeps its default), not
    refused for taking two arguments."""
    name = "library-silu"
    optimus_ir.register_replacement(name, lambda x: torch.sigmoid(x) * x, F.silu, [torch.randn(4, 8)])
    try:
        model = nn.Sequential(nn.Linear(8, 8))
        x = torch.randn(3, 8)

        def forward(t: torch.Tensor) -> torch.Tensor:
            h = model(t)
            return torch.sigmoid(h) * h

        class Wrapped(nn.Module):
            def forward(self, t: torch.Tensor) -> torch.Tensor:
                return forward(t)

        optimized = optimus_ir.optimize(Wrapped(), (x,), pipeline=f"raise-fx,{name},lower-to-fx")
        targets = [str(n.target) for n in optimized.graph.nodes if n.op == "call_function"]
        assert any("silu" in t for t in targets) and not any("sigmoid" in t for t in targets), targets
        torch.testing.assert_close(optimized(x), forward(x))
    finally:
        optimus_ir.replacements.unregister_replacement(name)


def test_pattern_ir_shows_what_a_pattern_becomes() -> None:
    from optimus_ir.replacements import pattern_ir

    text = pattern_ir(lambda x: x.sigmoid() * x, [torch.randn(8, 16)])
    assert "torch.sigmoid %x : tensor<8x16xf32" in text
    assert "torch.mul %sigmoid, %x" in text
    assert "fx.output %mul" in text


# ---------------------------------------------------------------------------
# Layouts: the registration's layout variants and the matcher's requirement
# ---------------------------------------------------------------------------

FLAT = "half-tanh-flat"


def half_tanh_flat(x: torch.Tensor) -> torch.Tensor:
    return (torch.tanh(x) * 0.5 + 0.5).reshape(-1)


def sigmoid_of_view(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(2 * x.view(-1))  # raises on a transposed x


@pytest.fixture
def flat_registered(clean) -> None:
    optimus_ir.register_replacement(FLAT, half_tanh_flat, sigmoid_of_view, [torch.randn(4, 8)])


class TanhOfTranspose(nn.Module):
    """The issue's model: the pattern applied to `y.t()`."""

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(y.t()) * 0.5 + 0.5).reshape(-1)


class TanhOfInput(nn.Module):
    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(y) * 0.5 + 0.5).reshape(-1)


def _all_remarks(report) -> list[str]:
    return [d.message for d in [*report.remarks, *report.discarded_remarks] if d.message.startswith("user-replacements")]


def test_a_view_replacement_needs_contiguous_inputs(flat_registered) -> None:
    policy = REPLACEMENTS[FLAT].inputs[0]
    assert policy.layout == CONTIGUOUS
    assert policy.layout_evidence.startswith(
        "at registration it raised on 'x' transposed (input strides [1, 4]): RuntimeError: view size is not compatible"
    )


def test_the_issue_view_replacement_is_declined_on_a_transpose(flat_registered) -> None:
    y = torch.randn(8, 4)
    expected = TanhOfTranspose()(y)
    # the default call (its op-count guard may return the captured graph)
    optimized = optimus_ir.optimize(TanhOfTranspose(), (y,))
    torch.testing.assert_close(optimized(y), expected)
    declined = [r for r in _all_remarks(optimized.optimus_report) if "not applied" in r]
    assert declined and all(
        f"'{FLAT}' not applied: input 'x': " in r and "may not be contiguous (the replacement needs a contiguous "
        "input here: at registration it raised on 'x' transposed" in r
        for r in declined
    ), declined
    # the pipeline spelled out (no guard): the module optimize built runs
    optimized = optimus_ir.optimize(TanhOfTranspose(), (y,), pipeline=DEFAULT_PIPELINE)
    assert optimized.optimus_report.fallback is None
    calls = _calls(optimized)
    assert torch.tanh in calls and not any("view" in str(c) or "sigmoid" in str(c) for c in calls), calls
    torch.testing.assert_close(optimized(y), expected)
    other = torch.randn(8, 4) * 3
    torch.testing.assert_close(optimized(other), TanhOfTranspose()(other))
    record = next(p for p in optimized.optimus_report.statistics.passes if p.name == "user-replacements")
    assert record.patterns[FLAT].rewrites == 0


def test_the_view_replacement_still_applies_on_a_contiguous_input(flat_registered) -> None:
    y = torch.randn(4, 8)
    optimized = optimus_ir.optimize(TanhOfInput(), (y,))
    assert optimized.optimus_report.fallback is None
    calls = _calls(optimized)
    assert torch.tanh not in calls and any("sigmoid" in str(c) for c in calls), calls
    torch.testing.assert_close(optimized(y), TanhOfInput()(y))
    record = next(p for p in optimized.optimus_report.statistics.passes if p.name == "user-replacements")
    assert record.patterns[FLAT].rewrites == 1
    assert _remarks(optimized.optimus_report) == [f"user-replacements: '{FLAT}' applied"]


FLAT_GRAPH = """
fx.graph @g {{
  {prelude}
  %t = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %h = torch.mul %t scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = torch.add %h scalar 0.5 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = torch.reshape %a shape [-1] : tensor<4x8xf32> -> tensor<32xf32>
  fx.output %r
}}
"""


@pytest.mark.parametrize(
    ("prelude", "applied"),
    [
        ('%x = fx.placeholder "x" : tensor<4x8xf32>', True),
        ('%x = fx.placeholder "x" strides [1, 4] : tensor<4x8xf32>', False),
        ('%y = fx.placeholder "y" : tensor<8x4xf32>\n'
         '  %x = torch.transpose %y dim0 0 dim1 1 : tensor<8x4xf32> -> tensor<4x8xf32>', False),
        ('%y = fx.placeholder "y" : tensor<4x16xf32>\n'
         '  %x = torch.slice %y dim 1 start 0 end 16 step 2 : tensor<4x16xf32> -> tensor<4x8xf32>', False),
        ('%y = fx.placeholder "y" : tensor<8x8xf32>\n'
         '  %x = torch.slice %y dim 0 start 0 end 4 : tensor<8x8xf32> -> tensor<4x8xf32>', True),
        ('%y = fx.placeholder "y" : tensor<1x8xf32>\n'
         '  %x = fx.call_method "expand"(%y, 4, 8) : tensor<4x8xf32>', False),
    ],
    ids=["input", "strided-input", "transpose", "column-slice", "leading-rows", "expand"],
)
def test_matcher_checks_the_layout(flat_registered, prelude: str, applied: bool) -> None:
    text, remarks, stats = _run(FLAT_GRAPH.format(prelude=prelude))
    assert ("torch.view" in text) is applied
    assert stats.passes[0].patterns[FLAT].rewrites == int(applied)
    if applied:
        assert remarks == [f"user-replacements: '{FLAT}' applied"]
    else:
        assert remarks == [
            f"user-replacements: '{FLAT}' not applied: input 'x': %x may not be contiguous (the replacement "
            f"needs a contiguous input here: {REPLACEMENTS[FLAT].inputs[0].layout_evidence})"
        ]


def test_layout_requirement_is_per_input(clean) -> None:
    optimus_ir.register_replacement(
        "add-flat",
        lambda x, y: (x + y).reshape(-1),
        lambda x, y: x.view(-1) + y.reshape(-1),
        [torch.randn(4, 8), torch.randn(4, 8)],
    )
    assert [p.layout for p in REPLACEMENTS["add-flat"].inputs] == [CONTIGUOUS, ANY_LAYOUT]


def test_replacements_that_run_on_every_layout_match_any(clean) -> None:
    optimus_ir.register_replacement(SILU, sigmoid_mul, silu, [torch.randn(2, 3, 4, 5)])
    assert REPLACEMENTS[SILU].inputs[0].layout == ANY_LAYOUT
    # the pattern raises on the strided variants (its own view): they are
    # skipped, not held against the replacement, whose reshape runs there
    findings = check_layouts(
        "view-first", lambda x: torch.tanh(x.view(-1)), lambda x: torch.tanh(x).reshape(-1), (torch.randn(4, 8),)
    )
    assert findings == (LayoutFinding(ANY_LAYOUT, ""),)


def test_layout_variants() -> None:
    example = torch.randn(2, 3, 4, 5)
    expected = {
        "column slice": (120, 40, 10, 2),
        "transposed": (60, 20, 1, 4),
        "channels-last": (60, 1, 15, 3),
        "expanded": (0, 20, 5, 1),
    }
    assert set(expected) == set(LAYOUT_KINDS)
    for kind, strides in expected.items():
        variant = _layout_variant(kind, example)
        assert variant is not None and variant.shape == example.shape and variant.stride() == strides, kind
        if kind != "expanded":
            assert torch.equal(variant, example), kind
    # shapes that allow no such layout: no variant
    assert _layout_variant("transposed", torch.randn(1, 8)) is None
    assert _layout_variant("channels-last", torch.randn(4, 8)) is None
    assert all(_layout_variant(kind, torch.randn(1, 1)) is None for kind in LAYOUT_KINDS)
    assert all(_layout_variant(kind, torch.randn(())) is None for kind in LAYOUT_KINDS)


def test_disagreement_on_a_layout_is_refused_naming_the_variant() -> None:
    def fixed_strides(x: torch.Tensor) -> torch.Tensor:  # reads memory, not the logical tensor
        return torch.as_strided(x, x.shape, (x.shape[1], 1)) + 1

    with pytest.raises(ValueError) as info:
        check_layouts("as-strided", lambda x: x + 1, fixed_strides, (torch.randn(4, 8),), ["x"])
    assert str(info.value).startswith(
        "register_replacement('as-strided'): the functions differ on every other column of 'x' "
        "(input shapes [4, 8], strides [16, 2]): output #0 at index [0, 1]: the pattern gives "
    )


def test_failure_only_with_every_input_strided_requires_both_contiguous() -> None:
    def picky(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if not x.is_contiguous() and not y.is_contiguous():
            raise RuntimeError("both strided")
        return x + y

    findings = check_layouts("picky", lambda x, y: x + y, picky, (torch.randn(4, 8), torch.randn(4, 8)), ["x", "y"])
    assert [f.requirement for f in findings] == [CONTIGUOUS, CONTIGUOUS]
    assert findings[0].evidence.startswith(
        "at registration it raised on 'x', 'y' column slice at once (input strides [16, 2], [16, 2]): "
        "RuntimeError: both strided"
    )
