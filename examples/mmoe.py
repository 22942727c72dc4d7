"""Moved into the package: `optimus_ir.examples.mmoe` (installed with optimus-ir).

This module stays so that `from examples.mmoe import ...` (and `from mmoe import
...` with examples/ on sys.path) keeps working in a clone: it *is* the
package module (the same object, private names included), not a copy.
"""

import sys

from optimus_ir.examples import mmoe as _module
from optimus_ir.examples.mmoe import *  # noqa: F403 - for loaders that keep this module object

# (`optimus-translate --import examples/mmoe.py:...` loads the file by path)
sys.modules[__name__] = _module
