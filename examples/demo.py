"""Moved into the package: `optimus_ir.examples.demo` (installed with optimus-ir).

This module stays so that `from examples.demo import ...` (and `from demo import
...` with examples/ on sys.path) keeps working in a clone: it *is* the
package module (the same object, private names included), not a copy.
"""

import sys

from optimus_ir.examples import demo as _module
from optimus_ir.examples.demo import *  # noqa: F403 - for loaders that keep this module object

# (`optimus-translate --import examples/demo.py:...` loads the file by path)
sys.modules[__name__] = _module

if __name__ == "__main__":  # `python examples/demo.py` as before
    sys.exit(_module.main())
