"""The int64 metadata tables the kernel launchers hand their kernels
(addresses, sizes, strides, prefix sums): host tables cached by value in
pinned memory, copied to the device per launch without a synchronisation,
and capture-safe under CUDA graphs (`torch.compile(mode="reduce-overhead")`,
`torch.cuda.graph`).

Why it is shaped like this:

* Building the table with `torch.tensor(rows, device="cuda")` copies from
  pageable host memory, which synchronises the stream: illegal while a
  stream is being captured, and a host/device round trip per launch in
  eager mode.
* A table is a pure function of its values, so the host tables are cached
  by the values themselves (and the device): a hit is exactly the table
  this launch needs, whatever happened since, so the cache can never serve
  a stale table (the addresses are part of the key). Steady-state calls hit
  as soon as the caching allocator hands out the same blocks again; a hit
  saves building and pinning the host table.
* The device copy is made per launch, into a fresh tensor from torch's
  allocator that lives until the kernel is queued, like any intermediate.
  Keeping device tables alive across calls would be cheaper, but under
  cudagraph trees every allocation of a warm-up or recording comes from the
  graphs' private pool, whose state the trees reset to checkpoints that only
  know their own live tensors: a long-lived table there could be handed out
  again and overwritten while the cache still served it. A per-launch copy
  is what every op's intermediate does, so it is safe in any pool.
* Outside capture the copy is one `non_blocking` copy from the pinned host
  table (torch's host allocator keeps the source until the copy is done).
* During capture the source must stay valid for every replay and must not
  be allocated or event-tracked mid-capture: the values go into a
  never-freed slice of a pinned arena (reserved outside capture), and a
  small Triton kernel copies them to the device, reading the pinned memory
  through its device address; the graph records that kernel (where the
  kernel cannot read pinned memory, found out once outside capture, a
  `non_blocking` torch copy from the same slice instead). Host tables
  used during a capture (hit or miss) are never evicted; eager ones are
  evicted least recently used beyond `capacity`.
* On other devices (the CPU under Triton's interpreter) the host table is
  the table; a simulated capture (tests) takes the capture path.

`tables()` is the process-wide cache the launchers share.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

_ARENA_ELEMENTS = 1 << 16
"""int64 slots of one pinned arena (512 KiB): many graphs' tables."""
_COPY_BLOCK = 1024


@triton.jit(do_not_specialize=["n"])
def _copy_table_kernel(src, dst, n, BLOCK: tl.constexpr):
    """`dst[:n] = src[:n]` (int64): the capture-time copy from pinned host
    memory, recorded in the graph as a kernel. `n` is not specialised, so
    the one variant compiled outside capture (addresses are always 16-byte
    aligned: arena slices, pinned and device tensors) serves every table."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def stream_capturing(device: torch.device) -> bool:
    """Whether the current stream of CUDA `device` is being captured into a
    CUDA graph (False for every other device)."""
    if device.type != "cuda":
        return False
    return bool(torch.cuda.is_current_stream_capturing())


@dataclass
class _Entry:
    host: torch.Tensor
    """The table's values: pinned host memory on CUDA, the table itself
    elsewhere."""


@dataclass
class CacheStats:
    """Counters of one cache (tests and the benchmark read them)."""

    hits: int = 0
    misses: int = 0
    captured_misses: int = 0
    evictions: int = 0


class _PinnedArena:
    """Bump allocation of never-freed int64 slices of pinned host memory
    (pinned only where there is a CUDA device): sources of captured copies."""

    def __init__(self, pin: bool) -> None:
        self.pin = pin
        self.block: torch.Tensor | None = None
        self.used = 0

    def reserve(self) -> None:
        """Allocate the first block (call outside capture)."""
        if self.block is None:
            self._grow(_ARENA_ELEMENTS)

    def _grow(self, n: int) -> None:
        # The old block stays alive through the slices taken from it.
        self.block = torch.empty(max(n, _ARENA_ELEMENTS), dtype=torch.int64, pin_memory=self.pin)
        self.used = 0

    def take(self, values: Sequence[int]) -> torch.Tensor:
        """A slice holding `values`."""
        n = len(values)
        if self.block is None or self.used + n > self.block.numel():
            self._grow(n)
        assert self.block is not None
        piece = self.block[self.used : self.used + n]
        # Stay 16-byte aligned for the next slice.
        self.used += n + (n & 1)
        piece.copy_(torch.tensor(values, dtype=torch.int64))
        return piece


class MetadataTables:
    """Host tables by value, and their per-launch device copies (see the
    module docstring)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self.stats = CacheStats()
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        """Eager host tables, least recently used first."""
        self._pinned: dict[tuple, _Entry] = {}
        """Host tables a capture used: kept for the life of the process."""
        self._arenas: dict[torch.device, _PinnedArena] = {}
        self._no_kernel_copy: set[torch.device] = set()
        """Devices where the copy kernel failed: captures copy with torch."""

    def __len__(self) -> int:
        return len(self._entries) + len(self._pinned)

    def table(
        self, values: Sequence[int], device: torch.device, capturing: bool | None = None
    ) -> torch.Tensor:
        """A 1-D int64 tensor on `device` holding `values`, for one launch
        (the caller must not write to it and must hold it until the kernel
        is queued). `capturing` overrides the stream-capture test (tests
        simulate a capture on the CPU)."""
        key = (device.type, device.index, tuple(values))
        if capturing is None:
            capturing = stream_capturing(device)
        entry = self._lookup(key, capturing)
        if entry is None:
            self.stats.misses += 1
            entry = self._build(key[2], device, capturing)
            if capturing:
                self._pinned[key] = entry
            else:
                self._entries[key] = entry
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
                    self.stats.evictions += 1
        else:
            self.stats.hits += 1
        return self._device_copy(entry.host, device, capturing)

    def _lookup(self, key: tuple, capturing: bool) -> _Entry | None:
        entry = self._pinned.get(key)
        if entry is not None:
            return entry
        entry = self._entries.get(key)
        if entry is not None:
            if capturing:  # a graph reads it from now on: keep it for good
                del self._entries[key]
                self._pinned[key] = entry
            else:
                self._entries.move_to_end(key)
        return entry

    def _arena(self, device: torch.device) -> _PinnedArena:
        arena = self._arenas.get(device)
        if arena is None:
            arena = self._arenas[device] = _PinnedArena(pin=device.type == "cuda")
        return arena

    def _build(self, values: tuple[int, ...], device: torch.device, capturing: bool) -> _Entry:
        if capturing:
            self.stats.captured_misses += 1
            return _Entry(self._arena(device).take(values))
        if device.type != "cuda":
            return _Entry(torch.tensor(values, dtype=torch.int64, device=device))
        arena = self._arena(device)
        if arena.block is None:
            # Prepare the capture path now, outside capture: the pinned arena
            # (pinned allocation) and the copy kernel (compiled and loaded
            # here, not in the middle of a capture). Should this Triton or
            # driver refuse a pinned pointer, captures copy with torch
            # instead (`non_blocking` from the never-freed pinned slice).
            arena.reserve()
            scratch = torch.empty(1, dtype=torch.int64, device=device)
            try:
                _copy_table_kernel[(1,)](arena.take([0]), scratch, 1, BLOCK=_COPY_BLOCK)
            except Exception:  # noqa: BLE001 - any failure: the torch copy
                self._no_kernel_copy.add(device)
        return _Entry(torch.tensor(values, dtype=torch.int64, pin_memory=True))

    def _device_copy(self, host: torch.Tensor, device: torch.device, capturing: bool) -> torch.Tensor:
        if not capturing:
            if device.type != "cuda":
                return host
            table = torch.empty(host.shape, dtype=torch.int64, device=device)
            return table.copy_(host, non_blocking=True)
        table = torch.empty(host.shape, dtype=torch.int64, device=device)
        if device in self._no_kernel_copy:
            return table.copy_(host, non_blocking=True)
        if host.numel():
            _copy_table_kernel[(triton.cdiv(host.numel(), _COPY_BLOCK),)](
                host, table, host.numel(), BLOCK=_COPY_BLOCK
            )
        return table

    def clear(self) -> None:
        """Forget every host table not used by a capture, and the counters."""
        self._entries.clear()
        self.stats = CacheStats()


_TABLES = MetadataTables()


def tables() -> MetadataTables:
    """The process-wide cache the launchers share."""
    return _TABLES
