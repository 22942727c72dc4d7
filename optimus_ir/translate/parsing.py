"""Parsing IR text with source locations.

`LocatingParser` is xDSL's parser recording the source position of every op it
parses as the op's `location` (a `FileLineColLoc`, unless the text gives an
explicit `loc(...)`), so that verifier and pass diagnostics can name the line.
It also points errors about unknown ops, types and attributes at the name
itself rather than after it, rejects input nested deeper than
`MAX_NESTING` brackets (xDSL's parser and printer recurse per level: deeper
input would end in a RecursionError), and says what is wrong in a few
places where xDSL's message does not (a negative dimension, an unknown
element type, a stray `}`, an invisible character).

`read_source` decodes a file's bytes (a located error for invalid UTF-8) and
`parse_error_diagnostic` turns a `ParseError` into a located `Diagnostic`
("unexpected end of input" for a truncated file): optimus-opt and
optimus-translate report bad text the same way.

This module sits above `optimus_ir.translate.context` and `optimus_ir.foundation.diagnostics`,
which do not import it.
"""

from __future__ import annotations

import bisect
import re

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Position, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind

from optimus_ir.translate.context import make_context
from optimus_ir.foundation.diagnostics import Diagnostic, OptimusError, Severity, SourceLocation

MAX_NESTING = 100
"""The deepest bracket nesting (`[`, `(`, `{`, `<`) the parser accepts; far
beyond any real program, well within what the parser, the verifier and the
printer manage without exhausting Python's recursion limit."""

_NESTING_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|//[^\n]*|->|[\[({<]|[\])}>]')


def nesting_error(text: str, limit: int = MAX_NESTING) -> int | None:
    """The offset of the first bracket nested deeper than `limit` (strings
    and comments skipped, `->` is not a bracket), or None."""
    depth = 0
    for match in _NESTING_TOKENS.finditer(text):
        token = match.group()
        if token in "[({<":
            depth += 1
            if depth > limit:
                return match.start()
        elif token in "])}>":
            depth = max(depth - 1, 0)
    return None



class LinearTimeLexer(MLIRLexer):
    """xDSL's MLIR lexer with a string-literal rule that runs in linear time.

    xDSL 0.75.0 matches a string literal with
    `"(?:[^"\\\n\v\f]+|\\(?:...))*"`: a repeated group around a repeated
    character class, which backtracks exponentially when the closing quote is
    missing (three double quotes and 30 letters on a line, the first line of a
    Python file, took minutes). Here the repetitions are possessive (`++`, `*+`, Python
    3.11): the alternatives cannot match the same text, so giving nothing back
    loses no match, and a failure is found in one pass. A failure also says
    why: a missing quote before the end of the line or of the input, or an
    escape that MLIR does not have (xDSL says "End of file reached" for all
    three). Only this project's parsers use this lexer; xDSL's own class is
    left as it is for other users in the process.
    """

    _unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
    )
    _string_prefix = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+')

    def _lex_string_literal(self, start_pos: Position) -> MLIRToken:
        """A string literal (xDSL's rule, with this class's regex) or a
        located error that says what is wrong with it."""
        try:
            return super()._lex_string_literal(start_pos)
        except ParseError as err:
            if not err.msg.startswith("End of file reached"):
                raise
        content = self.input.content
        stop = self._string_prefix.match(content, start_pos)
        end = stop.end() if stop is not None else start_pos + 1
        if end >= len(content):
            message = "End of file reached before closing string literal."
            span = Span(start_pos, start_pos + 1, self.input)
        elif content[end] == "\\":
            message = (
                f"invalid escape sequence {content[end:end + 2]!r} in a string literal "
                '(MLIR has \\n, \\t, \\\\, \\" and \\XX with two hex digits)'
            )
            span = Span(end, end + 1, self.input)
        else:
            message = "unterminated string literal (a string literal ends on the line it starts on)"
            span = Span(start_pos, start_pos + 1, self.input)
        raise ParseError(span, message)

    def _lex_number(self, start_pos: Position) -> MLIRToken:
        """xDSL's number rule, refusing what would fail later in `int()`
        as an internal error: a first character that `str.isnumeric` accepts
        but is not an ASCII digit (`²`), and a decimal integer longer than
        Python converts (`MAX_INTEGER_DIGITS`)."""
        first = self.input.content[start_pos]
        if first not in "0123456789":
            raise ParseError(Span(start_pos, start_pos + 1, self.input), f"Unexpected character: {first}")
        token = super()._lex_number(start_pos)
        check_integer_digits(token.span)
        return token


MAX_INTEGER_DIGITS = 4000
"""The most digits of a decimal integer literal: below Python's limit for
`int(str)` (4300 by default; beyond it `int` raises), far beyond int64."""


def check_integer_digits(span: Span) -> None:
    """A `ParseError` at `span` if it holds a decimal integer too long to
    convert."""
    text = span.text
    if len(text) > MAX_INTEGER_DIGITS and text.isdigit():
        raise ParseError(
            span, f"integer literal of {len(text)} digits is too long (at most {MAX_INTEGER_DIGITS})"
        )


_DIMENSION_RUN = re.compile(r"(?:[0-9]+|\?)(?:x(?:[0-9]+|\?))*")


class LocatingParser(Parser):
    """xDSL's parser that records where each op starts as its `location`
    (unless the text gives an explicit `loc(...)`), lexing with
    `LinearTimeLexer`."""

    lexer_class: type[MLIRLexer] = LinearTimeLexer
    """The lexer this parser reads tokens with."""

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>") -> None:
        text = input.decode("utf-8") if isinstance(input, bytes) else input
        # xDSL's constructor lexes the first token with its own lexer: give
        # it no text, then start over on the real text with ours
        super().__init__(ctx, "", name)
        try:
            self._parser_state = ParserState(self.lexer_class(Input(text, name)))
        except ParseError as err:  # the first token
            raise _refine(err, text) from None
        self._line_starts = [0]
        self._line_starts.extend(m.end() for m in re.finditer("\n", text))
        self._file = StringAttr(name)
        self._text = text

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xDSL's `parse_module`, after the nesting check; the implicit
        module gets the location 1:1 (an error about it has a place)."""
        at = nesting_error(self._text)
        if at is not None:
            raise ParseError(
                Span(at, at + 1, self.lexer.input),
                f"input nested too deeply (more than {MAX_NESTING} levels of brackets)",
            )
        try:
            module = super().parse_module(allow_implicit_module)
        except ParseError as err:
            raise _refine(err, self._text) from None
        except RecursionError:  # pragma: no cover - the nesting check comes first
            at = self._current_token.span.start
            raise ParseError(
                Span(at, at + 1, self.lexer.input), "input nested too deeply to parse"
            ) from None
        if isinstance(module.location, UnknownLoc):
            module.location = FileLineColLoc(self._file, IntAttr(1), IntAttr(1))
        return module

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except ParseError as err:
            raise self._point_at_op_name(err, start) from None
        except VerifyException as err:
            # a declarative assembly format checks operand types while it
            # parses: the op's place, as its verifier's error would have
            raise ParseError(Span(start, start + 1, self.lexer.input), str(err)) from None
        if isinstance(op.location, UnknownLoc):
            line = bisect.bisect_right(self._line_starts, start)
            column = start - self._line_starts[line - 1] + 1
            op.location = FileLineColLoc(self._file, IntAttr(line), IntAttr(column))
        return op

    def parse_dimension_list(self) -> list[int]:
        """xDSL's `dimension-list` (`4x8x?`), in linear time: xDSL splits the
        token `x8x?...` after each `x` and lexes the rest again, quadratic
        in the rank (a rank-20000 type took seconds). Here a run of
        dimensions is read in one match; xDSL's rule finishes what the run
        does not cover (spaces around `x`, hexadecimal `0x...`)."""
        token = self._current_token
        if token.kind is not MLIRTokenKind.INTEGER_LIT or token.text.startswith("0x"):
            return super().parse_dimension_list()
        run = _DIMENSION_RUN.match(self._text, token.span.start)
        if run is None or run.end() <= token.span.end:  # a single dimension
            return super().parse_dimension_list()
        dims: list[int] = []
        at = token.span.start
        for text in run.group().split("x"):
            if text == "?":
                dims.append(DYNAMIC_INDEX)
            else:
                check_integer_digits(Span(at, at + len(text), self.lexer.input))
                dims.append(int(text))
            at += len(text) + 1
        self._resume_from(run.end())
        # the rest, as xDSL's loop does it (an `x` that does not lead to a
        # dimension is left for the caller: `4x8xf32` ends at `xf32`)
        while self._parse_optional_shape_delimiter():
            if self._current_token.kind in (MLIRTokenKind.INTEGER_LIT, MLIRTokenKind.QUESTION):
                dims.append(self.parse_shape_dimension())
            else:
                self._resume_from(self._current_token.span.start - 1)
                break
        return dims

    def _point_at_op_name(self, err: ParseError, start: int) -> ParseError:
        """xDSL reports an unknown op, type or attribute after its name;
        point at the name itself."""
        if err.span.start < start:
            return err
        text = self.lexer.input.content
        refined = _refine(err, text)
        if refined is not err:
            return refined
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


def _refine(err: ParseError, text: str) -> ParseError:
    """A clearer message for a few of xDSL's parse errors (same span)."""
    at = err.span.start
    rest = text[at:at + 40]
    message = None
    if err.msg == "Expected shape type.":
        dim = re.match(r"-\d+", rest)
        element = re.match(r"[A-Za-z_][\w.]*", rest)
        if dim is not None:
            message = f"negative dimension size '{dim.group()}' in a tensor type (use '?' for a dynamic size)"
        elif element is not None:
            message = f"unknown element type '{element.group()}' in a tensor type"
    elif err.msg.startswith("Unexpected character"):
        char = text[at] if at < len(text) else ""
        if char:
            message = f"unexpected character U+{ord(char):04X} ({char!r})"
    elif err.msg == "Expected suffix identifier after {first_char}":  # xDSL forgot the `f`
        message = f"expected an identifier after '{text[at]}'" if at < len(text) else None
    elif err.msg == "Could not parse entire input!" and rest[:1] == "}":
        message = "unexpected '}' after the end of the input (unbalanced braces)"
    if message is None:
        return err
    return ParseError(err.span, message)


def read_source(data: bytes, name: str) -> str:
    """The text of an input file; invalid UTF-8 is an `OptimusError` at the
    line and column of the first bad byte. A UTF-8 byte order mark is
    dropped."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        good = data[: err.start].decode("utf-8-sig")
        line = good.count("\n") + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        if line == 1 and data.startswith(b"\xef\xbb\xbf"):
            column -= 3
        raise OptimusError(
            f"invalid UTF-8 (byte 0x{data[err.start]:02x}); the input must be UTF-8 text",
            location=SourceLocation(name, line, column),
        ) from None


def parse_error_diagnostic(err: ParseError, text: str, name: str) -> Diagnostic:
    """A located diagnostic for a parse error in `text` (the whole input
    as parsed): one that reaches the end of the input says so."""
    loc = err.span.get_location()
    message = err.msg.strip()
    end = len(text.rstrip())
    cut = err.span.end >= end and (text[end - 1:end].isalnum() or text[end - 1:end] in "_.%")
    if err.span.start >= end or cut:
        if not message.startswith("End of file"):
            message = "unexpected end of input" + (f" ({message})" if message else "")
    return Diagnostic(Severity.ERROR, message, location=SourceLocation(name, loc.line, loc.col))


def parse_module(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse IR text into a ModuleOp whose ops carry their source locations
    (for tests and the CLI only: xDSL's parser is slow, programmatic paths
    build IR in memory). `ctx` defaults to the project's context."""
    return LocatingParser(ctx if ctx is not None else make_context(), text, name).parse_module()


__all__ = [
    "MAX_NESTING",
    "LinearTimeLexer",
    "MAX_INTEGER_DIGITS",
    "LocatingParser",
    "nesting_error",
    "parse_error_diagnostic",
    "parse_module",
    "read_source",
]
