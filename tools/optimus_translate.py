"""optimus-translate: between PyTorch programs and optimus-ir text.

    optimus-translate --import program.pt2            # a saved torch.export program
    optimus-translate --import models.py:make_model   # a factory -> (module, inputs)
    optimus-translate --export-python graph.mlir      # IR text -> FX Python source

`--import` prints the fx-dialect IR of the program (add `-p PIPELINE` to run
passes on it first, e.g. `-p raise-fx`). A factory spec names a Python file (or
module) and a function in it that returns `(module, example_inputs)`; the
module is captured with Dynamo the way `optimize` captures it.
`--export-python` prints the Python source of the GraphModule that the IR
exports to (operator ops are lowered first).

Errors are reported as `optimus-translate: error: ...` with exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any


class TranslateError(Exception):
    """A user-facing failure; printed without a traceback."""


def _load_factory(spec: str) -> Any:
    path_text, _, function = spec.rpartition(":")
    if not path_text or not function:
        raise TranslateError(f"'{spec}' is not of the form path/to/file.py:factory")
    path = Path(path_text)
    if path.suffix == ".py":
        if not path.is_file():
            raise TranslateError(f"no such file: {path}")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules.setdefault(path.stem, module)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(path_text)
    factory = getattr(module, function, None)
    if factory is None:
        raise TranslateError(f"{path_text} has no attribute '{function}'")
    return factory


def import_program(source: str):
    """An ImportedGraph from a .pt2 file or a `file.py:factory` spec."""
    from optimus_ir.api import capture
    from optimus_ir.translate.importer import import_graph

    if source.endswith(".pt2") and ":" not in source:
        import torch

        if not Path(source).is_file():
            raise TranslateError(f"no such file: {source}")
        exported = torch.export.load(source)
        return import_graph(exported.module())
    factory = _load_factory(source)
    result = factory()
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TranslateError(
            f"factory '{source}' must return (module, example_inputs), got {type(result).__name__}"
        )
    model, example_inputs = result
    return import_graph(capture(model, tuple(example_inputs)), tuple(example_inputs))


def export_python(text: str, name: str) -> str:
    """The FX Python source of the GraphModule that IR text exports to.
    Bad text raises `ParseError`, IR that does not verify
    `VerificationError` (located, like optimus-opt's)."""
    from optimus_ir.foundation.diagnostics import verify_module
    from optimus_ir.translate.parsing import parse_module
    from optimus_ir.translate.exporter import export_graph
    from optimus_ir.translate.importer import graph_of
    from optimus_ir.passes.raise_fx import verify_declared_types
    from optimus_ir.pipeline import run_pipeline

    if not text.replace("\n", " ").strip() or all(
        not line.strip() or line.strip().startswith("//") for line in text.splitlines()
    ):
        raise TranslateError(f"{name}:1:1: error: empty input (no operations)")
    module = parse_module(text, name)
    verify_module(module)
    verify_declared_types(module)
    if any(op.dialect_name() != "fx" for op in graph_of(module).block.ops):
        run_pipeline(module, "lower-to-fx")
    gm = export_graph(module, missing_attributes="random")
    return gm.code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="optimus-translate",
        description="Translate between PyTorch programs and optimus-ir text.",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--import", dest="import_source", metavar="SOURCE",
                      help="a .pt2 file saved by torch.export.save, or path/to/file.py:factory")
    mode.add_argument("--export-python", dest="export_source", metavar="FILE",
                      help="IR text file ('-' for stdin) to turn into FX Python source")
    parser.add_argument("-p", "--passes", default="", help="pipeline to run after --import")
    parser.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = parser.parse_args(argv)

    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from optimus_ir.foundation.diagnostics import OptimusError, VerificationError
    from optimus_ir.translate.parsing import parse_error_diagnostic, read_source

    try:
        if args.import_source is not None:
            program = import_program(args.import_source)
            if args.passes:
                from optimus_ir.pipeline import run_pipeline

                run_pipeline(program.module, args.passes)
            output = str(program.module) + "\n"
        else:
            if args.export_source == "-":
                data, name = sys.stdin.buffer.read(), "<stdin>"
            else:
                name = args.export_source
                try:
                    data = Path(name).read_bytes()
                except OSError as error:
                    raise TranslateError(f"cannot read '{name}': {error.strerror or error}") from None
            text = read_source(data, name)
            output = export_python(text, name)
    except ParseError as error:
        print(parse_error_diagnostic(error, text, name).format({name: text.splitlines()}), file=sys.stderr)
        return 1
    except VerificationError as error:
        for diagnostic in error.errors:
            print(diagnostic.format({name: text.splitlines()}), file=sys.stderr)
        return 1
    except TranslateError as error:
        message = str(error)
        print(message if ": error: " in message else f"optimus-translate: error: {message}", file=sys.stderr)
        return 1
    except OptimusError as error:
        print(error.diagnostic().format(), file=sys.stderr)
        return 1
    except (DiagnosticException, ValueError, LookupError, RuntimeError, RecursionError) as error:
        print(f"optimus-translate: error: {error}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(output)
    else:
        Path(args.output).write_text(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
