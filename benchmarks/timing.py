"""Moved into the package: `optimus_ir.examples.timing` (the demo uses it too).

This module stays so that the benchmark scripts' `from timing import ...`
(benchmarks/ on sys.path) keeps working: it *is* the package module.
"""

import sys

from optimus_ir.examples import timing as _module

sys.modules[__name__] = _module
