"""Passes of optimus-ir: one module per pass; the registry is `registry.py`."""

from optimus_ir.passes.registry import (
    DEFAULT_PIPELINE,
    PASSES,
    PIPELINES,
    available_passes,
    get_pass_class,
    lazy,
)

__all__ = [
    "DEFAULT_PIPELINE",
    "PASSES",
    "PIPELINES",
    "available_passes",
    "get_pass_class",
    "lazy",
]
