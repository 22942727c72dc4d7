"""Pass pipelines: parsing the `-p` text form and running it with statistics.

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
import os
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

from optimus_ir.diagnostics import OptimusError, SourceLocation, verify_module
from optimus_ir.statistics import (
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

VERIFY_EACH_ENV = "OPTIMUS_VERIFY_EACH"
"""Environment variable: when set to `1` (the test suite sets it in
`tests/conftest.py`), library runs that do not say otherwise (`optimize`,
the torch.compile backend, `run_pipeline`) verify the whole module after
every pass instead of once at the end."""


def default_verify_each() -> bool:
    """Whether runs that leave `verify_each` unset verify after every pass:
    only when `OPTIMUS_VERIFY_EACH=1` (production verifies once, at the end;
    on a 16k-op graph full verification after every pass was more than half
    of the pipeline's time)."""
    return os.environ.get(VERIFY_EACH_ENV, "") not in ("", "0")


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


def _registry() -> tuple[Mapping[str, Callable[[], type[ModulePass]]], Mapping[str, str]]:
    from optimus_ir.passes.registry import PIPELINES, available_passes

    return available_passes(), PIPELINES


def _pass_name_columns(text: str) -> list[int]:
    """1-based columns of the pass names of a (syntactically valid) pipeline."""
    lexer = PipelineLexer(text)
    columns: list[int] = []
    depth = 0
    expect_name = True
    while True:
        token = lexer.lex()
        kind = token.kind
        if kind is SpecTokenKind.EOF:
            return columns
        if kind is SpecTokenKind.L_BRACE:
            depth += 1
        elif kind is SpecTokenKind.R_BRACE:
            depth -= 1
        elif depth == 0 and kind is SpecTokenKind.COMMA:
            expect_name = True
        elif depth == 0 and expect_name and kind is SpecTokenKind.IDENT:
            columns.append(token.span.start + 1)
            expect_name = False


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
    try:
        specs: list[ArgSpec] = list(_xdsl_parse(text))
    except ArgSpecParseError as err:
        raise _syntax_error(err, text) from None
    columns = _pass_name_columns(text)
    if len(columns) != len(specs):  # pragma: no cover - defensive
        columns = [1] * len(specs)
    result: list[ModulePass] = []
    for spec, column in zip(specs, columns):
        if spec.name not in passes:
            if spec.name in pipelines and depth < 8:
                if spec.parameters:
                    raise PipelineError(
                        f"named pipeline '{spec.name}' takes no options", text, column
                    )
                result.extend(_parse(pipelines[spec.name], passes, pipelines, depth + 1))
                continue
            known = sorted(passes)
            hint = difflib.get_close_matches(spec.name, [*known, *pipelines], n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            raise PipelineError(
                f"unknown pass '{spec.name}'{suggestion} (available passes: "
                f"{', '.join(known)}; pipelines: {', '.join(sorted(pipelines))})",
                text,
                column,
            )
        pass_class = passes[spec.name]()
        try:
            result.append(pass_class.from_spec(spec))
        except (ValueError, TypeError) as err:
            raise PipelineError(
                f"invalid options for pass '{spec.name}': {err}", text, column
            ) from None
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
        if statistics is None:
            statistics = PassStatistics()
        budget = statistics.budget
        budget.keep_log = self.keep_rewrite_log
        if max_rewrites is not None:
            budget.max_rewrites = budget.used + max_rewrites
        ctx = self.ctx
        if ctx is None:
            from optimus_ir.context import make_context

            ctx = make_context()

        from optimus_ir.importer import gc_paused

        stack = contextlib.ExitStack()
        started = [0.0]
        pipeline_start = time.perf_counter()

        def callback(previous: ModulePass | None, mod: ModuleOp, upcoming: ModulePass | None) -> None:
            if previous is not None:
                record = statistics.passes[-1]
                record.seconds = time.perf_counter() - started[0]
                stack.close()
                self._after_pass(previous, record, mod)
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

        try:
            PassPipeline(self.passes, callback).apply(ctx, module)
            if self.verify_at_end and not self.verify_each and self.passes:
                spec = statistics.passes[-1].spec if statistics.passes else ""
                verify_module(module, f"after pass '{spec}' (end of pipeline)")
        finally:
            stack.close()
            statistics.total_seconds += time.perf_counter() - pipeline_start
        return statistics

    def _after_pass(self, pass_: ModulePass, record: PassRecord, module: ModuleOp) -> None:
        if self.verify_each:
            verify_module(module, f"after pass '{record.spec}'")
        if self.validate_each is not None:
            self.validate_each(pass_, module)
        if self.print_ir_after_all or pass_.name in self.print_ir_after:
            stream = self.ir_stream or sys.stderr
            stream.write(f"// -----// IR Dump After {record.spec} //----- //\n")
            Printer(stream=stream).print_op(module)
            stream.write("\n\n")


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
    if pipeline is None:
        from optimus_ir.passes.registry import DEFAULT_PIPELINE

        pipeline = DEFAULT_PIPELINE
    verify_at_end = verify_each is None
    if verify_each is None:
        verify_each = default_verify_each()
    passes = parse_pipeline(pipeline) if isinstance(pipeline, str) else tuple(pipeline)
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
