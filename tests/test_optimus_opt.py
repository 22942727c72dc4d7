"""optimus-opt: error paths (exit 1, file:line:col, no traceback), flags,
--verify-diagnostics, and proof that the lit harness fails on a wrong CHECK."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from optimus_ir.foundation.diagnostics import Diagnostic, Severity, SourceLocation, emit_remark, emit_warning
from optimus_ir.translate.parsing import parse_module
from optimus_ir.dialects.fx import CallFunctionOp
from optimus_ir.passes import registry
from optimus_ir.pipeline import run_pipeline
from optimus_ir.tools.optimus_opt import check_expected_diagnostics, main

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def opt_command() -> list[str]:
    script = BIN / "optimus-opt"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "optimus_ir.tools.optimus_opt"]


def run_opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*opt_command(), *args], input=stdin, capture_output=True, text=True, timeout=120
    )


VALID = """\
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %s = fx.call_function "torch.add"(%a, %b) : tensor<4xf32, "cpu">
  fx.output %s
}
"""

BAD_INPUTS = {
    "syntax": (
        'fx.graph @g {\n  %x = fx.placeholder "x" tensor<4xf32>\n  fx.output %x\n}\n',
        (2, 27),
        "Expected ':'",
    ),
    "unknown_op": (
        "fx.graph @g {\n  %x = fx.frobnicate : tensor<4xf32>\n  fx.output %x\n}\n",
        (2, 8),
        "unknown operation 'fx.frobnicate'",
    ),
    "unknown_dialect_op": (
        'builtin.module {\n  "nope.op"() : () -> ()\n}\n',
        (2, 4),
        "unknown operation 'nope.op'",
    ),
    "unknown_type": (
        'fx.graph @g {\n  %x = fx.placeholder "x" : !nope.t\n  fx.output %x\n}\n',
        (2, 29),
        "unknown type or attribute '!nope.t'",
    ),
    "verifier": (
        'fx.graph @g {\n  %x = fx.placeholder "x" : tensor<4xf32>\n'
        '  %y = "fx.call_function"(%x) <{target = "torch.tanh", args = [], kwargs = {}}> '
        ": (tensor<4xf32>) -> tensor<4xf32>\n  fx.output %y\n}\n",
        (3, 3),
        "arguments never refer to",
    ),
    "missing_terminator": (
        'fx.graph @g {\n  %x = fx.placeholder "x" : tensor<4xf32>\n}\n',
        (1, 1),
        "must end with 'fx.output'",
    ),
    "undefined_value": ("fx.graph @g {\n  fx.output %nope\n}\n", (2, 13), "%nope"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_a_located_error(case, tmp_path):
    text, (line, column), message = BAD_INPUTS[case]
    path = tmp_path / f"{case}.mlir"
    path.write_text(text)
    result = run_opt(str(path), "-p", "dce,cse")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output
    assert re.search(rf"^{re.escape(str(path))}:{line}:{column}: error: .*{re.escape(message)}", result.stderr, re.M), result.stderr


@pytest.mark.parametrize(
    "pipeline, column, message",
    [
        ("dce,no-such-pass", 5, "unknown pass 'no-such-pass'"),
        ("dce{bogus=1}", 5, "unknown option 'bogus' for pass 'dce'"),
        ("dce,cse{", 9, "invalid pass pipeline"),
    ],
)
def test_bad_pipeline_is_a_located_error(pipeline, column, message, tmp_path):
    path = tmp_path / "ok.mlir"
    path.write_text(VALID)
    result = run_opt(str(path), "-p", pipeline)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr.startswith(f"<pass-pipeline>:1:{column}: error: {message}"), result.stderr


def test_missing_file(tmp_path):
    result = run_opt(str(tmp_path / "nope.mlir"))
    assert result.returncode == 1
    assert "cannot read" in result.stderr and "Traceback" not in result.stderr


def test_stdin_and_output_file(tmp_path):
    out = tmp_path / "out.mlir"
    result = run_opt("-", "-p", "cse,dce", "-o", str(out), stdin=VALID)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.count('"torch.tanh"') == 1 and "%s = fx.call_function \"torch.add\"(%a, %a)" in text


def test_split_input_file_keeps_going_and_numbers_lines_per_file(tmp_path):
    path = tmp_path / "split.mlir"
    path.write_text(VALID + "// -----\n" + BAD_INPUTS["unknown_op"][0] + "// -----\n" + VALID)
    result = run_opt(str(path), "--split-input-file", "-p", "cse")
    assert result.returncode == 1
    assert result.stdout.count("fx.graph @g") == 2
    assert f"{path}:10:8: error: unknown operation 'fx.frobnicate'" in result.stderr


def test_cli_and_python_api_agree(tmp_path, capsys):
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    out = tmp_path / "out.mlir"
    assert main([str(path), "-p", "cse,dce", "-o", str(out)]) == 0
    module = parse_module(VALID)
    run_pipeline(module, "cse,dce")
    assert out.read_text().strip() == str(module).strip()


def test_statistics_and_timing_flags(tmp_path, capsys):
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "cse,dce", "--pass-statistics", "--time-passes"]) == 0
    err = capsys.readouterr().err
    assert "Pass statistics report" in err and "pattern merge-identical-op: tried 3, rewrote 1" in err
    assert "Execution time report" in err and re.search(r"\(100\.0%\)  Total", err)


def test_time_passes_rows_add_up_to_the_total(tmp_path, capsys):
    """Issue 25: the pass rows summed to 60% of "Total"; parse, input
    verification, verification after the passes, print and the pass
    manager's own time are rows too, so the rows add up to the total."""
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "cse,dce", "--time-passes"]) == 0
    err = capsys.readouterr().err
    rows = re.findall(r"^  +(\d+\.\d+) \( *(\d+\.\d)%\)  (.+)$", err, re.MULTILINE)
    names = [name for _, _, name in rows]
    assert names[-1] == "Total" and {"cse", "dce", "parse", "verify input", "print"} <= set(names)
    assert "other (pass manager)" in names
    parts = rows[:-1]
    total = float(rows[-1][0])
    assert abs(sum(float(seconds) for seconds, _, _ in parts) - total) <= 0.0001 * len(parts)
    assert abs(sum(float(pct) for _, pct, _ in parts) - 100.0) <= 0.1 * len(parts)


def test_print_ir_after(tmp_path, capsys):
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "cse,dce", "--print-ir-after=cse"]) == 0
    err = capsys.readouterr().err
    assert "IR Dump After cse" in err and "IR Dump After dce" not in err
    assert main([str(path), "-p", "cse,dce", "--print-ir-after-all"]) == 0
    err = capsys.readouterr().err
    assert "IR Dump After cse" in err and "IR Dump After dce" in err


@pytest.mark.parametrize(
    "value, message",
    [
        ("nope", "--print-ir-after: unknown pass 'nope' (available passes: batch-fusion, canonicalize, cse, dce,"),
        ("cse,Dce", "--print-ir-after: unknown pass 'Dce'; did you mean 'dce'?"),
        ("csee", "--print-ir-after: unknown pass 'csee'; did you mean 'cse'?"),
        ("default", "--print-ir-after: 'default' is a pipeline, not a pass"),
        ("", "--print-ir-after: no pass named"),
    ],
)
def test_print_ir_after_unknown_pass(value, message, tmp_path, capsys):
    """`--print-ir-after=nope` exited 0 and printed nothing (issue 19)."""
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "cse,dce", f"--print-ir-after={value}"]) == 1
    captured = capsys.readouterr()
    assert f"optimus-opt: error: {message}" in captured.err
    assert captured.out == ""  # nothing was run


def test_print_ir_after_pass_not_in_pipeline(tmp_path, capsys):
    """A known pass that the pipeline does not run: a warning, and the run
    goes on."""
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "dce", "--print-ir-after=cse", "--print-ir-after=dce"]) == 0
    err = capsys.readouterr().err
    assert "optimus-opt: warning: --print-ir-after: pass 'cse' is not in the pipeline (dce)" in err
    assert "IR Dump After dce" in err


@pytest.mark.parametrize("option", ["--max-rewrites", "--bisect-rewrites"])
def test_negative_rewrite_budget(option, tmp_path, capsys):
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "cse,dce", f"{option}=-1"]) == 1
    assert "must be 0 or more, not -1" in capsys.readouterr().err


DECLARED = """fx.graph @g {{
  %a = fx.placeholder "a" : tensor<4x8xf32>
  %b = fx.placeholder "b" : tensor<4x16xf32>
  %w = fx.placeholder "w" : tensor<5x8xf32>
  {call}
  fx.output %c
}}
"""


@pytest.mark.parametrize(
    "call, message",
    [
        ('%c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<8x8xf32>',
         "'fx.call_function' op calling 'torch.cat': declared result type tensor<8x8xf32> "
         "contradicts the operator: result #0 has shape 8x8, expected 4x24"),
        ('%c = fx.call_function "torch.concat"([%a, %b], dim = -1) : tensor<4x16xf32>',
         "result #0 has shape 4x16, expected 4x24"),
        ('%c = fx.call_function "torch.stack"([%a, %a]) : tensor<4x8xf32>', "result #0 has rank 2, expected 3"),
        ('%c = fx.call_method "tanh"(%a) : tensor<4x8xf16>', "result #0 has element type f16, expected f32"),
        ('%c = fx.call_function "torch.nn.functional.linear"(%a, %w) : tensor<4x8xf32>',
         "result #0 has shape 4x8, expected 4x5"),
        ('%c = fx.call_method "permute"(%a, 1, 0) : tensor<4x8xf32>', "result #0 has shape 4x8, expected 8x4"),
        ('%c = fx.call_function "torch.ops.aten.mm.default"(%a, %b) : tensor<4x16xf32>',
         "the operator does not accept its operands: operand #0 (lhs) of shape 4x8"),
        ('%c = fx.call_function "operator.mul"(%a, 2.0) : tensor<4x8xi64>',
         "result #0 has element type i64, expected f32"),
    ],
    ids=["cat", "concat-kwarg", "stack", "method", "linear", "permute", "aten-mm", "scalar-binary"],
)
def test_declared_result_type_contradicts_the_operator(call, message, tmp_path, capsys):
    """fx IR whose declared type contradicts its operator passed every pass
    with exit 0 (issue 19): it is a located error before any pass."""
    path = tmp_path / "in.mlir"
    path.write_text(DECLARED.format(call=call))
    assert main([str(path), "-p", "default"]) == 1
    captured = capsys.readouterr()
    assert f"{path}:5:3: error: " in captured.err and message in captured.err, captured.err
    assert captured.out == ""


@pytest.mark.parametrize(
    "call",
    [
        '%c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<4x24xf32>',
        '%c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<?x?xf32>',
        '%c = fx.call_function "my.unknown"([%a, %b], 1) : tensor<1xf32>',
        '%c = fx.call_method "tanh"(%a) : tensor<4x8xf32>',
    ],
    ids=["agrees", "dynamic", "unknown-target", "method"],
)
def test_declared_result_type_that_agrees(call, tmp_path, capsys):
    path = tmp_path / "in.mlir"
    path.write_text(DECLARED.format(call=call))
    assert main([str(path), "-p", "dce"]) == 0, capsys.readouterr().err


def test_raise_fx_reports_the_contradictions_it_keeps(tmp_path, capsys):
    """Unverified input (an imported graph has torch's own types; here
    `--disable-verify`): raise-fx keeps such an op as it is, and says so in
    its statistics and a remark."""
    path = tmp_path / "in.mlir"
    path.write_text(DECLARED.format(call='%c = fx.call_function "torch.cat"([%a, %b], 1) : tensor<8x8xf32>'))
    assert main([str(path), "-p", "raise-fx", "--disable-verify", "--pass-statistics", "--remarks"]) == 0
    captured = capsys.readouterr()
    assert "(S) 1 ops kept: declared type contradicts the operator" in captured.err
    assert f"{path}:5:3: remark: kept as an fx op: declared result type tensor<8x8xf32>" in captured.err
    assert 'fx.call_function "torch.cat"' in captured.out


def test_max_rewrites_and_log(tmp_path, capsys):
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "cse", "--max-rewrites=0", "--print-rewrite-log"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count('"torch.tanh"') == 2 and "rewrite [" not in captured.err
    assert main([str(path), "-p", "cse", "--print-rewrite-log"]) == 0
    captured = capsys.readouterr()
    assert f"rewrite [0] cse: merge-identical-op on fx.call_function #4 at {path}:4:3" in captured.err


# ---------------------------------------------------------------------------
# --verify-diagnostics
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ReportTanh(ModulePass):
    """Warns about each tanh and remarks on each add (a test pass)."""

    name = "report-tanh"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for nested in op.walk():
            if isinstance(nested, CallFunctionOp):
                if nested.target.data == "torch.tanh":
                    emit_warning(nested, "tanh seen")
                elif nested.target.data == "torch.add":
                    emit_remark(nested, "add seen")


@pytest.fixture
def report_pass(monkeypatch):
    monkeypatch.setitem(registry.PASSES, "report-tanh", lambda: ReportTanh)


def test_warnings_and_remarks_are_printed(tmp_path, capsys, report_pass):
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "report-tanh", "--remarks"]) == 0  # warnings do not fail
    err = capsys.readouterr().err
    assert f"{path}:3:3: warning: tanh seen" in err
    assert f"{path}:5:3: remark: add seen" in err


def test_remarks_are_opt_in(tmp_path, capsys, report_pass):
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "report-tanh"]) == 0
    err = capsys.readouterr().err
    assert f"{path}:3:3: warning: tanh seen" in err
    assert ": remark:" not in err


EXPECTED_OK = """\
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4xf32, "cpu">
  // expected-warning@+1 {{tanh seen}}
  %a = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu">
  %b = fx.call_function "torch.tanh"(%x) : tensor<4xf32, "cpu"> // expected-warning {{seen}}
  %s = fx.call_function "torch.add"(%a, %b) : tensor<4xf32, "cpu">
  // expected-remark@above {{add seen}}
  fx.output %s
}
"""


def test_verify_diagnostics_accepts_matching_expectations(tmp_path, capsys, report_pass):
    path = tmp_path / "ok.mlir"
    path.write_text(EXPECTED_OK)
    assert main([str(path), "-p", "report-tanh", "--verify-diagnostics", "--remarks"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "edit, message",
    [
        (("expected-warning@+1 {{tanh seen}}", "expected-warning@+1 {{sigmoid seen}}"), 'expected warning "sigmoid seen" was not produced'),
        (("// expected-remark@above {{add seen}}", ""), "unexpected remark: add seen"),
        (("expected-remark@above", "expected-warning@above"), "unexpected remark: add seen"),
        (("expected-warning@+1", "expected-warning@+2"), "unexpected warning: tanh seen"),
        (("  fx.output %s\n", "  fx.output %s\n  // expected-error {{never}}\n"), 'expected error "never" was not produced'),
    ],
)
def test_verify_diagnostics_rejects_mismatches(tmp_path, capsys, report_pass, edit, message):
    path = tmp_path / "bad.mlir"
    old, new = edit
    assert old in EXPECTED_OK
    path.write_text(EXPECTED_OK.replace(old, new))
    assert main([str(path), "-p", "report-tanh", "--verify-diagnostics", "--remarks"]) == 1
    assert message in capsys.readouterr().err


def test_verify_diagnostics_subprocess_exit_code(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("// expected-error@+1 {{this will not happen}}\n" + VALID)
    result = run_opt(str(path), "--verify-diagnostics")
    assert result.returncode == 1
    assert f"{path}:1:4: error: expected error \"this will not happen\" was not produced" in result.stderr


def test_expectation_matching_rules():
    text = "a\n// expected-error@below {{x}}\n\n// expected-note {{n}}\nb // expected-error-re {{v{{[0-9]+}}}}\n"
    loc = lambda line: SourceLocation("f", line, 1)  # noqa: E731
    ok = [
        Diagnostic(Severity.ERROR, "has x in it", location=loc(5)),
        Diagnostic(Severity.NOTE, "n", location=loc(4)),
        Diagnostic(Severity.ERROR, "v12", location=loc(5)),
    ]
    assert check_expected_diagnostics(text, "f", ok) == []
    unlocated = [*ok, Diagnostic(Severity.ERROR, "somewhere")]
    (failure,) = check_expected_diagnostics(text, "f", unlocated)
    assert "unexpected error: somewhere" in failure.message


# ---------------------------------------------------------------------------
# The lit harness
# ---------------------------------------------------------------------------


def lit_command() -> list[str]:
    script = BIN / "lit"
    if script.exists():
        return [str(script)]
    found = shutil.which("lit")
    if found:
        return [found]
    return [sys.executable, "-m", "lit"]


def make_suite(root: Path, tests: dict[str, str]) -> Path:
    """A lit suite in `root` configured by the project's own lit.cfg.py."""
    project_cfg = REPO / "tests" / "lit" / "lit.cfg.py"
    (root / "lit.cfg.py").write_text(
        textwrap.dedent(
            f"""\
            __file__ = {str(project_cfg)!r}
            exec(compile(open(__file__).read(), __file__, "exec"))
            config.name = "harness-check"
            config.test_source_root = {str(root)!r}
            config.test_exec_root = {str(root / "out")!r}
            """
        )
    )
    for name, body in tests.items():
        (root / name).write_text(body)
    return root


GRAPH = 'fx.graph @g {\n  %x = fx.placeholder "x" : tensor<4xf32>\n  %y = fx.call_function "torch.tanh"(%x) : tensor<4xf32>\n  fx.output %y\n}\n'


def test_lit_reports_a_wrong_check(tmp_path):
    suite = make_suite(
        tmp_path,
        {
            "right.mlir": "// RUN: optimus-opt %s | filecheck %s\n// CHECK: torch.tanh\n" + GRAPH,
            "wrong.mlir": "// RUN: optimus-opt %s | filecheck %s\n// CHECK: torch.sigmoid\n" + GRAPH,
            "wrong-not.mlir": "// RUN: optimus-opt %s | filecheck %s\n// CHECK-NOT: torch.tanh\n" + GRAPH,
        },
    )
    env = {**os.environ}
    result = subprocess.run([*lit_command(), "-v", str(suite)], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode != 0, result.stdout
    assert "PASS: harness-check :: right.mlir" in result.stdout, result.stdout + result.stderr
    assert "FAIL: harness-check :: wrong.mlir" in result.stdout
    assert "FAIL: harness-check :: wrong-not.mlir" in result.stdout

    only_right = subprocess.run(
        [*lit_command(), str(suite / "right.mlir")], capture_output=True, text=True, timeout=300
    )
    assert only_right.returncode == 0, only_right.stdout + only_right.stderr


def test_verify_diagnostics_accepts_mlir_spacing_before_the_at(tmp_path, capsys, report_pass):
    path = tmp_path / "spaced.mlir"
    path.write_text(EXPECTED_OK.replace("expected-warning@+1", "expected-warning @+1"))
    assert main([str(path), "-p", "report-tanh", "--verify-diagnostics", "--remarks"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "annotation",
    ["// expected-eror {{tanh seen}}", "// expected-warning@+x {{tanh seen}}", "// expected-warning tanh seen"],
)
def test_verify_diagnostics_reports_annotations_it_cannot_read(tmp_path, capsys, report_pass, annotation):
    """An unreadable annotation is an error at its position, never skipped
    (skipped, it would let a test without that expectation pass)."""
    path = tmp_path / "bad.mlir"
    text = EXPECTED_OK.replace("  fx.output %s\n", f"  fx.output %s\n  {annotation}\n")
    path.write_text(text)
    line = text.splitlines().index(f"  {annotation}") + 1
    assert main([str(path), "-p", "report-tanh", "--verify-diagnostics", "--remarks"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}:" in err and "cannot parse this expectation" in err


# ---------------------------------------------------------------------------
# Typed pass options and pass plugins
# ---------------------------------------------------------------------------


def test_literal_pass_option_is_a_located_error(tmp_path, capsys):
    """`kernels` is typed `Literal["auto", "triton", "torch"]`: another value
    is refused by the pipeline parser at the option, not by a traceback."""
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), "-p", "lower-batch{kernels=bogus}"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "<pass-pipeline>:1:13: error: option 'kernels' of pass 'lower-batch' "
        "expects one of auto, triton, torch, got 'bogus'"
    )
    assert "Traceback" not in err


PLUGIN = REPO / "tests" / "plugins" / "miscompile_passes.py"
TEST_PASSES = ("test-miscompile", "test-alias-miscompile", "test-fail")


def test_test_passes_are_not_in_the_production_registry():
    listed = run_opt("--help")
    assert listed.returncode == 0
    help_text = listed.stdout.replace("\n", " ").replace(" ", "")
    assert "canonicalize" in help_text and "--load-pass-plugin" in help_text
    assert not any(name in help_text for name in TEST_PASSES), listed.stdout
    refused = run_opt("-p", "test-fail", stdin=VALID)
    assert refused.returncode == 1 and "unknown pass 'test-fail'" in refused.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "from optimus_ir.passes.registry import available_passes; print(sorted(available_passes()))"],
        capture_output=True, text=True, timeout=120,
    )
    assert probe.returncode == 0 and not any(name in probe.stdout for name in TEST_PASSES), probe.stdout


def test_load_pass_plugin_registers_the_test_passes():
    listed = run_opt(f"--load-pass-plugin={PLUGIN}", "--help")
    assert all(name in listed.stdout.replace("\n", " ").replace(" ", "") for name in TEST_PASSES)
    crashed = run_opt(f"--load-pass-plugin={PLUGIN}", "-p", "test-fail{message=boom}", stdin=VALID)
    assert crashed.returncode == 2 and "internal error in pass 'test-fail{message=\"boom\"}'" in crashed.stderr


@pytest.fixture
def isolated_registry(monkeypatch):
    """The pass registry as it is, restored after the test."""
    monkeypatch.setattr(registry, "PASSES", dict(registry.PASSES))


PLUGIN_SOURCE = '''
from dataclasses import dataclass
from xdsl.passes import ModulePass
import optimus_ir


@optimus_ir.register_pass
@dataclass(frozen=True)
class {cls}(ModulePass):
    name = "{name}"

    def apply(self, ctx, op):
        pass
'''


def test_load_pass_plugin_from_a_file_and_a_module(tmp_path, capsys, monkeypatch, isolated_registry):
    (tmp_path / "my_plugin.py").write_text(PLUGIN_SOURCE.format(cls="Noop", name="my-noop"))
    (tmp_path / "other_plugin.py").write_text(PLUGIN_SOURCE.format(cls="Other", name="my-other"))
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), f"--load-pass-plugin={tmp_path / 'my_plugin.py'}", "-p", "my-noop,dce"]) == 0
    assert "fx.graph @g" in capsys.readouterr().out
    # a module name, from the import path; loading it again is a no-op
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry.load_pass_plugin("other_plugin") == ["my-other"]
    assert registry.load_pass_plugin("other_plugin") == []
    assert registry.load_pass_plugin(str(tmp_path / "my_plugin.py")) == []
    # where a registration came from is recorded (a later clash names it)
    assert registry.PASSES["my-noop"].registered_by == str(tmp_path / "my_plugin.py")


@pytest.mark.parametrize(
    "plugin, source, message",
    [
        ("missing.py", None, "cannot load pass plugin '{dir}/missing.py': no such file"),
        ("no_such_module_anywhere", None, "cannot load pass plugin 'no_such_module_anywhere': no module named 'no_such_module_anywhere'"),
        ("clash.py", PLUGIN_SOURCE.format(cls="MyDce", name="dce"),
         "cannot load pass plugin '{dir}/clash.py': ValueError: @register_pass: pass 'dce' is already registered "
         "(optimus_ir.passes.dce.DeadCodeElimination, registered by optimus_ir.passes.dce); "
         "optimus_pass_plugin_clash_"),
        ("broken.py", "raise RuntimeError('plugin bug\\nsecond line')\n",
         "cannot load pass plugin '{dir}/broken.py': RuntimeError: plugin bug"),
        ("camel.py", PLUGIN_SOURCE.format(cls="X", name="MyPass"),
         "cannot load pass plugin '{dir}/camel.py': ValueError: @register_pass: "
         "optimus_pass_plugin_camel_"),
        ("nameless.py", PLUGIN_SOURCE.format(cls="X", name="x").replace('    name = "x"\n', ""),
         "TypeError: @register_pass: "),
        ("old_form.py", "from optimus_ir.passes.registry import register_pass\nregister_pass('x')\n",
         "cannot load pass plugin '{dir}/old_form.py': TypeError: register_pass('x'): register_pass is a class decorator"),
    ],
)
def test_load_pass_plugin_errors(plugin, source, message, tmp_path, capsys, isolated_registry):
    if source is not None:
        (tmp_path / plugin).write_text(source)
    argument = str(tmp_path / plugin) if plugin.endswith(".py") else plugin
    path = tmp_path / "in.mlir"
    path.write_text(VALID)
    assert main([str(path), f"--load-pass-plugin={argument}", "-p", "dce"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith("optimus-opt: error: ")
    assert message.format(dir=tmp_path) in err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err  # one line naming the plugin
    assert "dce" in registry.PASSES and registry.get_pass_class("dce").__module__ == "optimus_ir.passes.dce"


def readme_pass_table() -> list[str]:
    """The pass names of README.md's "## Passes" table (first column,
    options dropped)."""
    text = (REPO / "README.md").read_text().split("\n## Passes\n", 1)[1]
    names = []
    for line in text.splitlines()[2:]:
        if not line.startswith("|"):
            break
        first = line.strip("|").split("|")[0]
        names.extend(re.sub(r"\{.*?\}", "", name) for name in re.findall(r"`([^`]+)`", first))
    return names


def test_help_lists_every_pass_and_named_pipeline_and_the_docs_table_every_pass():
    """Issue 34: `--help` did not list `default` under `-p` although the
    docs use `-p default`, and `match-output-strides` was in `--help` but
    not in the docs' pass table."""
    listed = run_opt("--help")
    assert listed.returncode == 0, listed.stderr
    # the -p entry: from its option line to the next option
    entry = listed.stdout.split("-p PIPELINE, --passes PIPELINE", 1)[1].split("\n  --", 1)[0]
    words = " ".join(entry.split())
    # the registry of a fresh process (a test here may have registered a plugin pass in this one)
    probe = subprocess.run(
        [sys.executable, "-c", "from optimus_ir.passes.registry import PASSES; print(' '.join(sorted(PASSES)))"],
        capture_output=True, text=True, timeout=120,
    )
    production = probe.stdout.split()
    assert probe.returncode == 0 and "match-output-strides" in production, probe.stderr
    for name in production:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", words), (name, words)
    assert set(registry.PIPELINE_DESCRIPTIONS) == set(registry.PIPELINES)
    for name, description in registry.PIPELINE_DESCRIPTIONS.items():
        assert f"{name} ({description})" in words, (name, words)
    # every production pass in the README's table, and nothing there that is not a pass
    table = readme_pass_table()
    assert sorted(set(table) - set(TEST_PASSES)) == production, table
    assert set(table) & set(TEST_PASSES) == set(TEST_PASSES)  # the test-only passes are documented as such
    # the named pipelines do what the help says: -p default runs the default pipeline
    default = run_opt("-p", "default", stdin=VALID)
    explicit = run_opt("-p", registry.DEFAULT_PIPELINE, stdin=VALID)
    assert default.returncode == 0 and default.stdout == explicit.stdout, default.stderr
