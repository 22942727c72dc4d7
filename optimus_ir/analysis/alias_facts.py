"""Aliasing facts of fx calls, asked of torch itself: the one source.

Every pass that needs to know whether an fx call (`fx.call_function`,
`fx.call_method`, `fx.call_module`) returns fresh storage, may return (a
view of) an operand, or returns an operand object itself asks here (through
`op_classes.may_alias_operands` and friends); nothing keeps a list of names.
The answers come from torch:

* **running the call on fake tensors** (`FakeTensorMode`, torch's own C++
  kernels: the Python dispatcher is off, so a Python decomposition that
  copies where the kernel returns its input, as `aten.dropout`'s does in
  eval mode, does not decide) with operands of the operand types, and
  comparing the result's `untyped_storage()` with the operands' (and the
  result object with the operand objects). The decision is cached per
  target, literal arguments and operand types (`CallKey`), so a graph of
  100k calls of a few hundred kinds runs a few hundred fake calls;
* **the aten schemas' alias annotations**: a call whose name is an aten
  operator any of whose functional overloads returns an aliased tensor
  (`reshape(Tensor(a) self) -> Tensor(a)`, `contiguous`, `to`, `flatten`)
  may alias whatever the run showed, since whether it returns a view or a
  copy can depend on the operand strides, which passes change after the
  import (a run on contiguous operands is only one case). A schema alone
  makes a call fresh only for wide calls of ATen kernels proper
  (`fresh_by_schema`: 16 operands or more, not CompositeImplicitAutograd,
  no `_`/`unsafe` names; `torch.stack`/`torch.cat` of a 1024-tower model,
  whose fake runs made export quadratic): `aten::einsum` is declared fresh
  and returns a view for `'bd->db'`, but it is composite, Python-like code
  its schema does not bind;
* **a tuple's item** (`operator.getitem(t, i)` of a tuple-typed value) is
  answered from its type (`_tuple_item_facts`: what a run shows, without
  building the whole tuple of fake tensors);
* for `fx.call_module`, whose module the IR does not hold, the importer
  runs the module (torch's own classes only, without hooks) on fake
  tensors and records the result as the op's `fresh_result` and
  `effect_free` attributes, which survive the textual IR.

Anything that cannot be run (an unknown Python function, a call with an
operand of unknown type, a target with global effects, a call that fails on
fake tensors) *may alias*: unknown is never fresh.

Writes: an aten overload writes the arguments its schema marks `(a!)`; a
method or torch function whose every aten overload of that name writes only
`self` writes its first operand; anything else impure may write every
operand (`written_operands`). `functional_form` pairs an in-place aten name
with its functional twin as torchgen does (same overloads, same arguments
but for the mutated `self`), which is what `maximize-value-semantics`
rewrites in-place calls into.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType, TupleType, UnitAttr
from xdsl.ir import Attribute, Operation

from optimus_ir.dialects import fx
from optimus_ir.foundation.effects import has_global_effects, set_effect_probe
from optimus_ir.dialects.literals import LiteralError, decode_literal, decode_scalar
from optimus_ir.foundation.objects import UnresolvedNameError, resolve_qualified_name
from optimus_ir.foundation.types import DYNAMIC, UnsupportedDTypeError, device_of, dtype_of
from optimus_ir.kernels.norms import LAYER_NORM_TARGET, STACKED_LAYER_NORM_TARGET

_INPLACE_VIEW = getattr(torch.Tag, "inplace_view", None)
_RANDOM = getattr(torch.Tag, "nondeterministic_seeded", None)
_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd  # noqa: SLF001

STAND_IN_SIZE = 17
"""The size a symbolic (`?`) dim stands for when a call is run on fake
tensors: one common size, as dynamic dims of one graph are (aliasing and
dtypes depend on ranks and literals, not on sizes)."""

FRESH_RESULT_ATTR = "fresh_result"
"""The unit attribute of an `fx.call_module` whose module returns fresh
storage (recorded at import by running the module on fake tensors)."""

EFFECT_FREE_ATTR = "effect_free"
"""The unit attribute of an `fx.call_module` whose module writes none of its
operands, parameters or buffers and draws no random numbers (recorded at
import, as `fresh_result`)."""


# ---------------------------------------------------------------------------
# What a call does, as one run on fake tensors shows it
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CallFacts:
    """What running a call on fake tensors showed.

    `known` is false when the call could not be run (then every other field
    is the conservative answer). `shares_storage`: some tensor of the result
    shares storage with a tensor operand. `is_operand`: some tensor of the
    result is an operand tensor object itself (`x.contiguous()` of a
    contiguous `x`, `x.float()` of a float `x`). `writes`: the call wrote
    some operand (bumped its version, or passed it to an op whose schema
    writes it). `random`: it ran an op that draws random numbers.
    `strides`: the strides of the result when it is one tensor (None
    otherwise). `returned_operand`: the index of the operand the result is
    (the very object), when the result is one tensor and that."""

    known: bool
    shares_storage: bool = True
    is_operand: bool = True
    writes: bool = True
    random: bool = True
    strides: tuple[int, ...] | None = None
    returned_operand: int | None = None

    @property
    def fresh(self) -> bool:
        """The result is storage nothing else holds."""
        return self.known and not self.shares_storage


UNKNOWN = CallFacts(known=False)
"""The facts of a call that cannot be run: it may do anything."""


class _NotRunnable(Exception):
    """The call cannot be run on fake tensors (unknown target or operand)."""


_fake_mode: Any = None


def fake_mode() -> Any:
    """The `FakeTensorMode` every probe runs in (created once: creating one
    costs more than a call). Static shapes, no real tensors allowed in."""
    global _fake_mode
    if _fake_mode is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        _fake_mode = FakeTensorMode(allow_non_fake_inputs=False)
    return _fake_mode


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence what a probed call says: its warnings, and the error torch's
    fake tensors log when a kernel fails (a failure only means "unknown")."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    disabled = logger.disabled
    logger.disabled = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.disabled = disabled


@contextlib.contextmanager
def faithful_fake_mode() -> Iterator[Any]:
    """Enter `fake_mode()` so that calls run torch's own kernels: any fake
    mode of a caller (a Dynamo trace) is set aside and the Python
    dispatcher is off (its decompositions may copy where the kernel
    aliases). Warnings of the probed calls are silenced."""
    from torch._dispatch.python import no_python_dispatcher
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    mode = fake_mode()
    with _quiet(), unset_fake_temporarily(), no_python_dispatcher(), mode:
        yield mode


def _storage_key(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage()._cdata  # noqa: SLF001 - torch's own storage identity (StorageWeakRef)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    """The tensors in a (nested) result or argument."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


_mode_class: Any = None


def _watching_mode() -> Any:
    """The `TorchDispatchMode` class of `_EffectWatcher` (made once: the
    import of torch's dispatch modes is deferred to the first probe)."""
    global _mode_class
    if _mode_class is None:
        from torch.utils._python_dispatch import TorchDispatchMode

        class _Mode(TorchDispatchMode):
            def __init__(self, watcher: _EffectWatcher) -> None:
                super().__init__()
                self.watcher = watcher

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                kwargs = kwargs or {}
                self.watcher.see(func, args, kwargs)
                return func(*args, **kwargs)

        _mode_class = _Mode
    return _mode_class


class _EffectWatcher:
    """A dispatch mode (`mode`) that notes what the ops a call runs do: an
    op tagged `nondeterministic_seeded` (it draws random numbers), an op
    whose schema writes (`(a!)`) an argument in one of `storages` (a write
    to an operand; some kernels, such as batch norm's running statistics,
    write without bumping the version counter), an op with a Python
    decomposition (whose schema may hide a write)."""

    def __init__(self, storages: set[int]) -> None:
        self.storages = storages
        self.random = False
        self.writes = False
        self.decomposable = False
        self.mode = _watching_mode()(self)

    def see(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Note what running `func` on these arguments does."""
        if _RANDOM is not None and _RANDOM in getattr(func, "tags", ()):
            self.random = True
        if _COMPOSITE in getattr(func, "py_kernels", ()):
            self.decomposable = True
        schema = getattr(func, "_schema", None)
        if schema is None or self.writes:
            return
        for position, argument in enumerate(schema.arguments):
            info = argument.alias_info
            if info is None or not info.is_write:
                continue
            value = args[position] if position < len(args) else kwargs.get(argument.name)
            if any(_storage_key(t) in self.storages for t in _tensors(value)):
                self.writes = True
                return


def _writes_under_decompositions(call: Callable[[], Any], storages: set[int], meta: bool) -> tuple[bool, bool]:
    """Run `call` again with the Python dispatcher on and watch the schemas:
    some kernels write an argument their schema does not mark (batch norm's
    running statistics, `native_batch_norm`), where torch's decompositions
    (a Python kernel for `CompositeImplicitAutograd`, which only the
    Python dispatcher runs) call the honest op (`_native_batch_norm_legit`,
    `Tensor(a!) running_mean`). Only writes are read from this run, never
    aliasing (the decompositions may copy where the kernel returns its
    input). Asked only when such an op ran."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    watcher = _EffectWatcher(storages)
    try:
        with _quiet(), unset_fake_temporarily(), enable_python_dispatcher():
            with contextlib.nullcontext() if meta else fake_mode(), watcher.mode:
                call()
    except Exception:  # noqa: BLE001 - the first run decided; this one only adds
        return False, False
    return watcher.writes, watcher.random


@contextlib.contextmanager
def _meta_context() -> Iterator[None]:
    """What a call on meta tensors runs in: no fake mode of a caller, no
    Python dispatcher, nothing said."""
    from torch._dispatch.python import no_python_dispatcher
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with _quiet(), unset_fake_temporarily(), no_python_dispatcher():
        yield


def probe(call: Callable[[], Any], operands: Sequence[Any], *, meta: bool = False) -> CallFacts:
    """Run `call` (which reads the fake tensors in `operands`, or with
    `meta` the meta tensors) with torch's own kernels and compare what it
    returns with `operands`; a write is a bumped version of an operand, an
    operand passed to an op whose schema writes it, or a random op run (it
    advances the generator). Any error, or a result holding a tensor that
    is not a fake (meta) tensor made by the call (a global real tensor),
    is `UNKNOWN`."""
    from torch._subclasses.fake_tensor import FakeTensor

    inputs = [t for value in operands for t in _tensors(value)]
    storages = {_storage_key(t) for t in inputs}
    objects = {id(t) for t in inputs}
    versions = [t._version for t in inputs]  # noqa: SLF001 - the version counter in-place ops bump
    watcher = _EffectWatcher(storages)
    try:
        with (_meta_context() if meta else faithful_fake_mode()) as mode, watcher.mode:
            result = call()
    except Exception:  # noqa: BLE001 - any failure means we cannot tell
        return UNKNOWN
    outputs = list(_tensors(result))
    if meta:
        if any(not t.is_meta or isinstance(t, FakeTensor) for t in outputs):
            return UNKNOWN
    elif any(not isinstance(t, FakeTensor) or t.fake_mode is not mode for t in outputs):
        return UNKNOWN
    strides = None
    returned = None
    if isinstance(result, torch.Tensor):
        if result.layout is torch.strided:
            strides = tuple(int(s) for s in result.stride())
        returned = next((i for i, o in enumerate(operands) if o is result), None)
    wrote = watcher.writes or any(t._version != v for t, v in zip(inputs, versions))  # noqa: SLF001
    random = watcher.random
    if not (wrote or random) and watcher.decomposable:
        # an op with a Python decomposition ran: its schema may hide a write
        wrote, random = _writes_under_decompositions(call, storages, meta)
    return CallFacts(
        known=True,
        shares_storage=any(_storage_key(t) in storages for t in outputs),
        is_operand=any(id(t) in objects for t in outputs),
        writes=wrote,
        random=random,
        strides=strides,
        returned_operand=returned,
    )


# ---------------------------------------------------------------------------
# fx calls: which can be run, and on what
# ---------------------------------------------------------------------------


def _is_tensor_method(name: str) -> bool:
    return callable(getattr(torch.Tensor, name, None))


OWN_RUNNABLE_FUNCTIONS = frozenset({LAYER_NORM_TARGET, STACKED_LAYER_NORM_TARGET})
"""Functions of this package the exported code calls that are torch calls
with the same aliasing (`optimus_ir.kernels.norms.layer_norm`: F.layer_norm,
a fresh result), run on fake tensors like them."""


@functools.lru_cache(maxsize=4096)
def _runnable_function(target: str) -> Callable[..., Any] | None:
    """The callable of a call_function target that may be run on fake
    tensors: a torch function or operator without global effects
    (`effects.has_global_effects`), a Python operator, `getattr`, one of
    `OWN_RUNNABLE_FUNCTIONS`. None for anything else (a user's function
    may do anything)."""
    name = target[1:] if target.startswith("_operator.") else target
    if (
        not name.startswith(("torch.", "operator.", "builtins.getattr"))
        and name != "getattr"
        and name not in OWN_RUNNABLE_FUNCTIONS
    ):
        return None
    if name.startswith("torch.ops.") and name.split(".")[2] not in ("aten", "prims"):
        return None  # custom-op namespaces: their fake kernels may be anything
    if has_global_effects(target):
        return None
    try:
        function = resolve_qualified_name(name)
    except UnresolvedNameError:
        return None
    return function if callable(function) else None


def _fake_tensor(
    ty: TensorType, strides: Sequence[int] | None, meta: bool = False, device: str | None = None
) -> torch.Tensor:
    shape = [STAND_IN_SIZE if size == DYNAMIC else size for size in ty.get_shape()]
    try:
        dtype = dtype_of(ty.element_type)
    except UnsupportedDTypeError:
        raise _NotRunnable from None
    device = "meta" if meta else device_of(ty) or device or "cpu"
    if strides is None:
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.empty_strided(shape, tuple(strides), dtype=dtype, device=device)


def _fake_operand(
    ty: Attribute, strides: Sequence[int] | None, meta: bool = False, device: str | None = None
) -> Any:
    if isinstance(ty, TensorType):
        return _fake_tensor(ty, strides, meta, device)
    if isinstance(ty, TupleType):
        return tuple(_fake_operand(t, None, meta, device) for t in ty.types.data)
    raise _NotRunnable  # `!fx.value`: a number, a symbolic size, an object: unknown


def _literal(attr: Attribute) -> Any:
    try:
        return decode_literal(attr, resolve_qualified_name)
    except (LiteralError, UnresolvedNameError):
        raise _NotRunnable from None


Layouts = tuple[tuple[int, ...] | None, ...] | None
"""Per operand, the strides to give its fake tensor (None: row-major)."""


def run_call(op: fx.NodeOp, layouts: Layouts = None, device: str | None = None) -> CallFacts:
    """Run the fx call `op` on fake tensors of its operand types (with
    `layouts` strides where given; operands of unknown device on `device`)
    and report what it did (uncached; see `call_facts`). `UNKNOWN` for a
    call that cannot be run."""
    if isinstance(op, fx.CallModuleOp):
        return UNKNOWN
    function = None
    if isinstance(op, fx.CallFunctionOp):
        function = _runnable_function(op.target.data)
        if function is None:
            return UNKNOWN
    elif not _is_tensor_method(op.target.data) or has_global_effects(op.target.data, method=True):
        return UNKNOWN
    meta = _meta_will_do(op)
    try:
        with _meta_context() if meta else faithful_fake_mode():
            operands = [
                _fake_operand(v.type, layouts[i] if layouts is not None else None, meta, device)
                for i, v in enumerate(op.operands)
            ]
        args = [fx.map_refs(a, operands.__getitem__, _literal) for a in op.args.data]
        kwargs = {k: fx.map_refs(v, operands.__getitem__, _literal) for k, v in op.kwargs.data.items()}
    except _NotRunnable:
        return UNKNOWN
    except Exception:  # noqa: BLE001 - a literal torch cannot build: unknown
        return UNKNOWN
    call = _call_of(function, op.target.data, args, kwargs)
    if call is None:
        return UNKNOWN
    return probe(call, operands, meta=meta)


def _call_of(
    function: Callable[..., Any] | None, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> Callable[[], Any] | None:
    """The call an fx node makes, to be run by `probe`: `function(*args,
    **kwargs)`, or for a tensor method (`function` None) `args[0].<method>(
    *args[1:], **kwargs)`; None when the method has no tensor to be called on."""
    if function is not None:
        return lambda: function(*args, **kwargs)
    if not args or not isinstance(args[0], torch.Tensor):
        return None
    bound = getattr(args[0], method)
    return lambda: bound(*args[1:], **kwargs)


def _names_a_device(attr: Attribute) -> bool:
    if isinstance(attr, fx.DeviceAttr):
        return True
    if isinstance(attr, StringAttr):
        try:
            torch.device(attr.data)
        except (RuntimeError, ValueError):
            return False
        return True
    if isinstance(attr, ArrayAttr):
        return any(_names_a_device(a) for a in attr.data)
    if isinstance(attr, fx.TupleValueAttr):
        return any(_names_a_device(a) for a in attr.elements.data)
    if isinstance(attr, fx.DictValueAttr):
        return any(_names_a_device(a) for a in attr.values.data)
    return False


def _meta_will_do(op: fx.NodeOp) -> bool:
    """Meta tensors answer for `op` as fake tensors would, at a fraction of
    the cost: it reads a tensor operand (a factory without one would
    allocate for real) and names no device (moving a meta tensor to a
    device fails, and a factory on a device allocates there)."""
    if not any(isinstance(v.type, TensorType) for v in op.operands):
        return False
    if "device" in op.kwargs.data:
        return False
    return not any(_names_a_device(a) for a in (*op.args.data, *op.kwargs.data.values()))


CallKey = tuple[Any, ...]

_BY_KEY: dict[CallKey, CallFacts] = {}
_BY_OP: weakref.WeakKeyDictionary[Operation, tuple[tuple[Any, ...], CallFacts]] = (
    weakref.WeakKeyDictionary()
)


def _unknown_device(ty: Attribute) -> bool:
    if isinstance(ty, TensorType):
        return device_of(ty) is None
    if isinstance(ty, TupleType):
        return any(_unknown_device(t) for t in ty.types.data)
    return False


def _combine(variants: Sequence[CallFacts]) -> CallFacts:
    """What is true whichever variant runs: any aliasing or effect of one,
    strides and a returned operand only where all agree."""
    if any(not v.known for v in variants):
        return UNKNOWN
    first = variants[0]
    return CallFacts(
        known=True,
        shares_storage=any(v.shares_storage for v in variants),
        is_operand=any(v.is_operand for v in variants),
        writes=any(v.writes for v in variants),
        random=any(v.random for v in variants),
        strides=first.strides if all(v.strides == first.strides for v in variants) else None,
        returned_operand=(
            first.returned_operand
            if all(v.returned_operand == first.returned_operand for v in variants)
            else None
        ),
    )


_DEVICE_VARIANTS = ("cpu", "cuda")
"""The devices an operand of unknown device (hand-written IR without an
encoding) is tried on: what holds must hold on both."""


def _tuple_item_facts(op: fx.NodeOp, layouts: Layouts) -> CallFacts | None:
    """The facts of `operator.getitem(t, i)` on a tuple-typed value, without
    running it: what a run on a tuple of fresh fake tensors shows (the item
    is a tensor object of the operand, nothing written or drawn, a tensor item with
    its type's row-major strides). Running it would build every item of the
    tuple: a 1024-way split's getitems cost a million fake tensors. None
    for any other call."""
    if not isinstance(op, fx.CallFunctionOp) or op.target.data not in ("_operator.getitem", "operator.getitem"):
        return None
    args = op.args.data
    if len(op.operands) != 1 or len(args) != 2 or op.kwargs.data or not isinstance(args[0], fx.RefAttr):
        return None
    tuple_type = op.operands[0].type
    if not isinstance(tuple_type, TupleType) or (layouts is not None and layouts[0] is not None):
        return None
    index = decode_scalar(args[1])
    items = tuple_type.types.data
    if type(index) is not int or not -len(items) <= index < len(items):
        return None
    item = items[index]
    strides = (
        fx.row_major_strides([STAND_IN_SIZE if n == DYNAMIC else n for n in item.get_shape()])
        if isinstance(item, TensorType) else None
    )
    return CallFacts(known=True, shares_storage=True, is_operand=True, writes=False, random=False, strides=strides)


def call_facts(op: fx.NodeOp, layouts: Layouts = None) -> CallFacts:
    """`run_call(op, layouts)`, cached per op (while its operand types stay)
    and per target, literal arguments, operand types and layouts (so equal
    calls of a wide graph are run once). An operand of unknown device is
    tried on each of `_DEVICE_VARIANTS` (`h.cuda()` is `h` on one, a copy on
    the other), unless meta tensors answer (they have no device)."""
    types = tuple(v.type for v in op.operands)
    memo_key = (types, layouts)
    if layouts is None:
        memo = _BY_OP.get(op)
        if memo is not None and memo[0] == memo_key:
            return memo[1]
    key = (op.name, op.target, op.args, op.kwargs, types, layouts)
    facts = _BY_KEY.get(key)
    if facts is None:
        facts = _tuple_item_facts(op, layouts)
    if facts is None:
        if any(_unknown_device(t) for t in types) and not _meta_will_do(op):
            facts = _combine([run_call(op, layouts, device) for device in _DEVICE_VARIANTS])
        else:
            facts = run_call(op, layouts)
        _BY_KEY[key] = facts
    if layouts is None:
        _BY_OP[op] = (memo_key, facts)
    return facts


def _other_layouts(op: fx.NodeOp) -> tuple[tuple[int, ...] | None, ...]:
    """Column-major strides for every tensor operand of rank >= 2 (the
    layout a `.contiguous()` copies)."""
    found: list[tuple[int, ...] | None] = []
    for value in op.operands:
        ty = value.type
        if not isinstance(ty, TensorType) or len(ty.get_shape()) < 2:
            found.append(None)
            continue
        shape = [STAND_IN_SIZE if n == DYNAMIC else n for n in ty.get_shape()]
        strides = [1] * len(shape)
        for d in range(1, len(shape)):
            strides[d] = strides[d - 1] * max(shape[d - 1], 1)
        found.append(tuple(strides))
    return tuple(found)


def returned_operand(op: fx.NodeOp, layouts: tuple[tuple[int, ...] | None, ...]) -> int | None:
    """The index of the operand the fx call returns itself (the very tensor
    object, so the call is that operand), when torch does so for the
    operands' types and `layouts` (per operand; None: unknown, then both a
    row-major and a column-major layout must agree), on every device an
    operand of unknown device may be on. None otherwise."""
    if isinstance(op, fx.CallModuleOp):
        return None
    known = tuple(layout for layout in layouts)
    if all(layout is not None or not isinstance(v.type, TensorType) for layout, v in zip(known, op.operands)):
        return call_facts(op, known).returned_operand
    row_major = tuple(layout for layout in known)
    column_major = tuple(
        layout if layout is not None else other for layout, other in zip(known, _other_layouts(op))
    )
    first = call_facts(op, row_major).returned_operand
    if first is None:
        return None
    return first if call_facts(op, column_major).returned_operand == first else None


# ---------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------


def aten_name(op: Operation) -> tuple[str, str | None] | None:
    """(aten operator name, overload or None) that an fx call's target names
    or is spelled after: `torch.ops.aten.add_.Tensor` -> ('add_', 'Tensor'),
    a method `add_` or `torch.add_` -> ('add_', None). None for call_module
    and targets outside torch."""
    if isinstance(op, fx.CallMethodOp):
        return op.target.data, None
    if not isinstance(op, fx.CallFunctionOp):
        return None
    target = op.target.data
    parts = target.split(".")
    if target.startswith(("torch.ops.aten.", "torch.ops.prims.")) and len(parts) >= 4:
        return parts[3], (parts[4] if len(parts) > 4 else "default")
    if target.startswith("torch."):
        return parts[-1], None
    return None


@functools.lru_cache(maxsize=4096)
def _schemas(name: str, namespace: str = "aten") -> tuple[Any, ...]:
    try:
        return tuple(torch._C._jit_get_schemas_for_operator(f"{namespace}::{name}"))  # noqa: SLF001
    except RuntimeError:
        return ()


def _writes_any(schema: Any) -> bool:
    return any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def _self_is_tensor(schema: Any) -> bool:
    return bool(schema.arguments) and str(schema.arguments[0].type) == "Tensor"


@functools.lru_cache(maxsize=4096)
def schema_may_alias(name: str) -> bool:
    """Some functional (writing nothing) aten overload named `name` returns
    an aliased tensor (`Tensor(a)`): whether the call returns a view may
    depend on more than its types (`reshape`, `contiguous`, `to`)."""
    return any(
        not _writes_any(s) and any(r.alias_info is not None for r in s.returns)
        for s in _schemas(name)
    )


def _overload_schema(name: str, overload: str) -> Any | None:
    for schema in _schemas(name):
        if (schema.overload_name or "default") == overload:
            return schema
    return None


@functools.lru_cache(maxsize=4096)
def writes_only_self(name: str) -> bool:
    """Every aten overload named `name` that takes a tensor `self` writes
    `self` and nothing else (`add_`, `relu_`, `index_put_`; not `add`, nor
    an `out=` form, which writes `out`)."""
    found = False
    for schema in _schemas(name):
        if not _self_is_tensor(schema):
            continue
        written = [i for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write]
        if written != [0]:
            return False
        found = True
    return found


@functools.lru_cache(maxsize=4096)
def writes_nothing(name: str) -> bool:
    """`aten::<name>` exists and none of its overloads writes an argument
    (`item`, `size`, `add`): a method or torch function of that name reads
    its operands only."""
    schemas = _schemas(name)
    return bool(schemas) and not any(_writes_any(s) for s in schemas)


def _signature(schema: Any) -> tuple[tuple[str, str], ...]:
    """The arguments after `self`, by name and type (what torchgen compares
    to pair an in-place overload with its functional twin)."""
    return tuple((a.name, str(a.type)) for a in schema.arguments[1:])


def _tags(name: str) -> set[Any]:
    """The tags of every overload of `aten::<name>` (`inplace_view`,
    `nondeterministic_seeded`, ...)."""
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return set()
    found: set[Any] = set()
    for overload in packet.overloads():
        found.update(getattr(getattr(packet, overload), "tags", ()))
    return found


def _is_random(schema: Any) -> bool:
    return any("Generator" in str(a.type) for a in schema.arguments)




@functools.lru_cache(maxsize=4096)
def functional_form(name: str) -> str | None:
    """The functional twin of the in-place aten operator `name` (`add_` ->
    `add`), as torchgen pairs them: every overload of `name` with a tensor
    `self` writes only `self` and returns it, and `name[:-1]` has a
    functional overload with the same other arguments (names and types);
    neither draws random numbers (`nondeterministic_seeded`, a `Generator`
    argument: the two forms need not draw alike) and `name` changes no
    metadata (`inplace_view`: `t_`, `squeeze_`, `resize_`). None
    otherwise."""
    if not name.endswith("_") or name.startswith("_") or not writes_only_self(name):
        return None
    plain = name[:-1]
    if {_INPLACE_VIEW, _RANDOM} & (_tags(name) | _tags(plain)) - {None}:
        return None
    functional = {
        _signature(s) for s in _schemas(plain)
        if not _writes_any(s) and _self_is_tensor(s) and not _is_random(s)
    }
    paired = False
    for schema in _schemas(name):
        if not _self_is_tensor(schema):
            continue
        if _is_random(schema) or not schema.returns or schema.returns[0].alias_info is None:
            return None
        if _signature(schema) not in functional:
            return None
        paired = True
    return plain if paired else None


# ---------------------------------------------------------------------------
# The questions
# ---------------------------------------------------------------------------


def _flag(op: Operation, name: str) -> bool:
    return isinstance(op.attributes.get(name), UnitAttr)


def call_may_alias(op: fx.NodeOp) -> bool:
    """A result of the fx call `op` may share storage with (or be) one of
    its operands: not known fresh (see the module docstring)."""
    if isinstance(op, fx.CallModuleOp):
        return not _flag(op, FRESH_RESULT_ATTR)
    if fresh_by_schema(op):
        return False
    facts = call_facts(op)
    if not facts.fresh:
        return True
    named = aten_name(op)
    return named is not None and named[1] is None and schema_may_alias(named[0])


def _schema_returns_fresh(schema: Any) -> bool | None:
    """True: the overload writes nothing and returns no alias, and has a
    kernel of its own (a CompositeImplicitAutograd overload is Python-like
    code its schema does not bind: `dropout` in eval returns its input);
    False: it returns an alias, writes a positional argument or is
    composite; None: an `out=` overload (writes keyword-only arguments
    only) or a TorchScript list builtin, which say nothing of the
    functional call."""
    overload = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
    try:
        if torch._C._dispatch_has_kernel_for_dispatch_key(overload, "CompositeImplicitAutograd"):  # noqa: SLF001
            return False
    except RuntimeError:  # a TorchScript builtin (`aten::add.t` on lists): no tensor call
        return None
    written = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if written:
        return None if all(a.kwarg_only for a in written) else False
    return not any(r.alias_info is not None for r in schema.returns)


@functools.lru_cache(maxsize=4096)
def _name_returns_fresh(name: str) -> bool:
    """Every overload of `aten::<name>` returns fresh storage (its `out=`
    forms aside), and there is one."""
    answers = [_schema_returns_fresh(s) for s in _schemas(name)]
    return any(a is True for a in answers) and not any(a is False for a in answers)


@functools.lru_cache(maxsize=4096)
def _torch_builtin(name: str) -> bool:
    return type(getattr(torch, name, None)).__name__ == "builtin_function_or_method"


WIDE_CALL_OPERANDS = 16
"""Calls with at least this many operands may be answered by their schema
(`fresh_by_schema`); narrower ones are run, which costs little."""


def fresh_by_schema(op: fx.NodeOp) -> bool:
    """torch's schema says a wide call returns fresh storage, without
    running it: a call of `WIDE_CALL_OPERANDS` operands or more of
    `torch.ops.aten.<f>.<o>` whose overload writes nothing, returns no
    alias and has a kernel of its own, or of a builtin `torch.<f>` (the ATen
    binding itself: `torch.cat`, `torch.stack`) every overload of which is
    so, called without `out=`; never a name with a leading underscore or
    `unsafe` in it (`_unsafe_view`, `unsafe_split` return views their schema
    does not declare). Wide joins are the case that matters: running a
    1024-operand `stack` on fake tensors costs 1024 fake tensors per
    distinct call, and a wide graph has hundreds of distinct ones."""
    if not isinstance(op, fx.CallFunctionOp) or "out" in op.kwargs.data or len(op.operands) < WIDE_CALL_OPERANDS:
        return False
    parts = op.target.data.split(".")
    name = parts[3] if len(parts) == 5 else parts[-1]
    if name.startswith("_") or "unsafe" in name:
        return False
    if len(parts) == 5 and parts[:3] == ["torch", "ops", "aten"]:
        schema = _overload_schema(parts[3], parts[4])
        return schema is not None and _schema_returns_fresh(schema) is True
    return len(parts) == 2 and parts[0] == "torch" and _torch_builtin(parts[1]) and _name_returns_fresh(parts[1])


def call_is_known(op: fx.NodeOp) -> bool:
    """torch could tell what the fx call does (it was run on fake tensors,
    or, for `fx.call_module`, the importer recorded it fresh): unknown code
    may return any tensor it can reach, not only its operands."""
    if isinstance(op, fx.CallModuleOp):
        return _flag(op, FRESH_RESULT_ATTR)
    return call_facts(op).known


def call_result_is_fresh(op: fx.NodeOp) -> bool:
    """The fx call's result is storage nothing else holds (the negation of
    `call_may_alias`, stated for the readers that need a temporary)."""
    return not call_may_alias(op)


def call_may_return_operand(op: fx.NodeOp) -> bool:
    """A result of the fx call `op` may be one of its operand tensor objects
    itself (`x.float()` of a float `x`, `x.contiguous()`, an in-place
    method): not known to be a new object."""
    if isinstance(op, fx.CallModuleOp):
        return not _flag(op, FRESH_RESULT_ATTR)
    facts = call_facts(op)
    if not facts.known or facts.is_operand:
        return True
    named = aten_name(op)
    return named is not None and named[1] is None and schema_may_alias(named[0])


def call_result_strides(op: fx.NodeOp, layouts: tuple[tuple[int, ...], ...]) -> tuple[int, ...] | None:
    """The strides of the fx call's (single tensor) result when its operands
    have the strides `layouts` (one per operand; the strides of non-tensor
    operands are ignored), as torch computes them; None when it cannot be
    run."""
    if isinstance(op, fx.CallModuleOp):
        return None
    return call_facts(op, layouts).strides


def module_effect_free(op: Operation) -> bool:
    """An `fx.call_module` recorded `effect_free` at import."""
    return _flag(op, EFFECT_FREE_ATTR)


def written_operands(op: fx.NodeOp) -> tuple[int, ...] | None:
    """The operand indices the fx call `op` may write, when torch says which:
    an aten overload's `(a!)` arguments; for a method or torch function
    whose every aten overload of that name writes only `self`, its first
    argument; for one whose aten overloads write nothing (`item`), none.
    None: any operand (unknown)."""
    named = aten_name(op)
    if named is None:
        return None
    facts = call_facts(op)
    name, overload = named
    args = op.args.data
    if facts.known and facts.writes and writes_nothing(name):
        return None  # torch wrote where the schema says nothing (batch norm's statistics)
    if overload is not None:
        schema = _overload_schema(name, overload)
        if schema is None:
            return None
        kwargs = op.kwargs.data
        written: list[int] = []
        for position, argument in enumerate(schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            attr = args[position] if position < len(args) else kwargs.get(argument.name)
            if not isinstance(attr, fx.RefAttr):
                return None  # a written list, a literal or a default: be safe
            written.append(attr.index.data)
        return tuple(written)
    if "out" in op.kwargs.data:
        return None
    if writes_nothing(name):
        return ()
    if not writes_only_self(name):
        return None
    first = args[0] if args else None
    if not isinstance(first, fx.RefAttr):
        return None
    return (first.index.data,)


def module_facts(module: torch.nn.Module, operand_types: Sequence[Attribute],
                 args: Sequence[Attribute], kwargs: dict[str, Attribute]) -> CallFacts:
    """Run a torch module on fake tensors of `operand_types` (its parameters
    and buffers faked too, so nothing of the real module is touched) and
    report what it did; `writes` also counts writes to its parameters and
    buffers, and a random op (`nondeterministic_seeded`) counts as a write.
    `UNKNOWN` for a module that is not one of torch's own classes, has
    hooks, or fails."""
    from torch.nn.utils.stateless import _reparametrize_module

    cls = type(module)
    if not cls.__module__.startswith("torch.nn.") or (
        module._forward_hooks or module._forward_pre_hooks  # noqa: SLF001
    ):
        return UNKNOWN
    key = ("module", cls, tuple(operand_types), tuple(args), tuple(sorted(kwargs.items())),
           _module_config(module))
    cached = _BY_KEY.get(key)
    if cached is not None:
        return cached

    try:
        with faithful_fake_mode():
            operands = [_fake_operand(t, None) for t in operand_types]
            state = {
                name: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
                for named in (module.named_parameters(remove_duplicate=False),
                              module.named_buffers(remove_duplicate=False))
                for name, t in named
            }
        call_args = [fx.map_refs(a, operands.__getitem__, _literal) for a in args]
        call_kwargs = {k: fx.map_refs(v, operands.__getitem__, _literal) for k, v in kwargs.items()}
    except Exception:  # noqa: BLE001 - unknown
        _BY_KEY[key] = UNKNOWN
        return UNKNOWN
    def call() -> Any:
        with _reparametrize_module(module, state):
            return module(*call_args, **call_kwargs)

    # the fake parameters and buffers count as operands: a module that
    # returns or writes one of them is neither fresh nor effect free
    facts = probe(call, [*operands, *state.values()])
    _BY_KEY[key] = facts
    return facts


def _module_config(module: torch.nn.Module) -> tuple[Any, ...]:
    """What decides a torch module's behaviour besides its inputs: its
    literal attributes and its training flag (the description the importer
    records, as plain values)."""
    items = []
    for name, value in sorted(vars(module).items()):
        if name.startswith("_") and name != "training":
            continue
        if isinstance(value, bool | int | float | str | type(None)):
            items.append((name, value))
        elif isinstance(value, tuple | list) and all(
            isinstance(v, bool | int | float | str | type(None)) for v in value
        ):
            items.append((name, tuple(value)))
        elif isinstance(value, torch.Tensor | torch.nn.Module):
            continue
        else:
            items.append((name, id(value)))  # an object: this module only
    for name, param in module.named_parameters(recurse=True):
        items.append((name, tuple(param.shape), param.dtype, str(param.device)))
    for name, buffer in module.named_buffers(recurse=True):
        items.append((name, tuple(buffer.shape), buffer.dtype, str(buffer.device)))
    return tuple(items)


def record_module_facts(op: fx.CallModuleOp, module: torch.nn.Module) -> None:
    """Run `module` as `op` calls it and record `fresh_result` /
    `effect_free` on `op` where the run shows them."""
    facts = module_facts(module, [v.type for v in op.operands], op.args.data, dict(op.kwargs.data))
    if not facts.known:
        return
    if not facts.shares_storage:
        op.attributes[FRESH_RESULT_ATTR] = UnitAttr()
    if not facts.writes:
        op.attributes[EFFECT_FREE_ATTR] = UnitAttr()


def _describe(value: Any) -> Any:
    """A hashable stand-in of an FX node's example value (tensors by shape,
    strides, dtype and device), or raise `_NotRunnable`."""
    if isinstance(value, torch.Tensor):
        if value.layout is not torch.strided or not all(
            type(n) is int for n in (*value.shape, *value.stride())
        ):
            raise _NotRunnable
        return ("tensor", tuple(value.shape), tuple(value.stride()), value.dtype, str(value.device))
    if isinstance(value, tuple | list):
        return (type(value).__name__, tuple(_describe(v) for v in value))
    if isinstance(value, bool | int | float | str | type(None)):
        return value
    raise _NotRunnable


def _materialize(description: Any) -> Any:
    if isinstance(description, tuple) and description and description[0] == "tensor":
        _, shape, stride, dtype, device = description
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)
    if isinstance(description, tuple) and description and description[0] in ("tuple", "list"):
        items = [_materialize(d) for d in description[1]]
        return tuple(items) if description[0] == "tuple" else items
    return description


def fx_node_may_alias(node: torch.fx.Node) -> bool:
    """`call_may_alias` for a node of a torch.fx graph (one not exported
    from IR, so without `exporter.RESULT_MAY_ALIAS_META`): the node's
    target is run on fake tensors shaped like its inputs' example values
    (`val` / `example_value` metadata; the values themselves are not
    trusted, see `probe`). Unknown (no metadata, a target that cannot be
    run) may alias."""
    from torch.fx.node import _get_qualified_name

    if node.op == "call_method":
        name = str(node.target)
        if not _is_tensor_method(name) or has_global_effects(name, method=True):
            return True
        function = None
        short = name
    elif node.op == "call_function":
        try:
            qualified = _get_qualified_name(node.target)
        except Exception:  # noqa: BLE001 - no import path: a user's function
            return True
        function = _runnable_function(qualified)
        if function is None:
            return True
        parts = qualified.split(".")
        short = parts[3] if qualified.startswith("torch.ops.") and len(parts) > 3 else parts[-1]
    else:
        return True

    def example(input_node: torch.fx.Node) -> Any:
        for key in ("val", "example_value"):
            if key in input_node.meta:
                return _describe(input_node.meta[key])
        raise _NotRunnable

    try:
        described = {n: example(n) for n in node.all_input_nodes}
        key = ("fx-node", node.op, node.target,
               torch.fx.node.map_arg(node.args, described.__getitem__),
               tuple(sorted(torch.fx.node.map_arg(node.kwargs, described.__getitem__).items())))
        hash(key)
    except (_NotRunnable, TypeError):
        return True
    facts = _BY_KEY.get(key)
    if facts is None:
        try:
            with faithful_fake_mode():
                fakes = {n: _materialize(d) for n, d in described.items()}
        except Exception:  # noqa: BLE001 - unknown
            return True
        args = torch.fx.node.map_arg(node.args, fakes.__getitem__)
        kwargs = torch.fx.node.map_arg(node.kwargs, fakes.__getitem__)
        call = _call_of(function, short, args, kwargs)
        if call is None:
            return True
        facts = _BY_KEY[key] = probe(call, list(fakes.values()))
    if not facts.fresh:
        return True
    # an overload is the one schema that ran; a name may reach others
    return not _is_overload(node.target) and schema_may_alias(short)


def _is_overload(target: Any) -> bool:
    return isinstance(target, torch._ops.OpOverload)  # noqa: SLF001


def call_shows_effects(op: Operation) -> bool:
    """An fx call that its name calls pure wrote an operand or drew random
    numbers when run on fake tensors (`F.batch_norm` in training updates
    the running statistics, `F.embedding` with `max_norm` renormalizes the
    weight): the effect classifier's probe (`effects.set_effect_probe`).
    False when it cannot be run (the name decides then)."""
    if not isinstance(op, fx.CallFunctionOp | fx.CallMethodOp):
        return False
    if fresh_by_schema(op):  # writes nothing by its kernel's schema: only a random draw could show
        parts = op.target.data.split(".")
        if _RANDOM is None or _RANDOM not in _tags(parts[1] if len(parts) == 2 else parts[3]):
            return False
    facts = call_facts(op)
    return facts.known and (facts.writes or facts.random)


set_effect_probe(call_shows_effects)


def clear_caches() -> None:
    """Forget every cached decision (tests that register functions)."""
    _BY_KEY.clear()
    _BY_OP.clear()
    _runnable_function.cache_clear()


__all__ = [
    "CallFacts",
    "EFFECT_FREE_ATTR",
    "FRESH_RESULT_ATTR",
    "STAND_IN_SIZE",
    "UNKNOWN",
    "aten_name",
    "call_facts",
    "call_is_known",
    "call_may_alias",
    "call_may_return_operand",
    "call_result_is_fresh",
    "call_result_strides",
    "call_shows_effects",
    "clear_caches",
    "fake_mode",
    "faithful_fake_mode",
    "functional_form",
    "fx_node_may_alias",
    "module_effect_free",
    "module_facts",
    "probe",
    "record_module_facts",
    "returned_operand",
    "run_call",
    "schema_may_alias",
    "written_operands",
    "writes_nothing",
    "writes_only_self",
]
