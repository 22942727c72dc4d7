"""The models of the benchmark suite (`benchmarks/suite.py`), by name.

All are built in the repository from seeded random weights (no downloads):

* the synthetic recommendation family of `examples/recsys.py`: 8, 64, 256
  and 1024 towers, `uniform` (16-wide towers, tanh/relu, depth 2) and
  `mixed` (widths 16/32/64 cycled into 32-wide towers, tanh/relu/sigmoid,
  depth 2) -- the variants `benchmarks/bench_batch_fusion.py` measures --,
  plus `activations` (mixed widths, all five activations cycled) and
  `nested` (the input split into 8 groups, each split again into its
  towers: nested split groups);
* `dlrm`: a DLRM-style model (`examples/dlrm.py`): embedding bags, a bottom
  and a top MLP, pairwise dot-product interaction;
* `mmoe`: multi-task ranking (`examples/mmoe.py`): parallel expert MLPs
  mixed by one softmax gate per task, a tower per task;
* `wide-deep`: a wide-and-deep model (`examples/wide_deep.py`): a wide
  linear next to per-feature embeddings and projections feeding a deep MLP;
* `plumbing`: the split/cat plumbing model of `make demo`'s section 7
  (`examples/plumbing.py`), at the suite's batch;
* `demo`: `make demo`'s model (`examples/demo.py`, `MODEL_VARIANT`: 64
  mixed towers, seed 0) -- the same model as `recsys-mixed-64` and as
  `benchmarks/bench_compile.py`'s, under the name issue 23 gives it (not in
  `FULL`: it would measure recsys-mixed-64 twice).

`build(name, batch)` gives `(model in eval mode, example inputs)`;
`SMALL` are the sizes of `--quick` (seconds, for the CI smoke run).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "examples"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

Built = tuple[torch.nn.Module, tuple[Any, ...]]

from optimus_ir.examples.recsys import VARIANTS as _NAMED  # noqa: E402

RECSYS_VARIANTS: dict[str, dict[str, Any]] = {
    **_NAMED,
    "activations": {**_NAMED["mixed"], "activations": ("tanh", "relu", "sigmoid", "gelu", "silu")},
    "nested": {**_NAMED["mixed"], "split_groups": 8},
}
"""Keyword options of `make_recsys_model` per recommendation variant."""


@dataclass(frozen=True)
class SuiteModel:
    """One benchmark model: a name, a one-line description and its factory."""

    name: str
    family: str
    description: str
    make: Callable[[int], Built]
    """`make(batch)` -> (model in eval mode, example inputs), seeded."""


def _recsys(variant: str, towers: int) -> SuiteModel:
    options = RECSYS_VARIANTS[variant]

    def make(batch: int) -> Built:
        from optimus_ir.examples.recsys import make_recsys_model

        return make_recsys_model(num_towers=towers, batch=batch, seed=0, **options)

    groups = options.get("split_groups")
    detail = f", {groups} nested split groups" if groups else ""
    widths = options["tower_width"]
    return SuiteModel(
        f"recsys-{variant}-{towers}",
        "recsys",
        f"{towers} towers, widths {widths}, {len(options['activations'])} activations, "
        f"depth {options['tower_depth']}{detail}",
        make,
    )


def _dlrm(name: str, **sizes: Any) -> SuiteModel:
    def make(batch: int) -> Built:
        from optimus_ir.examples.dlrm import make_dlrm_model

        return make_dlrm_model(batch=batch, seed=0, **sizes)

    tables = sizes.get("num_tables", 8)
    return SuiteModel(name, "dlrm", f"DLRM: {tables} embedding bags, bottom/top MLP, pairwise interaction", make)


def _mmoe(name: str, **sizes: Any) -> SuiteModel:
    def make(batch: int) -> Built:
        from optimus_ir.examples.mmoe import make_mmoe_model

        return make_mmoe_model(batch=batch, seed=0, **sizes)

    experts, tasks = sizes.get("experts", 8), sizes.get("tasks", 4)
    return SuiteModel(name, "mmoe", f"multi-task ranking: {experts} expert MLPs, {tasks} gated task towers", make)


def _wide_deep(name: str, **sizes: Any) -> SuiteModel:
    def make(batch: int) -> Built:
        from optimus_ir.examples.wide_deep import make_wide_deep_model

        return make_wide_deep_model(batch=batch, seed=0, **sizes)

    features = sizes.get("sparse_features", 16)
    return SuiteModel(
        name, "wide-deep", f"wide & deep: wide linear, {features} embedded features with projections, deep MLP", make
    )


def _plumbing(name: str) -> SuiteModel:
    def make(batch: int) -> Built:
        from optimus_ir.examples.plumbing import Plumbing

        torch.manual_seed(0)
        model = Plumbing().eval()
        return model, (torch.randn(batch, 4 * model.width),)

    return SuiteModel(name, "plumbing", "split/cat plumbing: split, tanh towers, cat, split of a split, stack", make)


def _demo() -> SuiteModel:
    model = _recsys("mixed", 64)
    return SuiteModel("demo", "recsys", f"make demo's model (= recsys-mixed-64): {model.description}", model.make)


FULL: tuple[SuiteModel, ...] = (
    *(_recsys(variant, towers) for variant in ("uniform", "mixed") for towers in (8, 64, 256, 1024)),
    _recsys("activations", 64),
    _recsys("nested", 64),
    _dlrm("dlrm"),
    _mmoe("mmoe"),
    _wide_deep("wide-deep"),
    _plumbing("plumbing"),
)
"""The full suite, in table order."""

SMALL: tuple[SuiteModel, ...] = (
    _recsys("mixed", 8),
    _recsys("nested", 8),
    _dlrm("dlrm-small", num_tables=4, rows=100),
    _mmoe("mmoe-small", experts=4, tasks=2, features=32),
    _wide_deep("wide-deep-small", sparse_features=4, rows=100),
)
"""`--quick`: one small model of each family."""

MODELS: dict[str, SuiteModel] = {model.name: model for model in FULL + SMALL + (_demo(),)}


def build(name: str, batch: int) -> Built:
    """The seeded model `name` in eval mode and its example inputs of `batch` rows."""
    try:
        model = MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; choose from {', '.join(MODELS)}") from None
    return model.make(batch)


if __name__ == "__main__":
    # A module of models, not a benchmark: run as a script it lists them
    # (every script of benchmarks/ answers --help).
    import argparse

    argparse.ArgumentParser(
        description="The models of the benchmark suite (a module imported by "
        "benchmarks/suite.py); run alone it lists their names, FULL and SMALL (--quick)."
    ).parse_args()
    print("full: " + " ".join(m.name for m in FULL))
    print("small (--quick): " + " ".join(m.name for m in SMALL))
