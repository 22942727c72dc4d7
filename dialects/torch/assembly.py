"""`TorchOp`, the base of the torch dialect's ops: its fast builder, its
verifier hook and its assembly format (positional operands, keyword fields,
operand types `->` result types)."""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptionalDef,
    VariadicDef,
    traits_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import OpTrait

from optimus_ir.dialects.fx import (
    FALSE,
    _OperandCollector,
    bool_literal,
    parse_literal,
    print_literal,
)
from optimus_ir.dialects.torch.facts import OpFacts, declare_facts
from optimus_ir.dialects.torch.base import (
    Format,
    Value,
    _Check,
    _check_results,
    flag,
)



class TorchOp(IRDLOperation):
    """Base of the dialect's ops.

    Assembly: `name %positional, ... kw value ... {attrs} : operand types -> result types`.
    FORMAT lists the keyword fields in print order as (name, kind): "operand"
    (an optional operand), "value" (a literal property, left out when equal to
    its default), "flag" (a bool property, printed as its name when true),
    "type" (an element-type property). Operands not in FORMAT are positional.

    verify_ compares the results with `expected_types()`, which subclasses
    implement with the module's `infer_*` functions."""

    FORMAT: ClassVar[Format] = ()
    FACTS: ClassVar[OpFacts | None] = None
    """What the op is to the passes, lowerings, kernels and cost model
    (`optimus_ir.dialects.torch.facts`); None: nothing beyond its traits."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        facts = cls.__dict__.get("FACTS")
        name = cls.__dict__.get("name")
        if facts is not None and isinstance(name, str):
            declare_facts(name, facts)

    def __init__(
        self,
        *,
        operands: Sequence[Value | Sequence[Value] | None] = (),
        result_types: Sequence[Attribute | Sequence[Attribute]] = (),
        properties: Mapping[str, Attribute | None] | None = None,
        attributes: Mapping[str, Attribute | None] | None = None,
    ) -> None:
        """The IRDL builder (`IRDLOperation.__init__`) for what torch ops have:
        operand groups, result groups, properties. xDSL's generic builder
        costs more than the op itself (segment bookkeeping for every kind
        of construct); raise-fx builds one op per raised node."""
        op_def = type(self).get_irdl_definition()
        if op_def.regions or op_def.successors or any(
            not (isinstance(o, AttrSizedOperandSegments) and o.as_property) for o in op_def.options
        ):  # not a shape of op this builder knows
            IRDLOperation.__init__(
                self, operands=operands, result_types=result_types,
                properties=properties, attributes=attributes,
            )
            return
        flat_operands, operand_sizes = _flatten_groups(op_def.operands, operands, "operand")
        flat_results, _ = _flatten_groups(op_def.results, result_types, "result")
        props = {k: v for k, v in properties.items() if v is not None} if properties else {}
        if op_def.options:  # AttrSizedOperandSegments(as_property=True)
            props[AttrSizedOperandSegments.attribute_name] = _segment_sizes(tuple(operand_sizes))
        attrs = {k: v for k, v in attributes.items() if v is not None} if attributes else {}
        Operation.__init__(
            self,
            operands=[SSAValue.get(v) for v in flat_operands],
            result_types=flat_results,
            properties=props,
            attributes=attrs,
        )

    def expected_types(self) -> Sequence[TensorType]:
        """The result types the operands and properties imply (may hold `?`)."""
        raise NotImplementedError

    def verify_(self) -> None:
        self.verify_types()

    def verify_types(self) -> None:
        """The op's own check (results against `expected_types()`), without
        IRDL's generic structure check; for builders whose ops hold the IRDL
        structure by construction (`raise-fx`)."""
        _check_results(self, self.expected_types())

    # -- printing ----------------------------------------------------------

    def print(self, printer: Printer) -> None:
        keyword_names = {name for name, _ in self.FORMAT}
        op_def = self.get_irdl_definition()
        positional: list[SSAValue] = []
        for name, _ in op_def.operands:
            if name not in keyword_names:
                positional.extend(_as_values(getattr(self, name)))
        if positional:
            printer.print_string(" ")
            printer.print_list(positional, printer.print_operand)
        for name, kind in self.FORMAT:
            value = getattr(self, name)
            if kind == "operand":
                if value is not None:
                    printer.print_string(f" {name} ")
                    printer.print_operand(value)
            elif kind == "flag":
                if flag(value):
                    printer.print_string(f" {name}")
            elif value is not None and value != op_def.properties[name].default_value:
                printer.print_string(f" {name} ")
                if kind == "type":
                    printer.print_attribute(value)
                else:
                    print_literal(printer, value, ())
        if self.attributes:
            printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list((v.type for v in self.operands), printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_list((r.type for r in self.results), printer.print_attribute)

    # -- parsing -----------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> TorchOp:
        op_def = cls.get_irdl_definition()
        kinds = dict(cls.FORMAT)
        unresolved: list[UnresolvedOperand] = []
        first = parser.parse_optional_unresolved_operand()
        if first is not None:
            unresolved.append(first)
            while parser.parse_optional_punctuation(",") is not None:
                unresolved.append(parser.parse_unresolved_operand())
        keyword_operands: dict[str, UnresolvedOperand] = {}
        properties: dict[str, Attribute] = {}
        seen: set[str] = set()
        while (name := parser.parse_optional_keyword_in(kinds)) is not None:
            if name in seen:
                parser.raise_error(f"'{cls.name}' field '{name}' given twice")
            seen.add(name)
            kind = kinds[name]
            if kind == "operand":
                keyword_operands[name] = parser.parse_unresolved_operand()
            elif kind == "flag":
                properties[name] = bool_literal(True)
            elif kind == "type":
                properties[name] = parser.parse_type()
            else:
                collector = _OperandCollector()
                properties[name] = parse_literal(parser, collector)
                if collector.operands:
                    parser.raise_error(f"'{cls.name}' field '{name}' must be a literal")
        for name, kind in cls.FORMAT:
            if kind == "flag" and name not in properties:
                properties[name] = FALSE
        attributes = parser.parse_optional_attr_dict()

        groups = _group_operands(parser, cls, op_def.operands, unresolved, keyword_operands)
        flat = [u for group in groups for u in group]
        parser.parse_punctuation(":")
        operand_types = _parse_types(parser) if flat else []
        if len(operand_types) != len(flat):
            parser.raise_error(
                f"'{cls.name}' has {len(flat)} operands but {len(operand_types)} operand types"
            )
        parser.parse_punctuation("->")
        result_types = _parse_types(parser)
        values = iter(parser.resolve_operand(u, t) for u, t in zip(flat, operand_types))
        operands: list[SSAValue | list[SSAValue]] = []
        for (_, definition), group in zip(op_def.operands, groups):
            taken = [next(values) for _ in group]
            operands.append(taken if isinstance(definition, VariadicDef) else taken[0])
        result_groups: list[Attribute | list[Attribute]] = (
            [result_types] if isinstance(op_def.results[0][1], VariadicDef) else list(result_types)
        )
        op = cls.build(operands=operands, result_types=result_groups, properties=properties)
        op.attributes.update(attributes)
        return op


def _flatten_groups(defs, groups, what: str) -> tuple[list[Any], list[int]]:
    """The flat operands (results) of per-definition groups, and the group
    sizes; the checks of `irdl_build_arg_list`."""
    if len(groups) != len(defs):
        raise ValueError(f"Expected {len(defs)} {what}s, but got {len(groups)}")
    flat: list[Any] = []
    sizes: list[int] = []
    for (name, definition), group in zip(defs, groups):
        if group is None:
            if not isinstance(definition, OptionalDef):
                raise ValueError(f"passed None to a non-optional {what} '{name}'")
            sizes.append(0)
        elif isinstance(group, Sequence):
            if not isinstance(definition, VariadicDef) and len(group) != 1:
                raise ValueError(f"passed a sequence to the non-variadic {what} '{name}'")
            if isinstance(definition, OptionalDef) and len(group) > 1:
                raise ValueError(f"passed {len(group)} values to the optional {what} '{name}'")
            flat.extend(group)
            sizes.append(len(group))
        else:
            flat.append(group)
            sizes.append(1)
    return flat, sizes


@lru_cache(maxsize=256)
def _segment_sizes(sizes: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, sizes)


def _as_values(value: SSAValue | Sequence[SSAValue] | None) -> list[SSAValue]:
    if value is None:
        return []
    if isinstance(value, SSAValue):
        return [value]
    return list(value)


def _parse_types(parser: Parser) -> list[Attribute]:
    types = [parser.parse_type()]
    while parser.parse_optional_punctuation(",") is not None:
        types.append(parser.parse_type())
    return types


def _group_operands(
    parser: Parser,
    cls: type[TorchOp],
    defs: Sequence[tuple[str, Any]],
    positional: list[UnresolvedOperand],
    keyword: dict[str, UnresolvedOperand],
) -> list[list[UnresolvedOperand]]:
    """Distribute parsed operands over the operand definitions, in order: the
    one variadic/optional positional definition takes what the singles leave."""
    kinds = dict(cls.FORMAT)
    positional_defs = [(n, d) for n, d in defs if n not in kinds]
    singles = sum(1 for _, d in positional_defs if not isinstance(d, VariadicDef))
    spare = len(positional) - singles
    if spare < 0:
        parser.raise_error(
            f"'{cls.name}' expects at least {singles} operands, got {len(positional)}"
        )
    groups: list[list[UnresolvedOperand]] = []
    rest = iter(positional)
    for name, definition in defs:
        if name in kinds:
            groups.append([keyword[name]] if name in keyword else [])
        elif isinstance(definition, VariadicDef):
            if isinstance(definition, OptionalDef) and spare > 1:
                parser.raise_error(f"'{cls.name}' has too many operands")
            groups.append([next(rest) for _ in range(spare)])
            spare = 0
        else:
            groups.append([next(rest)])
    if spare:
        parser.raise_error(f"'{cls.name}' has too many operands")
    return groups


def _type(value: Value) -> Attribute:
    return SSAValue.get(value).type


def _tensor_of(op_name: str, value: Value, what: str = "operand") -> TensorType:
    """The type of a builder operand, which must be a tensor."""
    return _Check(op_name).tensor(_type(value), what)


def _opt_type(value: Value | None) -> Attribute | None:
    return None if value is None else _type(value)


def _tensor_types(op_name: str, **values: Value | None) -> dict[str, TensorType | None]:
    """Operand types for inference in builders (a clear error on non-tensors)."""
    check = _Check(op_name)
    return {
        name: None if v is None else check.tensor(_type(v), f"operand ({name})")
        for name, v in values.items()
    }


def declare_op(cls: type[TorchOp], name: str, *traits: OpTrait, **constants: Any) -> None:
    """Give op class `cls` what its class body would: its `name`, its own
    `traits` (xDSL adds its bases') and its upper-case class constants
    (`FACTS`, `INFER`...). For a family base whose `__init_subclass__` takes
    an op's distinct facts as class keywords, so that each op of the family
    is declared by those facts alone. xDSL accepts a class constant only
    where the class annotates it `ClassVar`: so does this."""
    cls.name = name
    if traits:
        cls.traits = traits_def(*traits)
    # assigned, not updated in place: a class's annotations are computed on
    # read in newer Pythons, and an assignment is what every version keeps
    cls.__annotations__ = {**cls.__annotations__, **dict.fromkeys(constants, ClassVar)}
    for key, value in constants.items():
        setattr(cls, key, value)


def ops_defined_in(namespace: Mapping[str, Any]) -> list[str]:
    """The names of the op classes (`@irdl_op_definition`ed `TorchOp`s) a
    module defines, in definition order: the module's `__all__` of ops, so
    that the package root re-exports and registers them without naming them."""
    module = namespace["__name__"]
    return [
        name
        for name, obj in namespace.items()
        if isinstance(obj, type)
        and issubclass(obj, TorchOp)
        and obj.__module__ == module
        and "get_irdl_definition" in obj.__dict__
    ]

