"""The pass infrastructure: registry, pipelines, the bounded rewrite driver,
the rewrite budget and its log, statistics, dce/cse purity rules."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import time

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, IntAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.utils.exceptions import DiagnosticException

from optimus_ir.foundation.diagnostics import (
    OptimusError,
    VerificationError,
    collect_diagnostics,
    emit_warning,
)
from optimus_ir.translate.parsing import parse_module
from optimus_ir.dialects.fx import CallFunctionOp, GraphOp, OutputOp, PlaceholderOp, RefAttr
from optimus_ir.foundation.effects import effect_kind
from optimus_ir.passes.registry import (
    DEFAULT_PIPELINE,
    PASSES,
    PIPELINES,
    get_pass_class,
)
from optimus_ir.pipeline import (
    PassManager,
    PassStatistics,
    PipelineError,
    parse_pipeline,
    pipeline_text,
    run_pipeline,
)
from optimus_ir.foundation.rewriting import (
    GreedyRewriteDriver,
    PatternError,
    PatternPass,
    RewriteConfig,
    RewriteLimitExceeded,
    apply_patterns,
)
from optimus_ir.foundation.types import tensor_type

T = tensor_type((4,), Float32Type())

SAMPLE = """\
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %dead = fx.call_function "torch.sigmoid"(%x) : tensor<4xf32, "cpu">
  %s = fx.call_function "torch.add"(%a, %b) : tensor<4xf32, "cpu">
  fx.output %s
}
"""


def sample() -> ModuleOp:
    return parse_module(SAMPLE, "sample.mlir")


def call(target: str, *operands, result_type=T) -> CallFunctionOp:
    return CallFunctionOp(
        target, [RefAttr(i) for i in range(len(operands))], {}, list(operands), result_type
    )


def graph_module(build) -> ModuleOp:
    """A module with one fx.graph; `build(x)` returns (ops, output value)."""
    x = PlaceholderOp("x", T)
    ops, out = build(x.result)
    return ModuleOp([GraphOp("g", [x, *ops, OutputOp(RefAttr(0), [out])])])


def targets(module: ModuleOp) -> list[str]:
    return [op.target.data for op in module.walk() if isinstance(op, CallFunctionOp)]


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@pytest.mark.parametrize("name", sorted(PASSES))
def test_every_registered_pass_follows_the_conventions(name):
    cls = get_pass_class(name)
    assert issubclass(cls, ModulePass)
    assert cls.name == name
    assert KEBAB.match(name), f"pass name '{name}' is not kebab-case"
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    assert (cls.__doc__ or "").strip(), f"pass '{name}' has no docstring"
    cls()  # every option has a default


def test_registry_has_the_cleanup_passes_and_a_default_pipeline():
    assert {"dce", "cse"} <= set(PASSES)
    assert PIPELINES["default"] == DEFAULT_PIPELINE
    assert [p.name for p in parse_pipeline(DEFAULT_PIPELINE)] == DEFAULT_PIPELINE.split(",")
    assert [p.name for p in parse_pipeline("default")] == DEFAULT_PIPELINE.split(",")


def test_registry_imports_passes_lazily():
    code = (
        "import sys, optimus_ir.passes.registry as r\n"
        "assert 'optimus_ir.passes.dce' not in sys.modules\n"
        "r.get_pass_class('dce')\n"
        "assert 'optimus_ir.passes.dce' in sys.modules\n"
        "assert 'optimus_ir.passes.cse' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# Pipelines
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OptionsPass(ModulePass):
    """A pass with options of every supported kind (does nothing)."""

    name = "options-pass"
    count: int = 1
    flag: bool = False
    label: str = "x"
    sizes: tuple[int, ...] = ()
    ratio: float | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


TEST_PASSES = {"options-pass": lambda: OptionsPass, "dce": lambda: get_pass_class("dce")}


def test_pipeline_options_map_onto_dataclass_fields():
    (p,) = parse_pipeline(
        'options-pass{count=3 flag=true label="hi" sizes=1,2,3 ratio=0.5}', TEST_PASSES, {}
    )
    assert p == OptionsPass(count=3, flag=True, label="hi", sizes=(1, 2, 3), ratio=0.5)
    passes = parse_pipeline("dce,options-pass{count=2},dce", TEST_PASSES, {})
    assert [p.name for p in passes] == ["dce", "options-pass", "dce"]
    text = pipeline_text(passes)
    assert text == "dce,options-pass{count=2},dce"
    assert parse_pipeline(text, TEST_PASSES, {}) == passes
    assert parse_pipeline("", TEST_PASSES, {}) == ()


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("dce,nope", 5, "unknown pass 'nope'"),
        ("dce,dcf", 5, "did you mean 'dce'?"),
        ("options-pass{count=abc}", 14, "option 'count' of pass 'options-pass' expects int, got 'abc'"),
        ("options-pass{bogus=1}", 14, "unknown option 'bogus' for pass 'options-pass'"),
        ("dce,options-pass{", 18, "invalid pass pipeline"),
        ("dce;cse", 4, "invalid pass pipeline"),
    ],
)
def test_bad_pipelines_are_reported_with_their_column(text, column, message):
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text, TEST_PASSES, {})
    err = info.value
    assert isinstance(err, DiagnosticException)
    assert err.location.line == 1 and err.location.column == column, err.format()
    assert message in err.message
    assert err.format().startswith(f"<pass-pipeline>:1:{column}: error: ")


def test_named_pipelines_expand():
    passes = parse_pipeline("cleanup,options-pass", {**TEST_PASSES, "cse": lambda: get_pass_class("cse")}, {"cleanup": "dce,cse"})
    assert [p.name for p in passes] == ["dce", "cse", "options-pass"]
    with pytest.raises(PipelineError, match="takes no options"):
        parse_pipeline("cleanup{x=1}", TEST_PASSES, {"cleanup": "dce"})


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------


class Rename(RewritePattern):
    """Replaces a call of `src` by a call of `dst` (a new op)."""

    def __init__(self, src: str, dst: str) -> None:
        self.src, self.dst = src, dst
        self.name = f"{src}-to-{dst}"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, CallFunctionOp) and op.target.data == self.src:
            new = CallFunctionOp(self.dst, op.args.data, op.kwargs.data, op.operands, op.result.type)
            rewriter.replace(op, new)


class FoldDoubleNeg(RewritePattern):
    """neg(neg(x)) -> x."""

    name = "fold-double-neg"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not (isinstance(op, CallFunctionOp) and op.target.data == "torch.neg"):
            return
        inner = op.operands[0].owner
        if isinstance(inner, CallFunctionOp) and inner.target.data == "torch.neg":
            rewriter.replace(op, [], [inner.operands[0]])


def test_driver_rewrites_to_a_fixpoint():
    def build(x):
        ops, v = [], x
        for _ in range(6):
            op = call("torch.neg", v)
            ops.append(op)
            v = op.result
        return ops, v

    module = graph_module(build)
    assert apply_patterns(module, [FoldDoubleNeg()])
    # three pairs fold away; the dead inner negs are left for dce
    run_pipeline(module, "dce")
    assert targets(module) == []
    module.verify()
    assert not apply_patterns(module, [FoldDoubleNeg()])


def test_ping_pong_patterns_hit_the_cap_and_are_named():
    module = graph_module(lambda x: ([op := call("torch.tanh", x)], op.result))
    driver = GreedyRewriteDriver(
        [Rename("torch.tanh", "torch.sigmoid"), Rename("torch.sigmoid", "torch.tanh")],
        RewriteConfig(max_rewrites=500),
        name="ping-pong",
    )
    start = time.perf_counter()
    with pytest.raises(RewriteLimitExceeded) as info:
        driver.rewrite(module)
    assert time.perf_counter() - start < 10
    err = info.value
    assert isinstance(err, DiagnosticException)
    assert set(err.patterns) == {"torch.tanh-to-torch.sigmoid", "torch.sigmoid-to-torch.tanh"}
    assert "torch.tanh-to-torch.sigmoid" in str(err) and "torch.sigmoid-to-torch.tanh" in str(err)
    assert "ping-pong" in str(err)
    assert err.rewrites == 501


def test_ping_pong_with_the_default_cap_also_terminates():
    module = graph_module(lambda x: ([op := call("torch.tanh", x)], op.result))
    with pytest.raises(RewriteLimitExceeded, match="did not converge"):
        apply_patterns(
            module, [Rename("torch.tanh", "torch.relu"), Rename("torch.relu", "torch.tanh")]
        )


class TouchWithoutNotifying(RewritePattern):
    """Changes each call in place every time it sees it, without notifying
    (so it is not revisited in the same sweep): only the sweep cap stops it."""

    name = "touch"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, CallFunctionOp):
            seen = op.attributes.get("seen")
            op.attributes["seen"] = IntAttr(seen.data + 1 if seen else 1)
            rewriter.has_done_action = True


def test_sweep_cap():
    module = graph_module(lambda x: ([op := call("torch.tanh", x)], op.result))
    with pytest.raises(RewriteLimitExceeded, match=r"in 3 sweeps.*'touch'") as info:
        apply_patterns(module, [TouchWithoutNotifying()], RewriteConfig(max_sweeps=3))
    assert info.value.patterns == ("touch",)
    assert info.value.sweeps == 3


def test_a_crashing_pattern_is_reported_with_its_op():
    class Crash(RewritePattern):
        name = "crash"

        def match_and_rewrite(self, op, rewriter, /):
            if isinstance(op, CallFunctionOp):
                raise KeyError("boom")

    module = sample()
    with pytest.raises(PatternError, match="pattern 'crash' failed on 'fx.call_function'") as info:
        apply_patterns(module, [Crash()])
    assert info.value.location is not None and info.value.location.line == 3
    assert isinstance(info.value.__cause__, KeyError)


def test_rooted_patterns_are_tried_only_on_their_ops():
    """The driver looks the patterns of an op's class up once per class:
    a pattern with `roots` is tried on ops of those classes (subclasses
    included) only, one without on every op; and rewrites still happen."""
    seen: dict[str, list[str]] = {"rooted": [], "placeholder": [], "any": []}

    class Rooted(RewritePattern):
        roots = (CallFunctionOp,)

        def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
            seen["rooted"].append(op.name)

    class AtPlaceholders(RewritePattern):
        roots = PlaceholderOp  # a single class works as well as a tuple

        def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
            seen["placeholder"].append(op.name)

    class Anywhere(RewritePattern):
        def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
            seen["any"].append(op.name)

    class SubclassedCall(CallFunctionOp):
        pass

    def build(x):
        a = call("torch.neg", x)
        b = call("torch.neg", a.result)
        c = SubclassedCall("torch.tanh", [RefAttr(0)], {}, [b.result], T)
        return [a, b, c], c.results[0]

    module = graph_module(build)
    apply_patterns(module, [Rooted(), AtPlaceholders(), Anywhere()])
    assert sorted(seen["rooted"]) == ["fx.call_function"] * 3
    assert seen["placeholder"] == ["fx.placeholder"]
    # every op of the graph: placeholder, three calls, output, and the graph
    assert len(seen["any"]) == 6
    # the rooted lookup does not keep the other patterns from rewriting
    module = graph_module(lambda x: ([n1 := call("torch.neg", x), n2 := call("torch.neg", n1.result),
                                      t := call("torch.tanh", n2.result)], t.result))
    assert apply_patterns(module, [Rooted(), FoldDoubleNeg()])
    run_pipeline(module, "dce")
    assert targets(module) == ["torch.tanh"]


def test_new_ops_inherit_the_location_of_the_rewritten_op():
    module = sample()
    apply_patterns(module, [Rename("torch.sigmoid", "torch.relu")])
    (relu,) = [op for op in module.walk() if isinstance(op, CallFunctionOp) and op.target.data == "torch.relu"]
    from optimus_ir.foundation.diagnostics import location_of

    assert location_of(relu).line == 5


def test_pattern_pass_and_statistics():
    @dataclasses.dataclass(frozen=True)
    class FoldNegs(PatternPass):
        """Folds double negation."""

        name = "fold-negs"

        def patterns(self):
            return [FoldDoubleNeg()]

    def build(x):
        a = call("torch.neg", x)
        b = call("torch.neg", a.result)
        return [a, b], b.result

    module = graph_module(build)
    stats = run_pipeline(module, [FoldNegs(), get_pass_class("dce")()])
    assert [p.name for p in stats.passes] == ["fold-negs", "dce"]
    fold = stats.by_pass("fold-negs")[0].patterns["fold-double-neg"]
    assert fold.rewrites == 1 and fold.attempts >= 4 and fold.seconds >= 0
    assert stats.by_pass("dce")[0].patterns["erase-dead-op"].rewrites == 1
    assert stats.total_rewrites == 2
    assert all(p.seconds >= 0 for p in stats.passes) and stats.total_seconds > 0
    report = stats.format_statistics()
    assert "'fold-negs'" in report and "pattern fold-double-neg: tried" in report
    assert "Total Execution Time" in stats.format_timing()


# ---------------------------------------------------------------------------
# The pipeline runner: budget, log, hooks, verification
# ---------------------------------------------------------------------------


def test_rewrite_budget_bisects_the_pipeline():
    full = sample()
    stats = run_pipeline(full, "cse,dce")
    log = stats.rewrite_log
    assert [(r.pass_name, r.pattern, r.op_name) for r in log] == [
        ("cse", "merge-identical-op", "fx.call_function"),
        ("dce", "erase-dead-op", "fx.call_function"),
    ]
    assert [r.location.line for r in log] == [4, 5]
    assert [r.index for r in log] == [0, 1]
    assert all(r.op_index is not None for r in log)

    results = []
    for budget in range(0, 4):
        module = sample()
        stats = run_pipeline(module, "cse,dce", max_rewrites=budget)
        assert stats.budget.used == min(budget, 2) == len(stats.rewrite_log)
        assert stats.rewrite_log == log[: min(budget, 2)]
        results.append(targets(module))
    assert results[0] == ["torch.tanh", "torch.tanh", "torch.sigmoid", "torch.add"]
    assert results[1] == ["torch.tanh", "torch.sigmoid", "torch.add"]
    assert results[2] == results[3] == targets(full) == ["torch.tanh", "torch.add"]


def test_budget_spans_passes_and_runs():
    stats = PassStatistics()
    module = sample()
    run_pipeline(module, "cse", statistics=stats, max_rewrites=1)
    run_pipeline(module, "dce", statistics=stats, max_rewrites=0)
    assert targets(module) == ["torch.tanh", "torch.sigmoid", "torch.add"]
    assert [p.name for p in stats.passes] == ["cse", "dce"]


def test_validate_each_is_called_after_every_pass():
    seen = []
    run_pipeline(sample(), "cse,dce,cse", validate_each=lambda p, m: seen.append((p.name, len(targets(m)))))
    assert seen == [("cse", 3), ("dce", 2), ("cse", 2)]


@dataclasses.dataclass(frozen=True)
class BreakIt(ModulePass):
    """Drops the graph's output (making the IR invalid)."""

    name = "break-it"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for nested in list(op.walk()):
            if isinstance(nested, OutputOp):
                nested.detach()
                nested.erase()


def test_ir_is_verified_after_each_pass():
    with pytest.raises(VerificationError) as info:
        run_pipeline(sample(), [BreakIt()])
    err = info.value
    assert "after pass 'break-it'" in str(err)
    assert err.location is not None and err.location.file == "sample.mlir"
    assert "must end with 'fx.output'" in err.errors[0].message
    run_pipeline(sample(), [BreakIt()], verify_each=False)


def test_ir_dumps(capsys):
    import io

    stream = io.StringIO()
    manager = PassManager(parse_pipeline("cse,dce"), print_ir_after=frozenset({"dce"}), ir_stream=stream)
    manager.run(sample())
    text = stream.getvalue()
    assert "IR Dump After dce" in text and "IR Dump After cse" not in text


def test_warnings_reach_the_handler():
    @dataclasses.dataclass(frozen=True)
    class Warn(ModulePass):
        """Warns about every tanh."""

        name = "warn"

        def apply(self, ctx, op):
            for nested in op.walk():
                if isinstance(nested, CallFunctionOp) and nested.target.data == "torch.tanh":
                    emit_warning(nested, "a tanh")

    with collect_diagnostics() as found:
        run_pipeline(sample(), [Warn()])
    assert [(d.severity.value, d.location.line) for d in found] == [("warning", 3), ("warning", 4)]
    assert str(found[0]).startswith("sample.mlir:3:3: warning: a tanh")


def test_optimus_error_is_a_diagnostic_exception():
    module = sample()
    op = next(o for o in module.walk() if isinstance(o, CallFunctionOp))
    err = OptimusError("bad", op)
    assert isinstance(err, DiagnosticException)
    assert str(err) == "sample.mlir:3:3: bad"


# ---------------------------------------------------------------------------
# Purity rules
# ---------------------------------------------------------------------------

IR_KINDS = [
    ('fx.call_function "torch.tanh"(%x)', "pure"),
    ('fx.call_function "torch.nn.functional.gelu"(%x, approximate = "tanh")', "pure"),
    ('fx.call_function "torch.ops.aten.add.Tensor"(%x, %x)', "pure"),
    ('fx.call_function "torch.ops.aten.add_.Tensor"(%x, %x)', "impure"),
    ('fx.call_function "torch.ops.aten.add.out"(%x, %x, out = %x)', "impure"),
    ('fx.call_function "torch.ops.mylib.op.default"(%x)', "impure"),
    ('fx.call_function "torch.add"(%x, %x, out = %x)', "impure"),
    ('fx.call_function "torch.nn.functional.relu"(%x, inplace = true)', "impure"),
    ('fx.call_function "torch.nn.functional.relu"(%x, inplace = false)', "pure"),
    ('fx.call_function "torch.relu_"(%x)', "impure"),
    ('fx.call_function "torch.randn"([4])', "impure"),
    ('fx.call_function "torch.zeros"([4])', "alloc"),
    ('fx.call_function "torch._assert"(true, "m")', "impure"),
    ('fx.call_function "torch.cuda.synchronize"()', "impure"),
    ('fx.call_function "operator.getitem"(%x, 0)', "pure"),
    ('fx.call_function "operator.setitem"(%x, 0, 1)', "impure"),
    # the spelling the importer records (`operator.getitem.__module__`)
    ('fx.call_function "_operator.getitem"(%x, 0)', "pure"),
    ('fx.call_function "_operator.add"(%x, %x)', "pure"),
    ('fx.call_function "_operator.setitem"(%x, 0, 1)', "impure"),
    ('fx.call_function "_operator.iadd"(%x, %x)', "impure"),
    ('fx.call_function "my.module.fn"(%x)', "impure"),
    ('fx.call_function "builtins.print"(%x)', "impure"),
    ('fx.call_method "view"(%x, -1)', "pure"),
    ('fx.call_method "__getitem__"(%x, 0)', "pure"),
    ('fx.call_method "__iadd__"(%x, 1)', "impure"),
    ('fx.call_method "mul_"(%x, 2)', "impure"),
    ('fx.call_method "copy_"(%x, %x)', "impure"),
    ('fx.call_method "item"(%x)', "impure"),
    ('fx.call_module "sub.linear"(%x)', "impure"),
    ('fx.get_attr "w"', "pure"),
]


@pytest.mark.parametrize("text, kind", IR_KINDS)
def test_effect_kinds(text, kind):
    module = parse_module(
        f'fx.graph @g {{\n  %x = fx.placeholder "x" : tensor<4xf32>\n  %y = {text} : tensor<4xf32>\n  fx.output %y\n}}\n'
    )
    op = [o for o in module.walk()][-2]
    assert effect_kind(op) == kind


def test_placeholder_and_output_are_never_removed():
    module = parse_module(
        'fx.graph @g {\n  %x = fx.placeholder "x" : tensor<4xf32>\n  %y = fx.placeholder "y" : tensor<4xf32>\n  fx.output none\n}\n'
    )
    run_pipeline(module, "dce,cse")
    assert [o.name for o in module.walk()] == [
        "builtin.module", "fx.graph", "fx.placeholder", "fx.placeholder", "fx.output"
    ]


# ---------------------------------------------------------------------------
# Scale
# ---------------------------------------------------------------------------


def build_wide(n: int) -> ModuleOp:
    """n ops: groups of (tanh, duplicate tanh, dead sigmoid, add) in a chain."""

    def build(x):
        ops, prev = [], x
        for _ in range(n // 4):
            a = call("torch.tanh", prev)
            b = call("torch.tanh", prev)
            d = call("torch.sigmoid", prev)
            c = call("torch.add", a.result, b.result)
            ops += [a, b, d, c]
            prev = c.result
        return ops, prev

    return graph_module(build)


@pytest.mark.slow
def test_cleanup_is_linear_on_100k_ops():
    def run(n):
        module = build_wide(n)
        start = time.perf_counter()
        stats = run_pipeline(module, "cse,dce", verify_each=False)
        elapsed = time.perf_counter() - start
        assert stats.total_rewrites == n // 2
        return elapsed

    small, large = run(10_000), run(100_000)
    assert large < 60, f"cse,dce on 100k ops took {large:.1f}s"
    assert large / small < 40, f"superlinear: 10k {small:.2f}s, 100k {large:.2f}s"


@pytest.mark.slow
def test_driver_on_a_100k_dead_chain():
    def build(x):
        ops, prev = [], x
        for _ in range(100_000):
            op = call("torch.tanh", prev)
            ops.append(op)
            prev = op.result
        return ops, x

    module = graph_module(build)
    start = time.perf_counter()
    stats = run_pipeline(module, "dce", verify_each=False)
    assert time.perf_counter() - start < 30
    assert stats.total_rewrites == 100_000
    assert stats.passes[0].sweeps == 2
    assert targets(module) == []
