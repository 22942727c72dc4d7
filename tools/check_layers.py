"""The layer contract of optimus-ir, checked: `python -m optimus_ir.tools.check_layers`.

Layers import downward only (docs/architecture.md, "Layers"), lowest first,
and each layer is a folder (`Layer.folders`, relative to the repository
root): a module's file lies in a folder of its own layer, so the tree shows
where a change belongs.

The table of layers (rank, name, folder, module patterns, what each is) is
generated from `LAYERS` below: `python tools/check_layers.py --markdown`
prints it, `make docs-layers` writes it into docs/architecture.md.

A module may import its own layer, any layer of a lower rank, and the
registry. Every import counts: module-level, inside functions, under
`TYPE_CHECKING`, `importlib.import_module("...")` / `__import__("...")` with a
literal name, and any string literal that names a project module (a lazy
reference, such as the package's own table of lazily imported names).
Strings naming a pattern, pass or lowering module are allowed in the
registry only (where they are the late binding of passes and pattern sets,
and count neither for the layers nor for cycles). Besides the layers, the
project's module import graph (including all of the above) must have no
cycle. (This module's own strings are layer patterns, not references.)

Each violation is printed as `file:line: <module> imports <module> (<why>)`;
the exit status is 1 when there is one. `--root DIR` checks another tree laid
out like this repository (the tests use it on small fake trees).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

ROOT_PACKAGE = "optimus_ir"

DEFAULT_PACKAGE_DIRS: dict[str, str] = {
    "optimus_ir": "optimus_ir",
    "optimus_ir.dialects": "dialects",
    "optimus_ir.passes": "passes",
    "optimus_ir.lowering": "lowering",
    "optimus_ir.tools": "tools",
}
"""Package -> folder (relative to the root), as pyproject.toml's
`[tool.setuptools.package-dir]` maps them; read from there when it exists."""


@dataclass(frozen=True)
class Layer:
    """A layer: its name, its rank (imports go to lower ranks), the
    module-name patterns (fnmatch) of its modules and the folders (relative
    to the repository root) its modules' files lie in."""

    name: str
    rank: float
    modules: tuple[str, ...]
    folders: tuple[str, ...] = ()


REGISTRY = "registry"
CHECKER = "optimus_ir.tools.check_layers"


ROOT_MODULES = ("backend", "options", "inductor_hook", "inductor_handoff", "memory", "plugins", "replacements")
"""The modules directly in `optimus_ir/`: the entry points users import by
module (`optimus_ir.backend(...)`, `optimus_ir.options.OptimizeOptions`) and
what importing the package must register (`inductor_handoff`)."""


def _package(dotted: str) -> tuple[str, str]:
    """The patterns of a package and everything in it."""
    return (dotted, f"{dotted}.*")


LAYERS: tuple[Layer, ...] = (
    # The first layer with a matching pattern wins: most specific first.
    Layer(REGISTRY, 0.5, ("optimus_ir.passes.registry",), ("passes",)),
    Layer("foundation", 0, _package("optimus_ir.foundation"), ("optimus_ir/foundation",)),
    Layer("dialects", 1, _package("optimus_ir.dialects"), ("dialects",)),
    Layer("kernels", 2, _package("optimus_ir.kernels"), ("optimus_ir/kernels",)),
    Layer("analysis", 3, _package("optimus_ir.analysis"), ("optimus_ir/analysis",)),
    Layer(
        "patterns",
        3.5,
        _package("optimus_ir.passes.canonicalization_patterns"),
        ("passes/canonicalization_patterns",),
    ),
    Layer("passes", 4, _package("optimus_ir.passes"), ("passes",)),
    Layer("lowering", 4, _package("optimus_ir.lowering"), ("lowering",)),
    Layer("translate", 5, _package("optimus_ir.translate"), ("optimus_ir/translate",)),
    Layer("pipeline", 6, _package("optimus_ir.pipeline"), ("optimus_ir/pipeline",)),
    # The package root holds the entry-point modules users import by name;
    # `api/` the rest. Named one by one: a new module at the root is a
    # decision (at most ten live there), not an accident.
    Layer(
        "api",
        7,
        (
            "optimus_ir",
            *(f"optimus_ir.{name}" for name in ROOT_MODULES),
            *_package("optimus_ir.api"),
        ),
        ("optimus_ir", "optimus_ir/api"),
    ),
    Layer("tools", 8, _package("optimus_ir.tools"), ("tools",)),
    Layer("examples", 9, _package("optimus_ir.examples"), ("optimus_ir/examples",)),
)


LAZILY_NAMED_ONLY_BY_REGISTRY = frozenset({"patterns", "passes", "lowering"})
"""Layers whose modules only the registry may name by a string (a lazy
reference elsewhere would hide an upward or cyclic import)."""


def layer_of(module: str) -> Layer | None:
    """The layer `module` belongs to (None for a module no layer names: the
    check reports those too, so a new module gets a place on purpose)."""
    for layer in LAYERS:
        if any(fnmatchcase(module, pattern) for pattern in layer.modules):
            return layer
    return None


def may_import(source: Layer, target: Layer) -> bool:
    """Whether a module of `source` may import one of `target`."""
    if source.name == target.name or target.name == REGISTRY:
        return True
    if source.name == REGISTRY:
        return target.rank == 0
    return target.rank < source.rank


@dataclass(frozen=True)
class Import:
    """One import of a project module by another, where it is written."""

    source: str
    target: str
    path: Path
    line: int
    how: str  # "import", "lazy import" (inside a function), "import_module", "string"


@dataclass
class ModuleGraph:
    """The project's modules (name -> file) and the imports among them."""

    files: dict[str, Path] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)


def package_dirs(root: Path) -> dict[str, str]:
    """The package -> folder mapping of the tree at `root`."""
    pyproject = root / "pyproject.toml"
    if pyproject.exists():
        config = tomllib.loads(pyproject.read_text())
        mapping = config.get("tool", {}).get("setuptools", {}).get("package-dir")
        if mapping:
            return dict(mapping)
    return dict(DEFAULT_PACKAGE_DIRS)


def discover_modules(root: Path) -> dict[str, Path]:
    """Every project module under `root` (name -> file)."""
    modules: dict[str, Path] = {}
    mapping = package_dirs(root)
    # Deeper packages first, so a folder mapped to a subpackage is named by it.
    for package, folder in sorted(mapping.items(), key=lambda item: -item[0].count(".")):
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            relative = path.relative_to(base).with_suffix("")
            parts = [part for part in relative.parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([package, *parts])
            if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
                continue
            modules.setdefault(name, path)
    return modules


_MODULE_STRING = re.compile(rf"^{ROOT_PACKAGE}(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class _ImportCollector(ast.NodeVisitor):
    """Collects the project imports of one module's syntax tree."""

    def __init__(self, module: str, is_package: bool, path: Path, known: dict[str, Path]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.path = path
        self.known = known
        self.depth = 0  # function nesting
        self.found: list[Import] = []

    def _resolve(self, dotted: str) -> str | None:
        """The longest project module that `dotted` names or starts with."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            candidate = ".".join(parts[:cut])
            if candidate in self.known:
                return candidate
        return None

    def _add(self, target: str | None, node: ast.AST, how: str) -> None:
        if target is None or target == self.module:
            return
        if how == "import" and self.depth:
            how = "lazy import"
        self.found.append(Import(self.module, target, self.path, getattr(node, "lineno", 0), how))

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == ROOT_PACKAGE:
                self._add(self._resolve(alias.name), node, "import")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base_parts = self.package.split(".")
            base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if base.split(".")[0] != ROOT_PACKAGE:
            return
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            # `from package import submodule` imports the submodule; the
            # package's own __init__ runs for any import below it and is not
            # counted as an import of the package.
            if submodule in self.known:
                self._add(submodule, node, "import")
            else:
                self._add(self._resolve(base), node, "import")

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if name in ("import_module", "__import__") and node.args:
            argument = node.args[0]
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                if argument.value.split(".")[0] == ROOT_PACKAGE:
                    self._add(self._resolve(argument.value), node, "import_module")
                return  # the literal is this import, not a further string reference
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if self.module == CHECKER:
            return  # this module names layers by their module patterns
        if isinstance(node.value, str) and _MODULE_STRING.match(node.value):
            target = self._resolve(node.value)
            if target != ROOT_PACKAGE:  # "optimus_ir.<name>" naming no module: a logger, a label
                self._add(target, node, "string")


def build_graph(root: Path) -> ModuleGraph:
    """Parse every project module under `root` and collect its imports."""
    graph = ModuleGraph(files=discover_modules(root))
    for module, path in graph.files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        collector = _ImportCollector(module, path.name == "__init__.py", path, graph.files)
        collector.visit(tree)
        graph.imports.extend(collector.found)
    return graph


def strongly_connected_components(nodes: Sequence[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the components of the graph, each a
    list of its nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _one_cycle(start: str, members: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest import path from `start` back to itself inside one strongly
    connected component (`members`), as a list of modules, first = last."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for successor in sorted(edges.get(node, ())):
                if successor not in members:
                    continue
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]  # start -> ... -> node -> start
                if successor not in parents:
                    parents[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError("a strongly connected component always has a cycle")


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _misplaced(module: str, path: Path, root: Path) -> str | None:
    """Why `module`'s file is not in a folder of its layer (None when it is).

    The folder a file is in is the deepest layer folder holding it
    (`passes/canonicalization_patterns` before `passes`)."""
    layer = layer_of(module)
    if layer is None or not layer.folders:
        return None
    try:
        folder = path.resolve().parent.relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    holders = [f for other in LAYERS for f in other.folders if folder == f or folder.startswith(f + "/")]
    deepest = max(holders, key=len, default=None)
    if deepest in layer.folders:
        return None
    return f"{module} is in the {layer.name} layer but its file is in {folder}/ (the {layer.name} layer lives in {', '.join(layer.folders)})"


def check(root: Path) -> list[str]:
    """Every violation of the layer contract under `root`, as
    `file:line: <module> imports <module> (<why>)` lines, in file order."""
    graph = build_graph(root)
    violations: list[tuple[str, int, str]] = []

    def report(found: Import, why: str) -> None:
        where = _display(found.path, root)
        violations.append((where, found.line, f"{where}:{found.line}: {found.source} imports {found.target} ({why})"))

    for module, path in graph.files.items():
        if layer_of(module) is None:
            where = _display(path, root)
            violations.append((where, 1, f"{where}:1: {module} is in no layer (give it one in {__name__}.LAYERS)"))

    for module, path in graph.files.items():
        misplaced = _misplaced(module, path, root)
        if misplaced:
            where = _display(path, root)
            violations.append((where, 1, f"{where}:1: {misplaced}"))

    edges: dict[str, set[str]] = {}
    for found in graph.imports:
        source, target = layer_of(found.source), layer_of(found.target)
        if found.how == "string" and source is not None and source.name == REGISTRY:
            continue  # the registry's lazy names: the one sanctioned late binding
        if source is not None and target is not None and not may_import(source, target):
            lazy = f" ({found.how})" if found.how != "import" else ""
            report(found, f"{source.name} may not import {target.name}{lazy}")
        elif found.how == "string" and target is not None and target.name in LAZILY_NAMED_ONLY_BY_REGISTRY:
            report(found, f"{target.name} modules are named by string only in the pass registry")
        edges.setdefault(found.source, set()).add(found.target)

    for component in strongly_connected_components(sorted(graph.files), edges):
        if len(component) < 2:
            continue
        cycle = _one_cycle(component[0], set(component), edges)
        text = " -> ".join(cycle)
        for source, target in zip(cycle, cycle[1:]):
            found = min(
                (i for i in graph.imports if i.source == source and i.target == target),
                key=lambda i: i.line,
            )
            report(found, f"import cycle: {text}")

    violations.sort(key=lambda item: (item[0], item[1], item[2]))
    return [text for _, _, text in violations]


LAYER_DESCRIPTIONS: dict[str, str] = {
    REGISTRY: "the one place that names passes, pipelines and pattern modules by string; "
    "any layer may import it, it imports only the foundation",
    "foundation": "facts and machinery every layer shares (types, diagnostics, statistics, the rewrite "
    "driver, effects, traits, the object table, the environment); they name no dialect",
    "dialects": "the fx, torch and batch dialects, and the fx dialect's literal encoding of Python values",
    "kernels": "the custom ops and Triton kernels an exported graph calls at run time",
    "analysis": "what several passes need to know: aliasing, layout, symbolic dims, live bytes, "
    "the cost model and the pricing of a fused group",
    "patterns": "the ops' canonicalization patterns and the pattern helpers passes share",
    "passes": "the passes (but the registry)",
    "lowering": "batch ops to torch ops, torch ops to fx; a sibling of `passes`: neither imports the other",
    "translate": "FX <-> IR, the dialect context, textual IR, the call structure and capture state "
    "(no pass depends on them)",
    "pipeline": "the pass manager and pipeline text, differential validation",
    "api": "the entry points: `optimize()`, the torch.compile backend, the Inductor hook, options, "
    "capture and guards, model state, memory, plugins, replacements",
    "tools": "the command-line tools (`optimus-opt`, `optimus-translate`) and this check",
    "examples": "the example models and `make demo`; users of the API, imported by nothing in the package",
}
"""One line per layer, for the table in docs/architecture.md
(`layer_table_markdown`); every layer of `LAYERS` needs one."""

LAYER_TABLE_BEGIN = "<!-- layer-table:begin -->"
LAYER_TABLE_END = "<!-- layer-table:end -->"


def _rank_text(rank: float) -> str:
    return str(int(rank)) if rank == int(rank) else str(rank)


def layer_table_markdown(layers: Sequence[Layer] = LAYERS) -> str:
    """The layers as a Markdown table (rank, layer, folder, module patterns,
    what it is), lowest rank first, layers of one rank in `LAYERS`' order: the table of
    docs/architecture.md, generated so that it cannot drift from the check."""
    missing = [layer.name for layer in layers if layer.name not in LAYER_DESCRIPTIONS]
    if missing:
        raise ValueError(f"no description in LAYER_DESCRIPTIONS for layer(s): {', '.join(missing)}")
    order = {layer.name: index for index, layer in enumerate(layers)}
    rows = ["| rank | layer | folder | modules | what it is |", "|---|---|---|---|---|"]
    for layer in sorted(layers, key=lambda item: (item.rank, order[item.name])):
        patterns = ", ".join(f"`{pattern}`" for pattern in layer.modules)
        folders = ", ".join(f"`{folder}/`" for folder in layer.folders)
        if layer.name == REGISTRY:
            folders = "`passes/registry.py`"
        rows.append(
            f"| {_rank_text(layer.rank)} | {layer.name} | {folders} | {patterns} | {LAYER_DESCRIPTIONS[layer.name]} |"
        )
    return "\n".join(rows) + "\n"


def with_layer_table(text: str, table: str) -> str:
    """`text` with the part between the layer-table markers replaced by
    `table`; a ValueError when the markers are missing or out of order."""
    begin, end = text.find(LAYER_TABLE_BEGIN), text.find(LAYER_TABLE_END)
    if begin < 0 or end < begin:
        raise ValueError(f"no {LAYER_TABLE_BEGIN} ... {LAYER_TABLE_END} block")
    start = begin + len(LAYER_TABLE_BEGIN)
    return text[:start] + "\n" + table + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    """Check the tree; print each violation; 1 if there was one, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="the repository root (default: the tree this script is in)",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print the layer table (Markdown) instead of checking"
    )
    parser.add_argument(
        "--write-layer-table",
        type=Path,
        metavar="FILE",
        help="rewrite the table between FILE's layer-table markers instead of checking",
    )
    args = parser.parse_args(argv)
    if args.markdown:
        print(layer_table_markdown(), end="")
        return 0
    if args.write_layer_table is not None:
        path = args.write_layer_table
        path.write_text(with_layer_table(path.read_text(), layer_table_markdown()))
        print(f"layer table written to {path}")
        return 0
    root = args.root.resolve()
    violations = check(root)
    for line in violations:
        print(line)
    if violations:
        print(f"{len(violations)} layer contract violation(s)", file=sys.stderr)
        return 1
    print(f"layers ok: {len(discover_modules(root))} modules, no upward import, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
