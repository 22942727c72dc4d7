"""Diagnostics with source locations: errors, warnings and remarks about ops.

* `OptimusError` is the project's `DiagnosticException`: a message about an op
  (or about nothing in particular). Raise it (or `emit_error(op, msg)`) from a
  pass when the input cannot be handled; the CLI prints it as
  `file:line:col: error: msg` and exits with status 1.
* `emit_warning(op, msg)` / `emit_remark(op, msg)` report without failing. They
  go to the active `DiagnosticHandler` (the CLI installs one; `collect_diagnostics()`
  gives one to Python callers); without a handler warnings become Python
  `warnings` and remarks are dropped.
* Ops parsed from text carry their source position as their `location` (see
  `optimus_ir.translate.parsing`), so that verifier and pass diagnostics can name the
  op's line. Rewrites done through `optimus_ir.foundation.rewriting` give new ops the
  location of the op they replace.
* `verify_module` is `ModuleOp.verify` that reports *which* op failed (xDSL's
  own verifier raises an exception that does not name the op).
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from optimus_ir.foundation.environment import STRICT_ENV, environment  # noqa: F401 - STRICT_ENV re-exported


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    REMARK = "remark"
    NOTE = "note"


@dataclass(frozen=True)
class SourceLocation:
    """A file position; `line` and `column` are 1-based."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def location_of(op: Operation | None) -> SourceLocation | None:
    """The source position of `op`, else of its closest located ancestor."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None


@dataclass
class Diagnostic:
    """One message, about an op or a source position (or neither)."""

    severity: Severity
    message: str
    op: Operation | None = None
    location: SourceLocation | None = None

    def __post_init__(self) -> None:
        if self.location is None and self.op is not None:
            self.location = location_of(self.op)

    def format(self, source_lines: dict[str, list[str]] | None = None) -> str:
        """`file:line:col: error: message`, then the source line and a caret
        when `source_lines` (file name -> lines) has the file."""
        where = str(self.location) if self.location else "<unknown>"
        text = f"{where}: {self.severity.value}: {self.message}"
        if self.location and source_lines and self.location.file in source_lines:
            lines = source_lines[self.location.file]
            if 0 < self.location.line <= len(lines):
                line = lines[self.location.line - 1].rstrip("\r\n")
                text += f"\n{line}\n{' ' * (self.location.column - 1)}^"
        return text

    def __str__(self) -> str:
        return self.format()

    def __getstate__(self) -> dict[str, object]:
        # A copy keeps the message and location, not the op: an xDSL op
        # reaches its whole module through its links (pickling it recursed
        # past Python's limit on a 64-tower model's report).
        return {**self.__dict__, "op": None}


class OptimusError(DiagnosticException):
    """An error about an op (or the input as a whole), with its location."""

    def __init__(
        self,
        message: str,
        op: Operation | None = None,
        *,
        location: SourceLocation | None = None,
        severity: Severity = Severity.ERROR,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.op = op
        self.location = location if location is not None else location_of(op)
        self.severity = severity

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(self.severity, self.message, self.op, self.location)

    def __str__(self) -> str:
        if self.location is not None:
            return f"{self.location}: {self.message}"
        return self.message


class VerificationError(OptimusError):
    """The IR does not verify; `errors` holds one diagnostic per failing op."""

    def __init__(self, errors: list[Diagnostic], context: str = "") -> None:
        first = errors[0]
        message = first.message if not context else f"{first.message} ({context})"
        super().__init__(message, first.op, location=first.location)
        self.errors = errors


class OptimusFallbackWarning(UserWarning):
    """optimus-ir could not optimize a graph (a pass, the import or the
    export failed) and it runs unoptimized: `optimize()` returns the
    captured graph, the torch.compile backend hands the graph on as it is.
    Defined here so that both import it without a cycle (also importable
    from `optimus_ir.backend`)."""


def strict_from_env() -> bool:
    """Whether `OPTIMUS_STRICT` asks for strict mode (1, true, yes, on):
    `optimus_ir.options.environment().strict`; STRICT_ENV is importable
    from here as before."""
    return environment().strict


# ---------------------------------------------------------------------------
# Reporting warnings and remarks
# ---------------------------------------------------------------------------

DiagnosticHandler = Callable[[Diagnostic], None]

_handler: contextvars.ContextVar[DiagnosticHandler | None] = contextvars.ContextVar(
    "optimus_diagnostic_handler", default=None
)


@contextlib.contextmanager
def diagnostic_handler(handler: DiagnosticHandler) -> Iterator[None]:
    """Route `emit_warning`/`emit_remark` to `handler` inside the block."""
    token = _handler.set(handler)
    try:
        yield
    finally:
        _handler.reset(token)


@contextlib.contextmanager
def collect_diagnostics() -> Iterator[list[Diagnostic]]:
    """Collect the warnings and remarks emitted inside the block in a list."""
    collected: list[Diagnostic] = []
    with diagnostic_handler(collected.append):
        yield collected


def emit(op: Operation | None, severity: Severity, message: str) -> None:
    handler = _handler.get()
    diagnostic = Diagnostic(severity, message, op)
    if handler is not None:
        handler(diagnostic)
    elif severity in (Severity.WARNING, Severity.ERROR):
        warnings.warn(str(diagnostic), stacklevel=3)


def emit_warning(op: Operation | None, message: str) -> None:
    emit(op, Severity.WARNING, message)


def emit_remark(op: Operation | None, message: str) -> None:
    emit(op, Severity.REMARK, message)


def emit_error(op: Operation | None, message: str) -> None:
    """Raise an `OptimusError` about `op` (never returns)."""
    raise OptimusError(message, op)


# ---------------------------------------------------------------------------
# Verification that names the failing op
# ---------------------------------------------------------------------------


MAX_VERIFY_ERRORS = 20


def _redefinition(table: Operation, message: str) -> Operation | None:
    """The op that redefines a symbol, for xDSL's "Redefinition of symbol"
    error (raised on the symbol table, which is not where the mistake is)."""
    import re

    match = re.search(r'Redefinition of symbol "([^"]+)"', message)
    if match is None:
        return None
    seen = False
    for region in table.regions:
        for op in region.ops:
            name = op.properties.get("sym_name") or op.attributes.get("sym_name")
            if name is not None and getattr(name, "data", None) == match.group(1):
                if seen:
                    return op
                seen = True
    return None


def verify_module(module: Operation, context: str = "") -> None:
    """Verify `module`; raise `VerificationError` naming the failing ops (at
    most `MAX_VERIFY_ERRORS` of them)."""
    try:
        module.verify()
        return
    except (VerifyException, ValueError):
        pass
    errors: list[Diagnostic] = []
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, ValueError) as err:
            # one line: xDSL puts the failing constraint on a line of its own
            message = " ".join(part.strip() for part in str(err).splitlines() if part.strip())
            if not message.startswith(f"'{op.name}'"):
                message = f"'{op.name}' op {message}"
            errors.append(Diagnostic(Severity.ERROR, message, _redefinition(op, message) or op))
            if len(errors) >= MAX_VERIFY_ERRORS:
                break
    if not errors:  # the whole-module check failed in a way we cannot pin down
        try:
            module.verify()
        except (VerifyException, ValueError) as err:
            errors.append(Diagnostic(Severity.ERROR, str(err), module))
        else:  # pragma: no cover - verification is deterministic
            return
    raise VerificationError(errors, context)


__all__ = [
    "Diagnostic",
    "DiagnosticHandler",
    "OptimusError",
    "Severity",
    "SourceLocation",
    "VerificationError",
    "collect_diagnostics",
    "diagnostic_handler",
    "emit",
    "emit_error",
    "emit_remark",
    "emit_warning",
    "location_of",
    "verify_module",
]
