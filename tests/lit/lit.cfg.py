# lit configuration for optimus-ir's FileCheck tests.
#
# Run from the repository root:  lit tests/lit   (or: .venv/bin/lit -sv tests/lit)
#
# Tools are looked up in the project's .venv/bin, then next to the Python
# running lit, then on PATH; a tool that has no console script falls back to
# `python -m <module>`.

import os
import re
import shutil
import sys

import lit.formats

config.name = "optimus-ir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
repo_root = os.path.dirname(os.path.dirname(config.test_source_root))

search_dirs = [
    os.path.join(repo_root, ".venv", "bin"),
    os.path.dirname(sys.executable),
]


def find_tool(name):
    for directory in search_dirs:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name)


python = find_tool("python") or sys.executable


def tool(name, module=None):
    path = find_tool(name)
    if path is not None:
        return path
    if module is not None:
        return f"{python} -m {module}"
    lit_config.fatal(f"cannot find '{name}' (looked in {search_dirs} and PATH)")


tools = {
    "optimus-opt": tool("optimus-opt", "optimus_ir.tools.optimus_opt"),
    "optimus-translate": tool("optimus-translate", "optimus_ir.tools.optimus_translate"),
    "filecheck": tool("filecheck", "filecheck"),
}
tools["FileCheck"] = tools["filecheck"]

# Substitutions are regexes: match the tool name as a whole word only, so
# that paths such as .../optimus-opt-errors.mlir are left alone.
for name, command in tools.items():
    config.substitutions.append(
        (r"(?<![\w/.-])" + re.escape(name) + r"(?![\w.-])", command.replace("\\", "\\\\"))
    )
config.substitutions.append(("%python", python))
# The test-only passes (test-miscompile, test-alias-miscompile, test-fail) are
# not in the production registry: a test that runs them loads their plugin,
# `optimus-opt %{test_passes} -p test-fail ...`.
test_pass_plugin = os.path.join(repo_root, "tests", "plugins", "miscompile_passes.py")
config.substitutions.append(
    (re.escape("%{test_passes}"), ("--load-pass-plugin=" + test_pass_plugin).replace("\\", "\\\\"))
)
config.substitutions.append(("%lit", tool("lit", "lit")))

# Keep the tools' environment predictable.
config.environment["PYTHONUNBUFFERED"] = "1"
for var in ("HOME", "TMPDIR", "PYTHONPATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
