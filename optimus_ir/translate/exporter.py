"""Translation of an `fx`-dialect module back into a torch.fx.GraphModule.

Only fx ops are exported: run `lower-to-fx` first so that operator and batch
ops have become fx.call_function ops. Call targets are resolved through the
program's object table, then by import path. The returned GraphModule is built
on the owner module, so it references (does not copy) the original parameters,
buffers and submodules.

For IR that has no owner (hand-written or parsed text), `missing_attributes=
"random"` makes up parameters of the recorded shapes and dtypes, seeded, so
that the graph can still be run (used by differential validation).

The returned module's generated `forward` costs no more per call than the
graph itself (see `FastCodeGen`): parameters and buffers are read from the
modules' own dicts instead of through `nn.Module.__getattr__`, and a plain
calling convention (positional or keyword tensors in, a tuple, list, dict or
single value out) is written out directly instead of through pytree
flatten/unflatten.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NoReturn

import torch
import torch.fx
from torch.fx.graph import CodeGen, PythonCode, _PyTreeCodeGen
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation

from optimus_ir.analysis.op_classes import may_alias_operands
from optimus_ir.dialects import fx
from optimus_ir.translate.attribute_snapshot import HOISTED_READ_META, SNAPSHOT_ATTRIBUTE
from optimus_ir.translate.importer import ImportedGraph, gc_paused, graph_of
from optimus_ir.dialects.literals import LiteralError, decode_literal
from optimus_ir.foundation.objects import ObjectTable, UnresolvedNameError
from optimus_ir.foundation.types import DYNAMIC, device_of, dtype_of


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


_METHOD_DESCRIPTOR = type(torch.Tensor.unfold)


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
            if type(target) is _METHOD_DESCRIPTOR and args and getattr(torch.Tensor, target.__name__, None) is target:
                # `torch.Tensor.unfold(x, ...)` as `x.unfold(...)`: the same call, and one
                # FX can write as source again (pickling a GraphModule imports each global
                # by name, and a method of `torch._C.TensorBase` has none it can import)
                return "call_method", target.__name__, args, kwargs
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


# ---------------------------------------------------------------------------
# Generated code: attribute reads and calling convention without per-call
# overhead
# ---------------------------------------------------------------------------

RESULT_MAY_ALIAS_META = "optimus_result_may_alias"
"""`node.meta` key of a call node: whether its result may share storage with
(or be) one of its inputs, as the IR's aliasing facts say
(`analysis.op_classes.may_alias_operands`). Passes over the exported graph
(`param_cache`) read it instead of guessing from the target's name; a node
without it may alias."""

ATTR_PATH_META = "optimus_attr_path"
"""`node.meta` key of a get_attr node: the module dicts that hold its target
in the exported module, as `(("_modules", "towers"), ("_parameters", "weight"))`
for `towers.weight`. `FastCodeGen` reads the value through these dicts."""

ATTR_OWN_META = "optimus_attr_own"
"""`node.meta` key of a get_attr node whose `ATTR_PATH_META` leads into
another module (the model an optimized module reads its parameters from):
`(path, index)`, the dicts of the module's own attribute and the index in
`module.__dict__[MADE_WITH_ATTRIBUTE]` of the tensor it held when the code
was made. The code reads the own attribute first and takes it where it is no
longer that tensor (reassigned on the module itself: `functional_call`,
`load_state_dict(assign=True)`, `setattr`), else the attribute at
`ATTR_PATH_META`."""

MADE_WITH_ATTRIBUTE = "_optimus_made_with"
"""The key in a module's `__dict__` of the tuple of tensors `ATTR_OWN_META`
indexes."""

AttrPath = tuple[tuple[str, str], ...]

OWN_STATE_ATTRIBUTE = "_optimus_own_state"
"""The key in a module's `__dict__` of its `OwnState`: whether an attribute
was reassigned on the module itself since its code was made. Without it
(a module nobody watches) the code reads its own attributes first."""


class OwnState:
    """Whether any of a module's own parameter, buffer or submodule dicts
    (`WatchedDict`) changed since its code was made: until then every get_attr
    with `ATTR_OWN_META` holds the tensor the code was made with, and the
    code reads the attributes at `ATTR_PATH_META` alone (one dict lookup
    each, not two and an identity test). Once set, it stays set."""

    __slots__ = ("changed",)

    def __init__(self, changed: bool = False) -> None:
        self.changed = changed

    def __reduce__(self) -> tuple[Any, ...]:
        return (OwnState, (self.changed,))


class WatchedDict(dict):  # type: ignore[type-arg]
    """A module dict (`_parameters`, `_buffers`, `_modules`) that sets its
    `OwnState` on every change (`nn.Module` registers, deletes and
    reassigns through these methods; `torch.func.functional_call`,
    `load_state_dict(assign=True)` and `.to()` too). Reads are dict reads."""

    __slots__ = ("watch",)

    def __init__(self, items: Any = (), watch: OwnState | None = None) -> None:
        super().__init__(items)
        self.watch = watch

    def _changed(self) -> None:
        watch = getattr(self, "watch", None)  # unpickling sets items before the slot
        if watch is not None:
            watch.changed = True

    def __setitem__(self, key: Any, value: Any) -> None:
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self._changed()
        super().__delitem__(key)

    def __ior__(self, other: Any) -> WatchedDict:
        self._changed()
        return super().__ior__(other)  # type: ignore[return-value]

    def pop(self, *args: Any) -> Any:
        self._changed()
        return super().pop(*args)

    def popitem(self) -> Any:
        self._changed()
        return super().popitem()

    def clear(self) -> None:
        self._changed()
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self._changed()
        return super().setdefault(key, default)


def attribute_path(root: torch.nn.Module, target: str) -> AttrPath | None:
    """The dicts that hold get_attr `target` once `torch.fx.GraphModule(root, ...)`
    has copied it (submodules in `_modules`, the leaf in `_parameters`,
    `_buffers` or `_modules`, as GraphModule's own attribute copy registers it),
    or None where the value is no parameter, tensor or module (read by getattr)."""
    *prefix, leaf = target.split(".")
    owner: Any = root
    path: list[tuple[str, str]] = []
    for part in prefix:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
        path.append(("_modules", part))
    value = getattr(owner, leaf, None)
    if isinstance(value, torch.nn.Parameter):
        kind = "_parameters"
    elif isinstance(value, torch.Tensor):
        kind = "_buffers"  # GraphModule registers a plain tensor as a buffer
    elif isinstance(value, torch.nn.Module):
        kind = "_modules"
    else:
        return None
    path.append((kind, leaf))
    return tuple(path)


def _read_path(module: torch.nn.Module, path: AttrPath) -> Any:
    """The value at `path` (KeyError/AttributeError where the dicts differ)."""
    value: Any = module
    for kind, key in path:
        value = getattr(value, kind)[key]
    return value


def _read_target(module: torch.nn.Module, target: str) -> Any:
    value: Any = module
    for part in target.split("."):
        value = getattr(value, part)
    return value


def read_attributes(module: torch.nn.Module, targets: tuple[str, ...]) -> tuple[Any, ...]:
    """The slow path of the generated code: every get_attr target read with
    getattr, as FX's own code reads them. Taken when an attribute no longer
    lives in the dict it lived in when the code was made. A module-level
    function, so that the generated code can be pickled (FX imports it)."""
    return tuple(_read_target(module, target) for target in targets)


def _plain_name(var: str) -> str:
    """A free variable of FX's codegen without annotation, default or comment."""
    return var.split("#")[0].split(":")[0].split("=")[0].strip()


def _hoisted_reads(nodes: Sequence[torch.fx.Node], fetched: set[torch.fx.Node]) -> tuple[list[torch.fx.Node], set[torch.fx.Node]]:
    """The calls marked `HOISTED_READ_META` whose site is a plain attribute
    of the module read by nothing else and whose other arguments are all
    prologue reads (`fetched`), with their site get_attr nodes: both move
    into the prologue."""
    reads: list[torch.fx.Node] = []
    sites: set[torch.fx.Node] = set()
    for node in nodes:
        if node.op != "call_function" or not node.meta.get(HOISTED_READ_META) or node.kwargs or not node.args:
            continue
        site, *members = node.args
        if not (
            isinstance(site, torch.fx.Node)
            and site.op == "get_attr"
            and "." not in str(site.target)
            and str(site.target).isidentifier()
            and ATTR_PATH_META not in site.meta
            and len(site.users) == 1
            and all(isinstance(m, torch.fx.Node) and m in fetched for m in members)
        ):
            continue
        reads.append(node)
        sites.add(site)
    return reads, sites


class _FastAttributes:
    """Mixin for a CodeGen: get_attr nodes that carry `ATTR_PATH_META` are read
    at the top of `forward` from the modules' dicts (`self._parameters[...]`, a
    dict lookup) instead of one `self.name` each, which fails the instance
    lookup and falls back to the Python-level `nn.Module.__getattr__`.

    The dicts are read on every call, so in-place updates, `load_state_dict`,
    `.to()`, and parameters reassigned or registered anew are all followed.
    Should an attribute have moved to another kind of attribute (a parameter
    deleted and set again as a buffer, a submodule replaced by something that
    is no module), the dict lookup misses and the whole
    prologue falls back to getattr (`read_attributes`): slower, same values.
    Nothing else runs before the prologue, so the fallback repeats no work.
    """

    _attr_prologue: str | None = None
    _attr_globals: tuple[tuple[str, Any], ...] = ()
    _guard: str = ""
    """Source run first in `forward`, after the arguments are bound (the
    call-time stride check of `export_graph(fallback=...)`)."""

    def _gen_python_code(
        self, nodes: Any, root_module: str, namespace: Any, **kwargs: Any
    ) -> PythonCode:
        all_nodes = list(nodes)
        fetched = [
            n for n in all_nodes if n.op == "get_attr" and n.meta.get(ATTR_PATH_META)
        ]
        self._attr_globals = ()
        if not fetched:
            self._attr_prologue = None
            return super()._gen_python_code(all_nodes, root_module, namespace, **kwargs)  # type: ignore[misc]
        reserved = {n.target for n in all_nodes if n.op == "placeholder"}
        reserved |= set(self._argument_names())

        def local(hint: str) -> str:
            name = namespace.create_name(hint, None)
            while name in reserved:
                name = namespace.create_name(hint, None)
            return name

        owners: dict[tuple[tuple[str, str], ...], str] = {(): root_module}
        dicts: dict[tuple[tuple[str, str], ...], str] = {}
        setup: list[str] = []
        reads: list[str] = []
        walked_dicts: dict[str, None] = {}  # what a snapshot compares: every dict the walk read from
        walked_singles: dict[tuple[str, str], None] = {}  # (dict, key) read from a `__dict__`

        def walked(table: str, kind: str, key: str) -> None:
            if kind == "__dict__":
                walked_singles[(table, repr(key))] = None
            else:
                walked_dicts[table] = None

        def owner_of(path: tuple[tuple[str, str], ...]) -> str:
            name = owners.get(path)
            if name is None:
                parent = owner_of(path[:-1])
                kind, key = path[-1]
                name = local("_mod_" + "_".join(k for _, k in path))
                setup.append(f"{name} = {parent}.{kind}[{key!r}]")
                walked(f"{parent}.{kind}", kind, key)
                owners[path] = name
            return name

        def table_of(path: tuple[tuple[str, str], ...]) -> tuple[str, str]:
            *prefix, (kind, key) = path
            holder = (*prefix, (kind, ""))
            table = dicts.get(holder)
            if table is None:
                owner = owner_of(tuple(prefix))
                table = local(f"_{kind.strip('_')}" + "".join(f"_{k}" for _, k in prefix))
                setup.append(f"{table} = {owner}.{kind}")
                dicts[holder] = table
            walked(table, kind, key)
            return table, key

        model_reads: dict[torch.fx.Node, str] = {}
        for node in fetched:
            table, key = table_of(node.meta[ATTR_PATH_META])
            model_reads[node] = f"{table}[{key!r}]"
            reads.append(f"{node!r} = {model_reads[node]}")
        owned = [n for n in fetched if n.meta.get(ATTR_OWN_META) is not None]
        if not owned:
            lines = setup + reads
        else:
            # The module's own attribute wins where it no longer is the
            # tensor the code was made with (reassigned on the module
            # itself); checked only once something was (`OwnState`). The
            # own dicts are walked to once per module into one local: every
            # local of the function costs every call, taken or not.
            state = local("_own_state")
            made_with = local("_made_with")
            own_table = local("_own_table")
            own = local("_own")
            lines = [
                *setup,
                f"{state} = {root_module}.__dict__.get({OWN_STATE_ATTRIBUTE!r})",
                f"if {state} is None or {state}.changed:  # reassigned on this module itself: its own first",
                f"    {made_with} = {root_module}.__dict__[{MADE_WITH_ATTRIBUTE!r}]",
            ]
            levels: list[str] = []  # one local per depth: the module at that depth of the last path
            walked: tuple[tuple[str, str], ...] = ()
            current: tuple[tuple[str, str], ...] | None = None
            for node in sorted(owned, key=lambda n: n.meta[ATTR_OWN_META][0][:-1]):
                path, index = node.meta[ATTR_OWN_META]
                *prefix, (kind, key) = path
                holder = (*prefix, (kind, ""))
                if holder != current:
                    common = 0
                    while common < min(len(walked), len(prefix)) and walked[common] == prefix[common]:
                        common += 1
                    for depth in range(common, len(prefix)):
                        if depth == len(levels):
                            levels.append(local(f"_own_{depth}"))
                        parent = levels[depth - 1] if depth else root_module
                        step_kind, step = prefix[depth]
                        lines.append(f"    {levels[depth]} = {parent}.{step_kind}[{step!r}]")
                    walked = tuple(prefix)
                    holder_module = levels[len(prefix) - 1] if prefix else root_module
                    lines.append(f"    {own_table} = {holder_module}.{kind}")
                    current = holder
                lines.append(f"    {own} = {own_table}[{key!r}]")
                lines.append(f"    {node!r} = {own} if {own} is not {made_with}[{index}] else {model_reads[node]}")
            owned_set = set(owned)
            lines += [f"    {node!r} = {model_reads[node]}" for node in fetched if node not in owned_set]
            lines += ["else:", *(f"    {line}" for line in reads)]
        reader_name = namespace.create_name("read_attributes", read_attributes)
        self._attr_globals = ((reader_name, read_attributes),)
        names = ", ".join(repr(n) for n in fetched)
        targets = "".join(f"{str(n.target)!r}, " for n in fetched).rstrip(" ")
        walked_flag = local("_walked")
        full_read = [
            "try:  # parameters and buffers straight from the module dicts",
            *(f"    {line}" for line in lines),
            f"    {walked_flag} = True",
            "except (KeyError, AttributeError):  # an attribute moved since this code was made",
            f"    {names}, = {reader_name}({root_module}, ({targets}))",
            f"    {walked_flag} = False",
        ]
        stack_reads, sites = _hoisted_reads(all_nodes, set(fetched))
        read_names: dict[Any, str] = {}
        for node in stack_reads:
            if node.target not in read_names:
                read_names[node.target] = namespace.create_name(getattr(node.target, "__name__", "read"), node.target)
        self._attr_globals += tuple((name, target) for target, name in read_names.items())
        full_read += [
            f"{node!r} = {read_names[node.target]}({root_module}.{node.args[0].target}, "
            + ", ".join(repr(a) for a in node.args[1:])
            + ")"
            for node in stack_reads
        ]
        hoisted = set(fetched) | set(stack_reads) | sites
        own_state = local("_own_state_now")
        own_ok = f" and {own_state} is not None and not {own_state}.changed" if owned else ""
        used = [n for n in fetched if any(user not in hoisted for user in n.users)]
        snapshot = local("_snapshot")
        fast = [f"{', '.join(repr(n) for n in used)}, = {snapshot}.values"] if used else []
        if stack_reads:
            fast.append(f"{', '.join(repr(n) for n in stack_reads)}, = {snapshot}.stack_reads()")
        record = (
            f"{snapshot}.record(({''.join(f'{n!r}, ' for n in used)}), "
            f"({''.join(f'{table}, ' for table in walked_dicts)}), "
            f"({''.join(f'({table}, {key}), ' for table, key in walked_singles)}), "
            f"({''.join(f'({root_module}.{n.args[0].target}, {n!r}), ' for n in stack_reads)}))"
        )
        prologue = [
            f"{snapshot} = {root_module}.__dict__.get({SNAPSHOT_ATTRIBUTE!r})",
            *([f"{own_state} = {root_module}.__dict__.get({OWN_STATE_ATTRIBUTE!r})"] if owned else []),
            f"if {snapshot} is not None{own_ok} and {snapshot}.valid():  # the dicts hold what the last call read",
            *(f"    {line}" for line in fast or ["pass"]),
            "else:",
            *(f"    {line}" for line in full_read),
            f"    if {snapshot} is not None and {walked_flag}{own_ok}:",
            f"        {record}",
        ]
        self._attr_prologue = "".join(f"\n    {line}" for line in prologue)
        index_of = [i for i, n in enumerate(all_nodes) if n not in hoisted]
        kept = [all_nodes[i] for i in index_of]
        try:
            code = super()._gen_python_code(kept, root_module, namespace, **kwargs)  # type: ignore[misc]
        finally:
            self._attr_prologue = None
        if code._lineno_map is not None:  # node indices refer to the full node list
            code._lineno_map = {
                line: None if index is None else index_of[index]
                for line, index in code._lineno_map.items()
            }
        return code

    def _argument_names(self) -> list[str]:
        return []

    def additional_globals(self) -> list[tuple[str, Any]]:
        return [*super().additional_globals(), *self._attr_globals]  # type: ignore[misc]

    def _with_prologue(self, definition: str) -> str:
        return definition + self._guard + (self._attr_prologue or "")


class FastCodeGen(_FastAttributes, CodeGen):
    """FX's plain calling convention (placeholders are the arguments) with
    get_attr reads from the module dicts (`_FastAttributes`)."""

    def gen_fn_def(
        self, free_vars: list[str], maybe_return_annotation: str, *, expanded_def: bool = False
    ) -> str:
        return self._with_prologue(
            super().gen_fn_def(free_vars, maybe_return_annotation, expanded_def=expanded_def)
        )


def _plain_output(spec: Any) -> bool:
    """Whether an output spec is tuples, lists, dicts (str/int keys) and None
    over leaves, which Python literals rebuild exactly."""
    if spec.is_leaf():
        return True
    if spec.type is type(None):
        return True
    if spec.type is dict:
        if not all(type(key) in (str, int) for key in spec.context):
            return False
    elif spec.type not in (tuple, list):
        return False
    return all(_plain_output(child) for child in spec.children())


def _output_literal(spec: Any, leaves: Any, repr_fn: Any) -> str:
    if spec.is_leaf():
        return repr_fn(next(leaves))
    if spec.type is type(None):
        return "None"
    items = [_output_literal(child, leaves, repr_fn) for child in spec.children()]
    if spec.type is dict:
        return "{" + ", ".join(f"{key!r}: {item}" for key, item in zip(spec.context, items)) + "}"
    if spec.type is list:
        return "[" + ", ".join(items) + "]"
    return "(" + "".join(f"{item}, " for item in items).rstrip(" ") + ")"


class FastPyTreeCodeGen(_FastAttributes, _PyTreeCodeGen):
    """The pytree calling convention of a Dynamo/export graph (`_PyTreeCodeGen`)
    written out directly where it is plain: every positional and keyword
    input a leaf (`def forward(self, x, y)` binds the placeholders itself, no
    `tree_flatten_spec`) and the output tuples/lists/dicts/None over leaves
    (returned as a literal, no `tree_unflatten`). Other specs keep the pytree
    code. `process_inputs`/`process_outputs` and the specs are unchanged, so
    interpreters and `gm._in_spec`/`_out_spec` see the same convention."""

    def _argument_names(self) -> list[str]:
        return list(self.pytree_info.orig_args) if self.pytree_info else []

    def _plain_inputs(self, free_vars: list[str]) -> bool:
        info = self.pytree_info
        if info is None or info.in_spec is None:
            return False
        args = list(info.orig_args)
        if args[:1] == ["self"] or len(free_vars) != len(args):
            return False
        spec = info.in_spec
        if (
            spec.type is tuple
            and spec.num_children == 2
            and spec.child(0).type is tuple
            and spec.child(1).type is dict
        ):
            leaves = [*spec.child(0).children(), *spec.child(1).children()]
        elif spec.type in (tuple, list):
            leaves = spec.children()
        else:
            return False
        return len(leaves) == len(args) and all(leaf.is_leaf() for leaf in leaves)

    def gen_fn_def(
        self, free_vars: list[str], maybe_return_annotation: str, *, expanded_def: bool = False
    ) -> str:
        if not self._plain_inputs(free_vars):
            return self._with_prologue(
                super().gen_fn_def(free_vars, maybe_return_annotation, expanded_def=expanded_def)
            )
        args = list(self.pytree_info.orig_args)
        definition = CodeGen.gen_fn_def(
            self, args[:], maybe_return_annotation, expanded_def=expanded_def
        )
        for var, arg in zip(free_vars, args):
            name = _plain_name(var)
            if name != arg:
                definition += f"\n    {name} = {arg}"
        return self._with_prologue(definition)

    def generate_output(
        self,
        output_args: Any,
        *,
        descs: Sequence[str] | None = None,
        repr_fn: Any = None,
    ) -> str:
        info = self.pytree_info
        spec = info.out_spec if info is not None else None
        if spec is None or not _plain_output(spec):
            return super().generate_output(output_args, descs=descs, repr_fn=repr_fn)
        flat = list(output_args) if isinstance(output_args, list | tuple) else [output_args]
        if len(flat) != spec.num_leaves:
            return super().generate_output(output_args, descs=descs, repr_fn=repr_fn)
        return "return " + _output_literal(spec, iter(flat), repr_fn or repr)


class _GuardedCodeGen:
    """Mixin for a codegen of another kind (torch.export's own): the guard
    goes right after the function head, as in `_FastAttributes`."""

    _guard: str = ""

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str, *, expanded_def: bool = False) -> str:
        head = super().gen_fn_def(  # type: ignore[misc]
            free_vars, maybe_return_annotation, expanded_def=expanded_def
        )
        return head + self._guard


_GUARDED_CLASSES: dict[type, type] = {}


def fast_codegen(codegen: CodeGen | None, guard: str = "") -> CodeGen:
    """The fast counterpart of an FX graph's codegen (same calling convention)
    that runs `guard` first; a codegen of another kind (torch.export's own)
    keeps its code, with the guard added after its function head."""
    if codegen is None or type(codegen) is CodeGen:
        fast: CodeGen = FastCodeGen()
    elif type(codegen) is _PyTreeCodeGen:
        fast = FastPyTreeCodeGen(codegen.pytree_info)
    elif isinstance(codegen, _FastAttributes):  # a fast one already (`calling.ModelCallCodeGen`)
        fast = copy.copy(codegen)
        fast._guard = guard  # type: ignore[attr-defined]
        return fast
    else:
        if not guard:
            return codegen
        cls = type(codegen)
        guarded_cls = _GUARDED_CLASSES.get(cls)
        if guarded_cls is None:
            guarded_cls = _GUARDED_CLASSES[cls] = type(f"Guarded{cls.__name__}", (_GuardedCodeGen, cls), {})
        fast = copy.copy(codegen)
        fast.__class__ = guarded_cls
        fast._guard = guard  # type: ignore[attr-defined]
        return fast
    if codegen is not None:
        fast._body_transformer = codegen._body_transformer  # noqa: SLF001
        fast._func_name = codegen._func_name  # noqa: SLF001
    fast._guard = guard  # type: ignore[attr-defined]
    return fast


def copy_graph(graph: torch.fx.Graph) -> torch.fx.Graph:
    """`copy.deepcopy(graph)`, sharing the pytree specs of its calling
    convention (`_PyTreeCodeGen.pytree_info`) with `graph` instead of
    copying them: a spec is a frozen dataclass nothing changes, and copying
    one builds a new `LeafSpec` for each leaf, a class torch 2.13 deprecates
    with a `FutureWarning` on every construction (`isinstance(treespec,
    LeafSpec)` is deprecated) that would reach the user from our copy."""
    codegen = graph._codegen  # noqa: SLF001
    info = getattr(codegen, "pytree_info", None)
    if info is None:
        return copy.deepcopy(graph)
    shared = {id(spec): spec for spec in (info.in_spec, info.out_spec) if spec is not None}
    graph._codegen = CodeGen()  # noqa: SLF001 - the nodes are copied without it
    try:
        copied = copy.deepcopy(graph)
    finally:
        graph._codegen = codegen  # noqa: SLF001
    copied._codegen = copy.deepcopy(codegen, shared)  # noqa: SLF001
    return copied


FALLBACK_ATTRIBUTE = "_optimus_fallback"
"""Where `export_graph(fallback=...)` keeps the callable the guard calls."""


def stride_guard(graph_op: fx.GraphOp, codegen: CodeGen | None) -> str:
    """The source of a check that every tensor input has the strides the IR
    recorded for it (`fx.input_strides`), calling the fallback with the
    call's own arguments otherwise; "" when there is nothing to check.
    A module restored by unpickling is re-traced without the check."""
    checks = []
    names = []
    for op in graph_op.block.ops:
        if not isinstance(op, fx.PlaceholderOp):
            continue
        name = op.target.data
        names.append(name)
        strides = fx.input_strides(op)
        if strides is None or name.startswith("*") or not name.isidentifier():
            continue
        # `is False` rather than `not`: when the code is traced again
        # (unpickling a GraphModule re-traces its code) the inputs are
        # proxies, whose comparisons are proxies too (never `False`), and the
        # check stays out of the traced graph. `is_contiguous()` (about 100 ns)
        # where the IR assumed a contiguous input, as it does unless strides
        # were recorded; it ignores the strides of size-1 dims, which no
        # layout fact depends on.
        if op.strides is None:
            checks.append(f"{name}.is_contiguous() is False")
        else:
            checks.append(f"({name}.stride() == {strides!r}) is False")
    if not checks:
        return ""
    info = getattr(codegen, "pytree_info", None)
    if info is not None and getattr(info, "orig_args", None) is not None:
        names = [a for a in info.orig_args if a != "self"]
    return (
        f"\n    if {' or '.join(checks)}:  # not the strides this code was specialized for"
        f"\n        return self.{FALLBACK_ATTRIBUTE}({', '.join(names)})"
    )


def wrong_mode_message(training: bool) -> str:
    """What a module specialized for `training` (True: training mode) says
    when it is run in the other mode."""
    mode, other = ("training", "eval") if training else ("eval", "training")
    return (
        f"this module was optimized from a model in {mode} mode, and its graph "
        f"computes {mode}-mode behaviour (dropout, batch norm); it was switched to "
        f"{other} mode since. Call optimus_ir.optimize on the model in {other} mode "
        f"for that, or switch this module back with .{'train' if training else 'eval'}()"
    )


def raise_wrong_mode(training: bool) -> NoReturn:
    """Raise the `RuntimeError` of `mode_guard` (`wrong_mode_message`).

    Raised here, in a source file, rather than in the generated forward:
    torch.fx prints an error raised in generated code with the offending
    line of that code and a line of `~` as long as it (about 300 characters
    for the message inlined), before the error itself; raised from a frame
    of a real file, the error is shown as any other."""
    raise RuntimeError(wrong_mode_message(training))


def mode_guard(training: bool) -> str:
    """The source of the check that the module runs in the mode it was
    captured in (`self.training`, about 50 ns); the error (`raise_wrong_mode`)
    is imported only when it is raised."""
    mode = "training" if training else "eval"
    return (
        f"\n    if self.training is not {training}:  # specialized for {mode} mode"
        f"\n        __import__('optimus_ir.translate.exporter', fromlist=['_']).raise_wrong_mode({training})"
    )


CODE_PENDING_ATTRIBUTE = "_optimus_code_pending"
"""Set in a GraphModule's `__dict__` while its code has not been generated
(`graph_module(..., defer_code=True)`): `finish_code` generates it."""


_PENDING_SOURCE = "# optimus: the code is not generated yet (exporter.finish_code)\n"


def _pending_forward(self: torch.fx.GraphModule, *args: Any, **kwargs: Any) -> Any:
    """The forward of a GraphModule whose code is pending (`graph_module`)."""
    raise RuntimeError("optimus: this module's code was not generated yet (exporter.finish_code)")


def _pending_recompile(self: torch.fx.GraphModule) -> None:
    """`recompile` of a GraphModule being built with its code pending: what
    the real one sets, without walking the graph (`Graph.python_code` walks
    every node twice even for a trivial codegen) or compiling anything."""
    self._code = _PENDING_SOURCE
    self._lineno_map = None
    self._prologue_start = 0
    type(self).forward = _pending_forward


def graph_module(root: torch.nn.Module, graph: torch.fx.Graph, *, defer_code: bool = False) -> torch.fx.GraphModule:
    """`torch.fx.GraphModule(root, graph)`; with `defer_code`, without
    generating its code: the module is marked pending (its forward raises)
    until `finish_code`, and `recompile` leaves it pending. Generating the
    code of a 100k-node graph takes seconds; what optimize() does after the
    export (binding parameters to the model, freezing, the guard) changes
    the code each time, so it is generated once, at the end."""
    if not defer_code:
        return torch.fx.GraphModule(root, graph)
    # GraphModule.__new__ makes a class of the instance's own (its forward
    # lives there): its recompile is replaced while __init__ runs, only.
    gm = torch.fx.GraphModule.__new__(torch.fx.GraphModule, root, graph)
    cls = type(gm)
    cls.recompile = _pending_recompile  # type: ignore[method-assign]
    try:
        gm.__init__(root, graph)  # type: ignore[misc]
    finally:
        del cls.recompile
    gm.__dict__[CODE_PENDING_ATTRIBUTE] = True
    return gm


def recompile(gm: torch.fx.GraphModule) -> None:
    """Regenerate `gm`'s code after a change of its graph or codegen, unless
    its code is pending (`graph_module(defer_code=True)`): then the one
    generation `finish_code` does sees the change."""
    if not gm.__dict__.get(CODE_PENDING_ATTRIBUTE, False):
        gm.recompile()


def finish_code(gm: torch.fx.GraphModule) -> None:
    """Generate `gm`'s pending code (`graph_module(defer_code=True)`), with
    Python's garbage collector paused; nothing when it has its code."""
    if gm.__dict__.pop(CODE_PENDING_ATTRIBUTE, False):
        with gc_paused():
            gm.recompile()


def export_graph(
    program: ImportedGraph | ModuleOp,
    owner: torch.nn.Module | None = None,
    objects: ObjectTable | Mapping[str, Any] | None = None,
    *,
    missing_attributes: Literal["error", "random"] = "error",
    seed: int = 0,
    fallback: Callable[..., Any] | None = None,
    training: bool | None = None,
    defer_code: bool = False,
) -> torch.fx.GraphModule:
    """Build a GraphModule from an fx-dialect module.

    `program` is what `import_graph` returned (owner, object table and calling
    convention come with it) or a bare ModuleOp, with `owner`/`objects` given
    here. Parameters that the owner lacks are an error, or made up with
    `missing_attributes="random"`.

    With `fallback`, the module's `forward` first checks that its tensor
    inputs have the strides the IR was specialized for (one `.stride()`
    comparison each) and calls `fallback` with the same arguments when they
    do not. It is kept as a plain attribute, not a submodule, so that its
    parameters (the model's own) do not appear twice in the state dict.

    With `training` (the mode the graph was captured in: dropout and batch
    norm are baked in as that mode), the module starts in that mode and its
    `forward` refuses to run in the other one (`.train()`/`.eval()` on it
    later) with a `RuntimeError` saying so, instead of silently running
    the captured mode.

    With `defer_code`, the module's code is not generated: it is pending
    (`graph_module`) until `finish_code(gm)`, which whoever changes it
    further (`optimize()`) calls once, last.
    """
    codegen = None
    if not isinstance(program, ImportedGraph | ModuleOp):
        raise GraphExportError(
            f"export_graph needs what import_graph returned or a ModuleOp, not a {type(program).__name__}"
        )
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
    guard = stride_guard(graph_op, codegen) if fallback is not None else ""
    if training is not None:
        guard = mode_guard(training) + guard
    graph.set_codegen(fast_codegen(codegen, guard))
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
            node = graph.create_node(kind, target, args, kwargs, name=node_name(result.name_hint))
            if kind == "get_attr":
                path = attribute_path(root, target)
                if path is not None:
                    node.meta[ATTR_PATH_META] = path
            elif kind != "placeholder":
                node.meta[RESULT_MAY_ALIAS_META] = may_alias_operands(op)
            nodes[result] = node
        graph.lint()
        gm = graph_module(root, graph, defer_code=defer_code)
        _check_attribute_paths(gm)
        if fallback is not None and guard:
            gm.__dict__[FALLBACK_ATTRIBUTE] = fallback
            # a deep copy keeps it too (its code calls it)
            from torch.fx.graph_module import _USER_PRESERVED_ATTRIBUTES_KEY

            gm.meta.setdefault(_USER_PRESERVED_ATTRIBUTES_KEY, {})[FALLBACK_ATTRIBUTE] = fallback
        if training is not None:
            gm.training = training  # this module only: its submodules are the owner's
        return gm


def _check_attribute_paths(gm: torch.fx.GraphModule) -> None:
    """Drop the recorded dict path of any get_attr whose path does not reach
    the very object getattr reaches in `gm` (an owner laid out unusually), and
    regenerate the code then; the usual case costs one lookup per attribute."""
    stale = False
    for node in gm.graph.find_nodes(op="get_attr"):
        path = node.meta.get(ATTR_PATH_META)
        if path is None:
            continue
        try:
            same = _read_path(gm, path) is _read_target(gm, node.target)
        except (AttributeError, KeyError, TypeError):
            same = False
        if not same:
            del node.meta[ATTR_PATH_META]
            stale = True
    if stale:
        recompile(gm)
