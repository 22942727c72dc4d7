"""What the generated `forward` read from the model's dicts last time, and a
cheap test that the dicts still hold exactly those objects.

The prologue of an exported module (`exporter.FastCodeGen`) reads every
parameter and buffer from its module's dicts on each call, so that
reassignments, `load_state_dict(assign=True)`, `.to()` and new Parameters are
followed. On a wide model that is hundreds of dict lookups per call (the
64-tower model: about 400, 30 us). An `AttributeSnapshot` lets the prologue
skip them: after a full read it records the values and a copy of every dict
it walked through; on the next call, if each dict still equals its copy --
one list comparison, done in C, where each entry compares by identity first
-- the recorded values are exactly what the walk would read again.

Where an entry changed, comparing it with its copy can call the new value's
`__eq__`: a tensor's elementwise equality, whose truth value raises for more
than one element (caught: the snapshot is stale) and is the value's own for
one element, which could call a new tensor of equal value "the same". Such
entries (tensors of at most one element, attributes kept in a module's
`__dict__`) are checked one by one by identity instead. After repeated
misses (a model whose dicts change on most calls, `torch.func.functional_call`
in a loop) the snapshot stops trying, so a miss never costs more than a few
comparisons.

The shared parameter stacks' reads (`optimus_ir.api.shared_stacks`) move
into the prologue too. Identity is not all they need: a member re-pointed
with `p.data = t`, `.to()`, or `p.data = p.data.t()` keeps its identity and
its dict entry, so a valid snapshot still asks each stack whether its
members moved: the members are `WatchedParameter`s, whose re-pointing
routes mark the stack unverified, and an unverified stack runs its
per-member test (`SharedStack.holds`: storage, offset, sizes and strides of
every member) before it is handed out. `STACK_EPOCH` (bumped whenever a
stack re-homes or retires) makes every snapshot that read a stack stale.
`OPTIMUS_SNAPSHOT=0` disables the snapshot altogether.

A model whose parameters live in shared stacks has its module dicts
(`_parameters`, `_buffers`, `_modules`) replaced by `WatchedDict`s
(`watch_module_dicts`): every write through them bumps `DICT_EPOCH`, so a
snapshot whose dicts are all watched skips the comparison while the epoch
stands (on the 64-tower model, 199 dicts: ~8 us of a ~1.2 ms call), and
compares them as before once anything wrote to any watched dict. Writes
through `dict`'s own methods on the object (`dict.__setitem__(d, k, v)`)
are not seen; `OPTIMUS_SNAPSHOT=0` reads the dicts on every call.

Under `torch.compile` (Dynamo tracing the exported module) the snapshot is
never used: the traced code reads the dicts, as Dynamo's guards expect.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import torch

log = logging.getLogger(__name__)

SNAPSHOT_ATTRIBUTE = "_optimus_attr_snapshot"
"""The key in an exported module's `__dict__` of its `AttributeSnapshot`."""

HOISTED_READ_META = "optimus_hoisted_read"
"""`node.meta` key of a call whose value depends only on the prologue's
reads (a shared stack read: `read(site, *members)`, the site a get_attr of
the module's own `__dict__`): the prologue makes it, from the recorded
members when the snapshot is valid (`stack_reads`). Its site answers
`from_stack(value)`, `read(members)`, `read_own()` and `stack.members`."""

STACK_EPOCH = [0]
"""Bumped whenever a shared parameter stack re-homes or retires: every
snapshot that read a stack is stale then."""

DICT_EPOCH = [0]
"""Bumped by every write to a `WatchedDict`: a snapshot whose dicts are all
watched and were compared at this epoch still holds."""

MISS_COST = 8
"""What a stale snapshot adds to a snapshot's miss score; a valid one takes
1 off. At `MAX_MISS_SCORE` it stops recording: the dicts change on most
calls (every call, or every other one), so comparing them only adds work."""

MAX_MISS_SCORE = 64

_MISSING = object()


def _compiling() -> bool:
    return torch.compiler.is_compiling()


def _compared_one_by_one(value: Any) -> bool:
    """Entries whose `==` against another object could say True: tensors of
    at most one element (a new tensor of equal value) and objects with their
    own `__eq__` other than tensors and modules."""
    if isinstance(value, torch.Tensor):
        try:
            return value.numel() <= 1
        except Exception:  # noqa: BLE001  (a tensor subclass without storage)
            return True
    if value is None or isinstance(value, torch.nn.Module):
        return type(value).__eq__ is not object.__eq__
    return True


class WatchedDict(dict):  # type: ignore[type-arg]
    """A module dict (`_parameters`, `_buffers`, `_modules`) that tells
    `DICT_EPOCH` of every write made through it. Reads are `dict`'s own (C,
    unchanged cost); pickling and deep copies give a plain `dict`."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        DICT_EPOCH[0] += 1
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        DICT_EPOCH[0] += 1
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> WatchedDict:
        DICT_EPOCH[0] += 1
        dict.update(self, other)
        return self

    def pop(self, *args: Any) -> Any:
        DICT_EPOCH[0] += 1
        return dict.pop(self, *args)

    def popitem(self) -> Any:
        DICT_EPOCH[0] += 1
        return dict.popitem(self)

    def clear(self) -> None:
        DICT_EPOCH[0] += 1
        dict.clear(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        DICT_EPOCH[0] += 1
        dict.update(self, *args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        DICT_EPOCH[0] += 1
        return dict.setdefault(self, key, default)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (dict(self),))


WATCHED_MODULE_DICTS = ("_parameters", "_buffers", "_modules")


def _retype_module_dicts(modules: Iterable[torch.nn.Module], old: type, new: Any) -> int:
    """Replace each module's `WATCHED_MODULE_DICTS` of exactly type `old`
    by `new(table)`; how many were replaced. Every snapshot reads its dicts
    again (`STACK_EPOCH`): one recorded before holds the replaced objects."""
    replaced = 0
    for module in modules:
        own = module.__dict__
        for name in WATCHED_MODULE_DICTS:
            table = own.get(name)
            if type(table) is old:
                own[name] = new(table)
                replaced += 1
    if replaced:
        STACK_EPOCH[0] += 1
    return replaced


def watch_module_dicts(modules: Iterable[torch.nn.Module]) -> int:
    """Replace each module's `WATCHED_MODULE_DICTS` with `WatchedDict`s of
    the same entries; how many were replaced."""
    return _retype_module_dicts(modules, dict, WatchedDict)


def unwatch_module_dicts(modules: Iterable[torch.nn.Module]) -> int:
    """Give each module plain dicts again (`watch_module_dicts` undone);
    how many were replaced."""
    return _retype_module_dicts(modules, WatchedDict, dict)


class AttributeSnapshot:
    """The last full read of an exported module's prologue.

    `record(...)` after a full read; `valid()` before the next one. The
    values are held strongly (they are the model's own parameters, which the
    model holds anyway); a copy of the module (`deepcopy`, pickle) starts
    with an empty snapshot."""

    __slots__ = (
        "copies",
        "dict_epoch",
        "dicts",
        "enabled",
        "epoch",
        "misses",
        "singles",
        "sites",
        "values",
        "watched",
    )

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.values: tuple[Any, ...] | None = None
        self.sites: tuple[Any, ...] = ()
        self.dicts: list[dict[Any, Any]] = []
        self.copies: list[dict[Any, Any]] = []
        self.singles: tuple[tuple[dict[Any, Any], Any, Any], ...] = ()
        self.epoch = -1
        self.dict_epoch = -1
        self.watched = False
        self.misses = 0

    def valid(self) -> bool:
        """The dicts hold what the last full read found, and every shared
        stack read then is as it was: the recorded values and reads stand."""
        if self.values is None or STACK_EPOCH[0] != self.epoch or _compiling():
            return False
        if self.watched and DICT_EPOCH[0] == self.dict_epoch:
            same = True  # no watched dict was written to since they last compared equal
        else:
            epoch = DICT_EPOCH[0]
            try:
                same = self.dicts == self.copies
            except Exception:  # noqa: BLE001  (a changed tensor entry's `==`)
                same = False
            if same:
                self.dict_epoch = epoch
        if same:
            for table, key, value in self.singles:
                if table.get(key, _MISSING) is not value:
                    same = False
                    break
        if not same:
            self._missed()
            return False
        if self.misses:
            self.misses -= 1
        return True

    def stack_reads(self) -> tuple[Any, ...]:
        """The values of the shared stack reads, for a call whose snapshot is
        `valid()`: each site's read of its stack's members (the dicts hold
        exactly those; `read_own`: a stack no re-pointing route touched since
        its members were last tested is handed out as it is)."""
        return tuple(site.read_own() for site in self.sites)

    def _missed(self) -> None:
        self.values = None
        self.misses += MISS_COST
        if self.misses >= MAX_MISS_SCORE and self.enabled:
            self.enabled = False
            log.debug("optimus_ir: the attribute snapshot was stale on most calls; reading the dicts on every call")

    def record(
        self,
        values: tuple[Any, ...],
        dicts: Iterable[dict[Any, Any]],
        singles: Iterable[tuple[dict[Any, Any], Any]],
        reads: Sequence[tuple[Any, Any]] = (),
    ) -> None:
        """After a full read: `values` (the prologue's locals, in order), the
        dicts it walked, the (dict, key) entries to compare by identity, and
        the stack reads made (`(site, value)`: `site.from_stack(value)` is
        False where `value` did not come from a homed stack, a per-call
        stack, which keeps the snapshot from being used)."""
        if not self.enabled or _compiling():
            return
        for site, value in reads:
            if not site.from_stack(value):
                self._missed()
                return
        tables = list(dicts)
        single_entries = [(table, key, table.get(key, _MISSING)) for table, key in singles]
        for table in tables:
            single_entries.extend((table, key, value) for key, value in table.items() if _compared_one_by_one(value))
        self.dicts = tables
        self.copies = [dict(table) for table in tables]
        self.watched = all(type(table) is WatchedDict for table in tables)
        self.dict_epoch = DICT_EPOCH[0]
        self.singles = tuple(single_entries)
        self.epoch = STACK_EPOCH[0]
        self.sites = tuple(site for site, _ in reads)
        self.values = values

    def __reduce__(self) -> Any:
        return (AttributeSnapshot, ())
