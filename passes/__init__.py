"""The passes layer (rank 4; `optimus_ir.passes`). One module (or package)
per pass; the registry is `registry.py` (its own layer, importable from any);
the patterns passes share (`canonicalization_patterns`, `split_cat_common`,
`view_programs`) are the patterns layer (rank 3.5)."""

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
