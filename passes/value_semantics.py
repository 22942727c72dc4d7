"""`maximize-value-semantics`: in-place writes to temporaries become out-of-place ops.

A captured graph carries the in-place spellings of its model: `nn.ReLU(inplace=True)`
(Dynamo records `F.relu(x, inplace=True)`; a symbolically traced module keeps the
`fx.call_module`), `y += b` (`operator.iadd`), `x.add_(y)`, `torch.relu_(x)`,
`aten.relu_.default`. Every later pass treats an in-place op as a barrier: the
tensor it writes, and everything that may alias it, is "mutated", so no linear
that feeds a `ReLU(inplace=True)` is ever batch-fused. This pass (after
torch-mlir's `maximize-value-semantics` and PyTorch's functionalization) rewrites
such a write into its out-of-place form when nothing can tell the difference:

    %h = fx.call_function "torch._C._nn.linear"(%x, %w, %b)
    %r = fx.call_function "torch.nn.functional.relu"(%h, inplace = true)
    %u = <reader of %h or %r after the write>
  becomes
    %h = fx.call_function "torch._C._nn.linear"(%x, %w, %b)
    %r = fx.call_function "torch.nn.functional.relu"(%h)
    %u = <the same reader, of %r>

The written tensor (the *target*) must be a temporary:

* made by an op of this graph that returns fresh storage: not a graph input
  (`fx.placeholder`, a block argument), parameter or buffer (`fx.get_attr`),
  and not the result of an op with effects; the result of an op that may
  return a view of (or the very object of) an operand (`analysis.op_classes.
  may_alias_operands`: a view, an eval-mode dropout) only when its one tensor
  operand is read by nothing else and is itself such a temporary (nothing
  else can see the write through it); an out-of-place form made by this
  pass is fresh;
* not viewed or observed before the write: every other reader of the target
  that comes before the write in the block only reads its value then and
  there (an op that neither may alias nor may write its operands). A view made
  before the write would see the write; an unknown call might keep the
  tensor and read it later.

Readers after the write (in block order) read the new value instead, and so
does every user of the in-place op's own result (which is the target object).
Readers before the write keep reading the target, which now is never written.

The out-of-place result must have the target's dtype and shape: `x += y` of
an f32 `x` and an f64 `y` stays f32 in place but is f64 out of place (type
promotion). Both are inferred by running the out-of-place callable on meta
tensors of the operands' types (a symbolic size stands for one common size:
dtype promotion depends on ranks, not sizes, and an in-place op that ran
already broadcasts its operands to the target's shape). Such a write stays.

Every write left in place gets a remark saying why
(`maximize-value-semantics: kept in place: ...`); the pass statistics count
the rewritten and the kept ones.

Forms known (anything else in place, such as `copy_`, `fill_`, `index_add_`,
`setitem`, is left alone without a remark):

* `torch.nn.functional.<act>(x, ..., inplace=True)` (every function of
  torch's with an `inplace` parameter, read from its signature: relu,
  relu6, threshold, ...; the dropouts with `training=False`), by
  keyword or position;
* `fx.call_module` of `nn.ReLU`, `nn.LeakyReLU`, `nn.Hardtanh`, ... with
  `inplace=True` in its recorded `module_attrs`: the matching functional call;
* `operator.iadd`/`isub`/`imul`/`itruediv`/`ifloordiv`/`imod`/`ipow`/`iand`/
  `ior`/`ixor`/`ilshift`/`irshift` on a tensor: `operator.add`, ...;
* pointwise Tensor methods and torch functions with a trailing `_` (`add_`,
  `mul_`, `relu_`, `sigmoid_`, `clamp_`, `torch.relu_`, ...): the name
  without it, same arguments;
* `torch.ops.aten.<name>_.<overload>` of those: `torch.ops.aten.<name>.<overload>`.

One forward walk over each graph; operands are patched through a substitution
map as the walk reaches them (linear in the graph size).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from optimus_ir.analysis.alias_facts import functional_form
from optimus_ir.analysis.op_classes import may_alias_operands, may_write_operands, result_is_fresh
from optimus_ir.foundation.diagnostics import emit_remark
from optimus_ir.dialects import fx
from optimus_ir.foundation.effects import effect_kind
from optimus_ir.dialects.literals import LiteralError, decode_literal
from optimus_ir.foundation.objects import UnresolvedNameError, resolve_qualified_name
from optimus_ir.foundation.rewriting import patch_operands
from optimus_ir.foundation.statistics import current_pass_context
from optimus_ir.foundation.types import DYNAMIC, UnsupportedDTypeError, dtype_of

PASS_NAME = "maximize-value-semantics"

# ---------------------------------------------------------------------------
# The in-place forms known, and their out-of-place forms
# ---------------------------------------------------------------------------

def _operator_out_of_place() -> dict[str, str]:
    """`operator.i<op>` -> `operator.<op>` (or `<op>_` where Python spells
    it so: `iand` -> `and_`): the augmented assignments, read from the
    `operator` module."""
    table: dict[str, str] = {}
    for name in dir(operator):
        if not name.startswith("i") or name.startswith("__"):
            continue
        base = name[1:]
        for plain in (base, base + "_"):
            if plain and hasattr(operator, plain) and callable(getattr(operator, plain)):
                table[name] = plain
                break
    return table


OPERATOR_OUT_OF_PLACE: dict[str, str] = _operator_out_of_place()
"""`operator.i<op>` -> `operator.<op>` (the augmented assignments)."""


def _inplace_position(function: Any) -> int | None:
    """The position of `function`'s `inplace` parameter, or None."""
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("inplace") if "inplace" in names else None


def _functional_inplace_positions(*, training: bool) -> dict[str, int]:
    """`torch.nn.functional.<name>` -> the position of its `inplace`
    parameter, for the functions that have one, read from torch's own
    signatures: with `training=False` those without a `training`
    parameter (the activations), with `training=True` those with one (the
    dropouts, rrelu: random in training)."""
    positions: dict[str, int] = {}
    for name in dir(F):
        function = getattr(F, name)
        if name.startswith("_") or not callable(function) or isinstance(function, type):
            continue
        position = _inplace_position(function)
        if position is None:
            continue
        if ("training" in inspect.signature(function).parameters) != training:
            continue
        positions[name] = position
    return positions


FUNCTIONAL_INPLACE_POSITION: dict[str, int] = _functional_inplace_positions(training=False)
"""`torch.nn.functional.<name>`: the position of its `inplace` argument
(relu, relu6, selu, celu, threshold, ... as the
installed torch has them)."""

FUNCTIONAL_DROPOUTS: dict[str, int] = _functional_inplace_positions(training=True)
"""The functions of `torch.nn.functional` that take `training` and
`inplace` (the dropouts, rrelu), with the position of `inplace`: rewritten
only with a literal `training=False`, where both forms are deterministic.
In training, the in-place and out-of-place kernels need not draw the same
random numbers."""


def _training_parameter(name: str) -> tuple[int, bool]:
    """The position and default of `F.<name>`'s `training` parameter."""
    parameters = inspect.signature(getattr(F, name)).parameters
    position = list(parameters).index("training")
    default = parameters["training"].default
    return position, bool(default) if default is not inspect.Parameter.empty else True


_F = "torch.nn.functional."

def _module_functionals() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The activation and dropout modules that take `inplace`, each with the
    `torch.nn.functional` function its forward calls (the class name
    lower-cased, underscores aside: `ReLU6` -> `relu6`) and the
    constructor parameters before `inplace`, which it passes on in order."""
    functions = {
        name.replace("_", ""): name
        for name in dir(F)
        if not name.startswith("_") and not name.endswith("_")  # `relu_` is relu's in-place form
    }
    table: dict[str, tuple[str, tuple[str, ...]]] = {}
    for module in (torch.nn.modules.activation, torch.nn.modules.dropout):
        for cls in vars(module).values():
            if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
                continue
            if cls.__module__ != module.__name__:
                continue
            function = functions.get(cls.__name__.lower())
            if function is None or (
                function not in FUNCTIONAL_INPLACE_POSITION and function not in FUNCTIONAL_DROPOUTS
            ):
                continue
            parameters = list(inspect.signature(cls.__init__).parameters)[1:]
            if "inplace" not in parameters:
                continue
            passed = parameters[: parameters.index("inplace")]
            if function in FUNCTIONAL_DROPOUTS and _training_parameter(function)[0] != 1 + len(passed):
                continue  # `training` is not where the module's forward passes it
            table[f"{cls.__module__}.{cls.__name__}"] = (
                function, tuple(parameters[: parameters.index("inplace")])
            )
    return table


MODULE_FUNCTIONALS: dict[str, tuple[str, tuple[str, ...]]] = _module_functionals()
"""Module class -> (its `torch.nn.functional` function, the module attributes
passed to it positionally after the input). A dropout module is rewritten
only in eval mode (`training` false in its `module_attrs`)."""


@dataclass(frozen=True)
class OutOfPlace:
    """The out-of-place form of one in-place call: the op to build (not yet
    inserted) and the operand it writes."""

    target: SSAValue
    """The tensor the in-place call writes (and returns)."""
    op: fx.NodeOp
    """The out-of-place call, reading the same operands."""


class Kept(Exception):
    """An in-place call that has an out-of-place form but must stay; the
    message says why (it becomes the remark)."""


def _is_true(attr: Attribute) -> bool:
    return fx.is_bool_literal(attr) and bool(attr.value.data)  # type: ignore[attr-defined]


def _is_false(attr: Attribute) -> bool:
    return fx.is_bool_literal(attr) and not attr.value.data  # type: ignore[attr-defined]


def _written_operand(op: fx.NodeOp) -> SSAValue | None:
    """The operand a call writes in place: its first positional argument,
    when that is a reference to a tensor operand."""
    args = op.args.data
    if not args or not isinstance(args[0], fx.RefAttr):
        return None
    value = op.operands[args[0].index.data]
    return value if isinstance(value.type, TensorType) else None


def _call(op: fx.NodeOp, cls: type[fx.NodeOp], target: str,
          args: Sequence[Attribute], kwargs: dict[str, Attribute]) -> fx.NodeOp:
    """A call like `op` (same operands, result type, location) of `target`."""
    new = cls(target, args, kwargs, op.operands, op.results[0].type)
    new.location = op.location
    return new


def _functional_form(op: fx.CallFunctionOp, name: str) -> fx.NodeOp | None:
    """`F.<name>(x, ..., inplace=True)` -> the call without `inplace`
    (None when the call is not in place, or a dropout in training)."""
    position = FUNCTIONAL_INPLACE_POSITION.get(name, FUNCTIONAL_DROPOUTS.get(name))
    if position is None:
        return None
    args = list(op.args.data)
    kwargs = dict(op.kwargs.data)
    if "inplace" in kwargs:
        if not _is_true(kwargs["inplace"]):
            return None
        del kwargs["inplace"]
    elif len(args) > position and _is_true(args[position]):
        args[position] = fx.bool_literal(False)
    else:
        return None
    if name in FUNCTIONAL_DROPOUTS:
        position, default = _training_parameter(name)
        training = kwargs.get(
            "training", args[position] if len(args) > position else fx.bool_literal(default)
        )
        if not _is_false(training):
            raise Kept("a dropout in training mode (its random numbers need not be the same out of place)")
    return _call(op, fx.CallFunctionOp, op.target.data, args, kwargs)


def _module_form(op: fx.CallModuleOp) -> fx.NodeOp | None:
    """An in-place activation or dropout module call -> its functional call."""
    module_type = op.attributes.get("module_type")
    if not isinstance(module_type, StringAttr) or module_type.data not in MODULE_FUNCTIONALS:
        return None
    attrs = op.attributes.get("module_attrs")
    if not isinstance(attrs, DictionaryAttr):
        return None  # no description (a module with hooks): its call stays opaque
    inplace = attrs.data.get("inplace")
    if inplace is None or not _is_true(inplace):
        return None
    if len(op.args.data) != 1 or op.kwargs.data or not isinstance(op.args.data[0], fx.RefAttr):
        return None
    function, names = MODULE_FUNCTIONALS[module_type.data]
    values: list[Attribute] = []
    for name in names:
        value = attrs.data.get(name)
        if value is None:
            return None  # an attribute the description lacks
        values.append(value)
    if function in FUNCTIONAL_DROPOUTS:
        training = attrs.data.get("training")
        if training is None or not _is_false(training):
            raise Kept("a dropout module in training mode (its random numbers need not be the same out of place)")
        values.append(fx.bool_literal(False))
    operand = op.operands[op.args.data[0].index.data]
    new = fx.CallFunctionOp(_F + function, [fx.ref(0), *values], {}, [operand], op.results[0].type)
    new.location = op.location
    return new


def _resolvable(name: str) -> bool:
    try:
        resolve_qualified_name(name)
    except UnresolvedNameError:
        return False
    return True


def out_of_place_form(op: Operation) -> OutOfPlace | None:
    """The out-of-place form of `op`, if `op` is an in-place call of a known
    form on a tensor (None otherwise). Raises `Kept` for a known form that
    must stay whatever its operand (a dropout in training)."""
    if not isinstance(op, fx.NodeOp):
        return None
    target = _written_operand(op)
    if target is None:
        return None
    new: fx.NodeOp | None = None
    if isinstance(op, fx.CallModuleOp):
        new = _module_form(op)
    elif isinstance(op, fx.CallMethodOp):
        plain = functional_form(op.target.data)
        if plain is not None and callable(getattr(torch.Tensor, plain, None)):
            new = _call(op, fx.CallMethodOp, plain, op.args.data, dict(op.kwargs.data))
    elif isinstance(op, fx.CallFunctionOp):
        name = op.target.data
        module, _, last = name.rpartition(".")
        if module in ("operator", "_operator") and last in OPERATOR_OUT_OF_PLACE:
            new = _call(op, fx.CallFunctionOp, f"{module}.{OPERATOR_OUT_OF_PLACE[last]}",
                        op.args.data, dict(op.kwargs.data))
        elif name.startswith(_F) and "." not in name[len(_F):]:
            new = _functional_form(op, last)
        elif name.startswith("torch.ops.aten."):
            parts = name.split(".")
            plain = functional_form(parts[3]) if len(parts) == 5 else None
            if plain is not None:
                plain_target = ".".join((*parts[:3], plain, parts[4]))
                if _resolvable(plain_target):
                    new = _call(op, fx.CallFunctionOp, plain_target, op.args.data, dict(op.kwargs.data))
        elif name.startswith("torch.") and (plain := functional_form(last)) is not None:
            if _resolvable(f"{module}.{plain}"):
                new = _call(op, fx.CallFunctionOp, f"{module}.{plain}", op.args.data, dict(op.kwargs.data))
    if new is None:
        return None
    return OutOfPlace(target, new)


# ---------------------------------------------------------------------------
# When the rewrite is sound
# ---------------------------------------------------------------------------


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "the written tensor"


def _producer_name(op: Operation) -> str:
    target = getattr(op, "target", None)
    return target.data if isinstance(target, StringAttr) else op.name


def _check_fresh_storage(target: SSAValue) -> None:
    """Raise `Kept` unless `target`'s storage is fresh and its own: made by
    an op that torch shows returns fresh storage (`result_is_fresh`: an fx
    call run on fake tensors, a module call the importer recorded
    `fresh_result`), or a chain of side-effect-free aliasing ops of one
    tensor operand each (an eval-mode dropout, a view, `x.short()` of an
    int16 `x`) from such a value, where every value up the chain has the
    chain's next op as its only reader (nothing else can see the write
    through it)."""
    value = target
    while True:
        if isinstance(value, BlockArgument) or isinstance(value.owner, fx.PlaceholderOp):
            raise Kept(f"{_name(target)} may be (a view of) a graph input (the caller sees the write)")
        owner = value.owner
        if isinstance(owner, fx.GetAttrOp):
            raise Kept(f"{_name(target)} is a parameter, buffer or constant of the module")
        if result_is_fresh(owner):
            return
        if effect_kind(owner) == "impure":
            raise Kept(
                f"{_name(target)} may share storage with another tensor: it is made by "
                f"'{_producer_name(owner)}', which has side effects"
            )
        sources = [v for v in owner.operands if isinstance(v.type, TensorType | fx.ValueType)]
        if len(sources) != 1 or any(use.operation is not owner for use in sources[0].uses):
            raise Kept(
                f"{_name(target)} may share storage with another tensor: it is made by "
                f"'{_producer_name(owner)}', which may return (a view of) its operand, and "
                "that is read elsewhere too"
            )
        value = sources[0]


def _check_temporary(target: SSAValue, write: Operation, position: dict[Operation, int]) -> None:
    """Raise `Kept` unless `target` is a temporary that nothing but `write`
    observes up to the write (see the module docstring)."""
    if isinstance(target, BlockArgument) or isinstance(target.owner, fx.PlaceholderOp):
        raise Kept(f"{_name(target)} is a graph input (the caller sees the write)")
    _check_fresh_storage(target)
    written_at = position[write]
    for use in target.uses:
        reader = use.operation
        at = position.get(reader)
        if reader is write or at is None or at > written_at:
            # the write itself; an op not in the block (the out-of-place form
            # being checked); readers after the write will read the new value
            continue
        if may_alias_operands(reader) or may_write_operands(reader):
            raise Kept(
                f"{_name(target)} is viewed or observed before the write "
                f"(by '{_producer_name(reader)}')"
            )


_STAND_IN_SIZE = 17
"""The size a symbolic dim stands for in the meta-tensor type inference."""


def _meta(value: SSAValue) -> torch.Tensor:
    ty = value.type
    if not isinstance(ty, TensorType):
        raise Kept(f"cannot infer the out-of-place result type: operand {_name(value)} is not a tensor")
    shape = [(_STAND_IN_SIZE if size == DYNAMIC else size) for size in ty.get_shape()]
    try:
        dtype = dtype_of(ty.element_type)
    except UnsupportedDTypeError as error:
        raise Kept(f"cannot infer the out-of-place result type: {error}") from None
    return torch.empty(shape, dtype=dtype, device="meta")


def _literal(attr: Attribute) -> Any:
    try:
        return decode_literal(attr, resolve_qualified_name)
    except (LiteralError, UnresolvedNameError) as error:
        raise Kept(f"cannot infer the out-of-place result type: {error}") from None


def _meta_result(op: fx.NodeOp) -> Any:
    """What `op` returns on meta tensors of its operands' types."""
    operands = [_meta(v) for v in op.operands]
    args = [fx.map_refs(a, operands.__getitem__, _literal) for a in op.args.data]
    kwargs = {k: fx.map_refs(v, operands.__getitem__, _literal) for k, v in op.kwargs.data.items()}
    try:
        if isinstance(op, fx.CallMethodOp):
            return getattr(args[0], op.target.data)(*args[1:], **kwargs)
        return resolve_qualified_name(op.target.data)(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - any torch error: we cannot tell, so it stays
        first = (str(error).strip().splitlines() or [""])[0]
        raise Kept(f"cannot infer the out-of-place result type ({type(error).__name__}: {first})") from None


def _check_result_type(form: OutOfPlace) -> None:
    """Raise `Kept` unless the out-of-place result has the target's dtype and shape."""
    target = form.target
    ty = target.type
    assert isinstance(ty, TensorType)
    result = _meta_result(form.op)
    if not isinstance(result, torch.Tensor):
        raise Kept("cannot infer the out-of-place result type (the call does not return a tensor)")
    want = _meta(target)
    if result.dtype != want.dtype:
        raise Kept(
            f"out of place the result would be {str(result.dtype).removeprefix('torch.')} where "
            f"{_name(target)} is {str(want.dtype).removeprefix('torch.')} (type promotion)"
        )
    if tuple(result.shape) != tuple(want.shape):
        raise Kept(
            f"out of place the result would have shape {list(result.shape)} where {_name(target)} "
            f"has {list(want.shape)} (broadcasting)"
        )
    declared = form.op.results[0].type
    if declared != ty:
        raise Kept(f"the in-place call declares type {declared}, not its operand's {ty}")


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


def maximize_value_semantics(block: Block) -> tuple[int, int]:
    """Rewrite every in-place call of `block` whose target is a temporary
    into its out-of-place form (the module docstring says when); returns
    (rewritten, kept). Each kept write gets a remark."""
    position = {op: i for i, op in enumerate(block.ops)}
    subst: dict[SSAValue, SSAValue] = {}
    # what maps to each replacement: a value written twice (`x.add_(a);
    # x.mul_(b)`) maps to the last out-of-place result, not the first
    replaced_by: dict[SSAValue, list[SSAValue]] = {}
    rewritten = kept = 0
    for op in list(block.ops):
        if subst:
            patch_operands(op, subst)
        form: OutOfPlace | None = None
        try:
            form = out_of_place_form(op)
            if form is None:
                continue
            _check_temporary(form.target, op, position)
            _check_result_type(form)
        except Kept as reason:
            if form is not None:
                form.op.erase()  # built, never inserted: drop its operand uses
            kept += 1
            emit_remark(op, f"{PASS_NAME}: kept in place: {reason}")
            continue
        new = form.op
        result = new.results[0]
        old = op.results[0]
        result.name_hint = old.name_hint or form.target.name_hint
        block.insert_op_before(new, op)
        position[new] = position[op]
        # the readers after the write read the new value: the target's (by
        # the walk, as it reaches them) and the in-place call's own result
        earlier = replaced_by.pop(form.target, [])
        earlier.append(form.target)
        for value in earlier:
            subst[value] = result
        replaced_by[result] = earlier
        old.replace_all_uses_with(result)
        block.erase_op(op)
        rewritten += 1
    return rewritten, kept


@dataclass(frozen=True)
class MaximizeValueSemanticsPass(ModulePass):
    """Rewrite in-place calls on temporaries into their out-of-place forms.

    `F.relu(x, inplace=True)`, `nn.ReLU(inplace=True)`, `y += b`, `x.add_(y)`,
    `torch.relu_(x)`, `aten.relu_` on a tensor made by this graph (fresh
    storage, not viewed or observed before the write, not an input,
    parameter or buffer) become `F.relu(x)`, `y + b`, ...; later readers
    read the new value. Writes to anything else stay (a remark says why), as
    do writes whose out-of-place result would change dtype or shape. Runs on
    the fx dialect, before `raise-fx`, so that the out-of-place forms are
    raised and the values they produce are no longer barriers.
    """

    name = PASS_NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        record = current_pass_context(self.name).record
        for graph in list(op.ops):
            if isinstance(graph, fx.GraphOp):
                rewritten, kept = maximize_value_semantics(graph.block)
                record.bump("in-place ops made out of place", rewritten)
                record.bump("in-place ops kept", kept)


__all__ = [
    "FUNCTIONAL_DROPOUTS",
    "FUNCTIONAL_INPLACE_POSITION",
    "MODULE_FUNCTIONALS",
    "MaximizeValueSemanticsPass",
    "OPERATOR_OUT_OF_PLACE",
    "OutOfPlace",
    "maximize_value_semantics",
    "out_of_place_form",
]
