"""Per-call cost of the input guard of `optimize()`'s result (`optimus_ir.api.guards`).

The model is examples/recsys.py's 'mixed' variant (tower widths 16/32/64
into 32-wide towers, depth 2) with 64 towers by default, at batch 64,
optimized with the default pipeline. On one thread, interleaved, medians of
per-call CPU times of the calling thread over the rounds (the timing loop
of `bench_param_cache`), under `torch.no_grad()`:

* check -- `module.optimus_guard.check(x)` alone: what the guard adds to
  every call (its two generated lines in `forward` call it);
* guarded -- the module as `optimize()` returns it;
* unguarded -- a copy of it whose `forward` has the guard's lines removed.

`guard %` is check / guarded. `guarded - unguarded` measures the same thing
as the difference of two noisy figures (it can come out negative).

Then, once, wall-clock: `optimize()` itself, and the first call at another
batch size (`new batch s`: the size proof, one dynamic capture and one
symbolic run; later calls at any batch size >= 2 pay the check only).

`--dict-features` adds the same figures for a CTR model whose input is a
dict of 39 feature tensors (13 dense through a linear each, 26 ids through
an embedding each, then a linear): the guard checks every entry.

Usage::

    python benchmarks/bench_guards.py
    python benchmarks/bench_guards.py --towers 64 --batch 64 --rounds 30 --json out.json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

_ROOT = Path(__file__).resolve().parent.parent
for path in (_ROOT, _ROOT / "examples", _ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import optimus_ir  # noqa: E402
from optimus_ir.examples.timing import median_us_each  # noqa: E402
from optimus_ir.api.guards import GUARD_ATTRIBUTE  # noqa: E402
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model  # noqa: E402


def without_guard(module: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The same module (its parameters, cache and fallback shared) whose
    `forward` does not call the guard. (Not `copy.deepcopy`: that exceeds
    Python's recursion limit on the 64-tower module, with or without guards.)"""
    graph = copy.deepcopy(module.graph)
    codegen = graph._codegen  # noqa: SLF001
    lines = codegen._guard.split("\n")  # type: ignore[attr-defined]
    kept = [line for line in lines if GUARD_ATTRIBUTE not in line]
    assert len(lines) - len(kept) == 2, codegen._guard  # type: ignore[attr-defined]
    codegen._guard = "\n".join(kept)  # type: ignore[attr-defined]
    bare = torch.fx.GraphModule(module, graph)
    bare.__dict__.update(
        {k: v for k, v in module.__dict__.items() if k.startswith("_optimus") and k not in bare.__dict__}
    )
    bare.training = module.training
    assert GUARD_ATTRIBUTE not in bare.code
    return bare


class DictFeatures(torch.nn.Module):
    """A CTR model on a dict of 39 features (13 dense, 26 categorical)."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = torch.nn.ModuleList(torch.nn.Linear(1, 16) for _ in range(13))
        self.sparse = torch.nn.ModuleList(torch.nn.Embedding(1000, 16) for _ in range(26))
        self.top = torch.nn.Linear(39 * 16, 1)

    def forward(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        parts = [layer(features[f"I{i}"]) for i, layer in enumerate(self.dense)]
        parts += [table(features[f"C{i}"]) for i, table in enumerate(self.sparse)]
        return self.top(torch.cat(parts, 1))


def dict_features(batch: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        **{f"I{i}": torch.randn(batch, 1, generator=g) for i in range(13)},
        **{f"C{i}": torch.randint(0, 1000, (batch,), generator=g) for i in range(26)},
    }


def measure(towers: int, batch: int, variant: str, rounds: int, sample_ms: float) -> dict[str, float]:
    """The figures for one model: per-call microseconds, one-time seconds
    (`towers` 0: the dict-of-39-features model)."""
    if towers == 0:
        model: torch.nn.Module = DictFeatures().eval()
        x: object = dict_features(batch)
        other = dict_features(batch + 1, 1)
    else:
        model, (x,) = make_recsys_model(num_towers=towers, batch=batch, **VARIANTS[variant])
        other = torch.randn(batch + 1, x.shape[1])
    start = time.perf_counter()
    guarded = optimus_ir.optimize(model, (x,))
    optimize_s = time.perf_counter() - start
    unguarded = without_guard(guarded)
    guard = guarded.optimus_guard
    with torch.no_grad():
        expected = model(x)
        for name, module in (("guarded", guarded), ("unguarded", unguarded)):
            torch.testing.assert_close(module(x), expected, rtol=0, atol=0, msg=name)
        assert guard.check(x) is True
        figures = median_us_each(
            {
                "check": lambda: guard.check(x),
                "guarded": lambda: guarded(x),
                "unguarded": lambda: unguarded(x),
            },
            rounds,
            sample_ms,
        )
        figures["guard %"] = 100 * figures["check"] / figures["guarded"]
        figures["difference %"] = 100 * (figures["guarded"] - figures["unguarded"]) / figures["unguarded"]
        figures["optimize s"] = optimize_s
        start = time.perf_counter()
        torch.testing.assert_close(guarded(other), model(other))
        figures["new batch s"] = time.perf_counter() - start
        figures["batch generic"] = float(bool(guard.batch_generic))
        figures["reoptimizations"] = float(guard.reoptimizations)
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towers", type=int, nargs="+", default=[64])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="mixed")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--sample-ms", type=float, default=20.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--dict-features", action="store_true", help="also the model on a dict of 39 feature tensors (row 'dict39')"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results: dict[str, dict[str, float]] = {}
    print(
        f"recsys '{args.variant}', batch {args.batch}: per-call us (median of {args.rounds} "
        "interleaved rounds, one thread); one-time s (wall clock)"
    )
    header = ["check", "guarded", "unguarded", "guard %", "difference %", "optimize s", "new batch s"]
    print(f"{'towers':>6}  " + "  ".join(f"{c:>12}" for c in header) + "  batch-generic")
    for towers in [*args.towers, *([0] if args.dict_features else [])]:
        figures = measure(towers, args.batch, args.variant, args.rounds, args.sample_ms)
        label = str(towers) if towers else "dict39"
        results[label] = figures
        print(
            f"{label:>6}  "
            + "  ".join(f"{figures[c]:>12.2f}" for c in header)
            + f"  {'yes' if figures['batch generic'] else 'no'}"
            f" ({int(figures['reoptimizations'])} re-optimization(s))",
            flush=True,
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
