"""Moved into the package: `optimus_ir.examples.timing` (the demo uses it too).

This module stays so that the benchmark scripts' `from timing import ...`
(benchmarks/ on sys.path) keeps working: it *is* the package module.
"""

import sys

from optimus_ir.examples import timing as _module

if __name__ != "__main__":
    sys.modules[__name__] = _module

if __name__ == "__main__":
    # A library of the benchmark scripts, not a benchmark: run as a script
    # it only answers --help (every script of benchmarks/ does).
    import argparse

    argparse.ArgumentParser(
        description="Interleaved per-call timing shared by the benchmark scripts "
        "(a module they import, now optimus_ir.examples.timing; it measures nothing when run alone)."
    ).parse_args()
    print("benchmarks/timing.py is a module of the benchmark scripts; see optimus_ir/examples/timing.py.")
