# lit configuration of the example plugin's FileCheck tests.
#
#   lit -sv tests        (from examples/plugin, with optimus-ir and this
#                         package importable, e.g. installed in the venv)
#
# `optimus-opt` and `filecheck` are looked up next to the Python running lit,
# then on PATH (falling back to `python -m ...`).

import os
import shutil
import sys

import lit.formats

config.name = "optimus-ir-example-plugin"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))


def tool(name: str, module: str) -> str:
    candidate = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    return shutil.which(name) or f"{sys.executable} -m {module}"


for name, module in (("optimus-opt", "optimus_ir.tools.optimus_opt"), ("filecheck", "filecheck")):
    config.substitutions.append((name, tool(name, module)))

# The package may be installed with `pip install --target DIR`: pass the
# caller's PYTHONPATH (and the switch that turns entry points off) through.
for variable in ("PYTHONPATH", "OPTIMUS_PLUGINS"):
    if variable in os.environ:
        config.environment[variable] = os.environ[variable]
