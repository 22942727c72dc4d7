"""The xDSL context with exactly this project's dialects registered."""

from __future__ import annotations

from xdsl.context import Context


def project_dialects() -> dict[str, object]:
    """Name -> factory of every dialect the project's IR may contain."""

    def fx():
        from optimus_ir.dialects.fx import FX

        return FX

    def torch_dialect():
        from optimus_ir.dialects.torch import TORCH

        return TORCH

    def builtin():
        from xdsl.dialects.builtin import Builtin

        return Builtin

    def func():
        from xdsl.dialects.func import Func

        return Func

    factories = {"builtin": builtin, "func": func, "fx": fx, "torch": torch_dialect}
    try:
        from optimus_ir.dialects import batch as _batch  # noqa: F401

        def batch_dialect():
            from optimus_ir.dialects.batch import BATCH

            return BATCH

        factories["batch"] = batch_dialect
    except ImportError:
        pass
    return factories


def make_context(allow_unregistered: bool = False) -> Context:
    """A fresh Context that knows the project's dialects (loaded lazily)."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in project_dialects().items():
        ctx.register_dialect(name, factory)  # type: ignore[arg-type]
    return ctx


def parse_module(text: str, name: str = "<string>"):
    """Parse IR text into a ModuleOp (for tests and the CLI only: slow).

    Every op records its source position as its location, so diagnostics and
    rewrite logs can name the line."""
    from optimus_ir.diagnostics import LocatingParser

    return LocatingParser(make_context(), text, name).parse_module()
