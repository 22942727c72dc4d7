"""The pipeline layer (rank 6). Pass pipelines: parsing the `-p` text form
and running it with statistics; `validation` runs a graph before and after.

The text form is xDSL's (`dce,cse{opt=1 other=2}`, parsed by
`xdsl.utils.arg_spec.parse_pipeline`, options mapped onto the pass
dataclass's fields by `ModulePass.from_spec`), and passes run through
`xdsl.passes.PassPipeline`. The CLI (`optimus-opt -p ...`) and the Python API
use the same code, so a pipeline means the same thing in both.

    stats = run_pipeline(module, "dce,cse", max_rewrites=10)
    print(stats.format_statistics())
    for rewrite in stats.rewrite_log: ...

Names from `optimus_ir.passes.registry.PIPELINES` (e.g. `default`) may be
used in a pipeline as if they were passes.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpec, PipelineLexer, SpecTokenKind, parse_pipeline as _xdsl_parse
from xdsl.utils.exceptions import ArgSpecParseError

from optimus_ir.foundation.diagnostics import OptimusError, SourceLocation, verify_module
from optimus_ir.foundation.environment import VERIFY_EACH_ENV, environment, literal_choices, literal_option_problems
from optimus_ir.foundation.statistics import (
    PassContext,
    PassRecord,
    PassStatistics,
    PatternStatistics,
    RewriteBudget,
    RewriteRecord,
    activate_pass,
)

PIPELINE_FILE = "<pass-pipeline>"
"""The file name pipeline diagnostics are reported against (line 1)."""


class PipelineError(OptimusError):
    """A pipeline that cannot be built: bad syntax, an unknown pass, bad options.
    `location` is the column in the pipeline text (file `<pass-pipeline>`)."""

    def __init__(self, message: str, text: str, column: int) -> None:
        super().__init__(message, location=SourceLocation(PIPELINE_FILE, 1, column))
        self.text = text
        self.column = column

    def format(self) -> str:
        return f"{self.location}: error: {self.message}\n{self.text}\n{' ' * (self.column - 1)}^"


ValidateHook = Callable[[ModulePass, ModuleOp], None]
"""Called after each pass with the pass and the module (after verification)."""


def default_verify_each() -> bool:
    """Whether runs that leave `verify_each` unset verify after every pass:
    only when `OPTIMUS_VERIFY_EACH=1` (production verifies once, at the end;
    on a 16k-op graph full verification after every pass was more than half
    of the pipeline's time)."""
    return environment().verify_each


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


def _registry() -> tuple[Mapping[str, Callable[[], type[ModulePass]]], Mapping[str, str]]:
    from optimus_ir.passes.registry import PIPELINES, available_passes

    return available_passes(), PIPELINES


def _pass_name_columns(text: str) -> list[int]:
    """1-based columns of the pass names of a (syntactically valid) pipeline."""
    return [column for column, _ in _pass_tokens(text)]


def _pass_tokens(text: str) -> list[tuple[int, list[tuple[str, int]]]]:
    """Per pass of a (syntactically valid) pipeline: the 1-based column of
    its name and its option names as written, with their columns."""
    lexer = PipelineLexer(text)
    passes: list[tuple[int, list[tuple[str, int]]]] = []
    depth = 0
    expect_name = True
    previous = None  # the previous token's kind, spaces included
    significant = None  # the previous token's kind, spaces left out
    while True:
        token = lexer.lex()
        kind = token.kind
        if kind is SpecTokenKind.EOF:
            return passes
        if kind is SpecTokenKind.L_BRACE:
            depth += 1
        elif kind is SpecTokenKind.R_BRACE:
            depth -= 1
        elif depth == 0 and kind is SpecTokenKind.COMMA:
            expect_name = True
        elif depth == 0 and expect_name and kind is SpecTokenKind.IDENT:
            passes.append((token.span.start + 1, []))
            expect_name = False
        elif (
            depth == 1
            and passes
            and kind is SpecTokenKind.IDENT
            and significant is not SpecTokenKind.EQUALS
            and (significant is SpecTokenKind.L_BRACE or previous is SpecTokenKind.SPACE)
        ):
            passes[-1][1].append((token.text, token.span.start + 1))
        previous = kind
        if kind is not SpecTokenKind.SPACE:
            significant = kind


def _check_options(
    spec: ArgSpec, pass_class: type[ModulePass], options: list[tuple[str, int]], text: str
) -> None:
    """Raise `PipelineError` at the option for an unknown, repeated or
    ill-typed option (xDSL's own message names neither the option nor its
    place, and keeps only the last of a repeated option)."""
    import dataclasses
    import typing

    from xdsl.utils.arg_spec import _convert_arg_to_type  # noqa: PLC2701 - the conversion from_spec does

    fields = {
        f.name.replace("_", "-"): f
        for f in dataclasses.fields(pass_class)
        if f.init and f.name != "name"
    }
    hints = typing.get_type_hints(pass_class)
    seen: set[str] = set()
    for written, column in options:
        option = written.replace("_", "-")
        where = f"option '{written}' of pass '{spec.name}'"
        if option not in fields:
            if not fields:
                detail = " (it takes no options)"
            else:
                hint = difflib.get_close_matches(option, list(fields), n=1)
                detail = f"; did you mean '{hint[0]}'?" if hint else ""
                detail += f" (options: {', '.join(sorted(fields))})"
            raise PipelineError(f"unknown option '{written}' for pass '{spec.name}'{detail}", text, column)
        if option in seen:
            raise PipelineError(f"{where} is given twice", text, column)
        seen.add(option)
        field_ = fields[option]
        value = spec.parameters.get(written, spec.parameters.get(field_.name))
        if value is None:
            continue
        try:
            _convert_arg_to_type(value, hints[field_.name])
        except (ValueError, TypeError):
            expected = hints[field_.name]
            choices = literal_choices(expected)
            if choices is not None:
                expected_name = "one of " + ", ".join(map(str, choices))
            else:
                expected_name = getattr(expected, "__name__", str(expected))
            got = "no value" if len(value) == 0 else repr(value[0]) if len(value) == 1 else repr(list(value))
            raise PipelineError(f"{where} expects {expected_name}, got {got}", text, column) from None


def _syntax_error(err: ArgSpecParseError, text: str) -> PipelineError:
    message = str(err)
    match = re.search(r"pass-pipeline:(\d+):(\d+)", message)
    column = int(match.group(2)) if match else 1
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    detail = lines[-1] if lines else "syntax error"
    return PipelineError(f"invalid pass pipeline: {detail}", text, column)


def parse_pipeline(
    text: str,
    passes: Mapping[str, Callable[[], type[ModulePass]]] | None = None,
    pipelines: Mapping[str, str] | None = None,
) -> tuple[ModulePass, ...]:
    """The pass instances of a `-p` pipeline, in order. Raises
    `PipelineError` (with the column) for bad syntax, unknown passes and bad
    options. `passes`/`pipelines` default to the project registry."""
    if passes is None or pipelines is None:
        default_passes, default_pipelines = _registry()
        passes = default_passes if passes is None else passes
        pipelines = default_pipelines if pipelines is None else pipelines
    return tuple(_parse(text, passes, pipelines, depth=0))


def _parse(text, passes, pipelines, depth: int) -> list[ModulePass]:
    if not isinstance(text, str):
        raise PipelineError(
            f"a pipeline is a text such as 'dce,cse', not a {type(text).__name__}", repr(text), 1
        )
    if not text.strip():
        return []
    try:
        specs: list[ArgSpec] = list(_xdsl_parse(text))
    except ArgSpecParseError as err:
        raise _syntax_error(err, text) from None
    tokens = _pass_tokens(text)
    if len(tokens) != len(specs):  # pragma: no cover - defensive
        tokens = [(1, [])] * len(specs)
    result: list[ModulePass] = []
    for spec, (column, options) in zip(specs, tokens):
        if spec.name not in passes:
            if spec.name in pipelines and depth < 8:
                if spec.parameters:
                    raise PipelineError(
                        f"named pipeline '{spec.name}' takes no options", text, column
                    )
                result.extend(_parse(pipelines[spec.name], passes, pipelines, depth + 1))
                continue
            known = sorted(passes)
            names = [*known, *pipelines]
            hint = [n for n in names if n.lower() == spec.name.lower()]
            hint = hint or difflib.get_close_matches(spec.name, names, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            raise PipelineError(
                f"unknown pass '{spec.name}'{suggestion} (available passes: "
                f"{', '.join(known)}; pipelines: {', '.join(sorted(pipelines))})",
                text,
                column,
            )
        pass_class = passes[spec.name]()
        _check_options(spec, pass_class, options, text)
        try:
            instance = pass_class.from_spec(spec)
            # a pass checks the values of its options as they are given,
            # not when it first runs (a pipeline is refused before any pass)
            check = getattr(instance, "check_options", None)
            if check is not None:
                check()
        except (ValueError, TypeError, OptimusError) as err:
            message = str(err.message if isinstance(err, OptimusError) else err)
            message = message.removeprefix(f"{spec.name}: ")
            raise PipelineError(
                f"invalid options for pass '{spec.name}': {message}", text, column
            ) from None
        result.append(instance)
    return result


def pipeline_text(passes: Sequence[ModulePass]) -> str:
    """The `-p` text of a sequence of pass instances (non-default options only)."""
    return ",".join(str(p.spec()) for p in passes)


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


@dataclass
class PassManager:
    """Runs a pipeline on modules: verification (after each pass, or once
    after the last one), an optional validation hook, IR printing,
    statistics and the rewrite budget."""

    passes: tuple[ModulePass, ...]
    ctx: Context | None = None
    verify_each: bool = True
    """Verify the whole module after every pass (optimus-opt's behaviour)."""
    verify_at_end: bool = False
    """Without `verify_each`: verify the module once, after the last pass
    (what production runs do)."""
    validate_each: ValidateHook | None = None
    print_ir_after_all: bool = False
    print_ir_after: frozenset[str] = frozenset()
    """Pass names after which to print the IR."""
    ir_stream: IO[str] | None = None
    """Where IR dumps go (default: stderr)."""
    keep_rewrite_log: bool = True

    @classmethod
    def parse(cls, text: str, **options) -> PassManager:
        return cls(parse_pipeline(text), **options)

    @property
    def text(self) -> str:
        return pipeline_text(self.passes)

    def run(
        self,
        module: ModuleOp,
        *,
        statistics: PassStatistics | None = None,
        max_rewrites: int | None = None,
    ) -> PassStatistics:
        """Run every pass on `module` in order; fills and returns `statistics`
        (a new `PassStatistics` when None). `max_rewrites` caps the pattern
        rewrites of the whole run (on top of what `statistics.budget`
        already used)."""
        for pass_ in self.passes:
            # a pass made in Python is not checked by the spec parser
            problems = literal_option_problems(pass_)
            if problems:
                raise OptimusError(f"{getattr(pass_, 'name', type(pass_).__name__)}: {'; '.join(problems)}")
        if statistics is None:
            statistics = PassStatistics()
        budget = statistics.budget
        budget.keep_log = self.keep_rewrite_log
        if max_rewrites is not None:
            budget.max_rewrites = budget.used + max_rewrites
        ctx = self.ctx
        if ctx is None:
            from optimus_ir.translate.context import make_context

            ctx = make_context()

        from optimus_ir.translate.importer import gc_paused

        stack = contextlib.ExitStack()
        started = [0.0]
        running: list[PassRecord | None] = [None]
        pipeline_start = time.perf_counter()

        def callback(previous: ModulePass | None, mod: ModuleOp, upcoming: ModulePass | None) -> None:
            running[0] = None
            if previous is not None:
                record = statistics.passes[-1]
                record.seconds = time.perf_counter() - started[0]
                stack.close()
                self._after_pass(previous, record, mod, statistics)
            if upcoming is not None:
                record = PassRecord(upcoming.name, str(upcoming.spec()))
                statistics.passes.append(record)
                stack.enter_context(activate_pass(PassContext(record, budget)))
                # A pass over a large graph creates and erases hundreds of
                # thousands of ops; with the collector running, the bursts of
                # allocations trigger full collections that walk the whole
                # long-lived IR, and the passes grew faster than the graph (a
                # 100k-node lower-to-fx spent more time collecting than
                # lowering). The collector resumes when the pass ends, before
                # verification and validation, and reclaims the erased ops.
                stack.enter_context(gc_paused())
                started[0] = time.perf_counter()
                running[0] = record

        try:
            PassPipeline(self.passes, callback).apply(ctx, module)
            if self.verify_at_end and not self.verify_each and self.passes:
                spec = statistics.passes[-1].spec if statistics.passes else ""
                verify_start = time.perf_counter()
                verify_module(module, f"after pass '{spec}' (end of pipeline)")
                statistics.add_phase("verify", time.perf_counter() - verify_start)
        except Exception as error:
            if running[0] is not None:
                name_failing_pass(error, running[0].spec)
            raise
        finally:
            stack.close()
            statistics.total_seconds += time.perf_counter() - pipeline_start
        return statistics

    def _after_pass(
        self, pass_: ModulePass, record: PassRecord, module: ModuleOp, statistics: PassStatistics
    ) -> None:
        # IR that fails to verify, or results that changed, right after a
        # pass are that pass's fault: the error names it like a crash in it
        try:
            if self.verify_each:
                start = time.perf_counter()
                verify_module(module, f"after pass '{record.spec}'")
                statistics.add_phase("verify", time.perf_counter() - start)
            if self.validate_each is not None:
                start = time.perf_counter()
                self.validate_each(pass_, module)
                statistics.add_phase("validate", time.perf_counter() - start)
        except Exception as error:
            name_failing_pass(error, record.spec)
            raise
        if self.print_ir_after_all or pass_.name in self.print_ir_after:
            stream = self.ir_stream or sys.stderr
            stream.write(f"// -----// IR Dump After {record.spec} //----- //\n")
            Printer(stream=stream).print_op(module)
            stream.write("\n\n")


FAILED_PASS_ATTRIBUTE = "optimus_pass"
"""The attribute an exception raised inside a pass carries: the pass as
written in the pipeline (`batch-fusion{min-size=2}`), for the callers that
fall back instead of failing (the torch.compile backend names it)."""


def name_failing_pass(error: BaseException, spec: str) -> None:
    """Mark `error` as raised inside the pass `spec` (once: the innermost
    pipeline that saw it knows the pass best) and add a note saying so, so
    the traceback of a crashing pass names it."""
    if getattr(error, FAILED_PASS_ATTRIBUTE, None) is not None:
        return
    try:
        setattr(error, FAILED_PASS_ATTRIBUTE, spec)
    except AttributeError:  # an exception type with __slots__
        return
    error.add_note(f"(raised inside the optimus-ir pass '{spec}')")


def failed_pass(error: BaseException) -> str | None:
    """The pass `error` was raised in (`name_failing_pass`), or None."""
    return getattr(error, FAILED_PASS_ATTRIBUTE, None)


def run_pipeline(
    module: ModuleOp,
    pipeline: str | Sequence[ModulePass] | None = None,
    *,
    ctx: Context | None = None,
    statistics: PassStatistics | None = None,
    max_rewrites: int | None = None,
    validate_each: ValidateHook | None = None,
    verify_each: bool | None = None,
) -> PassStatistics:
    """Run a pipeline (the `-p` text, or pass instances; default:
    `DEFAULT_PIPELINE`) on `module` in place; returns the statistics.

    `max_rewrites` caps the pattern rewrites of the whole pipeline (bisection);
    the applied ones are logged in `statistics.rewrite_log`. `validate_each`
    is called as `validate_each(pass, module)` after each pass.
    `verify_each`: True verifies after every pass, False not at all; None
    (the default) verifies once at the end, or after every pass when
    `default_verify_each()` (`OPTIMUS_VERIFY_EACH=1`, as in the tests)."""
    if not isinstance(module, ModuleOp):
        raise OptimusError(
            f"run_pipeline needs a ModuleOp (parse_module(...) or "
            f"import_graph(...).module), not a {type(module).__name__}"
        )
    if pipeline is None:
        from optimus_ir.passes.registry import DEFAULT_PIPELINE

        pipeline = DEFAULT_PIPELINE
    verify_at_end = verify_each is None
    if verify_each is None:
        verify_each = default_verify_each()
    if isinstance(pipeline, str):
        passes = parse_pipeline(pipeline)
    else:
        passes = tuple(pipeline)
        if not all(isinstance(p, ModulePass) for p in passes):
            parse_pipeline(pipeline)  # type: ignore[arg-type] - raises the PipelineError
    manager = PassManager(
        passes,
        ctx=ctx,
        verify_each=verify_each,
        verify_at_end=verify_at_end,
        validate_each=validate_each,
    )
    return manager.run(module, statistics=statistics, max_rewrites=max_rewrites)


__all__ = [
    "PIPELINE_FILE",
    "PassManager",
    "PassRecord",
    "PassStatistics",
    "PatternStatistics",
    "PipelineError",
    "RewriteBudget",
    "RewriteRecord",
    "VERIFY_EACH_ENV",
    "ValidateHook",
    "default_verify_each",
    "parse_pipeline",
    "pipeline_text",
    "run_pipeline",
]
