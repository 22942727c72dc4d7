"""The interleaving of `optimus_ir.examples.timing` (what the demo and the
benchmarks time with): the round-robin order and the garbage collector's
state. Nothing here is timed."""

from __future__ import annotations

import gc

import pytest

from optimus_ir.examples.timing import round_robin


@pytest.mark.parametrize("pause_gc", [True, False])
def test_round_robin_rotates_the_order_and_restores_the_collector(pause_gc: bool) -> None:
    calls: list[tuple[str, bool]] = []

    def sample(name: str) -> float:
        calls.append((name, gc.isenabled()))
        return float(len(calls))

    assert gc.isenabled()
    samples = round_robin(["a", "b", "c"], 4, sample, pause_gc=pause_gc)
    assert gc.isenabled()
    assert [name for name, _ in calls] == list("abc" "bca" "cab" "abc")
    assert all(enabled is not pause_gc for _, enabled in calls)
    assert samples == {"a": [1.0, 6.0, 8.0, 10.0], "b": [2.0, 4.0, 9.0, 11.0], "c": [3.0, 5.0, 7.0, 12.0]}


def test_round_robin_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        round_robin(["a"], 2, lambda name: 0.0)
        assert not gc.isenabled()
    finally:
        gc.enable()
