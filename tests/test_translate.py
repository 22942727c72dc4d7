"""optimus-translate: .pt2 and factory imports, export to Python source, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from optimus_ir.translate.parsing import parse_module
from optimus_ir.tools.optimus_translate import main

REPO = Path(__file__).resolve().parent.parent
PLUMBING = REPO / "examples" / "plumbing.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "optimus_ir.tools.optimus_translate", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_import_factory_prints_parsable_fx_ir(capsys) -> None:
    assert main(["--import", f"{PLUMBING}:make_model"]) == 0
    text = capsys.readouterr().out
    assert 'fx.call_function "torch.functional.split"' in text
    module = parse_module(text)
    module.verify()


def test_import_factory_with_passes(capsys) -> None:
    assert main(["--import", f"{PLUMBING}:make_model", "-p", "raise-fx"]) == 0
    text = capsys.readouterr().out
    assert "torch.split" in text and "torch.cat" in text


def test_import_pt2(tmp_path: Path, capsys) -> None:
    class Small(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b = torch.split(x, 2, dim=-1)
            return torch.cat([b, a], dim=-1).relu()

    path = tmp_path / "small.pt2"
    torch.export.save(torch.export.export(Small(), (torch.randn(3, 4),)), str(path))
    assert main(["--import", str(path)]) == 0
    text = capsys.readouterr().out
    assert '"torch.ops.aten.split.Tensor"' in text
    assert "tensor<3x4xf32" in text


def test_export_python_of_checked_in_example(capsys) -> None:
    assert main(["--export-python", str(REPO / "examples" / "plumbing.mlir")]) == 0
    source = capsys.readouterr().out
    assert "def forward(self, arg0)" in source
    assert "torch.functional.split" in source
    compile(source, "<exported>", "exec")  # it is valid Python


def test_export_python_lowers_operator_ops_first(tmp_path: Path, capsys) -> None:
    raised = tmp_path / "raised.mlir"
    assert main(["--import", f"{PLUMBING}:make_model", "-p", "raise-fx", "-o", str(raised)]) == 0
    assert main(["--export-python", str(raised)]) == 0
    assert "torch.cat" in capsys.readouterr().out


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    missing = run("--import", f"{PLUMBING}:no_such_factory")
    assert missing.returncode == 1
    assert "has no attribute 'no_such_factory'" in missing.stderr
    assert "Traceback" not in missing.stderr

    no_file = run("--import", "nowhere.pt2")
    assert no_file.returncode == 1 and "no such file" in no_file.stderr

    bad = tmp_path / "bad.mlir"
    bad.write_text("builtin.module {\n  fx.graph @g {\n    %x = fx.nonsense\n  }\n}\n")
    broken = run("--export-python", str(bad))
    assert broken.returncode == 1
    assert "bad.mlir:3:" in broken.stderr
    assert "Traceback" not in broken.stderr
