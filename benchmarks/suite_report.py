"""The benchmark suite's report (`benchmarks/suite.py`): the markdown tables
(speedups, every figure, scaling with its fitted growth exponent, the
`--vs-inductor` pairs and their verdicts), the whole report of a run
(`render`, `render_vs_inductor`), the problems that fail it (`verdict`), the
machine line and the PNG plot.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from suite_results import Cell, ModelResult, Settings
from suite_variants import OURS, VS_INDUCTOR_TARGET, vs_inductor_pairs


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def fitted_exponent(nodes: Sequence[float], seconds: Sequence[float]) -> float | None:
    """The least-squares slope of log(seconds) over log(nodes)."""
    points = [(math.log(n), math.log(s)) for n, s in zip(nodes, seconds) if n > 0 and s > 0]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    var = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else None


def _fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def format_summary(results: Sequence[ModelResult], variants: Sequence[str]) -> str:
    """Speedup over the original model per model and variant, with ops."""
    shown = [v for v in variants if v != "original"]
    lines = [
        "| model | ops original | " + " | ".join(f"{v}" for v in shown) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in shown) + " |",
    ]
    for r in results:
        cells = []
        for v in shown:
            cell = r.cells.get(v, Cell())
            speed = r.speedup(v)
            if cell.skipped:
                cells.append("skipped")
            elif cell.error or speed is None:
                cells.append("failed")
            else:
                cells.append(f"{speed:.2f}x ({_fmt(cell.ops, 'd', '?')} ops)")
        lines.append(f"| {r.name} | {_fmt(r.cells.get('original', Cell()).ops, 'd', '?')} | {' | '.join(cells)} |")
    return "\n".join(lines)


def format_details(results: Sequence[ModelResult], variants: Sequence[str]) -> str:
    """Every figure of every (model, variant)."""
    lines = [
        "| model | variant | ops (all calls) | first call s | passes ms | steady ms (median ±IQR) | "
        "vs original | vs captured | peak live MiB | held MiB | RSS peak MiB | max abs diff |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        for v in variants:
            cell = r.cells.get(v)
            if cell is None:
                continue
            if cell.skipped or (cell.error and cell.median_ms is None and cell.first_call_s is None):
                why = f"skipped: {cell.skipped}" if cell.skipped else f"FAILED: {cell.error}"
                lines.append(f"| {r.name} | {v} | {why} | | | | | | | | | |")
                continue
            steady = "-"
            if cell.median_ms is not None:
                steady = f"{cell.median_ms:.4f} ±{_fmt(cell.spread_pct, '.0f')}%"
            elif cell.error:
                steady = f"FAILED: {cell.error}"
            diff = _fmt(cell.max_abs_diff, ".1e")
            if cell.matches is False:
                diff += " MISMATCH"
            lines.append(
                f"| {r.name} | {v} | {_fmt(cell.ops, 'd')} ({_fmt(cell.calls, 'd')}) | "
                f"{_fmt(cell.first_call_s, '.2f')} | "
                f"{_fmt(cell.pass_ms, '.1f')} | {steady} | {_fmt(r.speedup(v), '.2f')} | "
                f"{_fmt(r.speedup(v, 'captured'), '.2f')} | {_fmt(cell.peak_live_mib, '.2f')} | "
                f"{_fmt(cell.held_mib, '.2f')} | {_fmt(cell.rss_peak_mib, '.0f')} | {diff} |"
            )
    return "\n".join(lines)


def format_scaling(rows: Sequence[dict[str, Any]]) -> str:
    """The scaling table and the fitted exponent."""
    if not rows:
        return ""
    lines = [
        "| FX nodes | compute ops after | groups fused | import s | passes s | export s | passes us/node |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['nodes']} | {row['ops_after']} | {row['groups_fused']} | {row['import_s']:.2f} | "
            f"{row['passes_s']:.2f} | {row['export_s']:.2f} | {1e6 * row['passes_s'] / row['nodes']:.0f} |"
        )
    nodes = [row["nodes"] for row in rows]
    exponent = fitted_exponent(nodes, [row["passes_s"] for row in rows])
    total = fitted_exponent(nodes, [row["import_s"] + row["passes_s"] + row["export_s"] for row in rows])
    lines.append("")
    lines.append(
        f"growth exponent (time ~ nodes^k, least squares on log-log, {nodes[0]}..{nodes[-1]} nodes): "
        f"passes k = {_fmt(exponent, '.2f')}, import + passes + export k = {_fmt(total, '.2f')}"
    )
    return "\n".join(lines)


def machine_line(device: str, threads: int) -> str:
    import torch

    where = torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor() or platform.machine()
    return (
        f"{time.strftime('%Y-%m-%d')}, {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"device {device} ({where}), {threads} thread(s), Python {platform.python_version()}, "
        f"torch {torch.__version__}"
    )


def write_plot(results: Sequence[ModelResult], variants: Sequence[str], path: Path) -> bool:
    """Speedup over original and op count per model and variant, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written", file=sys.stderr)
        return False
    shown = [v for v in variants if v != "original"]
    names = [r.name for r in results]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(max(9, 1.2 * len(names) * len(shown) / 3), 9))
    width = 0.8 / max(len(shown), 1)
    for k, variant in enumerate(shown):
        xs = [i + (k - (len(shown) - 1) / 2) * width for i in range(len(names))]
        speed = [r.speedup(variant) or 0.0 for r in results]
        ops = [r.cells.get(variant, Cell()).ops or 0 for r in results]
        top.bar(xs, speed, width, label=variant)
        bottom.bar(xs, ops, width, label=variant)
    top.axhline(1.0, color="black", linewidth=0.8)
    top.set_ylabel("speedup over the original model (x)")
    bottom.set_ylabel("compute ops (log)")
    bottom.set_yscale("log")
    for axis in (top, bottom):
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    top.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    top.set_title("optimus-ir benchmark suite (0 = not run)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def vs_inductor_rows(results: Sequence[ModelResult], variants: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (model, pair): both steady-state medians and spreads, the
    ratio Inductor alone / after ours (computed from those medians: above 1
    is faster), the verdict against `VS_INDUCTOR_TARGET` (PASS, FAIL, or
    what kept it from being measured), both first-call times, and the
    groups our cost model fused and declined for the Inductor target."""
    rows = []
    for r in results:
        for alone, ours in vs_inductor_pairs(variants):
            base, mine = r.cells.get(alone, Cell()), r.cells.get(ours, Cell())
            ratio = r.speedup(ours, alone)
            problem = next((f"{v} {c.skipped or c.error}" for v, c in ((alone, base), (ours, mine))
                            if c.skipped or c.error), None)
            if problem is not None:
                verdict_ = f"not measured: {problem}"
            elif mine.matches is False:
                verdict_ = f"MISMATCH: {mine.mismatch}"
            elif ratio is None:
                verdict_ = "not measured"
            else:
                verdict_ = "PASS" if ratio >= VS_INDUCTOR_TARGET else "FAIL"
                if verdict_ == "FAIL" and mine.unchanged:
                    # Inductor compiled Dynamo's own graphs both times
                    verdict_ += " (same code as Inductor alone: noise)"
            rows.append({
                "model": r.name,
                "inductor": alone,
                "ours": ours,
                "inductor_ms": base.median_ms,
                "inductor_spread_pct": base.spread_pct,
                "ours_ms": mine.median_ms,
                "ours_spread_pct": mine.spread_pct,
                "ratio": ratio,
                "target": VS_INDUCTOR_TARGET,
                "verdict": verdict_,
                "inductor_first_call_s": base.first_call_s,
                "ours_first_call_s": mine.first_call_s,
                "max_abs_diff": mine.max_abs_diff,
                "fused_groups": mine.fused_groups,
                "declined_groups": mine.declined_groups,
                "unchanged": mine.unchanged,
            })
    return rows


def _groups(groups: Sequence[str] | None) -> str:
    if groups is None:
        return "?"
    return "; ".join(groups) if groups else "none"


def format_vs_inductor(rows: Sequence[dict[str, Any]], steady_only: bool) -> str:
    """`--vs-inductor`'s table: one line per model and pair."""
    compile_head = "" if steady_only else " first call s: alone / ours |"
    lines = [
        "| model | Inductor alone ms (±IQR) | Inductor after ours ms (±IQR) | ratio | "
        f">= {VS_INDUCTOR_TARGET:g}x |{compile_head} groups fused (target inductor) | "
        "groups declined (target inductor) |",
        "| --- | ---: | ---: | ---: | --- |" + ("" if steady_only else " ---: |") + " --- | --- |",
    ]
    for row in rows:
        name = row["model"] + ("" if row["inductor"] == "inductor" else " (frozen)")
        alone = f"{_fmt(row['inductor_ms'], '.4f')} ±{_fmt(row['inductor_spread_pct'], '.0f')}%"
        ours = f"{_fmt(row['ours_ms'], '.4f')} ±{_fmt(row['ours_spread_pct'], '.0f')}%"
        first = "" if steady_only else (
            f" {_fmt(row['inductor_first_call_s'], '.1f')} / {_fmt(row['ours_first_call_s'], '.1f')} |"
        )
        fused = _groups(row["fused_groups"]) + (" (graphs handed over unchanged)" if row.get("unchanged") else "")
        lines.append(
            f"| {name} | {alone} | {ours} | {_fmt(row['ratio'], '.3f')}x | {row['verdict']} |{first} "
            f"{fused} | {_groups(row['declined_groups'])} |"
        )
    return "\n".join(lines)


def render_vs_inductor(
    results: Sequence[ModelResult], rows: Sequence[dict[str, Any]], settings: Settings,
    machine: str, elapsed: float, problems: Sequence[str],
) -> str:
    """`--vs-inductor`'s markdown report: the pairs' table, every figure, the verdict."""
    from suite_models import MODELS

    clock = "CUDA events" if settings.device.startswith("cuda") else f"{settings.clock} clock"
    failing = [row for row in rows if row["verdict"] != "PASS"]
    parts = [
        "# optimus-ir under Inductor vs Inductor alone" + (" (--quick)" if settings.quick else ""),
        "",
        f"Machine: {machine}. Batch {settings.batch}, no_grad, eval mode; steady state "
        f"{settings.repeats} interleaved repeats ({clock}, ~{settings.sample_ms:g} ms samples), medians; "
        "ratio = Inductor alone / Inductor after ours (above 1: ours is faster); "
        f"target >= {VS_INDUCTOR_TARGET:g}x on every model; run took {elapsed:.0f} s.",
        "",
        "Models: " + "; ".join(f"{name}: {MODELS[name].description}" for name in settings.models) + ".",
        "",
        "## Inductor alone vs Inductor after ours (steady state)",
        "",
        format_vs_inductor(rows, settings.steady_only),
        "",
        "## Every figure",
        "",
        format_details(results, settings.variants),
        "",
        "## Verdict",
        "",
    ]
    parts += [f"- FAIL: {p}" for p in problems] or [
        f"- every model at >= {VS_INDUCTOR_TARGET:g}x of Inductor alone; ours ran and matched everywhere"
    ]
    if failing:
        parts.append(f"- {len(failing)} of {len(rows)} pairs below the target or not measured")
    return "\n".join(parts)


def verdict(results: Sequence[ModelResult]) -> list[str]:
    """The problems that fail the run: ours failing or differing."""
    problems = []
    for r in results:
        for variant in OURS:
            cell = r.cells.get(variant)
            if cell is None or cell.skipped:
                continue
            if cell.error:
                problems.append(f"{r.name} {variant} failed: {cell.error}")
            elif cell.matches is False:
                problems.append(f"{r.name} {variant} differs from the original: {cell.mismatch}")
    return problems


def render(
    results: Sequence[ModelResult], scaling: Sequence[dict[str, Any]], settings: Settings,
    machine: str, elapsed: float, problems: Sequence[str],
) -> str:
    """The whole markdown report."""
    from suite_models import MODELS

    clock = "CUDA events" if settings.device.startswith("cuda") else f"{settings.clock} clock"
    parts = [
        "# optimus-ir benchmark suite" + (" (--quick: small sizes, few repeats)" if settings.quick else ""),
        "",
        f"Machine: {machine}. Batch {settings.batch}, no_grad, eval mode; steady state "
        f"{settings.repeats} interleaved repeats ({clock}, ~{settings.sample_ms:g} ms samples); "
        f"first call in a fresh process with empty compiler caches; run took {elapsed:.0f} s.",
        "",
        "Models: " + "; ".join(f"{name}: {MODELS[name].description}" for name in settings.models) + ".",
        "",
        "## Speedup over the original model (steady state; ops of the graph that runs)",
        "",
        format_summary(results, settings.variants),
        "",
        "## Every figure",
        "",
        format_details(results, settings.variants),
    ]
    if scaling:
        parts += ["", "## Scaling: our default pipeline against graph size", "", format_scaling(scaling)]
    parts += ["", "## Verdict", ""]
    parts += [f"- FAIL: {p}" for p in problems] or ["- ours ran and matched the original on every model"]
    return "\n".join(parts)


if __name__ == "__main__":
    # A module of the benchmark suite, not a benchmark: run as a script it
    # only answers --help (every script of benchmarks/ does).
    import argparse

    argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Run benchmarks/suite.py instead."
    ).parse_args()
