"""Translation of a torch.fx.GraphModule into the `fx` dialect.

The importer knows nothing about operators: each FX node becomes the fx op of
its kind, its node inputs become operands and everything else becomes
attributes (see dialects/fx.py). Value types come from the node's metadata --
`example_value` (Dynamo), `val` (torch.export, FakeTensorProp) or
`tensor_meta` (ShapeProp) -- or, where that is missing, from fake-tensor
propagation of the example inputs (no real compute).

IR is built in memory; the text parser is never involved.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr, TensorType, TupleType
from xdsl.ir import Attribute, Operation, SSAValue

from optimus_ir.analysis.alias_facts import call_result_strides, record_module_facts
from optimus_ir.analysis.op_classes import may_alias_operands
from optimus_ir.dialects import fx
from optimus_ir.dialects.literals import describe_module, encode_literal
from optimus_ir.foundation.objects import ObjectTable
from optimus_ir.foundation.types import (
    DYNAMIC,
    UnsupportedDTypeError,
    element_type_of,
    symbolic_sizes,
    tensor_type_of,
)


class GraphImportError(ValueError):
    """A graph that cannot be imported (missing shape information)."""


@dataclass
class ImportedGraph:
    """An imported program: the IR plus what the IR names but cannot hold.

    `owner` holds the parameters, buffers and submodules that fx.get_attr and
    fx.call_module ops name; `objects` the Python objects without an import
    path; `codegen` the original graph's calling convention (pytree flattening
    of inputs and outputs), so the exported module is called like the original.
    """

    module: ModuleOp
    owner: torch.nn.Module
    objects: ObjectTable = field(default_factory=ObjectTable)
    codegen: Any = None
    output_strides: tuple[tuple[int, ...] | None, ...] = ()
    """Per operand of `fx.output`: the strides the original graph returns
    there (from its metadata), or None (not a tensor, unknown)."""

    @property
    def graph(self) -> fx.GraphOp:
        return graph_of(self.module)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector.

    Building IR for a large graph allocates hundreds of thousands of
    long-lived objects; every allocation burst triggers collections that walk
    the whole (growing) heap, which made import and export time grow faster
    than the graph. Nothing built here is garbage while it is being built."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def graph_of(module: ModuleOp) -> fx.GraphOp:
    """The (first) fx.graph of a module."""
    for op in module.ops:
        if isinstance(op, fx.GraphOp):
            return op
    raise GraphImportError("module holds no fx.graph")


_META_KEYS = ("val", "example_value")


def _node_value(node: torch.fx.Node) -> Any:
    for key in _META_KEYS:
        if key in node.meta:
            return node.meta[key]
    meta = node.meta.get("tensor_meta")
    if meta is not None:
        return meta
    return _MISSING


_MISSING = object()


def _type_of_value(value: Any) -> Attribute:
    if isinstance(value, torch.Tensor):
        try:
            return tensor_type_of(value)
        except UnsupportedDTypeError:
            return fx.VALUE
    if type(value).__name__ == "TensorMetadata":
        from optimus_ir.foundation.types import tensor_type

        try:
            return tensor_type(
                tuple(int(s) if isinstance(s, int) else DYNAMIC for s in value.shape),
                element_type_of(value.dtype),
                None,
            )
        except UnsupportedDTypeError:
            return fx.VALUE
    if isinstance(value, tuple | list) and value and all(
        isinstance(v, torch.Tensor) for v in value
    ):
        types = [_type_of_value(v) for v in value]
        if all(t is not fx.VALUE for t in types):
            return TupleType(tuple(types))
    return fx.VALUE


def _needs_propagation(gm: torch.fx.GraphModule) -> bool:
    for node in gm.graph.nodes:
        if node.op in ("output", "get_attr") or not node.users:
            continue
        if _node_value(node) is _MISSING:
            return True
    return False


def _fill_missing_values(gm: torch.fx.GraphModule) -> None:
    """Give the few nodes Dynamo left without a value (the `sum[0]` before a
    `.item()`) one, computed from their inputs' values in the graph's own
    fake mode: a run of the whole graph on fake tensors cannot pass a
    data-dependent `.item()` that Dynamo traced with its own symbols. Nodes
    whose value cannot be computed so are left for `_propagate_fake`."""
    from torch._guards import detect_fake_mode

    values = [
        value for node in gm.graph.nodes
        if isinstance(value := node.meta.get("example_value"), torch.Tensor)
    ]
    fake_mode = detect_fake_mode(values[:64]) if values else None
    if fake_mode is None:
        return

    def value_of(arg: torch.fx.Node) -> Any:
        value = _node_value(arg)
        if value is _MISSING:
            raise LookupError(arg.name)
        return value

    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method") or _node_value(node) is not _MISSING:
            continue
        try:
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), value_of)
        except LookupError:
            continue
        try:
            with fake_mode:
                if node.op == "call_function":
                    value = node.target(*args, **kwargs)
                else:
                    value = getattr(args[0], node.target)(*args[1:], **kwargs)
        except Exception:  # noqa: BLE001 -- left to the whole-graph propagation
            continue
        node.meta["example_value"] = value


def _propagate_fake(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """Fill node.meta['val'] by running the graph on fake tensors.

    Parameters, buffers and tensor attributes are faked too: FakeTensorMode
    runs an in-place op on a real tensor for real (a `count.add_(1)` on a
    buffer would change the user's model while we only wanted shapes)."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    from torch.nn.utils.stateless import _reparametrize_module

    mode = FakeTensorMode(allow_non_fake_inputs=True)

    def fake(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and not isinstance(value, FakeTensor):
            return mode.from_tensor(value)
        return value

    class _Prop(FakeTensorProp):
        def get_attr(self, target, args, kwargs):  # type: ignore[no-untyped-def]
            return fake(super().get_attr(target, args, kwargs))

    fake_inputs = [fake(x) for x in example_inputs]
    state = {
        name: fake(tensor)
        for named in (
            gm.named_parameters(remove_duplicate=False),
            gm.named_buffers(remove_duplicate=False),
        )
        for name, tensor in named
    }
    # The inputs are the placeholders' values: the graph's own calling
    # convention (a model's signature, `calling.ModelCallCodeGen`) is skipped.
    with _reparametrize_module(gm, state, tie_weights=True), mode:
        _Prop(gm, mode).run(*fake_inputs, enable_io_processing=False)


def _static_strides(value: Any) -> tuple[int, ...] | None:
    """The strides of a (real, fake or metadata) tensor value when they are
    all plain ints, else None."""
    if isinstance(value, torch.Tensor):
        if value.layout is not torch.strided:
            return None
        strides = value.stride()
    elif type(value).__name__ == "TensorMetadata":
        strides = value.stride
    else:
        return None
    if strides is None or not all(type(s) is int for s in strides):
        return None
    return tuple(strides)


def _recorded_strides(value: Any) -> tuple[int, ...] | None:
    """The strides to record on an fx.placeholder / fx.get_attr: the value's
    strides unless they are the row-major ones (absent means contiguous)."""
    strides = _static_strides(value)
    if strides is None:
        return None
    sizes = value.shape
    if not all(type(s) is int for s in sizes):
        return None
    return None if strides == fx.row_major_strides(tuple(sizes)) else strides


class _Builder:
    """Converts one FX graph; holds the caches of a single import."""

    def __init__(self, gm: torch.fx.GraphModule, objects: ObjectTable) -> None:
        self.gm = gm
        self.objects = objects
        self.values: dict[torch.fx.Node, SSAValue] = {}
        self._modules: dict[str, tuple[StringAttr, DictionaryAttr | None]] = {}
        self._strings: dict[str, StringAttr] = {}
        self._targets: dict[Any, StringAttr] = {}
        # Set once example inputs were propagated: a node still without a value
        # then produced something that is not a tensor or a scalar (a string,
        # None, an arbitrary object), which FakeTensorProp does not record.
        self.propagated = False
        self.output_strides: tuple[tuple[int, ...] | None, ...] = ()
        self.output_op: fx.OutputOp | None = None

    # -- literals ---------------------------------------------------------

    def literal(self, value: Any, refs: dict[torch.fx.Node, int], operands: list[SSAValue]) -> Attribute:
        """The literal of an FX argument; nodes become `#fx.ref`s to
        `operands` (each node once, in first-use order)."""

        def ref(item: Any) -> Attribute | None:
            if not isinstance(item, torch.fx.Node):
                return None
            index = refs.get(item)
            if index is None:
                index = refs[item] = len(operands)
                operands.append(self.values[item])
            return fx.ref(index)

        return encode_literal(value, ref, self.objects.name_of)

    def string(self, value: str) -> StringAttr:
        cached = self._strings.get(value)
        if cached is None:
            cached = self._strings[value] = StringAttr(value)
        return cached

    # -- nodes --------------------------------------------------------------

    def node_op(self, node: torch.fx.Node) -> Operation:
        result_type = self.result_type(node)
        if node.op == "placeholder":
            default = None
            if node.args:
                default = self.literal(node.args[0], {}, [])
            value = _node_value(node)
            strides = _recorded_strides(value)
            symbols, hints = symbolic_sizes(value)
            return fx.PlaceholderOp(self.string(node.target), result_type, default, strides, symbols, hints)  # type: ignore[arg-type]
        if node.op == "get_attr":
            # The owner's tensor is what runs; its strides, not the metadata's.
            try:
                strides = _recorded_strides(_fetch_attr(self.gm, node.target))  # type: ignore[arg-type]
            except AttributeError:
                strides = None
            return fx.GetAttrOp(self.string(node.target), result_type, strides)  # type: ignore[arg-type]
        refs: dict[torch.fx.Node, int] = {}
        operands: list[SSAValue] = []
        if node.op == "output":
            structure = self.literal(node.args[0], refs, operands)
            expected: list[tuple[int, ...] | None] = [None] * len(operands)
            for returned, index in refs.items():
                expected[index] = _static_strides(_node_value(returned))
            self.output_strides = tuple(expected)
            self.output_op = fx.OutputOp(structure, operands)
            return self.output_op
        args = [self.literal(a, refs, operands) for a in node.args]
        kwargs = {k: self.literal(v, refs, operands) for k, v in node.kwargs.items()}
        if node.op == "call_function":
            return fx.CallFunctionOp(
                self.function_name(node.target), args, kwargs, operands, result_type
            )
        if node.op == "call_method":
            return fx.CallMethodOp(self.string(node.target), args, kwargs, operands, result_type)  # type: ignore[arg-type]
        if node.op == "call_module":
            op = fx.CallModuleOp(self.string(node.target), args, kwargs, operands, result_type)  # type: ignore[arg-type]
            module_type, module_attrs = self.describe(node.target)  # type: ignore[arg-type]
            op.attributes["module_type"] = module_type
            if module_attrs is not None:
                op.attributes["module_attrs"] = module_attrs
                # what the module does to storage, asked of torch while the
                # module is at hand: the IR keeps only its description
                record_module_facts(op, self.gm.get_submodule(node.target))  # type: ignore[arg-type]
            return op
        raise GraphImportError(f"unknown FX node kind '{node.op}' on node '{node.name}'")

    def function_name(self, target: Any) -> StringAttr:
        """The IR name of a call_function target (cached per target object;
        the object table keeps every target alive, so ids stay unique)."""
        cached = self._targets.get(id(target))
        if cached is None:
            cached = self._targets[id(target)] = self.string(self.objects.name_of(target))
        return cached

    def describe(self, target: str) -> tuple[StringAttr, DictionaryAttr | None]:
        """The class name and `describe_module` of a submodule, cached."""
        cached = self._modules.get(target)
        if cached is None:
            submodule = self.gm.get_submodule(target)
            cls = type(submodule)
            cached = self._modules[target] = (
                StringAttr(f"{cls.__module__}.{cls.__qualname__}"),
                describe_module(submodule),
            )
        return cached

    def eager_output_strides(self, gm: torch.fx.GraphModule) -> tuple[tuple[int, ...] | None, ...]:
        """The strides each output has when the captured graph runs, where
        the metadata may say otherwise.

        Dynamo records its example values with the Python dispatcher on,
        and some Python decompositions copy where torch's kernel returns
        its input (`aten.dropout` in eval mode returns `input.clone()`
        there, the input itself in eager): a returned eval-mode dropout of
        a slice is `(16, 1)`-strided in eager, `(4, 1)` in the metadata.
        So an output made by a chain of calls that may alias their operands
        (`may_alias_operands`) has its strides recomputed by running the
        chain on fake tensors with torch's own kernels
        (`alias_facts.call_result_strides`), from the strides of the chain's
        top (a graph input's, a parameter's, a fresh result's metadata).
        Linear in the length of the chains; other outputs keep their
        metadata strides."""
        output = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
        if output is None or not self.output_strides:
            return self.output_strides
        nodes = {value: node for node, value in self.values.items()}
        memo: dict[SSAValue, tuple[int, ...] | None] = {}

        def strides(value: SSAValue, depth: int) -> tuple[int, ...] | None:
            if value in memo:
                return memo[value]
            owner = value.owner
            node = nodes.get(value)
            found = _static_strides(_node_value(node)) if node is not None else None
            if isinstance(owner, fx.PlaceholderOp | fx.GetAttrOp):
                found = fx.input_strides(owner)
            elif (
                depth > 0
                and isinstance(owner, fx.CallFunctionOp | fx.CallMethodOp)
                and may_alias_operands(owner)
            ):
                layouts: list[tuple[int, ...] | None] = []
                for operand in owner.operands:
                    if isinstance(operand.type, TensorType):
                        layouts.append(strides(operand, depth - 1))
                        if layouts[-1] is None:
                            break
                    elif isinstance(operand.type, TupleType):
                        layouts.append(None)
                        break
                    else:
                        layouts.append(None)
                else:
                    derived = call_result_strides(owner, tuple(layouts))  # type: ignore[arg-type]
                    if derived is not None:
                        found = derived
            memo[value] = found
            return found

        graph_output = self.output_op
        if graph_output is None:
            return self.output_strides
        result = list(self.output_strides)
        for index, value in enumerate(graph_output.operands):
            if index < len(result) and result[index] is not None:
                eager = strides(value, 64)
                if eager is not None and len(eager) == len(result[index]):  # type: ignore[arg-type]
                    result[index] = eager
        return tuple(result)

    def result_type(self, node: torch.fx.Node) -> Attribute:
        if node.op == "output":
            return fx.VALUE
        value = _node_value(node)
        if value is _MISSING and node.op == "get_attr":
            value = _fetch_attr(self.gm, node.target)  # type: ignore[arg-type]
        if value is _MISSING and (self.propagated or not node.users):
            return fx.VALUE  # e.g. torch.export's guard call: its value is never read
        if value is _MISSING:
            raise GraphImportError(
                f"node '{node.name}' ({node.op} {node.target}) has no shape metadata; "
                "pass example_inputs so that shapes can be propagated"
            )
        return _type_of_value(value)


_NUMBER_SUFFIX = re.compile(r"_(\d+)$")


def value_name(node_name: str) -> str:
    """The SSA name hint for an FX node name.

    xDSL strips one `_N` suffix from every name hint and re-adds `_N` suffixes
    when it prints duplicates, so FX names such as `getitem_1`, `body_3_1` and
    `body_4` would print as colliding or renumbered names, and text would not
    survive print -> parse -> print. FX names are unique identifiers without
    '.', so writing the final `_N` as `.N` (`getitem.1`) gives unique hints
    that xDSL keeps verbatim; the exporter turns `.N` back into `_N`.
    """
    if not node_name[-1:].isdigit():
        return node_name
    return _NUMBER_SUFFIX.sub(r".\1", node_name)


def _fetch_attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def import_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any] | None = None,
    name: str = "forward",
) -> ImportedGraph:
    """Translate `gm` into a `builtin.module { fx.graph @forward {...} }`.

    Shapes, dtypes and devices are read from node metadata; where a node has
    none, `example_inputs` are propagated through the graph as fake tensors
    (this writes node.meta['val'] on `gm`; parameters and buffers are
    faked too, so `gm`'s tensors are never touched). Non-contiguous strides
    of graph inputs (from the metadata) and of parameters and buffers (from
    `gm`) are recorded as the `strides` of their ops (`fx.input_strides`).
    """
    if not isinstance(gm, torch.fx.GraphModule):
        raise GraphImportError(
            f"import_graph needs a torch.fx.GraphModule, not a {type(gm).__name__} "
            "(optimus_ir.capture or optimus_ir.optimize capture a model)"
        )
    propagated = False
    if _needs_propagation(gm):
        _fill_missing_values(gm)
    if _needs_propagation(gm):
        if example_inputs is None:
            missing = next(
                n for n in gm.graph.nodes
                if n.op not in ("output", "get_attr")
                and n.users
                and _node_value(n) is _MISSING
            )
            raise GraphImportError(
                f"node '{missing.name}' has no shape metadata and no example inputs "
                "were given to propagate shapes"
            )
        _propagate_fake(gm, example_inputs)
        propagated = True

    objects = ObjectTable()
    builder = _Builder(gm, objects)
    builder.propagated = propagated
    ops: list[Operation] = []
    with gc_paused():
        for node in gm.graph.nodes:
            op = builder.node_op(node)
            if op.results:
                result = op.results[0]
                result.name_hint = value_name(node.name)
                builder.values[node] = result
            ops.append(op)
        graph = fx.GraphOp(name, ops)
        output_strides = builder.eager_output_strides(gm)
    return ImportedGraph(
        ModuleOp([graph]),
        gm,
        objects,
        gm.graph._codegen,  # noqa: SLF001
        output_strides,
    )
