"""The shape of the documentation: short pages, a layer table that is the
check's own, and links and section citations that lead somewhere.

* every page of `docs/architecture/` and the index `docs/architecture.md`
  is under 400 lines (a newcomer reads one subsystem, not a history), and
  the user pages of `docs/` under 500;
* the index links every subsystem page, and every relative link of the
  architecture pages names a file that exists;
* the table between the index's layer-table markers is exactly what
  `tools/check_layers.py --markdown` prints (`make docs-layers` rewrites it);
* a citation of a section (`docs/architecture/passes.md, "Canonicalization"`,
  or `architecture.md "Layers"`) anywhere in the repository names a heading
  of the page it cites.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from optimus_ir.tools import check_layers

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
INDEX = DOCS / "architecture.md"
PAGES = sorted((DOCS / "architecture").glob("*.md"))

ARCHITECTURE_MAX_LINES = 400
USER_DOCS_MAX_LINES = 500

_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_CITATION = re.compile(r"(?:docs/)?(architecture(?:/[a-z-]+)?\.md)`?,?\s+\(?\"([^\"]+)\"")
_HEADING = re.compile(r"^#+\s+(.*?)\s*$", re.MULTILINE)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_there_are_subsystem_pages() -> None:
    """The split exists (a glob that finds nothing would pass the size test)."""
    names = {page.stem for page in PAGES}
    assert {"ir-and-dialects", "passes", "batch-fusion", "lowering-and-kernels", "entry-points", "memory",
            "extension"} <= names, names


@pytest.mark.parametrize("path", [INDEX, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_architecture_pages_are_short(path: Path) -> None:
    assert _lines(path) < ARCHITECTURE_MAX_LINES, f"{path.relative_to(REPO)}: {_lines(path)} lines"


@pytest.mark.parametrize(
    "path", sorted(p for p in DOCS.glob("*.md") if p != INDEX), ids=lambda p: str(p.relative_to(REPO))
)
def test_user_docs_are_short(path: Path) -> None:
    assert _lines(path) < USER_DOCS_MAX_LINES, f"{path.relative_to(REPO)}: {_lines(path)} lines"


def test_the_index_links_every_page() -> None:
    linked = {(INDEX.parent / target).resolve() for target in _LINK.findall(INDEX.read_text(encoding="utf-8"))}
    missing = [page.name for page in PAGES if page.resolve() not in linked]
    assert not missing, f"docs/architecture.md does not link: {missing}"


@pytest.mark.parametrize("path", [INDEX, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path: Path) -> None:
    targets = [t for t in _LINK.findall(path.read_text(encoding="utf-8")) if "://" not in t]
    broken = [t for t in targets if not (path.parent / t).exists()]
    assert not broken, f"{path.relative_to(REPO)}: broken links {broken}"


def _table_in_index() -> str:
    text = INDEX.read_text(encoding="utf-8")
    begin = text.index(check_layers.LAYER_TABLE_BEGIN) + len(check_layers.LAYER_TABLE_BEGIN)
    end = text.index(check_layers.LAYER_TABLE_END)
    return text[begin:end].strip("\n") + "\n"


def test_layer_table_is_generated_from_layers() -> None:
    """The docs' table is the check's (`make docs-layers` rewrites it)."""
    assert _table_in_index() == check_layers.layer_table_markdown(), "run `make docs-layers`"


def test_layer_table_names_every_layer() -> None:
    table = check_layers.layer_table_markdown()
    for layer in check_layers.LAYERS:
        assert f"| {layer.name} |" in table
        for pattern in layer.modules:
            assert f"`{pattern}`" in table
    # the two the hand-written table left out, for instance
    assert "environment" in table and "options" in table


def test_layer_table_needs_a_description_per_layer() -> None:
    unknown = check_layers.Layer("unheard-of", 11, ("optimus_ir.unheard_of",))
    with pytest.raises(ValueError, match="unheard-of"):
        check_layers.layer_table_markdown((*check_layers.LAYERS, unknown))


def test_with_layer_table_replaces_only_the_block() -> None:
    text = f"before\n{check_layers.LAYER_TABLE_BEGIN}\nold\n{check_layers.LAYER_TABLE_END}\nafter\n"
    new = check_layers.with_layer_table(text, "| new |\n")
    assert new == f"before\n{check_layers.LAYER_TABLE_BEGIN}\n| new |\n{check_layers.LAYER_TABLE_END}\nafter\n"
    with pytest.raises(ValueError):
        check_layers.with_layer_table("no markers\n", "| new |\n")


def test_markdown_flag_prints_the_table(tmp_path: Path) -> None:
    script = REPO / "tools" / "check_layers.py"
    shown = subprocess.run([sys.executable, str(script), "--markdown"], capture_output=True, text=True, check=True)
    assert shown.stdout == check_layers.layer_table_markdown()
    page = tmp_path / "page.md"
    page.write_text(f"# t\n{check_layers.LAYER_TABLE_BEGIN}\n{check_layers.LAYER_TABLE_END}\n")
    subprocess.run([sys.executable, str(script), "--write-layer-table", str(page)], capture_output=True, check=True)
    assert check_layers.layer_table_markdown() in page.read_text()


def _cited_files() -> list[Path]:
    roots = ["README.md", "Makefile", "docs", "optimus_ir", "dialects", "passes", "lowering", "tools", "tests",
             "benchmarks", "examples"]
    files: list[Path] = []
    for root in roots:
        path = REPO / root
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for p in path.rglob("*") if p.suffix in (".py", ".md", ".mlir") and p.is_file())
    return files


def test_section_citations_name_a_heading() -> None:
    """`docs/architecture.md, "Layers"` in a docstring or a doc points at a
    heading that exists, on the page it names (moved sections leave none
    behind)."""
    headings: dict[str, set[str]] = {}
    for page in (INDEX, *PAGES):
        key = str(page.relative_to(DOCS))
        headings[key] = {re.sub(r"`", "", h) for h in _HEADING.findall(page.read_text(encoding="utf-8"))}
    wrong = []
    seen = 0
    for path in _cited_files():
        if path == Path(__file__):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for page, section in _CITATION.findall(text):
            seen += 1
            titles = headings.get(page)
            # a citation names a heading, or the start of one ("The Inductor target")
            if titles is None or not any(t == section or t.startswith(section) for t in titles):
                wrong.append(f"{path.relative_to(REPO)}: {page} \"{section}\"")
    assert seen, "no citation found: the pattern is broken"
    assert not wrong, "\n".join(wrong)
