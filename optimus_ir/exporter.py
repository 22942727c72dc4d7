"""Translation of an `fx`-dialect module back into a torch.fx.GraphModule.

Only fx ops are exported: run `lower-to-fx` first so that operator and batch
ops have become fx.call_function ops. Call targets are resolved through the
program's object table, then by import path. The returned GraphModule is built
on the owner module, so it references (does not copy) the original parameters,
buffers and submodules.

For IR that has no owner (hand-written or parsed text), `missing_attributes=
"random"` makes up parameters of the recorded shapes and dtypes, seeded, so
that the graph can still be run (used by differential validation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation

from optimus_ir.dialects import fx
from optimus_ir.importer import ImportedGraph, gc_paused, graph_of
from optimus_ir.literals import LiteralError, decode_literal
from optimus_ir.objects import ObjectTable, UnresolvedNameError
from optimus_ir.types import DYNAMIC, device_of, dtype_of


_DOT_NUMBER_SUFFIX = re.compile(r"\.(\d+)$")


def node_name(name_hint: str | None) -> str | None:
    """The FX node name for an SSA name hint (inverse of importer.value_name);
    FX itself replaces any other character that is not valid in a name."""
    if name_hint is None:
        return None
    return _DOT_NUMBER_SUFFIX.sub(r"_\1", name_hint)


class GraphExportError(ValueError):
    """IR that cannot be turned into an FX graph; the message names the op."""


def literal_value(attr: Attribute, objects: ObjectTable) -> Any:
    """The Python value of a non-ref literal attribute."""
    try:
        return decode_literal(attr, objects.resolve)
    except LiteralError as error:
        raise GraphExportError(str(error)) from None


def random_tensor(tensor_type: TensorType, generator: torch.Generator) -> torch.Tensor:
    """A seeded tensor of a (static) tensor type, for IR without real data."""
    shape = tensor_type.get_shape()
    if DYNAMIC in shape:
        raise GraphExportError(
            f"cannot make up a value of type {tensor_type}: it has a symbolic size"
        )
    dtype = dtype_of(tensor_type.element_type)
    device = device_of(tensor_type) or "cpu"
    if dtype.is_floating_point or dtype.is_complex:
        value = torch.randn(shape, generator=generator, dtype=dtype)
    elif dtype == torch.bool:
        value = torch.randint(0, 2, shape, generator=generator).to(torch.bool)
    else:
        value = torch.randint(0, 8, shape, generator=generator, dtype=dtype)
    return value.to(device)


def _set_attr(root: torch.nn.Module, target: str, value: torch.Tensor) -> None:
    *path, leaf = target.split(".")
    module = root
    for part in path:
        if not hasattr(module, part):
            module.add_module(part, torch.nn.Module())
        module = getattr(module, part)
    if isinstance(value, torch.nn.Parameter) or value.is_floating_point():
        module.register_parameter(leaf, torch.nn.Parameter(value, requires_grad=False))
    else:
        module.register_buffer(leaf, value)


def _has_attr(root: torch.nn.Module, target: str) -> bool:
    obj: Any = root
    for part in target.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _node_parts(
    op: Operation,
    root: torch.nn.Module,
    table: ObjectTable,
    value: Any,
    made_up: dict[str, torch.Tensor],
    missing_attributes: str,
    generator: torch.Generator,
) -> tuple[str, Any, tuple[Any, ...], dict[str, Any]]:
    """The FX node kind, target, args and kwargs of one fx op."""
    if isinstance(op, fx.PlaceholderOp):
        args = () if op.default is None else (value(op.default, op),)
        return "placeholder", op.target.data, args, {}
    if isinstance(op, fx.GetAttrOp):
        target = op.target.data
        if not _has_attr(root, target):
            if missing_attributes == "error":
                raise GraphExportError(
                    f"names '{target}', which the owner module lacks (pass the "
                    "owner, or missing_attributes='random' to make up a value)"
                )
            result_type = op.result.type
            if not isinstance(result_type, TensorType):
                raise GraphExportError(
                    f"names '{target}', which the owner module lacks, and a value "
                    f"of non-tensor type {result_type} cannot be made up"
                )
            made_up[target] = random_tensor(result_type, generator)
            _set_attr(root, target, made_up[target])
        return "get_attr", target, (), {}
    if isinstance(op, fx.NodeOp):
        args = tuple(value(a, op) for a in op.args.data)
        kwargs = {k: value(v, op) for k, v in op.kwargs.data.items()}
        if isinstance(op, fx.CallFunctionOp):
            try:
                target = table.resolve(op.target.data)
            except UnresolvedNameError as error:
                raise GraphExportError(str(error)) from None
            return "call_function", target, args, kwargs
        if isinstance(op, fx.CallMethodOp):
            return "call_method", op.target.data, args, kwargs
        if not _has_attr(root, op.target.data):
            raise GraphExportError(
                f"names submodule '{op.target.data}', which the owner module lacks"
            )
        return "call_module", op.target.data, args, kwargs
    raise GraphExportError("is not an fx op; run the 'lower-to-fx' pass before export")


def _where(op: Operation) -> str:
    """`'fx.call_function' %name` (or the op's position) for error messages."""
    results = op.results
    if results and results[0].name_hint:
        return f"'{op.name}' %{results[0].name_hint}"
    block = op.parent_block()
    if block is not None:
        index = next((i for i, o in enumerate(block.ops) if o is op), None)
        if index is not None:
            return f"'{op.name}' (op #{index} of the graph)"
    return f"'{op.name}'"


def export_graph(
    program: ImportedGraph | ModuleOp,
    owner: torch.nn.Module | None = None,
    objects: ObjectTable | Mapping[str, Any] | None = None,
    *,
    missing_attributes: Literal["error", "random"] = "error",
    seed: int = 0,
) -> torch.fx.GraphModule:
    """Build a GraphModule from an fx-dialect module.

    `program` is what `import_graph` returned (owner, object table and calling
    convention come with it) or a bare ModuleOp, with `owner`/`objects` given
    here. Parameters that the owner lacks are an error, or made up with
    `missing_attributes="random"`.
    """
    codegen = None
    if isinstance(program, ImportedGraph):
        module = program.module
        owner = owner if owner is not None else program.owner
        table = program.objects if objects is None else objects
        codegen = program.codegen
    else:
        module = program
        table = objects
    if not isinstance(table, ObjectTable):
        mapping = dict(table or {})
        table = ObjectTable()
        table.by_name.update(mapping)
    root = owner if owner is not None else torch.nn.Module()
    graph_op = graph_of(module)

    generator = torch.Generator().manual_seed(seed)
    graph = torch.fx.Graph()
    if codegen is not None:
        graph.set_codegen(codegen)
    nodes: dict[Any, torch.fx.Node] = {}
    made_up: dict[str, torch.Tensor] = {}

    def node_of(op: Operation, index: int) -> torch.fx.Node:
        operand = op.operands[index]
        node = nodes.get(operand)
        if node is None:
            raise GraphExportError(
                f"operand #{index} is not the result of an exported fx op "
                "(a block argument, or a value defined by a non-fx op)"
            )
        return node

    def convert(leaf: Attribute) -> Any:
        return literal_value(leaf, table)

    def value(attr: Attribute, op: Operation) -> Any:
        try:
            return fx.map_refs(attr, lambda i: node_of(op, i), convert)
        except UnresolvedNameError as error:
            raise GraphExportError(str(error)) from None

    with gc_paused():
        for op in graph_op.block.ops:
            try:
                if isinstance(op, fx.OutputOp):
                    graph.output(value(op.args, op))
                    continue
                kind, target, args, kwargs = _node_parts(
                    op, root, table, value, made_up, missing_attributes, generator
                )
            except GraphExportError as error:
                raise GraphExportError(f"{_where(op)}: {error}") from None
            result = op.results[0]
            nodes[result] = graph.create_node(
                kind, target, args, kwargs, name=node_name(result.name_hint)
            )
        graph.lint()
        return torch.fx.GraphModule(root, graph)
