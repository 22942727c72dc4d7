"""Every script of benchmarks/ answers `--help` (issue 25): it prints its
usage and exits 0 without running its benchmark (corpus_op_counts.py used to
run the whole corpus)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py"))
QUICK = {"corpus_op_counts.py", "bench_compile.py"}
"""Scripts that parse their command line before importing torch (a second
or less); each of the others takes several seconds to import torch and the
project, so those run under the `slow` marker (`make test-all`, CI)."""


def test_the_scripts_are_found() -> None:
    assert "suite.py" in SCRIPTS and "corpus_op_counts.py" in SCRIPTS


@pytest.mark.parametrize(
    "script",
    [script if script in QUICK else pytest.param(script, marks=pytest.mark.slow) for script in SCRIPTS],
)
def test_script_answers_help_without_running(script: str) -> None:
    # 120 s: a script that ran its benchmark instead would take minutes
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--help"],
        capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
