"""Tensor memory, measured where it is allocated (issue 24).

Process RSS is dominated by the interpreter and its libraries (hundreds of
MiB against a few MiB of tensors), so it hides what a graph rewrite changes.
This module measures tensor bytes instead, in two ways:

* `measure_call_memory(fn, *args)`: the peak of the tensor bytes live during
  one call, above what was live before it (`CallMemory.peak_bytes`), and the
  bytes allocated during the call still live after it (`held_bytes`: the
  outputs; after a backward, the gradients too). Three methods:

  - ``"cuda"`` (a CUDA tensor among the arguments): the caching
    allocator's own counters (`torch.cuda.reset_peak_memory_stats`,
    `max_memory_allocated`, `memory_allocated`); exact, for everything
    that allocates through PyTorch on the device, compiled code included.
  - ``"profiler"``: the allocation events of PyTorch's profiler
    (`profile_memory=True`): every allocation and free of the CPU
    allocator during the call, in order; the peak of their running sum.
    It sees what no op returns too (a kernel's temporaries) and the
    buffers of Inductor's generated code (they are allocated through
    the same allocator), so it is the method for compiled variants. It
    costs the profiler's start and a few microseconds per op; memory a
    library allocates with its own allocator (oneDNN scratch pads) is not
    seen.
  - ``"dispatch"``: a `TorchDispatchMode` that sees every ATen op: an
    output whose storage is none of the op's inputs' storages and not
    already tracked is a new allocation of `untyped_storage().nbytes()`
    bytes; the storage is freed when its C++ storage dies, which a finalizer
    on its Python storage object tells at that moment (PyTorch keeps that
    object alive exactly as long as the C++ storage) -- under autograd
    too, where a tensor saved for the backward outlives its Python
    tensor (tested: a temporary saved by an elementwise op stays counted
    until the backward frees it). The storage is watched, not the tensor
    object: views and saved tensors share it. Each op costs O(1) however
    many storages are live; a PyTorch that does not preserve storage
    objects falls back to weak storage references (`StorageWeakRef`),
    checked when an allocation would raise the peak. It sees only what goes through the dispatcher: eager
    code (every exported FX graph), not the C++ kernels of compiled code
    nor a kernel's internal temporaries. No profiler start: the cheap
    method, which `optimize`'s report uses.

  ``"auto"`` (the default) is "cuda" for CUDA arguments, else "profiler".

* `resident_tensor_bytes(module, model)`: the bytes of the tensors a module
  holds between calls, split into the model's parameters and buffers and
  everything else (the stacked weights `optimize(freeze=True)` computed
  once, the copies a compiled module keeps), deduplicated by storage (views
  into one stack count once). It walks the module's attributes
  (`_parameters`, `_buffers`, `_modules`, `__dict__`, containers, plain
  objects' `__dict__`, closures), not FX graphs and nodes (their metadata
  holds fake tensors, which hold no memory) and not what only C++ holds.

* `live_tensor_storages()`: every storage a live Python tensor refers to
  (from the garbage collector's objects): the difference before and after
  preparing a variant is what it holds, whatever holds it (the suite uses
  it for compiled variants, whose constants hang off compiled code).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import sys
import types
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

MIB = float(2**20)

METHODS = ("auto", "cuda", "profiler", "dispatch")
"""The methods of `measure_call_memory`."""

StorageKey = tuple[str, int]
"""(device, storage data pointer): one allocation."""


@dataclass(frozen=True)
class CallMemory:
    """Tensor memory of one call (`measure_call_memory`)."""

    peak_bytes: int
    """The peak of the bytes allocated during the call and live at once,
    above what was live before it (0 for a call allocating nothing)."""
    held_bytes: int
    """Bytes allocated during the call still live after it: the outputs
    (and, after a backward, the gradients); never negative (a call that
    frees memory it did not allocate is not credited with it)."""
    method: str
    """How it was measured: "cuda", "profiler" or "dispatch"."""
    allocations: int = 0
    """Allocations seen during the call (the cuda method: 0, not counted)."""

    @property
    def peak_mib(self) -> float:
        return self.peak_bytes / MIB

    @property
    def held_mib(self) -> float:
        return self.held_bytes / MIB

    def describe(self) -> str:
        return f"peak live {format_bytes(self.peak_bytes)}, outputs {format_bytes(self.held_bytes)} ({self.method})"


@dataclass(frozen=True)
class ResidentBytes:
    """The tensor bytes a module holds between calls (`resident_tensor_bytes`)."""

    parameter_bytes: int
    """Bytes of the storages of the model's parameters and buffers the
    module holds."""
    extra_bytes: int
    """Bytes of every other storage the module holds (stacked or frozen
    weights, constants): what it holds beyond the model's parameters."""
    extra: tuple[tuple[str, int], ...] = ()
    """(attribute path, bytes) of each extra storage, largest first."""
    model_bytes: int = 0
    """Bytes of all of the model's parameters and buffers, held or not:
    with `freeze=True` the module holds the fused weights only as stacks
    (`extra`), so `parameter_bytes` is below this and the comparison that
    matters is `total_bytes` against it."""

    @property
    def total_bytes(self) -> int:
        return self.parameter_bytes + self.extra_bytes

    @property
    def ratio_to_model(self) -> float | None:
        """`total_bytes` over the model's parameter and buffer bytes (None
        for a model without any)."""
        return self.total_bytes / self.model_bytes if self.model_bytes else None

    @property
    def extra_mib(self) -> float:
        return self.extra_bytes / MIB

    def describe(self) -> str:
        ratio = self.ratio_to_model
        of_model = f" ({ratio:.2f}x the model's {format_bytes(self.model_bytes)})" if ratio is not None else ""
        return (
            f"{format_bytes(self.total_bytes)}{of_model}: model parameters "
            f"{format_bytes(self.parameter_bytes)}, other {format_bytes(self.extra_bytes)}"
        )


def format_bytes(count: int) -> str:
    """`count` bytes for people: MiB with two decimals, KiB below 0.1 MiB."""
    if abs(count) < 0.1 * MIB:
        return f"{count / 1024:.1f} KiB"
    return f"{count / MIB:.2f} MiB"


# ---------------------------------------------------------------------------
# Storages
# ---------------------------------------------------------------------------


def _is_fake(tensor: torch.Tensor) -> bool:
    """A tensor without memory of its own (meta, fake)."""
    if type(tensor) is torch.Tensor or type(tensor) is torch.nn.Parameter:
        return tensor.device.type == "meta"
    if tensor.device.type == "meta":
        return True
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(tensor, FakeTensor)


def storage_key(tensor: torch.Tensor) -> StorageKey | None:
    """The allocation `tensor` lives in, or None (no memory: empty, meta,
    fake, or a layout without one storage)."""
    if _is_fake(tensor):
        return None
    try:
        pointer = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # sparse, nested: no single storage
        return None
    return (str(tensor.device), pointer) if pointer else None


def storage_bytes(tensor: torch.Tensor) -> int:
    """The bytes of the whole storage `tensor` lives in (a view counts its base)."""
    try:
        return int(tensor.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):
        return tensor.numel() * tensor.element_size()


def live_tensor_storages() -> dict[StorageKey, int]:
    """Every storage a live Python tensor refers to -> its bytes (a full
    garbage collection first; tensors only C++ holds are not seen)."""
    gc.collect()
    found: dict[StorageKey, int] = {}
    with warnings.catch_warnings():
        # isinstance() reads `__class__` of every object, deprecated proxies included
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor):
                key = storage_key(obj)
                if key is not None and key not in found:
                    found[key] = storage_bytes(obj)
    return found


def tensor_storages(value: Any) -> dict[StorageKey, int]:
    """The storages of the tensors in `value` (a pytree) -> their bytes."""
    found: dict[StorageKey, int] = {}
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, torch.Tensor):
            key = storage_key(leaf)
            if key is not None:
                found[key] = storage_bytes(leaf)
    return found


# ---------------------------------------------------------------------------
# One call
# ---------------------------------------------------------------------------


class _StorageTracker(TorchDispatchMode):
    """Tracks the storages the ops of a call allocate (the "dispatch" method).

    A storage's bytes leave the live total when its C++ storage dies: a
    `weakref.finalize` on its Python storage object, which PyTorch keeps
    for as long as the C++ storage lives (`_storage_objects_preserved`),
    fires at that moment -- under autograd too, where a tensor saved for
    the backward outlives its Python tensor. Each allocation then costs
    O(1), however many storages are live. On a PyTorch that does not
    preserve storage objects, frees are found by checking weak storage
    references (`StorageWeakRef`) before an allocation that would raise
    the peak (exact too, but a scan of the live storages each time the
    peak grows)."""

    optimus_observes_only = True
    """It watches real tensors only: helpers that make a tensor afresh under a
    tracing mode use their cached one (`optimus_ir.kernels.norms.OBSERVER_ATTRIBUTE`),
    so the call measured allocates what it does untracked."""

    def __init__(self) -> None:
        super().__init__()
        from torch.multiprocessing.reductions import StorageWeakRef

        self._weak = StorageWeakRef
        self._finalizing = _storage_objects_preserved()
        self.tracked: dict[StorageKey, tuple[Any, int]] = {}
        self._finalizers: list[weakref.finalize] = []
        self.live = 0
        self.peak = 0
        self.allocations = 0

    def _freed(self, key: StorageKey, token: object, size: int) -> None:
        """A tracked storage died (its finalizer)."""
        self.live -= size
        entry = self.tracked.get(key)
        if entry is not None and entry[0] is token:
            del self.tracked[key]

    def _prune(self) -> None:
        dead = [key for key, (ref, _) in self.tracked.items() if ref.expired()]
        for key in dead:
            self.live -= self.tracked.pop(key)[1]

    def _alive(self, key: StorageKey) -> bool:
        entry = self.tracked.get(key)
        if entry is None:
            return False
        if not self._finalizing and entry[0].expired():  # freed, and its address reused by the new one
            self.live -= self.tracked.pop(key)[1]
            return False
        return True

    def __torch_dispatch__(self, func: Any, types_: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {key for leaf in _tensor_leaves((args, kwargs)) if (key := storage_key(leaf)) is not None}
        for leaf in _tensor_leaves(out):
            key = storage_key(leaf)
            if key is None or key in inputs or self._alive(key):
                continue  # a view or an in-place result: no new bytes
            size = storage_bytes(leaf)
            storage = leaf.untyped_storage()
            if self._finalizing:
                token = object()
                self.tracked[key] = (token, size)
                self._finalizers.append(weakref.finalize(storage, self._freed, key, token, size))
            else:
                if self.live + size > self.peak:
                    self._prune()  # exact before it can set the peak
                self.tracked[key] = (self._weak(storage), size)
            self.live += size
            self.allocations += 1
            self.peak = max(self.peak, self.live)
        return out

    def held(self) -> int:
        """The bytes still live; stops watching (the finalizers of storages
        that outlive the measurement are detached)."""
        if not self._finalizing:
            self._prune()
        held = self.live
        for finalizer in self._finalizers:
            finalizer.detach()
        self._finalizers.clear()
        return held


def _storage_objects_preserved() -> bool:
    """Whether PyTorch keeps a storage's Python object alive for as long as
    the C++ storage lives (so that a finalizer on it fires when the memory
    is freed): the same object comes back for a tensor whose storage object
    was dropped in between."""
    global _PRESERVED
    if _PRESERVED is None:
        tensor = torch.empty(1)
        first = id(tensor.untyped_storage())
        gc.collect()
        _PRESERVED = id(tensor.untyped_storage()) == first
        if _PRESERVED:  # the id could be a reused address: check with a weak reference
            probe = tensor.untyped_storage()
            ref = weakref.ref(probe)
            del probe
            _PRESERVED = ref() is not None
    return _PRESERVED


_PRESERVED: bool | None = None


def _tensor_leaves(value: Any) -> Iterator[Any]:
    """The leaves of an op's arguments or results: flat lists and tuples
    directly (nearly every op), anything else through pytree."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        for item in value:
            if isinstance(item, torch.Tensor):
                yield item
            elif isinstance(item, (list, tuple, dict)):
                yield from _tensor_leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensor_leaves(item)
    elif value is not None:
        yield from (leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, torch.Tensor))


def _on_cuda(value: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) and leaf.is_cuda for leaf in pytree.tree_leaves(value))


def measure_call_memory(fn: Callable[..., Any], *args: Any, method: str = "auto") -> CallMemory:
    """The tensor memory of one call `fn(*args)`: the peak of the bytes it
    allocates and holds at once (above what was live before), and the
    bytes still allocated after it (its outputs, kept until measured, then
    dropped). `method`: "auto", "cuda", "profiler" or "dispatch" (see the
    module docstring). The call runs in the caller's grad mode: for
    forward+backward, let `fn` call `loss.backward()` (what the backward
    frees and the gradients it leaves are counted). Keyword arguments:
    wrap `fn` in a lambda."""
    if method not in METHODS:
        raise ValueError(f"measure_call_memory: method {method!r}; choose from {', '.join(METHODS)}")
    if method == "auto":
        method = "cuda" if torch.cuda.is_available() and _on_cuda(args) else "profiler"
    if method == "cuda":
        return _measure_cuda(fn, args)
    if method == "dispatch":
        tracker = _StorageTracker()
        with tracker:
            result = fn(*args)
        held = tracker.held()
        del result
        return CallMemory(tracker.peak, held, "dispatch", tracker.allocations)
    return _measure_profiler(fn, args)


def _measure_cuda(fn: Callable[..., Any], args: tuple[Any, ...]) -> CallMemory:
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = fn(*args)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    held = torch.cuda.memory_allocated() - before
    del result
    return CallMemory(max(0, peak), max(0, held), "cuda")


def _measure_profiler(fn: Callable[..., Any], args: tuple[Any, ...]) -> CallMemory:
    from torch.autograd import DeviceType
    from torch.autograd.profiler import profile

    host = {DeviceType.CPU, DeviceType.MKLDNN, DeviceType.IDEEP}
    prof = profile(profile_memory=True, record_shapes=False)
    with _native_stderr_silenced():  # Kineto prints "profiler_start" lines to stderr, whatever its log level
        prof.__enter__()
    try:
        result = fn(*args)
    finally:
        with _native_stderr_silenced():
            prof.__exit__(None, None, None)
    results = prof.kineto_results
    del result
    events = [
        e
        for e in (results.events() if results is not None else ())
        if e.name() == "[memory]" and e.device_type() in host
    ]
    # Events come per thread; their start times order them. The sort is
    # stable: same-instant events keep their recorded order.
    events.sort(key=lambda e: e.start_ns())
    live = peak = allocations = 0
    for event in events:
        change = int(event.nbytes())
        live += change
        if change > 0:
            allocations += 1
            peak = max(peak, live)
    return CallMemory(peak, max(0, live), "profiler", allocations)


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """File descriptor 2 pointed at the null device for the duration: what
    native code writes to stderr (not Python's `sys.stderr` objects, which
    are flushed first) is dropped. Used only around the profiler's start
    and stop, never around the measured call, so a real error still shows."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (embedded interpreters): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# ---------------------------------------------------------------------------
# Value lifetimes of an FX graph
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KeptByView:
    """A storage that a few live views keep alive whole (`ValueLifetimes`)."""

    producer: str
    """The FX node that allocated it (a fused group's stack, typically)."""
    storage_bytes: int
    unneeded_bytes: int
    """The most bytes of it that no live value could read, at one point."""
    nodes: int
    """For how many nodes some of it was unneeded."""
    kept_by: str
    """The nodes whose values kept it alive then."""


@dataclass(frozen=True)
class ValueLifetimes:
    """The tensor memory of an FX graph's values when each dies right after
    its last reader, in the graph's node order (what the code FX generates
    does: it drops every value after its last use): `graph_value_lifetimes`."""

    peak_live_bytes: int
    """The peak of the bytes of the storages allocated during the call and
    alive at once (a storage lives while any value viewing it does),
    outputs included: what a call of the graph's code should measure."""
    peak_needed_bytes: int
    """The peak of the bytes some live value can still read: below
    `peak_live_bytes` where a view keeps a whole stack alive."""
    nodes: int
    """Nodes run."""
    kept_by_views: tuple[KeptByView, ...] = ()
    """The storages kept alive by views of part of them, most unneeded bytes first."""

    @property
    def view_overhead_bytes(self) -> int:
        return self.peak_live_bytes - self.peak_needed_bytes

    def describe(self) -> str:
        lines = [
            f"{self.nodes} nodes: peak live {format_bytes(self.peak_live_bytes)} when every value dies after "
            f"its last reader; {format_bytes(self.peak_needed_bytes)} of it readable "
            f"({format_bytes(self.view_overhead_bytes)} kept only by views of part of a storage)"
        ]
        for kept in self.kept_by_views[:5]:
            lines.append(
                f"  {kept.producer}: {format_bytes(kept.unneeded_bytes)} of {format_bytes(kept.storage_bytes)} "
                f"kept by {kept.kept_by} over {kept.nodes} nodes"
            )
        return "\n".join(lines)


def graph_value_lifetimes(gm: torch.fx.GraphModule, *args: Any) -> ValueLifetimes:
    """Run `gm`'s graph on `args` node by node (under `no_grad`, every value
    kept until the end so that storages are not reused) and compute the
    lifetimes its values have when each dies after its last reader in node
    order: the peak of the live storage bytes, the peak of the bytes live
    values can read (a view of one member of a stack keeps the whole stack
    alive: the difference), and the storages so kept. Memory: every value
    of the graph at once, for the duration of the analysis."""
    order = list(gm.graph.nodes)
    index = {node: i for i, node in enumerate(order)}
    end = len(order)
    last_use = {node: max((index[u] for u in node.users), default=index[node]) for node in order}
    for node in order:
        if node.op == "output":
            for returned in node.all_input_nodes:
                last_use[returned] = end

    spans: dict[torch.fx.Node, list[tuple[StorageKey, int, int]]] = {}
    values: list[Any] = []  # keeps every value alive: no storage address is reused during the run

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            result = super().run_node(n)
            values.append(result)
            found = []
            for leaf in _tensor_leaves(result):
                key = storage_key(leaf)
                if key is not None:
                    start = leaf.storage_offset() * leaf.element_size()
                    extent = _byte_extent(leaf)
                    found.append((key, start, start + extent))
            spans[n] = found
            return result

    with torch.no_grad():
        _Recorder(gm, garbage_collect_values=False).run(*args)

    preexisting: set[StorageKey] = set()
    storage_size: dict[StorageKey, int] = {}
    producer: dict[StorageKey, torch.fx.Node] = {}
    readers: dict[StorageKey, list[tuple[int, int, int, int, torch.fx.Node]]] = {}
    for node in order:
        for key, lo, hi in spans.get(node, ()):
            if node.op in ("placeholder", "get_attr"):
                preexisting.add(key)
            if key in preexisting:
                continue
            if key not in producer:
                producer[key] = node
            readers.setdefault(key, []).append((index[node], last_use[node], lo, hi, node))
    for value in values:
        for leaf in _tensor_leaves(value):
            key = storage_key(leaf)
            if key in producer:
                storage_size[key] = storage_bytes(leaf)
    values.clear()

    # Per storage, what is live and readable changes only where one of its
    # values is made or read last: sum constant segments into difference
    # arrays (work per storage ~ its values squared, not its lifetime).
    live = [0] * (end + 2)
    needed = [0] * (end + 2)
    kept: list[KeptByView] = []
    for key, intervals in readers.items():
        size = storage_size[key]
        first = min(i for i, _, _, _, _ in intervals)
        last = max(j for _, j, _, _, _ in intervals)
        live[first] += size
        live[last + 1] -= size
        worst = 0
        unneeded_nodes = 0
        holders: set[str] = set()
        points = sorted({i for i, _, _, _, _ in intervals} | {j + 1 for _, j, _, _, _ in intervals})
        for start, stop in zip(points, points[1:]):
            active = [(lo, hi, n) for i, j, lo, hi, n in intervals if i <= start <= j]
            covered = _union_length(sorted((lo, hi) for lo, hi, _ in active), size)
            needed[start] += covered
            needed[stop] -= covered
            if covered < size:
                unneeded_nodes += stop - start
                if size - covered > worst:
                    worst = size - covered
                    holders = {n.name for _, _, n in active}
        if worst:
            shown = ", ".join(sorted(holders)[:4]) + (", ..." if len(holders) > 4 else "")
            kept.append(KeptByView(producer[key].name, size, worst, unneeded_nodes, shown))
    live = list(itertools.accumulate(live))
    needed = list(itertools.accumulate(needed))
    kept.sort(key=lambda k: (-k.unneeded_bytes, k.producer))
    return ValueLifetimes(max(live, default=0), max(needed, default=0), end, tuple(kept))


def _byte_extent(tensor: torch.Tensor) -> int:
    """The bytes from a tensor's first element to one past its last, in its storage."""
    if tensor.numel() == 0:
        return 0
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    return (last + 1) * tensor.element_size()


def _union_length(ranges: list[tuple[int, int]], limit: int) -> int:
    """The length of the union of sorted byte ranges, clipped to [0, limit)."""
    total = 0
    reach = 0
    for lo, hi in ranges:
        lo, hi = max(lo, reach), min(hi, limit)
        if hi > lo:
            total += hi - lo
            reach = hi
    return total


# ---------------------------------------------------------------------------
# Between calls
# ---------------------------------------------------------------------------


def _held_tensors(root: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """(attribute path, tensor) of every tensor reachable from `root`
    through module dicts, `__dict__`s, containers and closures (each
    object visited once; FX graphs, classes, modules and functions'
    globals are not followed)."""
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        path, obj = stack.pop()
        if id(obj) in seen or obj is None:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            yield path, obj
            continue
        children: Iterable[tuple[str, Any]] = ()
        if isinstance(obj, (str, bytes, int, float, complex, bool, type, types.ModuleType)):
            continue
        if isinstance(obj, (torch.fx.Graph, torch.fx.Node, torch.dtype, torch.device, torch.Size)):
            continue
        if type(obj).__module__.startswith(_TENSORLESS_PACKAGES) or isinstance(obj, _ir_types()):
            continue  # IR a report keeps (tens of thousands of objects, no tensor)
        if isinstance(obj, dict):
            children = ((f"{path}[{k!r}]", v) for k, v in obj.items())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            children = ((f"{path}[{i}]", v) for i, v in enumerate(obj))
        elif isinstance(obj, types.FunctionType):
            cells = obj.__closure__ or ()
            children = ((f"{path}.<closure>", c.cell_contents) for c in cells if _cell_full(c))
        elif isinstance(obj, types.MethodType):
            children = ((f"{path}.__self__", obj.__self__),)
        else:
            attributes = getattr(obj, "__dict__", None)
            if isinstance(attributes, dict):
                children = ((f"{path}.{k}", v) for k, v in attributes.items())
        stack.extend(children)


_TENSORLESS_PACKAGES = ("xdsl.",)
"""Packages whose objects hold no tensor: the walk does not enter them."""


def _ir_types() -> tuple[type, ...]:
    """The xDSL IR classes (the project's ops and attributes subclass them)."""
    from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

    return (Operation, Attribute, SSAValue, Block, Region)


def _cell_full(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def resident_tensor_bytes(module: Any, model: torch.nn.Module | None = None) -> ResidentBytes:
    """The tensor bytes `module` holds between calls, deduplicated by
    storage: those of `model`'s parameters and buffers (default: `module`'s
    own parameters and persistent buffers, when it is an nn.Module), and
    everything else it holds (`ResidentBytes.extra`, with where). A view
    into a stack counts the stack once; a tensor sharing a parameter's
    storage counts as the parameter."""
    owner = model if model is not None else module
    parameters: set[StorageKey] = set()
    model_bytes = 0
    if isinstance(owner, torch.nn.Module):
        for tensor in owner.parameters():
            if (key := storage_key(tensor)) is not None and key not in parameters:
                parameters.add(key)
                model_bytes += storage_bytes(tensor)
        for submodule in owner.modules():
            skipped = submodule._non_persistent_buffers_set if model is None else set()  # noqa: SLF001
            for name, tensor in submodule._buffers.items():  # noqa: SLF001
                if tensor is not None and name not in skipped and (key := storage_key(tensor)) is not None:
                    if key not in parameters:
                        parameters.add(key)
                        model_bytes += storage_bytes(tensor)
    parameter_bytes = 0
    extra: dict[StorageKey, tuple[str, int]] = {}
    counted: set[StorageKey] = set()
    for path, tensor in _held_tensors(module):
        key = storage_key(tensor)
        if key is None or key in counted:
            continue
        counted.add(key)
        size = storage_bytes(tensor)
        if key in parameters:
            parameter_bytes += size
        else:
            extra[key] = (path.lstrip("."), size)
    listed = tuple(sorted(extra.values(), key=lambda item: -item[1]))
    return ResidentBytes(parameter_bytes, sum(size for _, size in listed), listed, model_bytes)


__all__ = [
    "METHODS",
    "CallMemory",
    "ResidentBytes",
    "KeptByView",
    "ValueLifetimes",
    "format_bytes",
    "graph_value_lifetimes",
    "live_tensor_storages",
    "measure_call_memory",
    "resident_tensor_bytes",
    "storage_bytes",
    "storage_key",
    "tensor_storages",
]
