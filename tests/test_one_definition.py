"""One definition per op (issue 20): a unary pointwise op is declared once.

The op's class (`dialects/torch/pointwise.py`) carries every fact the passes,
lowerings and cost model need; only the kernels' program-step table
(`optimus_ir/kernels/programs.py`) and its Triton code
(`optimus_ir/kernels/activations.py`) name the step again. So each op's torch
name appears in at most three source files of the package. Triton's and
Python's own math functions (`tl.sqrt`, `tl.math.rsqrt`, `math.sqrt`) are
not the op and are not counted.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from optimus_ir.dialects import torch as T
from optimus_ir.dialects.torch.facts import facts_of

REPO = Path(__file__).resolve().parent.parent
SOURCE_FOLDERS = ("optimus_ir", "dialects", "passes", "lowering", "tools")
MAX_FILES = 3

CHECKED = (
    "sigmoid tanh nan_to_num erf softplus hardswish leaky_relu elu gelu silu mish "
    "hardsigmoid sqrt rsqrt reciprocal sin cos log1p expm1 hardtanh"
).split()
"""The ops the issue names: sigmoid, tanh, nan_to_num and the ops it added."""

_FOREIGN_MATH = re.compile(r"\b(?:tl\.(?:math\.)?|math\.)\w+")


EXAMPLES = REPO / "optimus_ir" / "examples"
"""The example models use ops (a tanh tower); they do not define them."""


def _sources() -> dict[Path, str]:
    return {
        path: _FOREIGN_MATH.sub("", path.read_text())
        for folder in SOURCE_FOLDERS
        for path in sorted((REPO / folder).rglob("*.py"))
        if EXAMPLES not in path.parents
    }


@pytest.fixture(scope="module")
def sources() -> dict[Path, str]:
    return _sources()


@pytest.mark.parametrize("short", CHECKED)
def test_op_is_named_in_at_most_three_files(short: str, sources: dict[Path, str]) -> None:
    assert f"torch.{short}" in {op.name for op in T.UNARY_POINTWISE_OPS}
    word = re.compile(rf"\b{re.escape(short)}\b")
    files = [str(p.relative_to(REPO)) for p, text in sources.items() if word.search(text)]
    assert "dialects/torch/pointwise.py" in files
    assert len(files) <= MAX_FILES, f"'{short}' is named in {len(files)} files: {files}"


def test_the_dialect_has_grown_to_at_least_55_ops() -> None:
    assert len(list(T.TORCH.operations)) >= 55
    assert len(T.ALL_OPS) == len(list(T.TORCH.operations))


def test_every_op_declares_its_facts() -> None:
    """Every op of the dialect carries `FACTS`; a fusable op names a cost
    class, and a declared lowering target resolves to a torch function."""
    for op in T.ALL_OPS:
        facts = facts_of(op)
        assert facts is not None, op.name
        if facts.fusion is not None:
            assert facts.cost != "free", op.name
        if facts.lowers_to is not None:
            assert callable(facts.reference_function()), op.name


def test_the_package_root_names_no_op() -> None:
    """`dialects/torch/__init__.py` collects the ops from the kind modules:
    adding an op touches only its kind module (its docstring's builder
    examples aside)."""
    source = (REPO / "dialects" / "torch" / "__init__.py").read_text()
    docstring = ast.get_docstring(ast.parse(source), clean=False) or ""
    text = source.replace(docstring, "", 1)
    named = [op.__name__ for op in T.ALL_OPS if re.search(rf"\b{op.__name__}\b", text)]
    assert named == []


def _aten_overload(name: str):
    """`torch.ops.aten.<op>.<overload>` for an aten spelling (`sigmoid.default`)."""
    import torch

    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


@pytest.mark.parametrize(
    "op", [op for op in T.ALL_OPS if facts_of(op).spellings.aten], ids=lambda op: op.name
)
def test_effects_and_aliasing_agree_with_the_aten_schema(op: type) -> None:
    """Where an op is raised from aten overloads, its traits say what their
    schemas say: no effect exactly when no argument is mutated, a view
    (`ViewLike`) exactly when the result aliases an input."""
    from xdsl.traits import Pure

    from optimus_ir.foundation.traits import ViewLike

    for spelling in facts_of(op).spellings.aten:
        schema = _aten_overload(spelling)._schema
        aliases = any(r.alias_info is not None for r in schema.returns)
        assert op.has_trait(Pure) == (not schema.is_mutable), spelling
        assert (op.get_trait(ViewLike) is not None) == aliases, spelling
