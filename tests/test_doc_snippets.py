"""Every code block of README.md, docs/*.md and docs/architecture/*.md that is meant to run, run.

Issue 25: README snippets had rotted (a `symbolic_trace` call that raises on
the example models, an operator syntax that no longer parses). This test
extracts the fenced blocks and runs them, so a doc cannot rot silently:

* ```python: in a fresh interpreter (this venv's), in an empty temporary
  directory -- not the repository root, so a snippet that only works from a
  clone fails here;
* ```bash / ```sh / ```shell: the block as a `bash -e` script, likewise in an
  empty temporary directory, with this venv's bin/ first on PATH (so
  `optimus-opt` and `python` are the installed ones);
* ```console: the `$ ` lines are the commands (a trailing backslash continues
  one), the other lines the output shown; each shown line must appear in what
  the commands print, numbers and runs of spaces aside (timings change), and
  `...` lines stand for what the doc leaves out;
* ```mlir: through `optimus-opt` (parse, verify, print), when it is a whole
  module (it contains `builtin.module`); a fragment must be marked skip.

A block is controlled by an HTML comment on the line(s) right before it:

* `<!-- snippet: skip (reason) -->`: not run; the test reports it as a skip
  with the reason (pytest -ra lists them), and `test_skips_have_reasons`
  lists every one;
* `<!-- snippet: continue -->` (python): run after the file's previous
  python block that is run (not skipped), in the same interpreter, for a snippet that uses its names;
* `<!-- snippet: repo-root -->` (shell, console): a command documented as
  run in a clone (it reads `examples/plumbing.mlir` or `tests/plugins/`):
  run in a temporary directory that holds links to the repository's
  top-level entries, so what it writes stays out of the checkout;
* `<!-- snippet: exit N -->`: the commands end with status N (a documented
  error), not 0. Directives combine with commas: `repo-root, exit 1`.

Blocks in any other fence (none, ```toml, ```text) are not code and are not
run. Each block is one test, named `FILE:LINE` (the line of its fence).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "architecture").glob("*.md")))
BIN = Path(sys.executable).parent
RUNNABLE = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell", "console": "console", "mlir": "mlir"}
"""Fence info string -> how the block runs; other fences are not code."""
TIMEOUT_S = 600

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"<!--\s*snippet:\s*(?P<body>.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, how it runs and its directives."""

    path: Path
    line: int
    kind: str
    text: str
    skip: str | None = None
    continues: bool = False
    repo_root: bool = False
    exit_status: int = 0
    previous: Block | None = None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    def source(self) -> str:
        """The text to run: for a `continue` block, the chain of python
        blocks it continues, then itself."""
        return (self.previous.source() + "\n" if self.continues and self.previous else "") + self.text


def _directives(lines: list[str], fence: int) -> str:
    """The body of the `<!-- snippet: ... -->` comment right before line
    index `fence` (blank lines between them allowed), or ''."""
    index = fence - 1
    while index >= 0 and not lines[index].strip():
        index -= 1
    match = _DIRECTIVE.search(lines[index]) if index >= 0 else None
    return match.group("body") if match else ""


def parse_blocks(path: Path) -> list[Block]:
    """Every fenced block of `path` in a runnable language, with its directives."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    previous_python: Block | None = None
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, info = opening.group("indent"), opening.group("info").strip()
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[index + 1 : end]]
        language = info.split()[0] if info else ""
        if language in RUNNABLE:
            directives = _directives(lines, index)
            skip = None
            continues = repo_root = False
            exit_status = 0
            if directives.startswith("skip"):  # the rest, commas and all, is the reason
                skip = directives[len("skip") :].strip().removeprefix("(").removesuffix(")").strip()
                skip = skip or "(no reason given)"
                directives = ""
            for part in (p.strip() for p in directives.split(",") if directives):
                if part == "continue":
                    continues = True
                elif part == "repo-root":
                    repo_root = True
                elif part.startswith("exit"):
                    exit_status = int(part.split()[1])
                else:
                    raise ValueError(f"{path}:{index + 1}: unknown snippet directive {part!r}")
            block = Block(
                path, index + 1, RUNNABLE[language], "\n".join(body) + "\n", skip, continues, repo_root,
                exit_status, previous_python if continues else None,
            )
            blocks.append(block)
            if block.kind == "python" and skip is None:  # a skipped block is not run: none continues it
                previous_python = block
        index = end + 1
    return blocks


BLOCKS = [block for path in DOCS for block in parse_blocks(path)]

pytestmark = pytest.mark.slow
"""About four minutes on two shared cores: each block is a fresh interpreter
that imports torch, and a `continue` block runs the blocks it continues."""


def _environment() -> dict[str, str]:
    """A newcomer's environment: this venv first on PATH; no PYTHONPATH (the
    repository must not be importable except as the installed package); none
    of the OPTIMUS_* settings the test session runs under (tests/conftest.py
    sets OPTIMUS_STRICT, which turns the documented fallbacks into errors);
    one torch thread."""
    env = {
        k: v for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "TORCH_LOGS") and not k.startswith("OPTIMUS_")
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(BIN.parent)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _workdir(block: Block, tmp_path: Path) -> Path:
    """An empty directory, or for a `repo-root` block one that links to the
    repository's top-level entries (reads see the clone, writes stay here)."""
    work = tmp_path / "work"
    work.mkdir()
    if block.repo_root:
        for entry in REPO.iterdir():
            if entry.name not in (".git", "build"):
                (work / entry.name).symlink_to(entry)
    return work


def _console_commands(text: str) -> tuple[list[str], list[str]]:
    """The commands (`$ ` lines, backslash continuations joined) and the
    output lines shown of a console block."""
    commands: list[str] = []
    shown: list[str] = []
    continuing = False
    for line in text.splitlines():
        if continuing:
            commands[-1] += "\n" + line
            continuing = line.rstrip().endswith("\\")
        elif line.startswith("$ "):
            commands.append(line[2:])
            continuing = line.rstrip().endswith("\\")
        elif line.strip():
            shown.append(line)
    return commands, shown


_NUMBER = r"\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _shown_line_pattern(line: str) -> re.Pattern[str]:
    """A shown output line as a regex: numbers match any number, whitespace
    any whitespace."""
    tokens = []
    for token in line.split():
        parts = re.split(f"({_NUMBER})", token)
        tokens.append("".join(_NUMBER if i % 2 else re.escape(part) for i, part in enumerate(parts)))
    return re.compile(r"\s+".join(tokens))


def _run(argv: list[str], block: Block, tmp_path: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=_workdir(block, tmp_path), env=_environment(), input=stdin, capture_output=True,
        text=True, timeout=TIMEOUT_S, check=False,
    )


def _explain(block: Block, result: subprocess.CompletedProcess[str], what: str) -> str:
    return (
        f"{block.id}: {what}\n--- block ---\n{block.source()}--- stdout ---\n{result.stdout[-4000:]}"
        f"--- stderr ---\n{result.stderr[-4000:]}"
    )


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_snippet_runs(block: Block, tmp_path: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"{block.id}: {block.skip}")
    if block.kind == "python":
        script = tmp_path / "snippet.py"
        script.write_text(block.source())
        result = _run([sys.executable, str(script)], block, tmp_path)
    elif block.kind == "shell":
        result = _run(["bash", "-e", "-o", "pipefail", "-s"], block, tmp_path, stdin=block.text)
    elif block.kind == "console":
        commands, shown = _console_commands(block.text)
        assert commands, f"{block.id}: a console block without a `$ ` command"
        script = "\n".join(commands) + "\n"
        result = _run(["bash", "-o", "pipefail", "-s"], block, tmp_path, stdin=script)
        printed = result.stdout + result.stderr
        for line in shown:
            if line.strip() in ("...", "…"):
                continue
            assert _shown_line_pattern(line).search(printed), _explain(
                block, result, f"the output shown, {line.strip()!r}, is not what the command prints"
            )
    else:  # mlir
        if "builtin.module" not in block.text:
            pytest.fail(f"{block.id}: an mlir fragment (no builtin.module): mark it `<!-- snippet: skip (why) -->`")
        source = tmp_path / "snippet.mlir"
        source.write_text(block.text)
        result = _run([str(BIN / "optimus-opt"), str(source)], block, tmp_path)
    assert result.returncode == block.exit_status, _explain(
        block, result, f"exit status {result.returncode}, expected {block.exit_status}"
    )


def test_the_docs_have_blocks_to_run() -> None:
    """The parser finds the blocks (a broken fence regex would pass every
    test above by finding none)."""
    readme = [b for b in BLOCKS if b.path.name == "README.md"]
    assert sum(b.kind == "python" and b.skip is None for b in readme) >= 3
    assert any(b.kind in ("shell", "console") and b.skip is None for b in BLOCKS)
    assert any(b.kind == "mlir" and b.skip is None for b in BLOCKS)


def test_skips_have_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    """Skipping is visible: every skipped block has a reason; the list is
    printed (`pytest -s`) with the count."""
    skipped = [b for b in BLOCKS if b.skip is not None]
    with capsys.disabled():
        print(f"\n{len(skipped)} of {len(BLOCKS)} doc blocks are not run:")
        for block in skipped:
            print(f"  {block.id}: {block.skip}")
    assert all(b.skip and b.skip != "(no reason given)" for b in skipped), [b.id for b in skipped if not b.skip]


def test_continue_follows_a_python_block() -> None:
    """A `continue` block has a python block before it in its file."""
    for block in BLOCKS:
        if block.continues:
            assert block.kind == "python" and block.previous is not None, block.id


def test_console_commands_are_parsed() -> None:
    """The console parser: continuations joined, output lines kept apart,
    numbers in the shown output match any number."""
    commands, shown = _console_commands("$ a \\\n    b\nout 1.5 ms\n...\n$ c\n")
    assert commands == ["a \\\n    b", "c"]
    assert shown == ["out 1.5 ms", "..."]
    assert _shown_line_pattern("  (S) 12 ops raised").search("x (S) 7 ops   raised")
    assert not _shown_line_pattern("(S) 12 ops raised").search("(S) 12 ops lowered")
