"""Ops per model of the test corpus before and after the default pipeline.

Prints a markdown table of the cases whose op count changed (ops before,
ops after, cats before -> after) and the totals. The pipeline must never
grow the count; `tests/test_split_cat_family.py` asserts that per case.

Usage::

    python benchmarks/corpus_op_counts.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (only `--help`): parsed before the corpus and the
    pipeline are imported, so that `--help` prints and exits at once."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Prints a markdown table; exits 1 when the "
        "pipeline grew the total op count.",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    parse_args()

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT / "tests"))

from models import CASES, capture  # noqa: E402

from optimus_ir.api import count_fx_ops  # noqa: E402
from optimus_ir.translate.exporter import export_graph  # noqa: E402
from optimus_ir.translate.importer import import_graph  # noqa: E402
from optimus_ir.passes.registry import DEFAULT_PIPELINE  # noqa: E402
from optimus_ir.pipeline import run_pipeline  # noqa: E402


def main() -> int:
    total_before = total_after = 0
    rows = []
    for case in CASES:
        print(f"[{case.name}]", file=sys.stderr, flush=True)
        gm, inputs = capture(case)
        before = count_fx_ops(gm)
        program = import_graph(gm, inputs)
        run_pipeline(program.module, DEFAULT_PIPELINE)
        after = count_fx_ops(export_graph(program))
        b, a = sum(before.values()), sum(after.values())
        total_before += b
        total_after += a
        if a != b:
            rows.append(f"| {case.name} | {b} | {a} | {before['cat']} -> {after['cat']} |")
    print("| case | ops before | ops after | cat |")
    print("| --- | ---: | ---: | --- |")
    print("\n".join(rows))
    print(f"| all {len(CASES)} cases | {total_before} | {total_after} | |")
    return 0 if total_after <= total_before else 1


if __name__ == "__main__":
    raise SystemExit(main())
