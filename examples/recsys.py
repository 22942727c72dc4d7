"""Moved into the package: `optimus_ir.examples.recsys` (installed with optimus-ir).

This module stays so that `from examples.recsys import ...` (and `from recsys import
...` with examples/ on sys.path) keeps working in a clone: it *is* the
package module (the same object, private names included), not a copy.
"""

import sys

from optimus_ir.examples import recsys as _module
from optimus_ir.examples.recsys import *  # noqa: F403 - for loaders that keep this module object

# (`optimus-translate --import examples/recsys.py:...` loads the file by path)
sys.modules[__name__] = _module
