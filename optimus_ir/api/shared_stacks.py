"""Parameters that live in their stacks (`parameter_stacks="shared"`).

Batch fusion's lowering reads a fused group's weights as one stacked tensor
(`torch.stack([towers.0.weight, towers.1.weight, ...])`). By default
(`parameter_stacks="copy"`) that stack is a copy made on every call (forward,
and the slicing of its gradient in backward). With `"shared"`, `optimize()`
gives each such group one storage and re-points each member parameter to its
slice (`p.data = stack[i]`), the way FSDP's flat parameter and DDP's buckets
hold many parameters in one storage:

* the parameters stay the same `Parameter` objects with the same values, so
  optimizers built before or after `optimize()` keep working, and every
  in-place update (`torch.optim` in all its forms, `p.data.mul_()`,
  `load_state_dict` without `assign`) writes straight into the stack;
* the fused op reads the stack without a copy (`read_shared_stack`); under
  autograd through `_StackView`, whose backward hands each member parameter
  its slice of the stacked gradient (each `p.grad` is what eager computes;
  `AccumulateGrad` gives it the parameter's strides);
* every call checks that each member still views its slice. A homed member
  is a `WatchedParameter` (a `Parameter` subclass, `isinstance` unchanged)
  whose re-pointing routes (`p.data = t`, so `.to()` and `.half()`, and the
  in-place metadata methods `p.set_()`, `p.resize_()`, `p.as_strided_()`,
  `p.t_()`, ...) mark its stack unverified: a verified stack is handed out
  after one flag test, and an unverified one is tested member by member
  (`Tensor.is_set_to`: storage, offset, sizes and strides; no value is
  read) before it is verified again. Calls made through the base class
  (`torch.Tensor.set_(p, t)`, `torch.as_strided_(p, ...)`) are not seen;
  `OPTIMUS_SNAPSHOT=0` tests every member on every call. A member re-pointed since
  (`p.data = t`, `load_state_dict(assign=True)`, `.to()`, `.half()`, a
  Parameter reassigned on the model) makes that call stack the members as
  `"copy"` does, and the group re-homes once into a new stack of the
  members' current values, with one log line; a group that misses again
  after that stays with per-call stacks (parameters someone else re-points
  on every call, as FSDP does, are not fought over). A value is never stale.

What changes for the user: the members' storage is the stack's
(`p.untyped_storage()` is shared, and `torch.save(p)` of one member saves
the whole stack); the modules' dicts become `WatchedDict`s, so that the
prologue's snapshot needs no comparison while nothing writes to them
(`attribute_snapshot.watch_module_dicts`); `state_dict()` round trips are
unaffected. `unshare_parameters(model)` gives every member its own storage
and every module plain dicts again.

A stack is shared only where that is exact: the members are distinct,
contiguous parameters of one dtype, device and shape, stacked along dim 0,
no member is already homed in another stack, and the stack's value (through
views) is only read by pure ops: never written, never returned (a returned
stack would alias the parameters where eager returns a fresh tensor).
"""

from __future__ import annotations

import logging
import operator
import warnings
from torch.utils.weak import WeakIdKeyDictionary
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.fx

from optimus_ir.analysis.fusion_pricing import GRAD_VIEW_MIN_BYTES as _PRICED_GRAD_VIEW_MIN_BYTES
from optimus_ir.translate.attribute_snapshot import (
    HOISTED_READ_META,
    STACK_EPOCH,
    unwatch_module_dicts,
    watch_module_dicts,
)
from optimus_ir.translate.exporter import ATTR_PATH_META, _read_path, recompile

log = logging.getLogger("optimus_ir.shared_stacks")

SHARED_STACKS_ATTRIBUTE = "_optimus_shared_stacks"
"""The key in an optimized module's `__dict__` of the tuple of its
`SharedStack`s (not registered: the module's state dict stays the model's)."""

_HOMES: WeakIdKeyDictionary = WeakIdKeyDictionary()
"""Each homed parameter's stack: a parameter lives in at most one, and a
module optimized again (another batch size, another graph) reuses it."""

_is_set_to = torch.Tensor.is_set_to

GRAD_VIEW_MIN_BYTES = _PRICED_GRAD_VIEW_MIN_BYTES
"""(The pricing's constant, `fusion_pricing.GRAD_VIEW_MIN_BYTES`: batch fusion
prices a model optimized in training mode with it.) Under autograd, a shared stack whose members are smaller than this is
stacked per call instead of viewed: the view's backward is a Python autograd
function whose cost (about 20 us a stack and 2 us a member beyond a
parameter's own, forward and backward: `fusion_pricing.GRAD_VIEW_STACK_S`,
`GRAD_VIEW_MEMBER_S`) exceeds the copy of a small member (`benchmarks/bench_shared_stacks.py`; measured
on the 2-core CPU machine: 64 members of 4,096 fp32 values, view 375 us
against stack 357 us a step; of 16,384, 585 us against 928 us)."""
_TENSOR_DATA = torch._C.TensorBase.data  # the C `data` descriptor, behind `WatchedParameter.data`


def _moved(parameter: torch.Tensor) -> None:
    """`parameter` may view something else now: its stack is tested member
    by member on its next read, and every snapshot reads its dicts again."""
    stack = _HOMES.get(parameter)
    if stack is not None:
        stack.verified = False
    STACK_EPOCH[0] += 1


def _watched_inplace(name: str) -> Any:
    base = getattr(torch.Tensor, name)

    def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        try:
            return base(self, *args, **kwargs)
        finally:
            _moved(self)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}`, then the member's stack is tested again before its next read."
    return method


_METADATA_INPLACE = (
    "set_ resize_ resize_as_ as_strided_ t_ transpose_ squeeze_ unsqueeze_ swapdims_ swapaxes_ "
    "share_memory_".split()
)


class WatchedParameter(torch.nn.Parameter):
    """A parameter homed in a shared stack: a `Parameter` (same object, same
    values, `isinstance` unchanged) whose re-pointing routes tell its stack,
    so that the per-call check of a stack nobody re-pointed is one flag
    test. Pickling and `state_dict` see a plain `Parameter`; a deep copy is
    a `WatchedParameter` homed nowhere (it tells nothing)."""

    @property  # type: ignore[override]
    def data(self) -> torch.Tensor:
        return _TENSOR_DATA.__get__(self)

    @data.setter
    def data(self, value: torch.Tensor) -> None:
        try:
            _TENSOR_DATA.__set__(self, value)
        finally:
            _moved(self)

    for _name in _METADATA_INPLACE:
        locals()[_name] = _watched_inplace(_name)
    del _name


def _watch(parameter: torch.nn.Parameter) -> None:
    if type(parameter) is torch.nn.Parameter:
        parameter.__class__ = WatchedParameter


def _unwatch(parameter: torch.nn.Parameter) -> None:
    if type(parameter) is WatchedParameter:
        parameter.__class__ = torch.nn.Parameter


class SharedStack:
    """One fused group's member parameters, homed in one stacked storage.

    `holds(members)` is the per-call check; `read(members)` the value the
    fused op reads. `rehomed` counts re-homings (at most one), `retired` is
    set once the group gave up sharing (it then stacks per call). With
    `watch`, the members become `WatchedParameter`s and `verified` says
    that each still views its slice (no re-pointing route ran since the
    last member-by-member test); without it (the torch.compile backend,
    whose guards saw plain Parameters) `verified` stays False."""

    __slots__ = ("__weakref__", "label", "members", "rehomed", "retired", "slots", "stack", "verified", "watch")

    def __init__(
        self, members: Sequence[torch.nn.Parameter], label: str, *, home: bool = True, watch: bool = False
    ) -> None:
        self.members: tuple[torch.nn.Parameter, ...] = tuple(members)
        self.label = label
        self.rehomed = 0
        self.retired = False
        self.verified = False
        self.watch = watch
        self.stack = torch.empty(0)
        self.slots: tuple[torch.Tensor, ...] = ()
        for member in self.members:
            _HOMES[member] = self  # claimed now, homed by `_home` (now, or once a compiler is done)
        if home:
            self._home()

    @property
    def homed(self) -> bool:
        """The members were moved into the stack (`_home` ran)."""
        return bool(self.slots)

    def _home(self) -> None:
        """Copy the members' current values into a new stack and re-point
        each member to its slice."""
        with torch.no_grad():
            stack = torch.stack([m.detach() for m in self.members])
        slots = tuple(stack.unbind(0))
        for member, slot in zip(self.members, slots, strict=True):
            _TENSOR_DATA.__set__(member, slot)
            _HOMES[member] = self
            if self.watch:
                _watch(member)
        self.stack, self.slots = stack, slots
        self.verified = self.watch
        STACK_EPOCH[0] += 1  # every snapshot that read a stack reads again

    def holds(self, members: Sequence[torch.Tensor]) -> bool:
        """Each of `members` views its slice of the stack (same storage,
        offset, sizes and strides): the stack then holds exactly their
        values. Members that are other objects viewing the same slices (a
        Parameter made from `p.data`) read the same values, and `_StackView`
        routes the gradients to the objects given, so identity is not
        required; the first member's identity is the cheap way out for other
        tensors altogether (the guard's proof on fake tensors). A test of the
        stack's own members that passes verifies the stack again."""
        held = (
            bool(self.slots)
            and len(members) == len(self.members)
            and members[0] is self.members[0]
            and all(map(_is_set_to, members, self.slots))
        )
        if held and self.watch and not self.verified and not self.retired:
            self.verified = all(map(operator.is_, members, self.members))
        return held

    def differentiable(self, members: Sequence[torch.Tensor]) -> torch.Tensor:
        """The stack under autograd, for `members` that live in it: a view
        of the storage whose backward gives each member its slice of the
        gradient (`_StackView`), where the members are large enough for
        that to pay; small members (biases) are stacked, because the
        Python autograd function's per-member cost exceeds their copy
        (`GRAD_VIEW_MIN_BYTES`). Either way no value is stale: the copy
        reads the members themselves."""
        if self.stack.nbytes < GRAD_VIEW_MIN_BYTES * len(members):
            return torch.stack(list(members))
        return _StackView.apply(self.stack, *members)

    def read(self, members: Sequence[torch.Tensor], *, settle: bool = True) -> torch.Tensor:
        """The stack of `members` along dim 0: the shared storage itself when
        they still live there (no copy), else a per-call stack, after which
        the group re-homes or gives up (`settle=False`: it does neither,
        for a compiler's example input)."""
        if not self.retired and self.homed and self.holds(members):
            if torch.is_grad_enabled() and any(m.requires_grad for m in members):
                return self.differentiable(members)
            return self.stack
        stacked = torch.stack(list(members))
        if settle and not self.retired:
            self._missed(members)
        return stacked

    def _missed(self, members: Sequence[torch.Tensor]) -> None:
        """After a per-call stack of `members`: re-home once (the same
        parameters re-pointed, or new Parameters assigned in their place),
        or give up sharing. Other tensors (the guard's proof on fake
        tensors, `torch.func.functional_call`) change nothing."""
        same = len(members) == len(self.members) and all(map(operator.is_, members, self.members))
        if not same and not _adoptable(members, self):
            return
        if self.rehomed or not _shareable(members):
            self.retire(
                f"optimus_ir: the parameters of fused stack {self.label} were re-pointed or replaced "
                "again; it is stacked per call from now on (as with parameter_stacks='copy')"
            )
            return
        for member in self.members:
            if _HOMES.get(member) is self:
                del _HOMES[member]
                _unwatch(member)
        self.members = tuple(members)  # type: ignore[arg-type]
        self.rehomed += 1
        self._home()
        log.info(
            "optimus_ir: the parameters of fused stack %s were re-pointed or replaced (p.data = ..., "
            ".to(), load_state_dict(assign=True), a new Parameter); this call stacked them, and they "
            "now live in a new shared stack",
            self.label,
        )

    def retire(self, why: str) -> None:
        """Stop sharing: later calls stack per call; the members keep their
        current storage (see `unshare_parameters` to give them their own)."""
        if not self.retired:
            self.retired = True
            self.verified = False
            STACK_EPOCH[0] += 1
            log.info("%s", why)
            for member in self.members:
                if _HOMES.get(member) is self:
                    del _HOMES[member]
                    _unwatch(member)

    def __reduce__(self) -> Any:
        # A copy (deepcopy, pickle) of a module reading this stack has its
        # own parameters, which do not live here: it stacks per call.
        return (_retired_stack, (self.label,))


def _retired_stack(label: str) -> SharedStack:
    """A stack that shares nothing (what a copied module reads)."""
    stack = SharedStack.__new__(SharedStack)
    stack.members, stack.slots, stack.stack = (), (), torch.empty(0)
    stack.label, stack.rehomed, stack.retired = label, 0, True
    stack.verified, stack.watch = False, False
    return stack


class _StackView(torch.autograd.Function):
    """The shared stack as a differentiable function of its members: forward
    is a view of the stack (no copy), backward gives each member its slice of
    the stacked gradient."""

    @staticmethod
    def forward(ctx: Any, stack: torch.Tensor, *members: torch.Tensor) -> torch.Tensor:  # noqa: ARG004
        return stack.view_as(stack)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:  # noqa: ARG004
        return (None, *grad.unbind(0))


ViewStep = tuple[Any, tuple[Any, ...], dict[str, Any], bool]
"""One view op applied to a stack: (function or method name, the arguments
after the tensor, keyword arguments, whether it is a method)."""


class SharedRead:
    """One place the exported code reads a shared stack, with the chain of
    view ops the graph applied to the stack there (`transpose(1, 2)` of a
    linear group's weights, `unsqueeze(1)` of its biases): under no_grad
    the chain's result is a view of the storage that stays valid until the
    stack re-homes, so it is made once, not per call."""

    __slots__ = ("_for", "_value", "own", "stack", "views")

    def __init__(self, stack: SharedStack, views: Sequence[ViewStep] = ()) -> None:
        self.stack = stack
        self.views = tuple(views)
        self.own = False  # the last `read` was of the stack's own members, living in it
        self._for: torch.Tensor | None = None
        self._value: torch.Tensor | None = None

    def _apply(self, value: torch.Tensor) -> torch.Tensor:
        for target, args, kwargs, method in self.views:
            value = getattr(value, target)(*args, **kwargs) if method else target(value, *args, **kwargs)
        return value

    def read(self, members: Sequence[torch.Tensor]) -> torch.Tensor:
        """The view chain applied to `SharedStack.read(members)`."""
        stack = self.stack
        if not stack.retired and stack.homed and stack.holds(members):
            self.own = all(map(operator.is_, members, stack.members))
            return self._held(members)
        self.own = False
        return self._apply(stack.read(members))

    def read_own(self) -> torch.Tensor:
        """`read(stack.members)`, for the prologue's valid snapshot (whose
        dicts hold exactly the stack's members): a verified stack is handed
        out without testing its members again."""
        stack = self.stack
        return self._held(stack.members) if stack.verified else self.read(stack.members)

    def _held(self, members: Sequence[torch.Tensor]) -> torch.Tensor:
        """The view chain's value for `members` that live in the stack: under
        autograd applied to the differentiable read, else the view of the
        storage made once (until the stack re-homes)."""
        stack = self.stack
        if torch.is_grad_enabled() and any(m.requires_grad for m in members):
            return self._apply(stack.differentiable(members))
        if self._for is not stack.stack:
            self._value, self._for = self._apply(stack.stack), stack.stack
        return self._value  # type: ignore[return-value]

    def from_stack(self, value: Any) -> bool:  # noqa: ARG002  (the value is the read's; the site knows)
        """For `AttributeSnapshot.record`: this call's read (`value`) was of
        the stack's own members, living in it (not a per-call stack of
        other or re-pointed members), so `read_own` may stand for it."""
        return self.own and not self.stack.retired and self.stack.homed

    def __reduce__(self) -> Any:
        return (SharedRead, (self.stack, self.views))


def read_shared_stack(site: SharedRead, *members: torch.Tensor) -> torch.Tensor:
    """What the exported code calls where it stacked `members` (and viewed
    the stack): a module-level function, so that FX's code generation can
    name it."""
    return site.read(members)


def _view_chain(node: torch.fx.Node) -> tuple[torch.fx.Node, list[ViewStep]]:
    """The single-use view ops with constant arguments applied to `node`'s
    value, in order, and the last node of that chain (`node` where none)."""
    from optimus_ir.api.param_cache import _Classifier

    classify = _Classifier()
    steps: list[ViewStep] = []
    end = node
    while len(end.users) == 1:
        user = next(iter(end.users))
        constant = all(not isinstance(a, torch.fx.Node) for a in (*user.args[1:], *user.kwargs.values()))
        if user.op not in ("call_function", "call_method") or not user.args or user.args[0] is not end:
            break
        if not constant or classify.short_name(user) not in _VIEW_USERS or not classify.is_pure(user):
            break
        steps.append((user.target, tuple(user.args[1:]), dict(user.kwargs), user.op == "call_method"))
        end = user
    return end, steps


def _adoptable(members: Sequence[Any], stack: SharedStack) -> bool:
    """`members` may replace `stack`'s: real Parameters (the model's new
    ones), none of them homed in another stack."""
    from torch._subclasses.fake_tensor import FakeTensor

    return all(
        isinstance(m, torch.nn.Parameter) and not isinstance(m, FakeTensor) and _HOMES.get(m) in (None, stack)
        for m in members
    )


def _shareable(members: Sequence[Any]) -> bool:
    """Distinct contiguous Parameters of one dtype, device and shape."""
    if not members or not all(isinstance(m, torch.nn.Parameter) for m in members):
        return False
    first = members[0]
    return (
        len({id(m) for m in members}) == len(members)
        and all(
            m.is_contiguous() and m.dtype == first.dtype and m.device == first.device and m.shape == first.shape
            for m in members
        )
        and first.layout == torch.strided
        and not first.is_sparse
    )


_VIEW_USERS = frozenset(
    """transpose permute t unsqueeze squeeze reshape view view_as expand expand_as
    unflatten flatten movedim moveaxis swapaxes swapdims narrow select getitem
    broadcast_to""".split()
)


def _only_read(node: torch.fx.Node) -> bool:
    """Every use of `node`'s value, through views, is a read by a pure op
    that makes a new tensor: nothing writes it, returns it or keeps it."""
    from optimus_ir.api.param_cache import _Classifier

    classify = _Classifier()
    pending, seen = [node], {node}
    while pending:
        value = pending.pop()
        for user in value.users:
            if user.op == "output":
                return False
            if not classify.is_pure(user):
                # our forms that write a buffer of their own (`baddbmm_into(slot, b, x, w)`)
                # only read their other arguments, and return the first
                if classify.writes_first_argument_only(user) and user.args and user.args[0] is not value:
                    continue
                return False
            written, unknown = classify.writes(user)
            if unknown or value in written:
                return False
            name = classify.short_name(user)
            if name in _VIEW_USERS or classify.may_alias_inputs(user):
                if name not in _VIEW_USERS:
                    return False  # an alias we cannot follow by name: not proven read-only
                if user not in seen:
                    seen.add(user)
                    pending.append(user)
    return True


def _stacked_parameter_reads(node: torch.fx.Node) -> list[torch.fx.Node] | None:
    """The get_attr nodes `node` stacks along dim 0, where it is such a stack."""
    if node.op != "call_function" or node.target is not torch.stack:
        return None
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    if dim != 0 or len(node.args) < 1 or not isinstance(node.args[0], list | tuple):
        return None
    reads = list(node.args[0])
    if not reads or not all(isinstance(r, torch.fx.Node) and r.op == "get_attr" for r in reads):
        return None
    if any(key not in ("dim",) for key in node.kwargs):
        return None
    return reads  # type: ignore[return-value]


def _value_of(gm: torch.fx.GraphModule, read: torch.fx.Node) -> Any:
    path = read.meta.get(ATTR_PATH_META)
    if path is None:
        return None
    try:
        return _read_path(gm, path)
    except (KeyError, AttributeError):
        return None


def _stack_for(
    members: Sequence[torch.nn.Parameter], label: str, *, home: bool = True, watch: bool = False
) -> SharedStack | None:
    """The stack homing exactly `members` (in order), a new one where none
    of them is homed yet, or None where some already live elsewhere."""
    existing = _HOMES.get(members[0])
    if existing is not None:
        same = len(existing.members) == len(members) and all(map(operator.is_, members, existing.members))
        return existing if same and not existing.retired else None
    if any(_HOMES.get(m) is not None for m in members):
        return None
    return SharedStack(members, label, home=home, watch=watch)


def share_parameter_stacks(gm: torch.fx.GraphModule) -> int:
    """Make every stack of parameters in `gm` (bound to the model it reads
    from: `param_cache.read_tensors_from_model`) read a `SharedStack`, where
    that is exact (see the module docstring); returns how many stacks are
    shared. The model's parameters are re-homed (`p.data = stack[i]`)."""
    shared: list[SharedStack] = []
    for node in list(gm.graph.find_nodes(op="call_function", target=torch.stack)):
        reads = _stacked_parameter_reads(node)
        if reads is None or not _only_read(node):
            continue
        members = [_value_of(gm, read) for read in reads]
        if not _shareable(members):
            continue
        stack = _stack_for(members, str(reads[0].target), watch=True)
        if stack is None:
            continue
        end, views = _view_chain(node)
        holder_name = f"{SHARED_STACKS_ATTRIBUTE}_{len(shared)}"
        gm.__dict__[holder_name] = SharedRead(stack, views)
        with gm.graph.inserting_before(node), warnings.catch_warnings():
            # not a registered module, parameter or buffer: deliberately (the state dict stays the model's)
            warnings.simplefilter("ignore", UserWarning)
            holder = gm.graph.get_attr(holder_name)
            read_node = gm.graph.call_function(read_shared_stack, (holder, *reads))
        read_node.meta.update(end.meta)
        read_node.meta[HOISTED_READ_META] = True  # made in the prologue, kept by its snapshot
        end.replace_all_uses_with(read_node)
        for dead in reversed([node, *_chain_nodes(node, len(views))]):
            gm.graph.erase_node(dead)
        shared.append(stack)
    if shared:
        gm.__dict__[SHARED_STACKS_ATTRIBUTE] = tuple(shared)
        recompile(gm)
        watch_module_dicts(_modules_read_by(gm))
    return len(shared)


def _modules_read_by(gm: torch.nn.Module) -> list[torch.nn.Module]:
    """Every module whose dicts `gm`'s prologue may walk: its own tree and
    the trees of modules it keeps as plain attributes (the model it reads
    from)."""
    seen: dict[int, torch.nn.Module] = {}
    roots = [gm, *(value for value in gm.__dict__.values() if isinstance(value, torch.nn.Module))]
    for root in roots:
        for module in root.modules():
            seen.setdefault(id(module), module)
    return list(seen.values())


def _chain_nodes(node: torch.fx.Node, length: int) -> list[torch.fx.Node]:
    """The `length` nodes of `node`'s single-use view chain (`_view_chain`)."""
    chain = []
    for _ in range(length):
        node = next(iter(node.users))
        chain.append(node)
    return chain


def shared_stacks(gm: Any) -> tuple[SharedStack, ...]:
    """The shared stacks an optimized module reads; () where none."""
    return getattr(gm, "__dict__", {}).get(SHARED_STACKS_ATTRIBUTE, ())


def release_shared_stacks(gm: Any) -> int:
    """Stop sharing the stacks `gm` reads and give their members their own
    storage (a module optimize() made and then did not keep); how many
    parameters moved."""
    return unshare_parameters([m for stack in shared_stacks(gm) for m in stack.members])


def unshare_parameters(model: torch.nn.Module | Iterable[torch.nn.Parameter]) -> int:
    """Give every parameter of `model` that lives in a shared stack its own
    storage again (a copy of its current value; the same Parameter object),
    and stop sharing those stacks (modules reading them stack per call from
    then on); returns how many parameters were given their own storage."""
    if isinstance(model, torch.nn.Module):
        unwatch_module_dicts(model.modules())
    parameters = model.parameters() if isinstance(model, torch.nn.Module) else model
    stacks = {id(s): s for s in (_HOMES.get(p) for p in parameters) if s is not None}
    moved = 0
    for stack in stacks.values():
        stack.retire(f"optimus_ir: unshare_parameters: fused stack {stack.label} is stacked per call from now on")
        with torch.no_grad():
            for member, slot in zip(stack.members, stack.slots, strict=True):
                if member.is_set_to(slot):
                    _TENSOR_DATA.__set__(member, slot.clone())
                    moved += 1
    return moved


class StackInputs:
    """The shared stacks a graph compiled by the torch.compile backend takes
    as extra inputs (`stacks_as_inputs`): per stack, its `SharedStack` and
    the positions of its members among the graph's original inputs."""

    def __init__(self, shares: Sequence[tuple[SharedStack, tuple[int, ...]]]) -> None:
        self.shares = tuple(shares)

    def __len__(self) -> int:
        return len(self.shares)

    def example_values(self, args: Sequence[Any]) -> list[torch.Tensor]:
        """What the compiler is given for the stacks: the members stacked
        (the members are not moved until `home`: Dynamo fakeified them where
        they were, and the compiler checks its inputs against that)."""
        return [stack.read([args[i] for i in positions], settle=False) for stack, positions in self.shares]

    def home(self) -> None:
        """Move the members of the stacks made for this graph into them."""
        for stack, _ in self.shares:
            if not stack.homed and not stack.retired:
                stack._home()  # noqa: SLF001

    def values(self, args: Sequence[Any]) -> list[torch.Tensor]:
        """Each stack as its graph input: the storage itself (or, under
        autograd, its differentiable view) where the members still live
        there, else a per-call stack of them."""
        return [stack.read([args[i] for i in positions]) for stack, positions in self.shares]

    def wrap(self, compiled: Any) -> Any:
        """`compiled`, called with the inputs Dynamo passes and handed the
        stacks after them."""
        values = self.values

        def run(*args: Any) -> Any:
            return compiled(*args, *values(args))

        return run


def stacks_as_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> StackInputs:
    """For the torch.compile backend (Dynamo lifts parameters to graph
    inputs): each stack of parameter inputs in `gm` that can be shared (see
    the module docstring) becomes one more input of `gm`, after Dynamo's,
    and its parameters are re-homed; returns what the caller must pass
    (`StackInputs.wrap`). `gm` is changed in place."""
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    if len(placeholders) != len(example_inputs):
        return StackInputs(())
    position = {node: i for i, node in enumerate(placeholders)}
    shares: list[tuple[SharedStack, tuple[int, ...]]] = []
    last = placeholders[-1] if placeholders else None
    for node in list(gm.graph.find_nodes(op="call_function", target=torch.stack)):
        members_nodes = _stacked_members(node, position)
        if members_nodes is None or not _only_read(node):
            continue
        positions = tuple(position[m] for m in members_nodes)
        members = [example_inputs[i] for i in positions]
        if not _shareable(members):
            continue
        stack = _stack_for(members, members_nodes[0].name, home=False)
        if stack is None:
            continue
        with gm.graph.inserting_after(last) if last is not None else gm.graph.inserting_before(None):
            value = gm.graph.placeholder(f"optimus_shared_stack_{len(shares)}")
        last = value
        value.meta.update({k: v for k, v in node.meta.items() if k in ("val", "example_value", "tensor_meta")})
        node.replace_all_uses_with(value)
        gm.graph.erase_node(node)
        shares.append((stack, positions))
    if shares:
        recompile(gm)
    return StackInputs(shares)


def _stacked_members(node: torch.fx.Node, position: dict[torch.fx.Node, int]) -> list[torch.fx.Node] | None:
    """The graph inputs `node` stacks along dim 0, where it is such a stack."""
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    if dim != 0 or not node.args or not isinstance(node.args[0], list | tuple) or set(node.kwargs) - {"dim"}:
        return None
    members = list(node.args[0])
    if not members or not all(isinstance(m, torch.fx.Node) and m in position for m in members):
        return None
    return members  # type: ignore[return-value]
