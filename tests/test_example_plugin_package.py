"""The out-of-tree example plugin (`examples/plugin/`), installed as a user
would install it: `pip install --target DIR` (no network: `--no-deps
--no-build-isolation`, setuptools comes from the test venv), then used from
fresh processes that only have DIR on PYTHONPATH. optimus-ir must find it
through its `optimus_ir.plugins` entry point, in `optimize()` and in
`optimus-opt`, without being told where it is."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "examples" / "plugin"
OPTIMUS_OPT = [sys.executable, "-m", "optimus_ir.tools.optimus_opt"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package pip-installed into a directory of its own (from a
    copy: building writes `build/` and `*.egg-info` next to the sources)."""
    target = tmp_path_factory.mktemp("plugin-site")
    source = tmp_path_factory.mktemp("plugin-source") / "plugin"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "Output", "__pycache__", ".lit_test_times.txt"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-cache-dir", "--target", str(target), str(source)],
        check=True, cwd=source.parent, capture_output=True, text=True,
    )
    (target / "plugin-tests").symlink_to(source / "tests")
    assert list(target.glob("optimus_ir_example_plugin-*.dist-info/entry_points.txt"))
    return target


def run(args: list[str], site: Path, *, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(site), "OPTIMUS_CHECK_SPEED": "0", **env}
    return subprocess.run(args, input=stdin, capture_output=True, text=True, env=environment, cwd=site, timeout=600)


OPTIMIZE_SWISH = textwrap.dedent(
    """
    import sys, torch, optimus_ir
    from torch import nn

    class Swish(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)
        def forward(self, x):
            h = self.lin(x)
            return torch.sigmoid(h) * h

    model = Swish().eval()
    x = torch.randn(4, 16)
    assert "optimus_example_plugin" not in sys.modules
    optimized = optimus_ir.optimize(model, (x,))
    torch.testing.assert_close(optimized(x), model(x))
    print("plugin loaded:", "optimus_example_plugin" in sys.modules)
    print("calls:", [str(n.target) for n in optimized.graph.nodes if n.op == "call_function"])
    """
)


def test_optimize_finds_the_replacement_through_the_entry_point(installed: Path) -> None:
    result = run([sys.executable, "-c", OPTIMIZE_SWISH], installed)
    assert result.returncode == 0, result.stderr
    assert "plugin loaded: True" in result.stdout
    calls = result.stdout.split("calls:", 1)[1]
    assert "silu" in calls and "sigmoid" not in calls, result.stdout


def test_optimize_without_entry_points_leaves_swish_alone(installed: Path) -> None:
    result = run([sys.executable, "-c", OPTIMIZE_SWISH], installed, OPTIMUS_PLUGINS="0")
    assert result.returncode == 0, result.stderr
    assert "plugin loaded: False" in result.stdout
    assert "sigmoid" in result.stdout.split("calls:", 1)[1]


SWISH_IR = """\
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<8x16xf32, "cpu">
    %sigmoid = torch.sigmoid %x : tensor<8x16xf32, "cpu"> -> tensor<8x16xf32, "cpu">
    %mul = torch.mul %sigmoid, %x : tensor<8x16xf32, "cpu">, tensor<8x16xf32, "cpu"> -> tensor<8x16xf32, "cpu">
    fx.output %mul
  }
}
"""


def test_optimus_opt_runs_the_plugin_pass_and_replacement_from_the_entry_point(installed: Path) -> None:
    result = run([*OPTIMUS_OPT, "-p", "user-replacements", "--pass-statistics"], installed, stdin=SWISH_IR)
    assert result.returncode == 0, result.stderr
    assert "torch.silu %x" in result.stdout and "torch.sigmoid" not in result.stdout, result.stdout
    assert "swish-to-silu" in result.stderr, result.stderr  # the replacement's own statistics line

    listed = run([*OPTIMUS_OPT, "--help"], installed)
    assert "--load-pass-plugin" in listed.stdout


def test_the_example_packages_own_tests_pass_when_installed(installed: Path) -> None:
    tests = installed / "plugin-tests"  # the copy's tests: lit writes Output/ beside them
    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tests), str(tests)],
                 installed)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^4 passed", result.stdout, re.MULTILINE), result.stdout

    lit = run([str(Path(sys.executable).parent / "lit"), "-sv", str(tests)], installed)
    assert lit.returncode == 0, lit.stdout + lit.stderr
    assert "Passed: 1" in lit.stdout or "Passed : 1" in lit.stdout, lit.stdout


def test_a_wrong_replacement_is_rejected_at_registration(installed: Path) -> None:
    script = textwrap.dedent(
        """
        import torch, optimus_ir
        def swish(x): return torch.sigmoid(x) * x
        def not_silu(x): return torch.tanh(x) * x
        try:
            optimus_ir.register_replacement("bad-silu", swish, not_silu, (torch.randn(8, 16),))
        except ValueError as error:
            print("refused:", error)
        else:
            print("accepted")
        """
    )
    result = run([sys.executable, "-c", script], installed)
    assert result.returncode == 0, result.stderr
    assert "refused:" in result.stdout and "bad-silu" in result.stdout, result.stdout
