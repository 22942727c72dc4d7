"""Parsing IR text with source locations.

`LocatingParser` is xDSL's parser recording the source position of every op it
parses as the op's `location` (a `FileLineColLoc`, unless the text gives an
explicit `loc(...)`), so that verifier and pass diagnostics can name the line.
It also points errors about unknown ops, types and attributes at the name
itself rather than after it.

This module sits above `optimus_ir.context` and `optimus_ir.diagnostics`,
which do not import it.
"""

from __future__ import annotations

import bisect
import re

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span

from optimus_ir.context import make_context



class LocatingParser(Parser):
    """xDSL's parser that records where each op starts as its `location`
    (unless the text gives an explicit `loc(...)`)."""

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>") -> None:
        super().__init__(ctx, input, name)
        text = input.decode("utf-8") if isinstance(input, bytes) else input
        self._line_starts = [0]
        self._line_starts.extend(m.end() for m in re.finditer("\n", text))
        self._file = StringAttr(name)

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except ParseError as err:
            raise self._point_at_op_name(err, start) from None
        if isinstance(op.location, UnknownLoc):
            line = bisect.bisect_right(self._line_starts, start)
            column = start - self._line_starts[line - 1] + 1
            op.location = FileLineColLoc(self._file, IntAttr(line), IntAttr(column))
        return op

    def _point_at_op_name(self, err: ParseError, start: int) -> ParseError:
        """xDSL reports an unknown op, type or attribute after its name;
        point at the name itself."""
        if err.span.start < start:
            return err
        text = self.lexer.input.content
        match = re.fullmatch(r"Operation (\S+) is not registered", err.msg)
        if match is not None:
            name = match.group(1)
            at = text.find(name, start, err.span.start + 1)
            message = f"unknown operation '{name}'"
        else:
            match = re.fullmatch(r"'(\S+)' is not registered", err.msg)
            if match is None:
                return err
            name = match.group(1)
            at = text.rfind(name, start, err.span.start)
            if at > 0 and text[at - 1] in "!#":
                at -= 1
                name = text[at] + name
            message = f"unknown type or attribute '{name}'"
        if at < 0:
            return err
        return ParseError(Span(at, at + len(name), self.lexer.input), message)


def parse_module(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse IR text into a ModuleOp whose ops carry their source locations
    (for tests and the CLI only: xDSL's parser is slow, programmatic paths
    build IR in memory). `ctx` defaults to the project's context."""
    return LocatingParser(ctx if ctx is not None else make_context(), text, name).parse_module()


__all__ = ["LocatingParser", "parse_module"]
