"""`optimus_ir.retain_freed_memory`: glibc keeps freed heap in the process,
so a call that frees what the last one allocated faults no fresh pages.
Process-wide and for good, so each check runs in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import optimus_ir
from optimus_ir.api.allocator import _glibc, page_faults_per_call

_CHILD = textwrap.dedent(
    """
    import json, torch
    import optimus_ir
    from optimus_ir.api.allocator import page_faults_per_call

    torch.set_num_threads(1)

    def call():  # two 12 MiB blocks, freed together: 24 MiB free at the heap's top
        a = torch.ones(3 << 20)
        b = torch.ones(3 << 20)
        del a, b

    before = page_faults_per_call(call, 5)
    setting = optimus_ir.retain_freed_memory()
    # the first calls after the switch may still move a block from its own
    # mapping into the heap (a fresh 12 MiB once): the steady state is the last window
    after = [page_faults_per_call(call, 5) for _ in range(3)][-1]
    print(json.dumps({"before": before, "after": after, "applied": setting.applied,
                      "retained": setting.retained_bytes, "block": setting.heap_block_bytes}))
    """
)


@pytest.mark.skipif(_glibc() is None, reason="the C library is not glibc")
def test_a_call_that_frees_what_it_allocated_faults_no_fresh_pages_once_memory_is_retained() -> None:
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["applied"] and result["retained"] == 1 << 30 and result["block"] == 32 << 20
    # glibc's defaults: the 24 MiB freed at the top go back to the system on
    # every call, and the next call maps and zeroes them again (about 6,000
    # pages; a few dozen 2 MiB pages where the kernel gives huge pages)
    assert result["before"] >= 12
    assert result["after"] <= 1


@pytest.mark.parametrize("retained", [0, 1 << 20, -5, 2.0**31, True])
def test_a_limit_below_the_largest_heap_block_or_not_an_int_is_refused(retained: object) -> None:
    with pytest.raises(ValueError, match="retained_bytes must be an int of at least"):
        optimus_ir.retain_freed_memory(retained)  # type: ignore[arg-type]


def test_page_faults_per_call_counts_the_fresh_pages_of_a_call() -> None:
    # 64 MiB is above the largest size glibc ever serves from its free
    # lists: every call maps fresh pages (one a 4 KiB page, or one a 2 MiB
    # page where the kernel backs it with huge pages), and touches them all.
    fresh = page_faults_per_call(lambda: torch.ones(16 << 20), calls=3)
    reused = torch.empty(16 << 20)
    warm = page_faults_per_call(lambda: reused.fill_(1.0), calls=3)
    assert fresh >= 32
    assert warm <= 1
