"""The layer contract (`python -m optimus_ir.tools.check_layers`): it holds on
this tree, and the check finds an upward import, a lazy upward import, a
module named by string outside the registry, and an import cycle, each with
its file and line, on small fake trees laid out like the repository."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from optimus_ir.tools import check_layers

REPO = Path(__file__).resolve().parent.parent


def _write(root: Path, files: dict[str, str]) -> Path:
    """A fake repository under `root`: the package folders of this one
    (`optimus_ir/`, `dialects/`, `passes/`, `lowering/`, `tools/`; no
    pyproject, so the default package mapping applies) with `files`."""
    for folder in ("optimus_ir", "dialects", "passes", "lowering", "tools"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@dataclass(frozen=True)
class _Result:
    returncode: int
    stdout: str


def _run(root: Path, capsys: pytest.CaptureFixture[str]) -> _Result:
    """The check's exit status and output on the tree at `root`."""
    returncode = check_layers.main(["--root", str(root)])
    return _Result(returncode, capsys.readouterr().out)


def test_the_tree_keeps_the_layer_contract() -> None:
    """As CI runs it (`make check-layers` runs the file; `-m` works too)."""
    result = subprocess.run(
        [sys.executable, "-m", "optimus_ir.tools.check_layers"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no upward import, no cycle" in result.stdout


def test_the_package_root_holds_at_most_ten_modules_each_named_in_the_api_layer() -> None:
    """The root of `optimus_ir/` is the entry points; everything else lives in
    the folder of its layer."""
    at_root = sorted(p.stem for p in (REPO / "optimus_ir").glob("*.py") if p.name != "__init__.py")
    assert len(at_root) <= 10, at_root
    assert at_root == sorted(check_layers.ROOT_MODULES)


def test_each_layer_folder_opens_with_a_docstring_naming_its_layer() -> None:
    """A newcomer opening a folder reads which layer it is."""
    import ast

    for layer in check_layers.LAYERS:
        for folder in layer.folders:
            init = REPO / folder / "__init__.py"
            if layer.name == check_layers.REGISTRY or folder == "optimus_ir":
                continue  # the registry is one module; the root is the package's own page
            docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
            assert f"The {layer.name} layer" in docstring, f"{init.relative_to(REPO)}: {docstring[:80]!r}"


def test_a_module_outside_its_layers_folder_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Layers are folders: a package mapped to another folder
    (pyproject's package-dir) puts its modules outside their layer's."""
    root = _write(tmp_path, {"elsewhere/cse.py": "X = 1\n", "elsewhere/__init__.py": ""})
    (root / "pyproject.toml").write_text(
        '[tool.setuptools.package-dir]\n"optimus_ir" = "optimus_ir"\n"optimus_ir.passes" = "elsewhere"\n'
    )
    result = _run(root, capsys)
    assert result.returncode == 1
    assert (
        "elsewhere/cse.py:1: optimus_ir.passes.cse is in the passes layer but its file is in elsewhere/ "
        "(the passes layer lives in passes)"
    ) in result.stdout


def test_every_module_of_the_tree_has_a_layer() -> None:
    modules = check_layers.discover_modules(REPO)
    assert "optimus_ir.dialects.torch.pointwise" in modules
    assert "optimus_ir.passes.registry" in modules
    assert [name for name in modules if check_layers.layer_of(name) is None] == []


def test_a_clean_fake_tree_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _write(
        tmp_path,
        {
            "optimus_ir/foundation/types.py": "X = 1\n",
            "dialects/fx.py": "from optimus_ir.foundation.types import X\n",
            "passes/dce.py": "from optimus_ir.dialects import fx\n",
        },
    )
    result = _run(root, capsys)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_dialect_importing_a_pass_fails_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _write(
        tmp_path,
        {
            "passes/dce.py": "X = 1\n",
            "dialects/fx.py": """\
                import math

                from optimus_ir.passes.dce import X
            """,
        },
    )
    result = _run(root, capsys)
    assert result.returncode == 1
    assert (
        "dialects/fx.py:3: optimus_ir.dialects.fx imports optimus_ir.passes.dce "
        "(dialects may not import passes)"
    ) in result.stdout


def test_lazy_and_dynamic_upward_imports_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _write(
        tmp_path,
        {
            "lowering/lower_batch.py": "X = 1\n",
            "passes/batch_fusion.py": "X = 1\n",
            "optimus_ir/foundation/effects.py": """\
                import importlib


                def kind(op):
                    from optimus_ir.dialects import fx
                    return fx


                def load():
                    return importlib.import_module("optimus_ir.lowering.lower_batch")
            """,
            "dialects/fx.py": "X = 1\n",
            "passes/cse.py": """\
                def helper():
                    from optimus_ir.lowering.lower_batch import X
                    return X
            """,
        },
    )
    result = _run(root, capsys)
    assert result.returncode == 1
    out = result.stdout
    assert "optimus_ir/foundation/effects.py:5: optimus_ir.foundation.effects imports optimus_ir.dialects.fx (foundation may not import dialects (lazy import))" in out
    assert "optimus_ir/foundation/effects.py:10: optimus_ir.foundation.effects imports optimus_ir.lowering.lower_batch (foundation may not import lowering (import_module))" in out
    assert "passes/cse.py:2: optimus_ir.passes.cse imports optimus_ir.lowering.lower_batch (passes may not import lowering (lazy import))" in out


def test_module_strings_are_the_registry_s_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _write(
        tmp_path,
        {
            "passes/dce.py": "X = 1\n",
            "passes/registry.py": 'PASSES = {"dce": "optimus_ir.passes.dce"}\n',
            "optimus_ir/pipeline/__init__.py": 'DEFAULT = "optimus_ir.passes.dce"\n',
        },
    )
    result = _run(root, capsys)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines == [
        "optimus_ir/pipeline/__init__.py:1: optimus_ir.pipeline imports optimus_ir.passes.dce "
        "(passes modules are named by string only in the pass registry)"
    ]


def test_an_import_cycle_fails_even_within_one_layer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _write(
        tmp_path,
        {
            "passes/split_cat_views.py": "from optimus_ir.passes.split_cat_simplify import A\nB = 2\n",
            "passes/split_cat_simplify.py": """\
                A = 1


                def patterns():
                    from optimus_ir.passes.split_cat_views import B
                    return B
            """,
        },
    )
    result = _run(root, capsys)
    assert result.returncode == 1
    cycle = "import cycle: optimus_ir.passes.split_cat_simplify -> optimus_ir.passes.split_cat_views -> optimus_ir.passes.split_cat_simplify"
    assert f"passes/split_cat_simplify.py:5: optimus_ir.passes.split_cat_simplify imports optimus_ir.passes.split_cat_views ({cycle})" in result.stdout
    assert f"passes/split_cat_views.py:1: optimus_ir.passes.split_cat_views imports optimus_ir.passes.split_cat_simplify ({cycle})" in result.stdout


@pytest.mark.parametrize(
    ("source", "target", "allowed"),
    [
        ("optimus_ir.dialects.fx", "optimus_ir.foundation.traits", True),
        ("optimus_ir.foundation.traits", "optimus_ir.dialects.fx", False),
        ("optimus_ir.foundation.traits", "optimus_ir.passes.registry", True),
        ("optimus_ir.passes.batch_fusion", "optimus_ir.lowering.lower_batch", False),
        ("optimus_ir.lowering.lower_batch", "optimus_ir.passes.batch_fusion", False),
        ("optimus_ir.lowering.lower_batch", "optimus_ir.passes.canonicalization_patterns.batch", True),
        ("optimus_ir.passes.raise_fx", "optimus_ir.translate.importer", False),
        ("optimus_ir.kernels.ops", "optimus_ir.api", False),
        ("optimus_ir.api", "optimus_ir.pipeline", True),
        ("optimus_ir.pipeline", "optimus_ir.api", False),
    ],
)
def test_layer_order(source: str, target: str, allowed: bool) -> None:
    source_layer, target_layer = check_layers.layer_of(source), check_layers.layer_of(target)
    assert source_layer is not None and target_layer is not None
    assert check_layers.may_import(source_layer, target_layer) is allowed
