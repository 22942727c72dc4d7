"""Peak tensor memory per call under batch-fusion's memory budget (issue 24).

For the recsys model (`examples/recsys.py`, the suite's 'mixed' variant:
widths 16/32/64 into 32-wide depth-2 towers, MLP hidden 256, eval), captures
the graph and optimizes it under each budget, then measures one call of each
at the allocator (`optimus_ir.memory.measure_call_memory`, dispatch method:
deterministic) and counts what batch fusion fused (groups and members, from
the remarks) and how many groups memory decided. Memory, not time: one call
each; the default budget's module is also compared with the unlimited one's
(same code: the budget left the plan alone).

    .venv/bin/python benchmarks/bench_memory_budget.py                     # 64 towers, batch 64 and 512
    .venv/bin/python benchmarks/bench_memory_budget.py --towers 16 --batch 64 --budgets none,1.0x
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "examples", _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

MIB = 2**20


def fused_counts(module: torch.nn.Module) -> tuple[int, int, int]:
    """(groups fused, members in them, groups memory decided) from the remarks."""
    remarks = [str(r) for r in module.optimus_report.remarks]  # type: ignore[union-attr]
    fused = [int(m.group(1)) for r in remarks if (m := re.search(r"batch-fusion: fused (\d+) ", r))]
    decided = sum("memory decided" in r for r in remarks)
    return len(fused), sum(fused), decided


def measure(towers: int, hidden: int, batch: int, budgets: list[str]) -> dict[str, Any]:
    """The captured graph's peak, and per budget the optimized module's peak
    and what was fused."""
    import optimus_ir
    from optimus_ir.api import capture
    from optimus_ir.memory import measure_call_memory
    from recsys import make_recsys_model
    from suite_models import RECSYS_VARIANTS

    model, (x,) = make_recsys_model(num_towers=towers, hidden=hidden, batch=batch, seed=0, **RECSYS_VARIANTS["mixed"])
    model.eval()

    def peak(fn: Any) -> int:
        with torch.no_grad():
            return measure_call_memory(lambda: fn(x), method="dispatch").peak_bytes

    captured = peak(capture(model, (x,)))
    rows: dict[str, Any] = {}
    codes: dict[str, str] = {}
    for budget in budgets:
        knobs: dict[str, Any] = {"check_speed": False}
        if budget != "default":
            knobs["memory_budget"] = budget
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = optimus_ir.optimize(model, (x,), options=optimus_ir.OptimizeOptions(**knobs))
        groups, members, decided = fused_counts(optimized)
        with torch.no_grad():
            torch.testing.assert_close(optimized(x), model(x))
        ours = peak(optimized)
        codes[budget] = optimized.code
        rows[budget] = {
            "peak_bytes": ours,
            "ratio": ours / captured if captured else None,
            "groups_fused": groups,
            "members_fused": members,
            "memory_decided": decided,
        }
    result: dict[str, Any] = {"captured_peak_bytes": captured, "budgets": rows}
    if "default" in codes and "none" in codes:
        result["default_same_as_none"] = codes["default"] == codes["none"]
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--towers", type=int, default=64, help="towers of the recsys model (default 64)")
    parser.add_argument("--hidden", type=int, default=256, help="MLP hidden width (default 256)")
    parser.add_argument(
        "--batch", type=int, nargs="+", default=[64, 512], help="batch sizes to measure (default 64 512)"
    )
    parser.add_argument(
        "--budgets", default="default,none,1.0x",
        help="comma-separated memory budgets ('default': the default, 1.5x+1MiB; default: default,none,1.0x)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
    torch.manual_seed(0)
    results: dict[str, Any] = {"model": f"recsys-mixed-{args.towers}, hidden {args.hidden}, eval", "batches": {}}
    print(results["model"] + "; peak live tensor bytes of one call (dispatch method):")
    for batch in args.batch:
        row = measure(args.towers, args.hidden, batch, budgets)
        results["batches"][batch] = row
        print(f"  batch {batch}: captured {row['captured_peak_bytes'] / MIB:.2f} MiB")
        for budget, r in row["budgets"].items():
            print(
                f"    {budget:<10} peak {r['peak_bytes'] / MIB:6.2f} MiB = {r['ratio']:.2f}x captured; "
                f"{r['groups_fused']} groups ({r['members_fused']} ops) fused, {r['memory_decided']} memory decided"
            )
        if "default_same_as_none" in row:
            print(f"    default budget's code == unlimited's: {row['default_same_as_none']}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
