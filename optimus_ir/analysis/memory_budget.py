"""The memory budget of batch fusion: how many tensor bytes one call of the
fused graph may hold at once, against the captured graph's peak
(`optimize(memory_budget=...)`, `batch-fusion{memory-budget=...}`), and its
one parser. `optimus_ir.analysis.cost_model` re-exports these names."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

DEFAULT_MEMORY_BUDGET = "1.5x+1MiB"
"""`batch-fusion{memory-budget=...}` and `optimize(memory_budget=...)` by
default: one call of the fused graph may hold at most 1.5 times the tensor
bytes the captured graph holds at its peak, plus 1 MiB -- the allowance
keeps small graphs, whose few KiB of stacked copies are many times their
peak but no one's memory problem, as they fused before the budget (the
64-tower recsys demo's fused graph holds 1.16x at batch 64, 1.08x at 512:
every group kept either way)."""

_BYTE_UNITS = {
    "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}

_BUDGET_FORMS = (
    "a ratio over the captured graph's peak ('1.5x', '+50%'), optionally plus an "
    "allowance ('1.5x+1MiB'), bytes ('64MiB', '1GiB', '500MB', '1048576') or 'none'"
)


@dataclass(frozen=True)
class MemoryBudget:
    """How many tensor bytes a call of the fused graph may hold at once:
    `ratio` times the captured graph's peak (`optimus_ir.analysis.live_bytes`)
    plus `bytes`, or `bytes` alone, or unlimited (both None).
    `parse_memory_budget` makes one from its text."""

    ratio: float | None = None
    bytes: int | None = None

    @property
    def unlimited(self) -> bool:
        """No limit (`none`)."""
        return self.ratio is None and self.bytes is None

    def limit(self, captured_peak: int) -> float:
        """The bytes allowed for a graph whose captured peak is
        `captured_peak` (infinite when unlimited)."""
        if self.unlimited:
            return math.inf
        return (self.ratio or 0.0) * captured_peak + (self.bytes or 0)

    def describe(self, captured_peak: int) -> str:
        """`budget 1.50x of the captured peak 2.00 MiB = 3.00 MiB` (with an
        allowance: `... 2.00 MiB + 1.00 MiB = 4.00 MiB`; or `budget 64.00
        MiB`), for remarks."""
        if self.ratio is not None:
            plus = f" + {_mib(self.bytes)}" if self.bytes else ""
            return (
                f"budget {self.ratio:.2f}x of the captured peak {_mib(captured_peak)}{plus} "
                f"= {_mib(self.limit(captured_peak))}"
            )
        if self.bytes is not None:
            return f"budget {_mib(self.bytes)} (the captured peak is {_mib(captured_peak)})"
        return "no budget"

    def text(self) -> str:
        """The canonical option text: `1.5x`, `1.5x+1MiB`, `64MiB`, `1000`, `none`."""
        if self.ratio is not None:
            return f"{self.ratio:g}x" + (f"+{_bytes_text(self.bytes)}" if self.bytes else "")
        if self.bytes is not None:
            return _bytes_text(self.bytes)
        return "none"


def _mib(count: float) -> str:
    return f"{count / 2**20:.2f} MiB"


def _bytes_text(count: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count % size == 0:
            return f"{count // size}{unit}"
    return str(count)


def _byte_count(text: str, whole: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([kmgt]i?b|b)?", text)
    if match is None:
        raise ValueError(f"memory budget {whole!r} is not a budget: give {_BUDGET_FORMS}")
    count = float(match.group(1)) * _BYTE_UNITS[match.group(2) or "b"]
    if count < 1:
        raise ValueError(f"memory budget {whole!r}: at least one byte")
    return int(round(count))


def parse_memory_budget(value: str | float | int) -> MemoryBudget:
    """The `MemoryBudget` a `memory-budget` option (or `memory_budget`
    knob) says: `"1.5x"` (a ratio over the captured peak), `"+50%"` (the
    same), either plus an allowance (`"1.5x+1MiB"`: 1.5 times the peak
    plus 1 MiB), `"64MiB"`/`"1GiB"`/`"500MB"`/`"1048576"` (bytes; binary
    and decimal units, any case), `"none"` (unlimited); in Python also a
    float (a ratio) or an int (bytes). Raises ValueError saying which forms
    there are for anything else (zero, negative, NaN, a bool, an unknown
    unit)."""
    if isinstance(value, bool) or not isinstance(value, str | float | int):
        raise ValueError(f"memory budget {value!r} is not a budget: give {_BUDGET_FORMS}")
    if isinstance(value, float):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"memory budget ratio must be a positive finite number, got {value!r}")
        return MemoryBudget(ratio=value)
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"memory budget in bytes must be positive, got {value!r}")
        return MemoryBudget(bytes=value)
    text = value.strip().lower().replace(" ", "").replace("_", "")
    if text in ("none", "unlimited"):
        return MemoryBudget()
    number = r"(\d+(?:\.\d*)?|\.\d+)"
    relative = re.fullmatch(number + r"x(?:\+(.+))?", text) or re.fullmatch(r"\+" + number + r"%(?:\+(.+))?", text)
    if relative is not None:
        factor = float(relative.group(1))
        if text.startswith("+"):
            factor = 1.0 + factor / 100
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"memory budget {value!r}: the ratio must be positive")
        allowance = _byte_count(relative.group(2), value) if relative.group(2) else None
        return MemoryBudget(ratio=factor, bytes=allowance)
    if text.endswith("%"):
        raise ValueError(
            f"memory budget {value!r} is not a budget (a percentage is over the captured peak: "
            f"write '+50%', or '0.5x' for half of it): give {_BUDGET_FORMS}"
        )
    return MemoryBudget(bytes=_byte_count(text, value))
