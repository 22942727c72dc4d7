"""Per-call cost of the parameter cache (`optimus_ir.param_cache`).

The model is N same-shaped linears written as one batched matmul over
stacked weights and biases, as batch fusion emits it:
`baddbmm(stack(biases).unsqueeze(1), x, stack(weights).transpose(1, 2))`,
at N = 64 and 256 (N linears means 2N stacked parameters) and d = h = 16
and 64, batch 64 by default (overhead-bound). On one
thread, interleaved (every round runs each variant `inner` times back to
back, the order rotated per round), medians of the per-call times over the
rounds, garbage collector paused, CPU time of the calling thread
(`time.thread_time_ns`, so other processes on the core do not count):

* check -- `cache.current_values(*sources)` alone, with nothing changed:
  the identity, storage and version test of every source (2N of them);
* stack -- the parameter expressions computed once (`compute.forward`):
  what a module without the cache pays per call for them;
* no cache -- the optimized module without the cache (`cache_parameters=False`);
* cache -- the optimized module as `optimize()` returns it;
* freeze -- `optimize(..., freeze=True)`;
* cache, grad -- the cached module called with autograd on (the
  parameters require grad, so the values are computed at run time).

All but the last run under `torch.no_grad()`. Before timing, every
variant's output is compared with the model's (rtol = atol = 0).

Usage::

    python benchmarks/bench_param_cache.py                # N = 64 and 256
    python benchmarks/bench_param_cache.py --towers 64 --rounds 20 --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import optimus_ir  # noqa: E402
from optimus_ir.api import _optimize  # noqa: E402
from optimus_ir.param_cache import CACHE_ATTRIBUTE  # noqa: E402


class StackedLinears(nn.Module):
    """N linears `d -> h` as one baddbmm over stacked weights and biases."""

    def __init__(self, towers: int, d: int = 16, h: int = 16) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.names = [f"t{i}" for i in range(towers)]
        for name in self.names:
            setattr(self, name, nn.Linear(d, h))
            layer = getattr(self, name)
            with torch.no_grad():
                layer.weight.copy_(torch.randn(h, d, generator=g))
                layer.bias.copy_(torch.randn(h, generator=g))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        layers = [getattr(self, name) for name in self.names]
        w = torch.stack([layer.weight for layer in layers]).transpose(1, 2)
        b = torch.stack([layer.bias for layer in layers]).unsqueeze(1)
        return torch.baddbmm(b, x, w)


def _time(variants: dict[str, Callable[[], Any]], rounds: int, sample_ms: float) -> dict[str, float]:
    """Median per-call microseconds of each variant, interleaved."""
    inner: dict[str, int] = {}
    for name, fn in variants.items():
        fn()
        start = time.thread_time_ns()
        count = 0
        while time.thread_time_ns() - start < sample_ms * 1e5 or count < 3:  # a tenth of a sample
            fn()
            count += 1
        per_call = (time.thread_time_ns() - start) / count
        inner[name] = max(1, int(sample_ms * 1e6 / max(per_call, 1.0)))
    samples: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    gc.collect()
    gc.disable()
    try:
        for round_index in range(rounds):
            order = names[round_index % len(names):] + names[: round_index % len(names)]
            for name in order:
                fn, n = variants[name], inner[name]
                start = time.thread_time_ns()
                for _ in range(n):
                    fn()
                samples[name].append((time.thread_time_ns() - start) / n / 1e3)
    finally:
        gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def measure(towers: int, batch: int, width: int, rounds: int, sample_ms: float) -> dict[str, float]:
    """The per-call figures (microseconds) for one model."""
    model = StackedLinears(towers, width, width)
    x = torch.randn(towers, batch, width, generator=torch.Generator().manual_seed(1))
    cached = optimus_ir.optimize(model, (x,))
    frozen = optimus_ir.optimize(model, (x,), freeze=True)
    plain = _optimize(
        model,
        (x,),
        None,
        validate=False,
        statistics=None,
        example_kwargs=None,
        verify_each=None,
        guard_strides=True,
        cache_parameters=False,
    )
    assert cached.optimus_report.cached_parameter_values == 2
    cache = getattr(cached, CACHE_ATTRIBUTE)
    sources = cache._state.sources  # noqa: SLF001 - the very tensors the module passes
    with torch.no_grad():
        expected = model(x)
        for name, module in (("cache", cached), ("freeze", frozen), ("no cache", plain)):
            torch.testing.assert_close(module(x), expected, rtol=0, atol=0, msg=name)
        no_grad = {
            "check": lambda: cache.current_values(*sources),
            "stack": lambda: cache.compute.forward(*sources),
            "no cache": lambda: plain(x),
            "cache": lambda: cached(x),
            "freeze": lambda: frozen(x),
        }
        figures = _time(no_grad, rounds, sample_ms)
    figures.update(_time({"cache, grad": lambda: cached(x)}, rounds, sample_ms))
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towers", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, nargs="+", default=[16, 64], help="d = h of every linear")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--sample-ms", type=float, default=20.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results: dict[str, dict[str, float]] = {}
    columns = ["check", "stack", "no cache", "cache", "freeze", "cache, grad"]
    print(f"per-call time, us (median of {args.rounds} interleaved rounds, one thread, batch {args.batch})")
    print(f"{'towers':>6} {'width':>5}  " + "  ".join(f"{c:>11}" for c in columns) + "  no cache/cache")
    for towers in args.towers:
        for width in args.width:
            figures = measure(towers, args.batch, width, args.rounds, args.sample_ms)
            results[f"{towers}x{width}"] = figures
            print(
                f"{towers:>6} {width:>5}  "
                + "  ".join(f"{figures[c]:>11.1f}" for c in columns)
                + f"  {figures['no cache'] / figures['cache']:>13.2f}x",
                flush=True,
            )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
