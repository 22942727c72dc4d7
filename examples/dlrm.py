"""Moved into the package: `optimus_ir.examples.dlrm` (installed with optimus-ir).

This module stays so that `from examples.dlrm import ...` (and `from dlrm import
...` with examples/ on sys.path) keeps working in a clone: it *is* the
package module (the same object, private names included), not a copy.
"""

import sys

from optimus_ir.examples import dlrm as _module
from optimus_ir.examples.dlrm import *  # noqa: F403 - for loaders that keep this module object

# (`optimus-translate --import examples/dlrm.py:...` loads the file by path)
sys.modules[__name__] = _module
