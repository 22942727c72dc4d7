"""Moved into the package: `optimus_ir.examples.plumbing` (installed with optimus-ir).

This module stays so that `from examples.plumbing import ...` (and `from plumbing import
...` with examples/ on sys.path) keeps working in a clone: it *is* the
package module (the same object, private names included), not a copy.
"""

import sys

from optimus_ir.examples import plumbing as _module
from optimus_ir.examples.plumbing import *  # noqa: F403 - for loaders that keep this module object

# (`optimus-translate --import examples/plumbing.py:...` loads the file by path)
sys.modules[__name__] = _module
