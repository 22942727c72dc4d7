"""The records of a benchmark suite run (`benchmarks/suite.py`): what it
measures (`Settings`) and what it found, per model and variant (`Cell`) and
per model (`ModelResult`, with its speedups).
"""

from __future__ import annotations

from dataclasses import dataclass, field


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass
class Cell:
    """The figures of one (model, variant)."""

    ops: int | None = None
    """Compute ops: calls less views, getitem and lookups (`op_counts`)."""
    calls: int | None = None
    """Every call node."""
    first_call_s: float | None = None
    pass_ms: float | None = None
    median_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    rss_peak_mib: float | None = None
    """The process's peak resident set over `MEMORY_CALLS` calls (CPU), or
    `torch.cuda.max_memory_allocated` (GPU): process-wide, not tensors."""
    peak_live_mib: float | None = None
    """Peak tensor bytes live during one call, above what was live before
    (`optimus_ir.memory.measure_call_memory`: profiler allocation events on
    the CPU, the CUDA allocator's counters on a GPU)."""
    held_mib: float | None = None
    """Tensor bytes the variant holds between calls beyond the model's
    parameters and buffers and the inputs (`held_tensor_mib`)."""
    memory_method: str | None = None
    """How `peak_live_mib` was measured ("profiler" or "cuda")."""
    max_abs_diff: float | None = None
    matches: bool | None = None
    mismatch: str | None = None
    error: str | None = None
    skipped: str | None = None
    fused_groups: list[str] | None = None
    """Our backend's variants: the groups batch fusion fused for the
    Inductor target (`group_summaries`)."""
    declined_groups: list[str] | None = None
    """Our backend's variants: the groups the Inductor-target cost model
    declined as unprofitable."""
    unchanged: bool | None = None
    """Our backend's variants: Inductor got Dynamo's graphs unchanged
    (`Prepared.unchanged`)."""

    @property
    def spread_pct(self) -> float | None:
        if self.median_ms is None or self.q1_ms is None or self.q3_ms is None:
            return None
        return 100 * (self.q3_ms - self.q1_ms) / self.median_ms


@dataclass
class ModelResult:
    """All variants of one model."""

    name: str
    description: str
    cells: dict[str, Cell] = field(default_factory=dict)
    inner: int = 0
    repeats: int = 0
    seconds: float = 0.0

    def speedup(self, variant: str, base: str = "original") -> float | None:
        here, there = self.cells.get(variant), self.cells.get(base)
        if here is None or there is None or not here.median_ms or not there.median_ms:
            return None
        return there.median_ms / here.median_ms


@dataclass
class Settings:
    """What one run measures."""

    models: list[str]
    variants: list[str]
    compiled_on: set[str] | None
    batch: int
    repeats: int
    sample_ms: float
    compile_max_ops: int
    scaling_nodes: list[int]
    device: str
    threads: int
    quick: bool
    jobs: int
    """Models measured at once (1 unless --quick: more disturb each other's times)."""
    clock: str = "wall"
    """The steady state's clock on the CPU (`timing.CLOCKS`): `wall`, or
    `cpu` (this thread's CPU time: steadier on a shared machine)."""
    vs_inductor: bool = False
    """`--vs-inductor`: the compiled variants only, reported as pairs."""
    steady_only: bool = False
    """`--steady-only`: no first-call processes (no compile time, ops or memory)."""


if __name__ == "__main__":
    # A module of the benchmark suite, not a benchmark: run as a script it
    # only answers --help (every script of benchmarks/ does).
    import argparse

    argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Run benchmarks/suite.py instead."
    ).parse_args()
