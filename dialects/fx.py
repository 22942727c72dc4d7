"""The `fx` dialect: a faithful, operator-agnostic image of a torch.fx graph.

One op per FX node kind (placeholder, get_attr, call_function, call_method,
call_module, output), held in an `fx.graph` container. Node inputs are SSA
operands; everything else an FX node carries (its target, literal positional
arguments and keyword arguments) is kept as attributes, with node references
inside the argument structure written as `#fx.ref<i>` (operand `i`).

In the custom assembly format the argument structure is printed Python-like,
with operands in place::

    %split = fx.call_function "torch.functional.split"(%x, 4, dim = 1) : tuple<...>
    fx.output [%a, (%b, none)]

Any graph that FX can run can be expressed: a literal that has no attribute
form of its own (a function passed as an argument, an enum) becomes an
`#fx.object<"qualified.name">` reference, resolved at export time.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BFloat16Type,
    BoolAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    Signedness,
    StringAttr,
    TensorType,
    TupleType,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from optimus_ir.foundation.effects import FxCallEffects
from optimus_ir.foundation.traits import LazyCanonicalizationPatterns

# ---------------------------------------------------------------------------
# String literals
# ---------------------------------------------------------------------------


def parse_optional_text(parser: AttrParser | Parser) -> str | None:
    """A string literal, if present. xDSL's lexer turns a literal whose escapes
    spell non-ASCII UTF-8 (`"\\C3\\A9"`, which is how xDSL prints `é`) into a
    bytes literal, which `parse_optional_str_literal` does not accept."""
    text = parser.parse_optional_str_literal()
    if text is not None:
        return text
    pos = parser.pos
    data = parser.parse_optional_bytes_literal()
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        parser.raise_error("string literal is not valid UTF-8", pos, parser.pos)


def parse_text(parser: AttrParser | Parser) -> str:
    """A string literal (see `parse_optional_text`)."""
    text = parse_optional_text(parser)
    if text is None:
        parser.raise_error("string literal expected")
    return text


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------


@irdl_attr_definition
class ValueType(ParametrizedAttribute, TypeAttribute):
    """The type of a non-tensor value: a Python scalar, a symbolic int, a list,
    an arbitrary object returned by an opaque call."""

    name = "fx.value"


VALUE = ValueType()

# ---------------------------------------------------------------------------
# Literal attributes (the pieces of an argument structure)
# ---------------------------------------------------------------------------


@irdl_attr_definition
class NoneValueAttr(ParametrizedAttribute):
    """The Python value `None` inside an argument structure."""

    name = "fx.none"


NONE = NoneValueAttr()


@irdl_attr_definition
class RefAttr(ParametrizedAttribute):
    """A reference to operand `index` of the op that holds this structure
    (`ref(index)` returns a shared instance: attributes are immutable)."""

    name = "fx.ref"
    index: IntAttr

    def __init__(self, index: int) -> None:
        super().__init__(IntAttr(index))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_int(self.index.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr]:
        with parser.in_angle_brackets():
            return (IntAttr(parser.parse_integer(allow_boolean=False)),)


@irdl_attr_definition
class TupleValueAttr(ParametrizedAttribute):
    """A Python tuple inside an argument structure (a list is an ArrayAttr)."""

    name = "fx.tuple"
    elements: ArrayAttr

    def __init__(self, elements: Sequence[Attribute]) -> None:
        super().__init__(ArrayAttr(elements))


@irdl_attr_definition
class DictValueAttr(ParametrizedAttribute):
    """A Python dict inside an argument structure, printed `{key: value}`.

    Keys are literals (FX never maps node references inside keys); values are
    any piece of an argument structure. Insertion order is kept."""

    name = "fx.dict"
    keys: ArrayAttr
    values: ArrayAttr

    def __init__(self, keys: Sequence[Attribute], values: Sequence[Attribute]) -> None:
        super().__init__(ArrayAttr(keys), ArrayAttr(values))

    def items(self) -> list[tuple[Attribute, Attribute]]:
        return list(zip(self.keys.data, self.values.data))

    def verify_(self) -> None:
        if len(self.keys.data) != len(self.values.data):
            raise VerifyException("'fx.dict' needs as many keys as values")


@irdl_attr_definition
class DTypeAttr(ParametrizedAttribute):
    """A `torch.dtype` literal, held as its element type (`#fx.dtype<f32>`)."""

    name = "fx.dtype"
    element_type: Attribute

    def __init__(self, element_type: Attribute) -> None:
        super().__init__(element_type)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute]:
        with parser.in_angle_brackets():
            return (parser.parse_type(),)


class _TextAttr(ParametrizedAttribute):
    """An attribute whose one parameter is a text, printed as a string
    literal in angle brackets (`#fx.device<"cuda:0">`)."""

    def __init__(self, text: str) -> None:
        super().__init__(StringAttr(text))

    def print_parameters(self, printer: Printer) -> None:
        (text,) = self.parameters
        assert isinstance(text, StringAttr)
        with printer.in_angle_brackets():
            printer.print_string_literal(text.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr]:
        with parser.in_angle_brackets():
            return (StringAttr(parse_text(parser)),)


@irdl_attr_definition
class DeviceAttr(_TextAttr):
    """A `torch.device` literal (`#fx.device<"cuda:0">`)."""

    name = "fx.device"
    device: StringAttr


@irdl_attr_definition
class SliceAttr(ParametrizedAttribute):
    """A Python `slice(start, stop, step)` literal; each part is a literal."""

    name = "fx.slice"
    start: Attribute
    stop: Attribute
    step: Attribute

    def __init__(self, start: Attribute, stop: Attribute, step: Attribute) -> None:
        super().__init__(start, stop, step)


@irdl_attr_definition
class ObjectAttr(_TextAttr):
    """Any other Python object, by name: a qualified import path such as
    `torch.contiguous_format`, or a key of the program's object table."""

    name = "fx.object"
    qualified_name: StringAttr


_REFS: list[RefAttr] = []


def ref(index: int) -> RefAttr:
    """The (shared) `#fx.ref<index>`; building a ParametrizedAttribute costs
    microseconds, and an import needs one per node input."""
    while len(_REFS) <= index:
        _REFS.append(RefAttr(len(_REFS)))
    return _REFS[index]


EMPTY_ARGS = ArrayAttr(())
EMPTY_KWARGS = DictionaryAttr({})

_I1 = IntegerType(1)
_F64 = Float64Type()
TRUE = BoolAttr(1, _I1)
FALSE = BoolAttr(0, _I1)


# Attributes are immutable, so literals are shared: building an IntAttr or a
# FloatAttr (with its verification) costs microseconds, and raise-fx and
# lower-to-fx build one for every dim, eps, alpha... of every op. The caches
# are bounded: past the limit, literals are built afresh.
_LITERAL_CACHE_LIMIT = 4096
_Key = TypeVar("_Key")
_Literal = TypeVar("_Literal", bound=Attribute)


class _Literals(dict[_Key, _Literal]):
    """A bounded cache of shared literals: `cache[key]` is the literal of
    `key`, made by `make(key)` the first time and kept while the cache
    holds fewer than `_LITERAL_CACHE_LIMIT`."""

    def __init__(self, make: Callable[[_Key], _Literal]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: _Key) -> _Literal:
        attr = self.make(key)
        if len(self) < _LITERAL_CACHE_LIMIT:
            self[key] = attr
        return attr


_INTS: _Literals[int, IntAttr] = _Literals(IntAttr)
_FLOATS: _Literals[bytes, FloatAttr] = _Literals(lambda bits: FloatAttr(struct.unpack("<d", bits)[0], _F64))
"""Keyed by the float's bits: 0.0 == -0.0, and NaN != NaN."""
_STRINGS: _Literals[str, StringAttr] = _Literals(StringAttr)


def int_literal(value: int) -> IntAttr:
    """The shared `IntAttr` of `value`."""
    if type(value) is not int:  # a bool or an int subclass: not interchangeable
        return IntAttr(value)
    return _INTS[value]


def float_literal(value: float) -> FloatAttr:
    """The shared f64 `FloatAttr` of `value` (bit for bit)."""
    return _FLOATS[struct.pack("<d", value)]


def bool_literal(value: bool) -> Attribute:
    return TRUE if value else FALSE


def scalar_literal(value: Any) -> Attribute | None:
    """The literal attribute of a Python scalar (bool, int, float, str or
    None), or None when `value` is not one of those exact types."""
    kind = type(value)
    if kind is bool:
        return bool_literal(value)
    if kind is int:
        return int_literal(value)
    if kind is float:
        return float_literal(value)
    if kind is str:
        return _STRINGS[value]
    if value is None:
        return NONE
    return None


def is_bool_literal(attr: Attribute) -> bool:
    return isinstance(attr, IntegerAttr) and attr.type == _I1


# ---------------------------------------------------------------------------
# Printing and parsing of argument structures
# ---------------------------------------------------------------------------


def _print_float(printer: Printer, value: float) -> None:
    if math.isnan(value):
        printer.print_string("nan")
    elif math.isinf(value):
        printer.print_string("inf" if value > 0 else "-inf")
    else:
        text = repr(value)
        if "e" in text and "." not in text:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        printer.print_string(text)


def print_literal(printer: Printer, attr: Attribute, operands: Sequence[SSAValue]) -> None:
    """Print one piece of an argument structure, operands in place of refs."""
    if isinstance(attr, RefAttr):
        printer.print_operand(operands[attr.index.data])
    elif isinstance(attr, IntAttr):
        printer.print_string(str(attr.data))
    elif isinstance(attr, FloatAttr):
        _print_float(printer, attr.value.data)
    elif is_bool_literal(attr):
        printer.print_string("true" if attr.value.data else "false")  # type: ignore[attr-defined]
    elif isinstance(attr, NoneValueAttr):
        printer.print_string("none")
    elif isinstance(attr, StringAttr):
        printer.print_string_literal(attr.data)
    elif isinstance(attr, ArrayAttr):
        printer.print_string("[")
        printer.print_list(attr.data, lambda a: print_literal(printer, a, operands))
        printer.print_string("]")
    elif isinstance(attr, TupleValueAttr):
        printer.print_string("(")
        printer.print_list(
            attr.elements.data, lambda a: print_literal(printer, a, operands)
        )
        if len(attr.elements.data) == 1:
            printer.print_string(",")
        printer.print_string(")")
    elif isinstance(attr, DictValueAttr):
        printer.print_string("{")

        def print_item(item: tuple[Attribute, Attribute]) -> None:
            print_literal(printer, item[0], operands)
            printer.print_string(": ")
            print_literal(printer, item[1], operands)

        printer.print_list(attr.items(), print_item)
        printer.print_string("}")
    elif isinstance(attr, SliceAttr):
        printer.print_string("slice(")
        printer.print_list(
            (attr.start, attr.stop, attr.step),
            lambda a: print_literal(printer, a, operands),
        )
        printer.print_string(")")
    else:
        printer.print_attribute(attr)


class _OperandCollector:
    """Collects operands while an argument structure is parsed."""

    def __init__(self) -> None:
        self.operands: list[SSAValue] = []
        self._index: dict[SSAValue, int] = {}

    def ref(self, value: SSAValue) -> RefAttr:
        index = self._index.get(value)
        if index is None:
            index = len(self.operands)
            self._index[value] = index
            self.operands.append(value)
        return ref(index)


def _parse_optional_defined_operand(parser: Parser) -> SSAValue | None:
    """An operand that must already be defined (fx graphs are in topological
    order, and the argument syntax carries no operand types). This is xDSL's
    untyped `parse_optional_operand()`, which is deprecated and warns."""
    unresolved = parser.parse_optional_unresolved_operand()
    if unresolved is None:
        return None
    values = parser.ssa_values.get(unresolved.operand_name)
    if values is None:
        parser.raise_error(
            f"SSA value %{unresolved.operand_name} used before its definition",
            unresolved.span,
        )
    if unresolved.index >= len(values):
        parser.raise_error(
            f"SSA value tuple index out of bounds: %{unresolved.operand_name} has "
            f"{len(values)} values, #{unresolved.index} was used",
            unresolved.span,
        )
    return values[unresolved.index]


_KEYWORD_LITERALS = ("none", "true", "false", "inf", "nan", "slice")


def parse_literal(
    parser: Parser, collector: _OperandCollector, word: str | None = None
) -> Attribute:
    """Parse one piece of an argument structure (the inverse of print_literal).

    `word` is a bare identifier the caller has already consumed while looking
    for a keyword-argument name."""
    if word is None:
        operand = _parse_optional_defined_operand(parser)
        if operand is not None:
            return collector.ref(operand)
        if parser.parse_optional_punctuation("[") is not None:
            items: list[Attribute] = []
            if parser.parse_optional_punctuation("]") is None:
                items.append(parse_literal(parser, collector))
                while parser.parse_optional_punctuation(",") is not None:
                    items.append(parse_literal(parser, collector))
                parser.parse_punctuation("]")
            return ArrayAttr(items)
        if parser.parse_optional_punctuation("(") is not None:
            items = []
            if parser.parse_optional_punctuation(")") is None:
                items.append(parse_literal(parser, collector))
                while parser.parse_optional_punctuation(",") is not None:
                    if parser.parse_optional_punctuation(")") is not None:
                        return TupleValueAttr(items)
                    items.append(parse_literal(parser, collector))
                parser.parse_punctuation(")")
            return TupleValueAttr(items)
        if parser.parse_optional_punctuation("{") is not None:
            keys: list[Attribute] = []
            values: list[Attribute] = []
            if parser.parse_optional_punctuation("}") is None:
                while True:
                    keys.append(parse_literal(parser, collector))
                    parser.parse_punctuation(":")
                    values.append(parse_literal(parser, collector))
                    if parser.parse_optional_punctuation(",") is None:
                        break
                parser.parse_punctuation("}")
            return DictValueAttr(keys, values)
        string = parse_optional_text(parser)
        if string is not None:
            return StringAttr(string)
        if parser.parse_optional_punctuation("-") is not None:
            if parser.parse_optional_keyword("inf") is not None:
                return float_literal(-math.inf)
            number = parser.parse_number()
            if isinstance(number, int):
                return int_literal(-number)
            return float_literal(-number)
        number = parser.parse_optional_number()
        if number is not None:
            if isinstance(number, int):
                return int_literal(number)
            return float_literal(number)
        word = parser.parse_optional_identifier()
        if word is None:
            return parser.parse_attribute()
    if word == "none":
        return NONE
    if word == "true":
        return TRUE
    if word == "false":
        return FALSE
    if word == "inf":
        return float_literal(math.inf)
    if word == "nan":
        return float_literal(math.nan)
    if word == "slice":
        parser.parse_punctuation("(")
        start = parse_literal(parser, collector)
        parser.parse_punctuation(",")
        stop = parse_literal(parser, collector)
        parser.parse_punctuation(",")
        step = parse_literal(parser, collector)
        parser.parse_punctuation(")")
        return SliceAttr(start, stop, step)
    element = _ELEMENT_TYPE_WORDS.get(word)
    if element is not None:  # an element type, as print_literal prints one (`f64`)
        return element
    parser.raise_error(
        f"expected a literal (operand, number, string, list, tuple, none, true, "
        f"false, slice(...) or attribute), got '{word}'"
    )


_ELEMENT_TYPE_WORDS: dict[str, Attribute] = {
    str(t): t
    for t in (
        Float16Type(), BFloat16Type(), Float32Type(), Float64Type(),
        IntegerType(1), IntegerType(8), IntegerType(16), IntegerType(32), IntegerType(64),
        IntegerType(8, Signedness.UNSIGNED),
    )
}
"""The element types a literal may hold (a softmax member's `dtype` in
`batch.pointwise`'s `fn_properties`), by the word they print as: the lexer
reads `f64` as an identifier, so `parser.parse_attribute` never sees it."""


def _refs_in(attr: Attribute, out: set[int]) -> None:
    if isinstance(attr, RefAttr):
        out.add(attr.index.data)
    elif isinstance(attr, ArrayAttr):
        for item in attr.data:
            _refs_in(item, out)
    elif isinstance(attr, TupleValueAttr):
        for item in attr.elements.data:
            _refs_in(item, out)
    elif isinstance(attr, DictValueAttr):
        for item in attr.values.data:
            _refs_in(item, out)
    elif isinstance(attr, SliceAttr):
        _refs_in(attr.start, out)
        _refs_in(attr.stop, out)
        _refs_in(attr.step, out)


def _verify_refs(op: Operation, structures: Sequence[Attribute]) -> None:
    refs: set[int] = set()
    for structure in structures:
        _refs_in(structure, refs)
    count = len(op.operands)
    if any(index >= count for index in refs):
        raise VerifyException(
            f"'{op.name}' refers to operand #{max(refs)} but has only {count} operands"
        )
    if len(refs) != count:
        unused = sorted(set(range(count)) - refs)
        raise VerifyException(
            f"'{op.name}' has operands #{unused} that its arguments never refer to"
        )


# ---------------------------------------------------------------------------
# Ops
# ---------------------------------------------------------------------------


@irdl_op_definition
class GraphOp(IRDLOperation):
    """A whole FX graph: one block of fx (or higher-level) ops ending in
    `fx.output`. The symbol name is the graph's name (`forward`)."""

    name = "fx.graph"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(self, name: str, body: Region | Block | Sequence[Operation]) -> None:
        if isinstance(body, Block):
            body = Region(body)
        elif not isinstance(body, Region):
            body = Region(Block(body))
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])

    @property
    def block(self) -> Block:
        return self.body.block

    def output(self) -> OutputOp:
        last = self.body.block.last_op
        assert isinstance(last, OutputOp)
        return last

    def verify_(self) -> None:
        last = self.body.block.last_op
        if not isinstance(last, OutputOp):
            raise VerifyException("'fx.graph' body must end with 'fx.output'")
        parent = self.parent_op()
        if parent is not None and parent.name != "builtin.module":
            raise VerifyException("'fx.graph' must be at the top level of a module")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> GraphOp:
        name = parser.parse_symbol_name().data
        region = parser.parse_region()
        return cls(name, region)


class NodeOp(IRDLOperation):
    """Shared shape of the FX node ops that carry an argument structure."""

    target = prop_def(StringAttr)
    args = prop_def(ArrayAttr)
    kwargs = prop_def(DictionaryAttr)
    inputs = var_operand_def()
    result = result_def()
    traits = traits_def(FxCallEffects())

    def __init__(
        self,
        target: str | StringAttr,
        args: Sequence[Attribute] | ArrayAttr,
        kwargs: Mapping[str, Attribute] | DictionaryAttr,
        operands: Sequence[SSAValue],
        result_type: Attribute,
    ) -> None:
        if not isinstance(args, ArrayAttr):
            args = ArrayAttr(args) if args else EMPTY_ARGS
        if not isinstance(kwargs, DictionaryAttr):
            kwargs = DictionaryAttr(dict(kwargs)) if kwargs else EMPTY_KWARGS
        # The generic IRDL builder (operand/result segment bookkeeping) costs
        # more than everything else of an import; this op has exactly one
        # variadic operand group and one result, so build it directly.
        Operation.__init__(
            self,
            operands=tuple(operands),
            result_types=(result_type,),
            properties={
                "target": target if isinstance(target, StringAttr) else StringAttr(target),
                "args": args,
                "kwargs": kwargs,
            },
        )

    def verify_(self) -> None:
        if not self.target.data:
            raise VerifyException(f"'{self.name}' has an empty target")
        _verify_refs(self, (self.args, *self.kwargs.data.values()))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.target.data)
        printer.print_string("(")
        operands = self.operands
        first = True
        for arg in self.args.data:
            if not first:
                printer.print_string(", ")
            first = False
            print_literal(printer, arg, operands)
        for key, value in self.kwargs.data.items():
            if not first:
                printer.print_string(", ")
            first = False
            printer.print_identifier_or_string_literal(key)
            printer.print_string(" = ")
            print_literal(printer, value, operands)
        printer.print_string(")")
        extra = {k: v for k, v in self.attributes.items()}
        if extra:
            printer.print_op_attributes(extra)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> NodeOp:
        target = parse_text(parser)
        collector = _OperandCollector()
        args: list[Attribute] = []
        kwargs: dict[str, Attribute] = {}

        def parse_argument() -> None:
            name = parser.parse_optional_identifier()
            if name is None:
                name = parse_optional_text(parser)
                if name is not None and parser.parse_optional_punctuation("=") is None:
                    if kwargs:
                        parser.raise_error("positional argument after keyword argument")
                    args.append(StringAttr(name))
                    return
                if name is not None:
                    kwargs[name] = parse_literal(parser, collector)
                    return
            elif parser.parse_optional_punctuation("=") is not None:
                kwargs[name] = parse_literal(parser, collector)
                return
            if kwargs:
                parser.raise_error("positional argument after keyword argument")
            args.append(parse_literal(parser, collector, name))

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_argument)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        op = cls(target, args, kwargs, collector.operands, result_type)
        op.attributes.update(attributes)
        return op


_IDENTITY_CALLS = LazyCanonicalizationPatterns("fx.identity-calls")
"""The identities fx calls fold to (`passes/canonicalization_patterns/fx.py`,
registered by name in the pass registry)."""


@irdl_op_definition
class CallFunctionOp(NodeOp):
    """An FX `call_function` node: `target` is the callable's qualified name
    (`torch.functional.split`, `operator.getitem`, `torch.ops.aten.mm.default`).
    Canonicalization folds `torch.clone` of a temporary (`fx.identity-calls`)."""

    name = "fx.call_function"
    traits = traits_def(FxCallEffects(), _IDENTITY_CALLS)


@irdl_op_definition
class CallMethodOp(NodeOp):
    """An FX `call_method` node: `target` is the method name, args[0] the self.
    Canonicalization folds the calls that return their tensor itself
    (`.contiguous()` of a contiguous tensor, a cast to its own dtype and
    device) and a `clone` of a temporary (`fx.identity-calls`)."""

    name = "fx.call_method"
    traits = traits_def(FxCallEffects(), _IDENTITY_CALLS)


@irdl_op_definition
class CallModuleOp(NodeOp):
    """An FX `call_module` node: `target` is the submodule's path in the owner."""

    name = "fx.call_module"


def _strides_attr(strides: Sequence[int] | None) -> ArrayAttr[IntAttr] | None:
    return None if strides is None else ArrayAttr([IntAttr(int(s)) for s in strides])


def _print_strides(printer: Printer, strides: ArrayAttr[IntAttr] | None) -> None:
    if strides is not None:
        printer.print_string(f" strides [{', '.join(str(s.data) for s in strides.data)}]")


def _parse_optional_strides(parser: Parser) -> list[int] | None:
    if parser.parse_optional_keyword("strides") is None:
        return None
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def _verify_strides(op: Operation, strides: ArrayAttr[IntAttr] | None) -> None:
    if strides is None:
        return
    ty = op.results[0].type
    if not isinstance(ty, TensorType):
        raise VerifyException(f"'{op.name}' op has strides but its result is not a tensor")
    if len(strides.data) != len(ty.get_shape()):
        raise VerifyException(
            f"'{op.name}' op has {len(strides.data)} strides for a rank-{len(ty.get_shape())} tensor"
        )
    if not all(isinstance(s, IntAttr) for s in strides.data):
        raise VerifyException(f"'{op.name}' op strides must be integers")


_MAX_DIM = 2**63 - 1
_DEVICES: dict[str, str | None] = {}


def verify_value_type(op: Operation, type_: Attribute) -> None:
    """A graph input's tensor type must be one torch can have: sizes that
    fit an int64 and a device (the encoding) that torch can parse."""
    if not isinstance(type_, TensorType):
        return
    for size in type_.get_shape():
        if size > _MAX_DIM:
            raise VerifyException(f"'{op.name}' dimension size {size} is too large (more than 2**63 - 1)")
    encoding = type_.encoding
    if isinstance(encoding, NoneAttr):
        return
    if not isinstance(encoding, StringAttr):
        raise VerifyException(
            f"'{op.name}' tensor encoding {encoding} is not a device string such as \"cpu\""
        )
    problem = _DEVICES.get(encoding.data, "")
    if problem == "":
        import torch

        try:
            torch.device(encoding.data)
            problem = None
        except (RuntimeError, ValueError):
            problem = f"'{op.name}' '{encoding.data}' is not a torch device (such as \"cpu\" or \"cuda:0\")"
        _DEVICES[encoding.data] = problem
    if problem is not None:
        raise VerifyException(problem)


@irdl_op_definition
class PlaceholderOp(IRDLOperation):
    """An FX `placeholder` node: a graph input, with its optional default.

    `strides` (optional) are the input's strides the graph was specialized
    for, recorded at import; absent means row-major contiguous (what
    hand-written IR assumes). See `input_strides`."""

    name = "fx.placeholder"
    target = prop_def(StringAttr)
    default = opt_prop_def(Attribute)
    strides = opt_prop_def(ArrayAttr[IntAttr])
    symbols = opt_prop_def(ArrayAttr[StringAttr])
    size_hints = opt_prop_def(ArrayAttr[IntAttr])
    result = result_def()
    traits = traits_def(HasParent(GraphOp))

    def __init__(
        self,
        target: str | StringAttr,
        result_type: Attribute,
        default: Attribute | None = None,
        strides: Sequence[int] | None = None,
        symbols: Sequence[str] | None = None,
        size_hints: Sequence[int] | None = None,
    ) -> None:
        properties: dict[str, Attribute] = {
            "target": target if isinstance(target, StringAttr) else StringAttr(target)
        }
        if default is not None:
            properties["default"] = default
        strides_attr = _strides_attr(strides)
        if strides_attr is not None:
            properties["strides"] = strides_attr
        if symbols is not None:
            properties["symbols"] = ArrayAttr([StringAttr(s) for s in symbols])
        if size_hints is not None:
            properties["size_hints"] = ArrayAttr([IntAttr(int(h)) for h in size_hints])
        Operation.__init__(self, result_types=(result_type,), properties=properties)

    def verify_(self) -> None:
        _verify_strides(self, self.strides)
        _verify_symbols(self)
        verify_value_type(self, self.result.type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.target.data)
        if self.default is not None:
            printer.print_string(" default ")
            print_literal(printer, self.default, ())
        _print_strides(printer, self.strides)
        if self.symbols is not None:
            printer.print_string(" symbols [")
            printer.print_list(self.symbols.data, lambda s: printer.print_string_literal(s.data))
            printer.print_string("]")
        if self.size_hints is not None:
            printer.print_string(f" hints [{', '.join(str(h.data) for h in self.size_hints.data)}]")
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> PlaceholderOp:
        target = parse_text(parser)
        default = None
        if parser.parse_optional_keyword("default") is not None:
            default = parse_literal(parser, _OperandCollector())
        strides = _parse_optional_strides(parser)
        symbols = None
        if parser.parse_optional_keyword("symbols") is not None:
            symbols = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_str_literal)
        hints = None
        if parser.parse_optional_keyword("hints") is not None:
            hints = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        parser.parse_punctuation(":")
        return cls(target, parser.parse_type(), default, strides, symbols, hints)

    def dim_symbols(self) -> tuple[str | None, ...] | None:
        """Per dim of the result: the symbol its `?` size was at import
        (`"s77"`, from Dynamo's SymInt), None for a static dim or an
        unnamed one; None when nothing was recorded."""
        if self.symbols is None:
            return None
        return tuple(s.data or None for s in self.symbols.data)

    def dim_hints(self) -> tuple[int, ...] | None:
        """Per dim: the size the example input had (the SymInt's hint for a
        `?` dim); None when not recorded."""
        if self.size_hints is None:
            return None
        return tuple(h.data for h in self.size_hints.data)


@irdl_op_definition
class GetAttrOp(IRDLOperation):
    """An FX `get_attr` node: a parameter, buffer or constant of the owner.

    `strides` (optional) as on `fx.placeholder`: the owner's tensor's
    strides at import; absent means contiguous."""

    name = "fx.get_attr"
    target = prop_def(StringAttr)
    strides = opt_prop_def(ArrayAttr[IntAttr])
    result = result_def()
    traits = traits_def(Pure())

    def __init__(
        self,
        target: str | StringAttr,
        result_type: Attribute,
        strides: Sequence[int] | None = None,
    ) -> None:
        if not isinstance(target, StringAttr):
            target = StringAttr(target)
        properties: dict[str, Attribute] = {"target": target}
        strides_attr = _strides_attr(strides)
        if strides_attr is not None:
            properties["strides"] = strides_attr
        Operation.__init__(self, result_types=(result_type,), properties=properties)

    def verify_(self) -> None:
        _verify_strides(self, self.strides)
        verify_value_type(self, self.result.type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.target.data)
        _print_strides(printer, self.strides)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> GetAttrOp:
        target = parse_text(parser)
        strides = _parse_optional_strides(parser)
        parser.parse_punctuation(":")
        return cls(target, parser.parse_type(), strides)


def _verify_symbols(op: PlaceholderOp) -> None:
    """`symbols` and `hints`, where present, have one entry per dim of the
    tensor result; a named symbol is only on a `?` dim."""
    ty = op.result.type
    for name, attr in (("symbols", op.symbols), ("hints", op.size_hints)):
        if attr is None:
            continue
        if not isinstance(ty, TensorType):
            raise VerifyException(f"'{op.name}' op has {name} but its result is not a tensor")
        if len(attr.data) != len(ty.get_shape()):
            raise VerifyException(
                f"'{op.name}' op has {len(attr.data)} {name} for a rank-{len(ty.get_shape())} tensor"
            )
    if op.symbols is not None and isinstance(ty, TensorType):
        for size, symbol in zip(ty.get_shape(), op.symbols.data):
            if symbol.data and size != DYNAMIC_INDEX:
                raise VerifyException(
                    f"'{op.name}' op names symbol \"{symbol.data}\" for a static dim of size {size}"
                )


def row_major_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major (contiguous) strides of static `sizes`, as torch computes them."""
    strides = [1] * len(sizes)
    for d in range(len(sizes) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(sizes[d + 1], 1)
    return tuple(strides)


def input_strides(op: Operation) -> tuple[int, ...] | None:
    """The run-time strides of the tensor an `fx.placeholder` or
    `fx.get_attr` produces: its `strides` property when recorded, else the
    row-major strides of its static shape (absent means contiguous). None
    for other ops, non-tensor results and tensors with a symbolic size."""
    if not isinstance(op, PlaceholderOp | GetAttrOp):
        return None
    ty = op.result.type
    if not isinstance(ty, TensorType):
        return None
    if op.strides is not None:
        return tuple(s.data for s in op.strides.data)
    sizes = ty.get_shape()
    if any(s < 0 for s in sizes):
        return None
    return row_major_strides(sizes)


@irdl_op_definition
class OutputOp(IRDLOperation):
    """The FX `output` node: the graph's result structure."""

    name = "fx.output"
    args = prop_def(Attribute)
    inputs = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(GraphOp))

    def __init__(self, structure: Attribute, operands: Sequence[SSAValue]) -> None:
        super().__init__(operands=[operands], properties={"args": structure})

    def verify_(self) -> None:
        _verify_refs(self, (self.args,))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_literal(printer, self.args, self.operands)

    @classmethod
    def parse(cls, parser: Parser) -> OutputOp:
        collector = _OperandCollector()
        structure = parse_literal(parser, collector)
        return cls(structure, collector.operands)


FX = Dialect(
    "fx",
    [
        GraphOp,
        PlaceholderOp,
        GetAttrOp,
        CallFunctionOp,
        CallMethodOp,
        CallModuleOp,
        OutputOp,
    ],
    [
        ValueType,
        NoneValueAttr,
        RefAttr,
        TupleValueAttr,
        DictValueAttr,
        DTypeAttr,
        DeviceAttr,
        SliceAttr,
        ObjectAttr,
    ],
)


def map_refs(attr: Attribute, fn: Callable[[int], Any], convert: Callable[[Attribute], Any]) -> Any:
    """Rebuild an argument structure as Python values: refs through `fn`,
    every other leaf through `convert`."""
    if isinstance(attr, RefAttr):
        return fn(attr.index.data)
    if isinstance(attr, ArrayAttr):
        return [map_refs(a, fn, convert) for a in attr.data]
    if isinstance(attr, TupleValueAttr):
        return tuple(map_refs(a, fn, convert) for a in attr.elements.data)
    if isinstance(attr, DictValueAttr):
        return {
            map_refs(k, fn, convert): map_refs(v, fn, convert)
            for k, v in zip(attr.keys.data, attr.values.data)
        }
    if isinstance(attr, SliceAttr):
        return slice(
            map_refs(attr.start, fn, convert),
            map_refs(attr.stop, fn, convert),
            map_refs(attr.step, fn, convert),
        )
    return convert(attr)


__all__ = [
    "FX",
    "CallFunctionOp",
    "CallMethodOp",
    "CallModuleOp",
    "DTypeAttr",
    "DeviceAttr",
    "DictValueAttr",
    "GetAttrOp",
    "GraphOp",
    "NodeOp",
    "NoneValueAttr",
    "ObjectAttr",
    "OutputOp",
    "PlaceholderOp",
    "RefAttr",
    "SliceAttr",
    "TupleType",
    "TupleValueAttr",
    "ValueType",
    "input_strides",
    "row_major_strides",
]
