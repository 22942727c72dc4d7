"""Keeping freed memory in the process: `retain_freed_memory`.

PyTorch's CPU tensors are allocated by the C library's `malloc`. glibc
serves a large block from its heap only once the size has been freed
before (its mmap threshold follows the largest freed block, up to 32 MiB),
and gives the top of its heap back to the system whenever more than twice
that threshold lies free there. A model whose call allocates, then frees, a
few MiB more than that at the heap's top pays for fresh pages on every call:
the kernel maps and zeroes each 4 KiB page again on its first touch (about
0.45 ms per MiB on the 2-core CI machine). Whether a call does so depends on
what the process allocated before, so the same module runs several ms
slower in one process than in the next (`benchmarks/bench_shared_stacks.py`
counts each column's page faults per call; docs/architecture/benchmarks.md).

Fused groups allocate fewer, larger tensors than their members, so an
optimized module meets this more often than the graph it came from:
measured at batch 512 on the 64-tower model (no_grad, one thread), the
frozen module took 2,049 to 2,368 faults per call in three processes of
ten and ran at 0.79-0.93x of the captured graph there (which took at most
99); with `retain_freed_memory()` it took at most 22 in five of five and
ran at 1.06-1.15x. Serving stacks get the same effect from jemalloc or
tcmalloc.

`optimize()` never calls it: it changes the whole process's allocator, for
every library in it, and cannot be undone (glibc keeps the fixed thresholds
from then on), so it is the user's call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import resource
from collections.abc import Callable
from typing import Any

import attrs

M_TRIM_THRESHOLD = -1
"""glibc's `mallopt` parameter: the free bytes at the heap's top above which
`free` gives them back to the system."""

M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameter: the size from which `malloc` maps a block of
its own instead of taking it from the heap."""

LARGEST_HEAP_BLOCK = 32 * 1024 * 1024
"""The largest mmap threshold glibc accepts on 64-bit systems
(`DEFAULT_MMAP_THRESHOLD_MAX`): blocks up to 32 MiB come from the heap."""

DEFAULT_RETAINED_BYTES = 1024 * 1024 * 1024
"""`retain_freed_memory`'s default: up to 1 GiB of freed heap stays in the
process."""


@attrs.frozen
class AllocatorSetting:
    """What `retain_freed_memory` did: `applied` (False: nothing changed),
    the thresholds it set, and why it did not apply where it did not."""

    applied: bool
    retained_bytes: int = 0
    heap_block_bytes: int = 0
    reason: str = ""


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The process's C library when it is glibc (it has `mallopt` and says
    its version), else None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # glibc's own: musl and others have mallopt or not, never this
        libc.mallopt
    except (OSError, AttributeError):
        return None
    return libc


def retain_freed_memory(retained_bytes: int = DEFAULT_RETAINED_BYTES) -> AllocatorSetting:
    """Ask glibc to keep up to `retained_bytes` of freed heap in the process
    and to serve every block up to 32 MiB from its heap, so that a call
    that frees what the last one allocated reuses those pages instead of
    faulting fresh ones (see the module's docstring for when that matters).

    Process-wide and for good: the process holds on to up to
    `retained_bytes` more memory than it uses (RSS, not tensor bytes). On
    a C library that is not glibc nothing changes, and the result says
    why."""
    if not isinstance(retained_bytes, int) or isinstance(retained_bytes, bool) or retained_bytes < LARGEST_HEAP_BLOCK:
        raise ValueError(
            f"retain_freed_memory: retained_bytes must be an int of at least {LARGEST_HEAP_BLOCK} "
            f"(32 MiB, the largest heap block), got {retained_bytes!r}"
        )
    libc = _glibc()
    if libc is None:
        return AllocatorSetting(False, reason="the C library is not glibc (no mallopt): nothing changed")
    limit = min(retained_bytes, 2**31 - 1)  # mallopt takes a C int
    if not libc.mallopt(M_MMAP_THRESHOLD, LARGEST_HEAP_BLOCK) or not libc.mallopt(M_TRIM_THRESHOLD, limit):
        return AllocatorSetting(False, reason="glibc's mallopt refused the thresholds")
    return AllocatorSetting(True, retained_bytes=limit, heap_block_bytes=LARGEST_HEAP_BLOCK)


def minor_faults() -> int:
    """The page faults this process took so far without reading a disk, in
    all its threads (torch's intra-op threads touch pages of a tensor the
    caller allocated): each a fresh page the kernel mapped, zeroed, for an
    allocation's first touch."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def page_faults_per_call(call: Callable[[], Any], calls: int = 10) -> float:
    """The mean minor page faults of one call over `calls` back-to-back
    calls, after one warm-up call (its own count: not timed, so that the
    timing samples pay no system call)."""
    call()
    start = minor_faults()
    for _ in range(calls):
        call()
    return (minor_faults() - start) / calls


__all__ = ["AllocatorSetting", "DEFAULT_RETAINED_BYTES", "minor_faults", "page_faults_per_call", "retain_freed_memory"]
