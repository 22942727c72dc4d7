"""Moved into the package: `optimus_ir.examples.wide_deep` (installed with optimus-ir).

This module stays so that `from examples.wide_deep import ...` (and `from wide_deep import
...` with examples/ on sys.path) keeps working in a clone: it *is* the
package module (the same object, private names included), not a copy.
"""

import sys

from optimus_ir.examples import wide_deep as _module
from optimus_ir.examples.wide_deep import *  # noqa: F403 - for loaders that keep this module object

# (`optimus-translate --import examples/wide_deep.py:...` loads the file by path)
sys.modules[__name__] = _module
