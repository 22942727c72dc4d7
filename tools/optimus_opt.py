"""optimus-opt: textual IR in, passes, textual IR out (like mlir-opt / xdsl-opt).

    optimus-opt [FILE|-] -p PIPELINE [-o OUT]
                [--split-input-file] [--verify-diagnostics]
                [--print-ir-after-all | --print-ir-after=PASS[,PASS]]
                [--pass-statistics] [--time-passes]
                [--max-rewrites=N | --bisect-rewrites=N] [--print-rewrite-log]
                [--validate-each] [--bisect]
                [--load-pass-plugin=FILE.py|MODULE]...

Built on xDSL's driver (`xDSLOptMain`) with only this project's dialects and
passes registered. Errors are reported as `file:line:col: error: message`
with the offending source line, and exit status 1; never a Python traceback
for bad input. Reports (statistics, timing, IR dumps, the rewrite log) go
to stderr, the resulting IR to stdout (or `-o`).

`--verify-diagnostics` follows MLIR: `// expected-error {{text}}` (also
`expected-warning`, `expected-remark`, `expected-note`; `-re` for regex parts
in `{{...}}`; `@above`, `@below`, `@+N`, `@-N` for other lines) must be
matched by a diagnostic on that line containing the text, and every
diagnostic must be expected; any mismatch is reported and exits with 1.

`--validate-each` exports the IR before and after every pass, runs both on
seeded random inputs (made-up seeded parameters for `fx.get_attr`) and fails
with the pass, the first differing output and the size of the difference.
`--bisect-rewrites=N` applies only the first N pattern rewrites of the
pipeline; `--bisect` finds by itself the single rewrite after which the
results first differ, and names its pass, pattern, op and source line.

`--load-pass-plugin=FILE.py` (or `=package.module`) imports a pass plugin
before the pipeline is parsed: a module that registers passes with the
class decorator `@optimus_ir.register_pass` when imported (the test-only
passes `test-miscompile`, `test-alias-miscompile` and `test-fail` live in
`tests/plugins/miscompile_passes.py`). A missing file or module, or a plugin
that fails to import (a pass name taken twice included), is one
`optimus-opt: error: ...` line naming the plugin, and exit status 1.

Installed plugins (entry points of group `optimus_ir.plugins`,
`optimus_ir.plugins`) are loaded first, before `--load-pass-plugin` and the
pipeline; a broken one is an `optimus-opt: warning: ...` line and is
skipped. `OPTIMUS_PLUGINS=0` loads none.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

from optimus_ir.pipeline.validation import DifferentialValidator, bisect_rewrites
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from optimus_ir.foundation.diagnostics import (
    Diagnostic,
    OptimusError,
    Severity,
    SourceLocation,
    VerificationError,
    diagnostic_handler,
    verify_module,
)
from optimus_ir.foundation.environment import environment
from optimus_ir.translate.parsing import LocatingParser, parse_error_diagnostic, read_source
from optimus_ir.pipeline import PassManager, PipelineError, parse_pipeline
from optimus_ir.foundation.statistics import PassStatistics

PROG = "optimus-opt"


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, but never breaking a line at a hyphen (pass
    names are kebab-case: `split-cat-\nsimplify` could not be copied)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)


def pipeline_help(passes: Sequence[str]) -> str:
    """The help of `-p`: what a pipeline is, the registered passes (`passes`)
    and the named pipelines (`passes/registry.py` PIPELINES)."""
    from optimus_ir.passes.registry import PIPELINE_DESCRIPTIONS, PIPELINES

    named = "; ".join(f"{name} ({PIPELINE_DESCRIPTIONS.get(name, PIPELINES[name])})" for name in PIPELINES)
    return (
        "the pass pipeline: passes separated by commas, each with its options in braces "
        "(batch-fusion{cost-model=none min-size=4}); a named pipeline stands for its passes "
        f"(-p default, -p cleanup,lower-to-fx). Passes: {', '.join(passes)}. Named pipelines: {named}."
    )
SPLIT_MARKER = "// -----"


class OptimusOptMain(xDSLOptMain):
    """xDSL's opt driver, restricted to optimus-ir's dialects and passes."""

    version_format = "optimus-opt (optimus-ir) built from xdsl version {xdsl_version}"

    pass_manager: PassManager | None = None
    pipeline_error: PipelineError | None = None
    option_errors: list[str] = []
    """Bad values of options other than `-p` (`--print-ir-after=nope`), each
    a complete `optimus-opt: error: ...` line."""
    option_warnings: list[str] = []

    def __init__(self, args: Sequence[str] | None = None) -> None:
        # Plugins register passes, and xDSL's driver registers the passes
        # (and checks -p against them) before it parses the arguments: load
        # them first. A failure raises PassPluginError (`main` reports it).
        from optimus_ir.passes.registry import load_pass_plugin

        _load_installed_plugins()
        for plugin in _pass_plugins(sys.argv[1:] if args is None else args):
            load_pass_plugin(plugin)
        super().__init__(description="optimus-ir modular optimizer driver", args=args)

    # -- registration -------------------------------------------------------

    def register_all_dialects(self) -> None:
        from optimus_ir.translate.context import project_dialects

        for name, factory in project_dialects().items():
            self.ctx.register_dialect(name, factory)  # type: ignore[arg-type]

    def register_all_passes(self) -> None:
        from optimus_ir.passes.registry import available_passes

        for name, factory in available_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets = {
            k: v for k, v in self.available_targets.items() if k == "mlir"
        }

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.prog = PROG
        # xDSL's -p help lists the passes only; ours names the pipelines too,
        # and pass names are not broken at their hyphens
        arg_parser.formatter_class = _HelpFormatter
        for action in arg_parser._actions:  # noqa: SLF001 - argparse keeps no other handle on xDSL's -p
            if "--passes" in action.option_strings:
                action.metavar = "PIPELINE"
                action.help = pipeline_help(self.available_passes)
        arg_parser.add_argument(
            "--load-pass-plugin",
            action="append",
            default=[],
            metavar="FILE.py|MODULE",
            help="import a pass plugin (a Python file or module whose passes are "
            "registered with @optimus_ir.register_pass) before the pipeline is parsed; "
            "repeatable. Installed plugins (entry points 'optimus_ir.plugins') are "
            "loaded anyway, unless OPTIMUS_PLUGINS=0",
        )
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR (to stderr) after every pass",
        )
        arg_parser.add_argument(
            "--print-ir-after",
            action="append",
            default=[],
            metavar="PASS[,PASS]",
            help="print the IR (to stderr) after the named passes",
        )
        arg_parser.add_argument(
            "--pass-statistics",
            action="store_true",
            help="print per-pass and per-pattern statistics (to stderr)",
        )
        arg_parser.add_argument(
            "--max-rewrites",
            type=int,
            default=None,
            metavar="N",
            help="apply at most N pattern rewrites in the whole pipeline (bisection)",
        )
        arg_parser.add_argument(
            "--bisect-rewrites",
            type=int,
            default=None,
            dest="max_rewrites",
            metavar="N",
            help="the same as --max-rewrites: apply only the first N pattern rewrites",
        )
        arg_parser.add_argument(
            "--validate-each",
            action="store_true",
            help="run the IR before and after every pass on seeded random inputs "
            "and fail on the first pass that changes the results",
        )
        arg_parser.add_argument(
            "--bisect",
            action="store_true",
            help="find the single pattern rewrite that first changes the results "
            "(differential validation with a bisected rewrite budget)",
        )
        arg_parser.add_argument(
            "--remarks",
            action="store_true",
            help="print the passes' remarks (why each candidate was or was not "
            "rewritten, e.g. batch-fusion's groups); with --verify-diagnostics, "
            "check them against `expected-remark` annotations",
        )
        arg_parser.add_argument(
            "--print-rewrite-log",
            action="store_true",
            help="print every applied rewrite: pass, pattern, op, index, location",
        )

    def setup_pipeline(self) -> None:
        """Build the pass manager; a bad pipeline is reported by `run`."""
        args = self.args
        after = frozenset(
            name.strip() for item in args.print_ir_after for name in item.split(",") if name.strip()
        )
        self.option_errors, self.option_warnings = [], []
        if args.max_rewrites is not None and args.max_rewrites < 0:
            self.option_errors.append(
                f"{PROG}: error: --max-rewrites/--bisect-rewrites must be 0 or more, not {args.max_rewrites}"
            )
        try:
            passes = parse_pipeline(args.passes)
        except PipelineError as err:
            self.pipeline_error = err
            return
        if args.print_ir_after and not after:
            self.option_errors.append(f"{PROG}: error: --print-ir-after: no pass named (PASS[,PASS])")
        self._check_pass_names("--print-ir-after", after, passes)
        self.pass_manager = PassManager(
            passes,
            ctx=self.ctx,
            verify_each=not args.disable_verify,
            print_ir_after_all=args.print_ir_after_all or args.print_between_passes,
            print_ir_after=after,
            keep_rewrite_log=True,
        )

    def _check_pass_names(
        self, option: str, names: frozenset[str], passes: Sequence[object]
    ) -> None:
        """Every name given to `option` must be a registered pass (an error
        otherwise, with a suggestion and the list of passes); one that the
        pipeline does not run is a warning (the option would print nothing
        for it)."""
        import difflib

        from optimus_ir.passes.registry import PIPELINES, available_passes

        known = sorted(available_passes())
        in_pipeline = [getattr(p, "name", "") for p in passes]
        for name in sorted(names):
            if name in known:
                if name not in in_pipeline:
                    self.option_warnings.append(
                        f"{PROG}: warning: {option}: pass '{name}' is not in the pipeline "
                        f"({', '.join(in_pipeline) or 'empty'}); nothing is printed for it"
                    )
                continue
            if name in PIPELINES:
                problem = f"'{name}' is a pipeline, not a pass; name passes of it"
            else:
                hint = [n for n in known if n.lower() == name.lower()]
                hint = hint or difflib.get_close_matches(name, known, n=1)
                problem = f"unknown pass '{name}'" + (f"; did you mean '{hint[0]}'?" if hint else "")
            self.option_errors.append(
                f"{PROG}: error: {option}: {problem} (available passes: {', '.join(known)})"
            )

    # -- running --------------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        """Process the input; returns the exit status."""
        if self.pipeline_error is not None:
            print(self.pipeline_error.format(), file=sys.stderr)
            return 1
        for error in self.option_errors:
            print(error, file=sys.stderr)
        if self.option_errors:
            return 1
        for warning in self.option_warnings:
            print(warning, file=sys.stderr)
        name = self.get_input_name()
        try:
            if self.args.input_file in (None, "-"):
                data = sys.stdin.buffer.read()
                name = "<stdin>"
            else:
                with open(self.args.input_file, "rb") as f:
                    data = f.read()
        except OSError as err:
            print(f"{PROG}: error: cannot read '{name}': {err.strerror or err}", file=sys.stderr)
            return 1
        try:
            text = read_source(data, name)
        except OptimusError as err:
            print(err.diagnostic().format(), file=sys.stderr)
            return 1
        if not _has_code(text) and not self.args.split_input_file:
            print(f"{name}:1:1: error: empty input (no operations)", file=sys.stderr)
            return 1

        chunks = _split(text) if self.args.split_input_file else [(text, 0)]
        source_lines = {name: text.splitlines()}
        try:
            output = (
                open(self.args.output_file, "w") if self.args.output_file else sys.stdout
            )
        except OSError as err:
            print(
                f"{PROG}: error: cannot write '{self.args.output_file}': {err.strerror or err}",
                file=sys.stderr,
            )
            return 1
        status = 0
        try:
            for i, (chunk, line_offset) in enumerate(chunks):
                if i > 0:
                    output.write(SPLIT_MARKER + "\n")
                status = max(status, self._process_chunk(chunk, line_offset, name, output, source_lines))
                output.flush()
        finally:
            if output is not sys.stdout:
                output.close()
        return status

    def _process_chunk(
        self,
        chunk: str,
        line_offset: int,
        name: str,
        output: IO[str],
        source_lines: dict[str, list[str]],
    ) -> int:
        diagnostics: list[Diagnostic] = []
        module: ModuleOp | None = None
        statistics = PassStatistics()
        internal_error: BaseException | None = None
        # Pad with newlines so that line numbers are those of the whole file.
        padded = "\n" * line_offset + chunk
        try:
            with diagnostic_handler(diagnostics.append):
                start = time.perf_counter()
                module = self._parse(padded, name)
                statistics.add_phase("parse", time.perf_counter() - start, outside=True)
                if not self.args.disable_verify:
                    start = time.perf_counter()
                    verify_module(module)
                    # written types must agree with what each known call gives
                    from optimus_ir.passes.raise_fx import verify_declared_types

                    verify_declared_types(module)
                    statistics.add_phase("verify input", time.perf_counter() - start, outside=True)
                assert self.pass_manager is not None
                if self.args.bisect:
                    return self._bisect(padded, name, module, source_lines)
                self.pass_manager.validate_each = None
                if self.args.validate_each:
                    validator = DifferentialValidator(module)
                    self.pass_manager.validate_each = (
                        lambda pass_, mod: validator.after_pass(str(pass_.spec()), mod)
                    )
                self.pass_manager.run(
                    module, statistics=statistics, max_rewrites=self.args.max_rewrites
                )
        except ParseError as err:
            module = None
            diagnostics.append(parse_error_diagnostic(err, padded, name))
        except VerificationError as err:
            module = None
            diagnostics.extend(err.errors)
        except OptimusError as err:
            module = None
            diagnostics.append(err.diagnostic())
        except DiagnosticException as err:
            module = None
            diagnostics.append(Diagnostic(Severity.ERROR, _first_line(str(err))))
        except ImportError as err:
            module = None
            diagnostics.append(Diagnostic(Severity.ERROR, f"cannot load a dialect or pass: {err}"))
        except RecursionError:
            # the parser's nesting limit keeps this from parsing; a pass or
            # the verifier recursing on a deep structure is reported too
            module = None
            diagnostics.append(
                Diagnostic(Severity.ERROR, "input nested too deeply to process", location=SourceLocation(name, 1, 1))
            )
        except (ArgSpecParseError, Exception) as err:  # a bug, not bad input
            module = None
            internal_error = err

        if not self.args.remarks:  # remarks are opt-in, as in MLIR
            diagnostics = [d for d in diagnostics if d.severity is not Severity.REMARK]
        printed: str | None = None
        too_deep_to_print = False
        if module is not None:
            # printed (to a string) before the reports, so that --time-passes has its time
            start = time.perf_counter()
            try:
                printed = self.output_resulting_program(module)
            except RecursionError:
                too_deep_to_print = True
            statistics.add_phase("print", time.perf_counter() - start, outside=True)
        self._print_reports(statistics)
        if internal_error is not None:
            from optimus_ir.pipeline import failed_pass

            crashed = failed_pass(internal_error)
            where = f" in pass '{crashed}'" if crashed else ""
            print(
                f"{name}: internal error{where}: {type(internal_error).__name__}: {internal_error}",
                file=sys.stderr,
            )
            if environment().traceback:
                traceback.print_exception(internal_error)
            else:
                print("(set OPTIMUS_TRACEBACK=1 to see the Python traceback)", file=sys.stderr)
            return 2

        if self.args.verify_diagnostics:
            failures = check_expected_diagnostics(padded, name, diagnostics)
            for failure in failures:
                print(failure.format(source_lines), file=sys.stderr)
            status = 1 if failures else 0
        else:
            for diagnostic in diagnostics:
                print(diagnostic.format(source_lines), file=sys.stderr)
            status = 1 if any(d.severity is Severity.ERROR for d in diagnostics) else 0
        if too_deep_to_print:
            print(f"{name}:1:1: error: the result is nested too deeply to print", file=sys.stderr)
            return 1
        if printed is not None:
            output.write(printed)
        return status

    def _bisect(
        self, text: str, name: str, module: ModuleOp, source_lines: dict[str, list[str]]
    ) -> int:
        """Report the first rewrite that changes the results; 1 if there is one."""
        assert self.pass_manager is not None
        validator = DifferentialValidator(module)
        result = bisect_rewrites(
            lambda: self._parse(text, name),
            self.pass_manager.passes,
            lambda mod: validator.check(mod, self.pass_manager.text),
        )
        if result is None:
            print(f"{name}: the pipeline keeps the results; nothing to bisect", file=sys.stderr)
            return 0
        culprit = result.culprit
        where = f"{culprit.location}: " if culprit.location else f"{name}: "
        print(
            f"{where}error: rewrite #{culprit.index + 1} ({culprit.pass_name}: "
            f"pattern '{culprit.pattern}' on '{culprit.op_name}') is the first that "
            f"changes the results ({result.rewrites_ok} rewrites before it are fine)\n"
            f"  {result.error}",
            file=sys.stderr,
        )
        return 1

    def _parse(self, text: str, name: str) -> ModuleOp:
        if not _has_code(text):
            return ModuleOp([])
        parser = LocatingParser(self.ctx, text, name)
        return parser.parse_module(not self.args.no_implicit_module)

    def _print_reports(self, statistics: PassStatistics) -> None:
        if not statistics.passes:
            return
        if self.args.pass_statistics:
            sys.stderr.write(statistics.format_statistics())
        if self.args.time_passes:
            sys.stderr.write(statistics.format_timing())
        if self.args.print_rewrite_log:
            for entry in statistics.rewrite_log:
                sys.stderr.write(f"rewrite {entry}\n")


# ---------------------------------------------------------------------------
# Input splitting
# ---------------------------------------------------------------------------


def _load_installed_plugins() -> None:
    """Load the installed plugins (entry points); each broken one is printed
    as a warning on stderr and skipped (optimus-opt goes on: a pass the
    pipeline needs from it is then an unknown pass, an error there)."""
    import warnings

    from optimus_ir.plugins import OptimusPluginWarning, load_plugins, plugin_outcomes

    if not environment().plugins:  # OPTIMUS_PLUGINS=0
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimusPluginWarning)  # printed below, in optimus-opt's form
        load_plugins(strict=False)
    for outcome in plugin_outcomes():
        if not outcome.loaded:
            print(
                f"{PROG}: warning: installed plugin {outcome.describe()} failed to load "
                f"and is skipped: {outcome.error}",
                file=sys.stderr,
            )


def _pass_plugins(argv: Sequence[str]) -> list[str]:
    """The values of every `--load-pass-plugin` in `argv` (the rest is
    left to the full parser)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--load-pass-plugin", action="append", default=[])
    known, _ = parser.parse_known_args(list(argv))
    return known.load_pass_plugin


def _split(text: str) -> list[tuple[str, int]]:
    """Chunks separated by `// -----` lines, each with its line offset."""
    chunks: list[tuple[str, int]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(keepends=True)):
        if line.strip().startswith(SPLIT_MARKER) and line.strip().strip("/ -") == "":
            chunks.append(("".join(current), start))
            current = []
            start = number + 1
            continue
        current.append(line)
    chunks.append(("".join(current), start))
    return chunks


_COMMENT = re.compile(r"//[^\n]*")


def _has_code(text: str) -> bool:
    return bool(_COMMENT.sub("", text).strip())


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "error"


# ---------------------------------------------------------------------------
# --verify-diagnostics
# ---------------------------------------------------------------------------

_EXPECT = re.compile(
    r"expected-(?P<kind>error|warning|remark|note)(?P<re>-re)?"
    r"(?:\s*@(?P<where>above|below|[+-]\d+))?\s*(?P<body>\{\{.*\}\})"
)
# Anything that looks like an annotation: one that `_EXPECT` cannot read is
# reported, never skipped (a skipped expectation lets a wrong test pass).
_LOOKS_LIKE_EXPECT = re.compile(r"\bexpected-[A-Za-z]")


@dataclass
class Expectation:
    severity: Severity
    text: str
    regex: re.Pattern[str] | None
    line: int
    """The line the diagnostic is expected on."""
    written_at: SourceLocation
    matched: bool = False

    def accepts(self, diagnostic: Diagnostic) -> bool:
        if diagnostic.severity is not self.severity or diagnostic.location is None:
            return False
        if diagnostic.location.line != self.line:
            return False
        if self.regex is not None:
            return self.regex.search(diagnostic.message) is not None
        return self.text in diagnostic.message


def _regex_of(body: str) -> re.Pattern[str]:
    """`-re` bodies: literal text with `{{regex}}` parts."""
    parts: list[str] = []
    pos = 0
    for match in re.finditer(r"\{\{(.*?)\}\}", body):
        parts.append(re.escape(body[pos : match.start()]))
        parts.append(f"(?:{match.group(1)})")
        pos = match.end()
    parts.append(re.escape(body[pos:]))
    return re.compile("".join(parts))


def parse_expectations(
    text: str, name: str, malformed: list[Diagnostic] | None = None
) -> list[Expectation]:
    """The `// expected-*` annotations of `text` (1-based file lines). MLIR's
    spellings are accepted (`expected-error@+1`, `expected-error @+1`); a
    comment that looks like an annotation but cannot be read is appended to
    `malformed` as an error diagnostic at its position."""
    lines = text.splitlines()
    expectations: list[Expectation] = []
    pending_below: list[Expectation] = []
    for index, line in enumerate(lines):
        number = index + 1
        comment_at = line.find("//")
        match = _EXPECT.search(line, comment_at) if comment_at >= 0 else None
        if match is None and comment_at >= 0 and malformed is not None:
            looks = _LOOKS_LIKE_EXPECT.search(line, comment_at)
            if looks is not None:
                malformed.append(
                    Diagnostic(
                        Severity.ERROR,
                        "cannot parse this expectation (expected "
                        "`expected-<error|warning|remark|note>[-re][@above|@below|@+N|@-N] {{text}}`): "
                        + line[looks.start():].strip(),
                        location=SourceLocation(name, number, looks.start() + 1),
                    )
                )
        if match is None:
            if pending_below and line.strip():
                for expectation in pending_below:
                    expectation.line = number
                pending_below = []
            continue
        body = match.group("body")[2:-2]
        where = match.group("where")
        target = number
        if where == "above":
            target = number - 1
        elif where and where[0] in "+-":
            target = number + int(where)
        severity = Severity(match.group("kind"))
        expectation = Expectation(
            severity,
            body,
            _regex_of(body) if match.group("re") else None,
            target,
            SourceLocation(name, number, match.start() + 1),
        )
        expectations.append(expectation)
        if where == "below":
            pending_below.append(expectation)
        elif pending_below and line[:comment_at].strip():
            # code on the same line as a later annotation ends the wait
            for waiting in pending_below:
                waiting.line = number
            pending_below = []
    return expectations


def check_expected_diagnostics(
    text: str, name: str, diagnostics: Sequence[Diagnostic]
) -> list[Diagnostic]:
    """Match `diagnostics` against the annotations in `text`; returns the
    failures (unexpected diagnostics, unmet expectations) as diagnostics."""
    failures: list[Diagnostic] = []
    expectations = parse_expectations(text, name, failures)
    for diagnostic in diagnostics:
        for expectation in expectations:
            if not expectation.matched and expectation.accepts(diagnostic):
                expectation.matched = True
                break
        else:
            failures.append(
                Diagnostic(
                    Severity.ERROR,
                    f"unexpected {diagnostic.severity.value}: {diagnostic.message}",
                    location=diagnostic.location,
                )
            )
    for expectation in expectations:
        if not expectation.matched:
            failures.append(
                Diagnostic(
                    Severity.ERROR,
                    f"expected {expectation.severity.value} "
                    f"\"{expectation.text}\" was not produced (on line {expectation.line})",
                    location=expectation.written_at,
                )
            )
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status (the console script
    wrapper exits with it)."""
    from optimus_ir.passes.registry import PassPluginError

    try:
        tool = OptimusOptMain(args=argv)
    except (ArgSpecParseError, PassPluginError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    return tool.run()


if __name__ == "__main__":
    sys.exit(main())
