"""The int64 metadata tables the kernel launchers hand their kernels
(addresses, sizes, strides, prefix sums), cached on the device so a launch
whose table was seen before copies and allocates nothing.

Why (CUDA graphs, `torch.compile(mode="reduce-overhead")`):

* Building the table with `torch.tensor(rows, device="cuda")` copies from
  pageable host memory, which synchronises the stream: illegal while a
  stream is being captured, and a host/device round trip per launch in
  eager mode.
* A table is a pure function of its values, so the cache is keyed by the
  values themselves (and the device): a hit is exactly the table this launch
  needs, whatever happened since, so the cache can never serve a stale table
  (the addresses are part of the key; a freed and reused address that comes
  back with the same sizes needs the same table). Steady-state eager calls
  hit as soon as the caching allocator hands out the same blocks again, and
  CUDA graph replays reuse the addresses of the capture by construction.
* On a miss outside capture the values go through a pinned host tensor and
  one `non_blocking` copy (no stream synchronisation).
* On a miss during capture the values are written into a slice of a pinned
  host arena (allocated outside capture, never freed) and copied to the
  device table by a small Triton kernel that reads the pinned memory through
  its device address: the copy is recorded in the graph as a kernel, its
  source stays valid for every replay, and no host allocator event or
  pageable copy is involved. Tables used during a capture (hit or miss) are
  never evicted, since a graph may replay them at any time.
* Eager tables are evicted least recently used beyond `capacity`.

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


@triton.jit
def _copy_table_kernel(src, dst, n, BLOCK: tl.constexpr):
    """`dst[:n] = src[:n]` (int64): the capture-time copy from pinned host
    memory, recorded in the graph as a kernel."""
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
    table: torch.Tensor
    """The device table, read by the kernels."""
    source: torch.Tensor | None = None
    """The pinned host slice a captured copy reads at every replay."""


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
    """Device int64 tables by value (see the module docstring)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self.stats = CacheStats()
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        """Eager tables, least recently used first."""
        self._pinned: dict[tuple, _Entry] = {}
        """Tables a capture used: kept for the life of the process."""
        self._arenas: dict[torch.device, _PinnedArena] = {}

    def __len__(self) -> int:
        return len(self._entries) + len(self._pinned)

    def table(
        self, values: Sequence[int], device: torch.device, capturing: bool | None = None
    ) -> torch.Tensor:
        """The 1-D int64 tensor on `device` holding `values` (cached; the
        caller must not write to it). `capturing` overrides the stream-capture
        test (tests simulate a capture on CPU)."""
        key = (device.type, device.index, tuple(values))
        if capturing is None:
            capturing = stream_capturing(device)
        entry = self._pinned.get(key)
        if entry is not None:
            self.stats.hits += 1
            return entry.table
        entry = self._entries.get(key)
        if entry is not None:
            self.stats.hits += 1
            if capturing:  # a graph now reads it: keep it for good
                del self._entries[key]
                self._pinned[key] = entry
            else:
                self._entries.move_to_end(key)
            return entry.table
        self.stats.misses += 1
        if capturing:
            entry = self._pinned[key] = self._build_captured(key[2], device)
        else:
            entry = self._entries[key] = self._build(key[2], device)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
                self.stats.evictions += 1
        return entry.table

    def _arena(self, device: torch.device) -> _PinnedArena:
        arena = self._arenas.get(device)
        if arena is None:
            arena = self._arenas[device] = _PinnedArena(pin=device.type == "cuda")
        return arena

    def _build(self, values: tuple[int, ...], device: torch.device) -> _Entry:
        if device.type != "cuda":
            return _Entry(torch.tensor(values, dtype=torch.int64, device=device))
        arena = self._arena(device)
        if arena.block is None:
            # Prepare the capture path now, outside capture: the pinned arena
            # (pinned allocation) and the copy kernel (compiled and loaded
            # here, not in the middle of a capture).
            arena.reserve()
            scratch = torch.empty(1, dtype=torch.int64, device=device)
            _copy_table_kernel[(1,)](arena.take([0]), scratch, 1, BLOCK=_COPY_BLOCK)
        host = torch.tensor(values, dtype=torch.int64, pin_memory=True)
        table = torch.empty(len(values), dtype=torch.int64, device=device)
        table.copy_(host, non_blocking=True)  # the host allocator keeps `host` until done
        return _Entry(table)

    def _build_captured(self, values: tuple[int, ...], device: torch.device) -> _Entry:
        self.stats.captured_misses += 1
        source = self._arena(device).take(values)
        table = torch.empty(len(values), dtype=torch.int64, device=device)
        if values:
            _copy_table_kernel[(triton.cdiv(len(values), _COPY_BLOCK),)](
                source, table, len(values), BLOCK=_COPY_BLOCK
            )
        return _Entry(table, source)

    def clear(self) -> None:
        """Forget every table not used by a capture, and the counters."""
        self._entries.clear()
        self.stats = CacheStats()


_TABLES = MetadataTables()


def tables() -> MetadataTables:
    """The process-wide cache the launchers share."""
    return _TABLES
