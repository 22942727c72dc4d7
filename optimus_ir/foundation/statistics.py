"""Pass and pattern statistics, the global rewrite budget, and the rewrite log.

The pipeline runner (`optimus_ir.pipeline`) makes one `PassRecord` per pass it
runs and installs it, with the pipeline's `RewriteBudget`, as the *active pass*
(`active_pass()`) while the pass runs. The rewrite driver
(`optimus_ir.foundation.rewriting`) and passes that rewrite without it (cse) report into
it: per-pattern attempts / rewrites / time, and one `RewriteRecord` per applied
rewrite in the budget's log.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.ir import Operation

from optimus_ir.foundation.diagnostics import SourceLocation, location_of


@dataclass
class PatternStatistics:
    """How often one pattern was tried, how often it matched and rewrote the
    IR (`rewrites`), and the wall time spent in it (matching included)."""

    attempts: int = 0
    rewrites: int = 0
    seconds: float = 0.0

    @property
    def matched(self) -> int:
        """Alias of `rewrites`: a pattern that matches always rewrites."""
        return self.rewrites


@dataclass
class PassRecord:
    """Statistics of one run of one pass."""

    name: str
    spec: str = ""
    """The pass as written in the pipeline, options included."""
    seconds: float = 0.0
    sweeps: int = 0
    """Full sweeps the greedy driver made (summed over its runs in this pass)."""
    patterns: dict[str, PatternStatistics] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    """Free-form counters a pass may bump (`bump("ops-erased")`)."""

    @property
    def rewrites(self) -> int:
        return sum(p.rewrites for p in self.patterns.values())

    def pattern(self, name: str) -> PatternStatistics:
        stats = self.patterns.get(name)
        if stats is None:
            stats = self.patterns[name] = PatternStatistics()
        return stats

    def bump(self, counter: str, by: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + by


@dataclass(frozen=True)
class RewriteRecord:
    """One applied rewrite: which pass and pattern, on which op."""

    index: int
    """0-based position of this rewrite in the whole pipeline."""
    pass_name: str
    pattern: str
    op_name: str
    op_index: int | None
    """Position of the op in the module's walk order when its pass started;
    None for an op created during the pass."""
    location: SourceLocation | None

    def __str__(self) -> str:
        where = str(self.location) if self.location else "?"
        at = f"#{self.op_index}" if self.op_index is not None else "#new"
        return f"[{self.index}] {self.pass_name}: {self.pattern} on {self.op_name} {at} at {where}"


@dataclass
class RewriteBudget:
    """A cap on the pattern rewrites of a whole pipeline (for bisection), and
    the log of the rewrites applied. `max_rewrites=None` is no cap."""

    max_rewrites: int | None = None
    used: int = 0
    log: list[RewriteRecord] = field(default_factory=list)
    keep_log: bool = True

    @property
    def exhausted(self) -> bool:
        return self.max_rewrites is not None and self.used >= self.max_rewrites

    def record(
        self, pass_name: str, pattern: str, op: Operation, op_index: int | None
    ) -> None:
        if self.keep_log:
            self.log.append(
                RewriteRecord(self.used, pass_name, pattern, op.name, op_index, location_of(op))
            )
        self.used += 1


@dataclass
class PassStatistics:
    """Everything a pipeline run measured: one record per pass run, in order."""

    passes: list[PassRecord] = field(default_factory=list)
    budget: RewriteBudget = field(default_factory=RewriteBudget)
    total_seconds: float = 0.0
    """Wall time of everything measured: the pipeline runs and the phases
    of `phase_seconds` that lie outside them (`add_phase(..., outside=True)`)."""
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Time spent outside the passes, by phase ("verify" after the passes,
    "validate", and optimus-opt's "parse", "print"): rows of `--time-passes`
    beside the passes', so that the rows add up to the total."""

    def add_phase(self, name: str, seconds: float, *, outside: bool = False) -> None:
        """Count `seconds` of `name`; `outside`: spent outside any pipeline
        run (optimus-opt's parse, input verification, print), so it is added
        to `total_seconds` too (time inside a run is in it already)."""
        self.phase_seconds[name] = self.phase_seconds.get(name, 0.0) + seconds
        if outside:
            self.total_seconds += seconds

    @property
    def rewrite_log(self) -> list[RewriteRecord]:
        return self.budget.log

    @property
    def total_rewrites(self) -> int:
        return sum(p.rewrites for p in self.passes)

    def by_pass(self, name: str) -> list[PassRecord]:
        return [p for p in self.passes if p.name == name]

    def format_statistics(self) -> str:
        """An MLIR-like `--pass-statistics` report."""
        bar = "===" + "-" * 73 + "==="
        out = [bar, "Pass statistics report".center(79).rstrip(), bar]
        for record in self.passes:
            out.append(f"'{record.spec or record.name}'")
            if record.rewrites or record.sweeps or not record.counters:
                # passes that convert ops wholesale report their own counters instead
                out.append(f"  (S) {record.rewrites} rewrites")
            if record.sweeps:
                out.append(f"  (S) {record.sweeps} sweeps")
            for counter, value in record.counters.items():
                out.append(f"  (S) {value} {counter}")
            for name, stats in record.patterns.items():
                out.append(
                    f"  pattern {name}: tried {stats.attempts}, rewrote {stats.rewrites}, "
                    f"{stats.seconds * 1e3:.3f} ms"
                )
        if self.budget.max_rewrites is not None:
            out.append(
                f"rewrite budget: used {self.budget.used} of {self.budget.max_rewrites}"
            )
        return "\n".join(out) + "\n"

    def format_timing(self) -> str:
        """An MLIR-like `--time-passes` report: a row per pass, a row per
        phase outside the passes (`phase_seconds`), and "other" for the rest
        of the measured time (the pass manager's own work), so that the rows
        add up to the total."""
        bar = "===" + "-" * 73 + "==="
        measured = sum(p.seconds for p in self.passes) + sum(self.phase_seconds.values())
        total = max(self.total_seconds, measured)
        rows = [(record.seconds, record.name) for record in self.passes]
        rows += [(seconds, name) for name, seconds in self.phase_seconds.items()]
        rows.append((total - measured, "other (pass manager)"))
        out = [bar, "Execution time report".center(79).rstrip(), bar]
        out.append(f"  Total Execution Time: {total:.4f} seconds")
        out.append("")
        out.append("  ----Wall Time----  ----Name----")
        for seconds, name in rows:
            pct = 100.0 * seconds / total if total else 0.0
            out.append(f"  {seconds:8.4f} ({pct:5.1f}%)  {name}")
        out.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# The active pass
# ---------------------------------------------------------------------------


@dataclass
class PassContext:
    """What a running pass reports into."""

    record: PassRecord
    budget: RewriteBudget

    @property
    def pass_name(self) -> str:
        return self.record.name


_active: contextvars.ContextVar[PassContext | None] = contextvars.ContextVar(
    "optimus_active_pass", default=None
)


def active_pass() -> PassContext | None:
    """The pass the pipeline runner is running now, if any."""
    return _active.get()


@contextlib.contextmanager
def activate_pass(context: PassContext) -> Iterator[PassContext]:
    token = _active.set(context)
    try:
        yield context
    finally:
        _active.reset(token)


def current_pass_context(default_name: str = "<no-pass>") -> PassContext:
    """The active pass, or a throwaway one (no budget) outside a pipeline."""
    context = _active.get()
    if context is None:
        context = PassContext(PassRecord(default_name), RewriteBudget(keep_log=False))
    return context


__all__ = [
    "PassContext",
    "PassRecord",
    "PassStatistics",
    "PatternStatistics",
    "RewriteBudget",
    "RewriteRecord",
    "activate_pass",
    "active_pass",
    "current_pass_context",
]
