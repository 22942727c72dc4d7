"""The xDSL context with exactly this project's dialects registered.

Parsing text into that context lives in `optimus_ir.translate.parsing`."""

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

    def batch():
        from optimus_ir.dialects.batch import BATCH

        return BATCH

    def builtin():
        from xdsl.dialects.builtin import Builtin

        return Builtin

    def func():
        from xdsl.dialects.func import Func

        return Func

    # A dialect is registered here when it exists; an import error inside one
    # is a bug and must surface, so nothing is imported speculatively.
    return {
        "builtin": builtin, "func": func, "fx": fx, "torch": torch_dialect, "batch": batch,
    }


def make_context(allow_unregistered: bool = False) -> Context:
    """A fresh Context that knows the project's dialects (loaded lazily)."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in project_dialects().items():
        ctx.register_dialect(name, factory)  # type: ignore[arg-type]
    return ctx
