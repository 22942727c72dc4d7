"""torch.compile with and without optimus-ir: first-call compile time and
steady-state time (issue 11).

Variants, all under `torch.no_grad()` on the model in eval mode:

* `inductor`           -- `torch.compile(model)`;
* `inductor+optimus`   -- the same with PyTorch's Optimus: every pre-grad
  batch fusion and split/cat pass (`config.pre_grad_fusion_options`, the set
  `bench_batch_fusion.py` uses);
* `ours+inductor`      -- `torch.compile(model, backend="optimus")`: our
  pipeline on the Dynamo graph, then Inductor.

Compile time is the first call's wall time, measured in a fresh Python
process per (variant, repeat) with a fresh, empty Inductor cache directory
(`TORCHINDUCTOR_CACHE_DIR`), so nothing is served from a cache of an
earlier run; the variants alternate over the repeats. Steady-state time is
measured afterwards in one process holding all three compiled models,
interleaved (`timing.measure`: round robin, rotated order, warm-up), as the
median of the repeats with the quartiles as the spread. Every result is
checked against the eager model (max abs difference printed).

`--freeze` compares the three under Inductor's freezing (parameters are
constants, inference): `torch._inductor.config.freezing = True` in every
process (Dynamo then hands parameters over as attributes, and Inductor
folds them and everything computed from them alone), and ours with
`freeze=True` (issue 23: our weight stacks folded too).

Targets (issue 11, the 64-tower mixed model on this machine): compile time
with ours at most 0.8x Inductor alone; steady-state no slower than Inductor
alone (within 2%, the spread of a quiet machine).

    python benchmarks/bench_compile.py                       # 64 mixed towers, batch 64
    python benchmarks/bench_compile.py --towers 8 --repeats 1 --steady-repeats 5   # quick
    python benchmarks/bench_compile.py --freeze --repeats 1 --steady-repeats 15   # under freezing
    python benchmarks/bench_compile.py --smoke                # the runner works (tested)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent / "examples"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

VARIANTS = ("inductor", "inductor+optimus", "ours+inductor")
COMPILE_TARGET = 0.8
"""ours+inductor's compile time over inductor's, at most."""
STEADY_MARGIN = 0.02
"""How much slower than Inductor the steady state may measure (noise)."""
TOLERANCE = 1e-4
"""The largest max abs difference to eager accepted (fp32; batched matmuls
and Inductor's fusions reorder sums)."""


def build(towers: int, batch: int) -> tuple[Any, Any]:
    """The recsys model of the batch-fusion benchmark's `mixed` variant."""
    import torch

    from bench_batch_fusion import VARIANTS as MODEL_VARIANTS
    from optimus_ir.examples.recsys import make_recsys_model

    model, (x,) = make_recsys_model(num_towers=towers, batch=batch, **MODEL_VARIANTS["mixed"])
    torch.set_num_threads(1)
    return model.eval(), x


def freezing(freeze: bool) -> Any:
    """A context with Inductor's freezing on (`freeze`) or left alone. Scoped,
    not set for the process: the tests call `main` in pytest's process, and
    a freezing left on makes Dynamo hand later graphs their parameters as
    attributes."""
    import contextlib

    if not freeze:
        return contextlib.nullcontext()
    from torch._inductor import config

    return config.patch(freezing=True)


def compile_and_call(variant: str, model: Any, x: Any, freeze: bool = False) -> tuple[Any, Any, float]:
    """`model` under torch.compile the way `variant` says, called once (the
    compile happens then, under the variant's Inductor settings): the
    compiled function, its output and the first call's wall time.
    `freeze`: ours with `freeze=True` (the caller is inside `freezing`)."""
    import contextlib

    import torch
    from torch._inductor import config

    settings: Any = contextlib.nullcontext()
    if variant == "inductor":
        function = torch.compile(model)
    elif variant == "inductor+optimus":
        # a backend of its own: Dynamo would otherwise run plain Inductor's code
        from suite import inductor_with_pytorch_optimus

        function = torch.compile(model, backend=inductor_with_pytorch_optimus)
    elif variant == "ours+inductor":
        function = torch.compile(model, backend="optimus", options={"freeze": freeze})
    else:
        raise ValueError(f"unknown variant {variant!r} (choose from {', '.join(VARIANTS)})")
    with settings:
        start = time.perf_counter()
        out = function(x)
        seconds = time.perf_counter() - start
    return function, out, seconds


def child_compile(variant: str, towers: int, batch: int, freeze: bool = False) -> dict[str, Any]:
    """In a fresh process: the first call's wall time and its max abs diff."""
    import torch

    model, x = build(towers, batch)
    with freezing(freeze), torch.no_grad():
        expected = model(x)
        _function, got, seconds = compile_and_call(variant, model, x, freeze)
    return {"seconds": seconds, "max_abs_diff": (got - expected).abs().max().item()}


def run_child(variant: str, towers: int, batch: int, freeze: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
        done = subprocess.run(
            [sys.executable, __file__, "--child", variant, "--towers", str(towers), "--batch", str(batch)]
            + (["--freeze"] if freeze else []),
            env=env, capture_output=True, text=True,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{variant}: the child process failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def steady_state(
    towers: int, batch: int, repeats: int, sample_ms: float, freeze: bool = False,
    variants: Sequence[str] = VARIANTS,
) -> dict[str, list[float]]:
    """Per-call milliseconds of every variant, interleaved in one process."""
    import torch

    from optimus_ir.examples.timing import measure

    import copy

    model, x = build(towers, batch)
    calls = {}
    with freezing(freeze), torch.no_grad():
        for variant in variants:
            # No torch._dynamo.reset() in between: it drops the code caches of
            # the variants compiled before, which would then recompile on
            # their next call without their own Inductor settings.
            function, _out, _seconds = compile_and_call(variant, copy.deepcopy(model), x, freeze)
            calls[variant] = (lambda f: lambda: f(x))(function)
        # Measured under no_grad too: Dynamo guards on grad mode, so calls
        # with it on would recompile every variant as a training graph.
        samples, _inner = measure(calls, repeats=repeats, sample_ms=sample_ms, clock=time.perf_counter_ns)
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towers", type=int, default=64)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="fresh processes per variant for compile time")
    parser.add_argument("--steady-repeats", type=int, default=60)
    parser.add_argument("--sample-ms", type=float, default=50.0)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--freeze", action="store_true",
                        help="all variants under Inductor's freezing (ours with freeze=True): inference, constant parameters")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat: checks the runner, not speed")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.towers, args.batch, args.repeats, args.steady_repeats, args.sample_ms = 2, 8, 1, 2, 1.0
    if args.child:
        print(json.dumps(child_compile(args.child, args.towers, args.batch, args.freeze)))
        return 0
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    mode = ", Inductor freezing (ours: freeze=True)" if args.freeze else ""
    print(f"model: recsys mixed, {args.towers} towers, batch {args.batch}, 1 thread, no_grad{mode}", flush=True)
    compile_s: dict[str, list[float]] = {v: [] for v in variants}
    diffs: dict[str, float] = {}
    for repeat in range(args.repeats):
        for variant in variants:
            result = run_child(variant, args.towers, args.batch, args.freeze)
            compile_s[variant].append(result["seconds"])
            diffs[variant] = max(diffs.get(variant, 0.0), result["max_abs_diff"])
            print(f"  compile {variant:<17} run {repeat + 1}/{args.repeats}: {result['seconds']:.1f} s", flush=True)
    print("  steady state (interleaved in one process) ...", flush=True)
    steady = steady_state(args.towers, args.batch, args.steady_repeats, args.sample_ms, args.freeze, variants)
    rows = []
    base_compile = statistics.median(compile_s["inductor"]) if "inductor" in compile_s else None
    base_steady = statistics.median(steady["inductor"])
    print()
    print("| variant | compile s (median) | vs inductor | steady ms (median [q1, q3]) | vs inductor | max abs diff |")
    print("|---|---|---|---|---|---|")
    for variant in variants:
        c = statistics.median(compile_s[variant])
        s = steady[variant]
        q1, med, q3 = statistics.quantiles(s, n=4) if len(s) > 1 else (s[0], s[0], s[0])
        med = statistics.median(s)
        rows.append((variant, c, med))
        c_ratio = f"{c / base_compile:.2f}x" if base_compile else "-"
        print(
            f"| {variant} | {c:.1f} | {c_ratio} | {med:.3f} [{q1:.3f}, {q3:.3f}] | "
            f"{med / base_steady:.2f}x | {diffs[variant]:.2e} |"
        )
    ok = True
    wrong = [v for v in variants if diffs[v] > TOLERANCE]
    if wrong:
        ok = False
        print(f"\nWRONG RESULTS: {', '.join(wrong)} differ from eager by more than {TOLERANCE}")
    if args.smoke:
        print("\nsmoke run: tiny sizes, timings not meaningful; targets not judged")
        return 0 if ok else 1
    if base_compile and "ours+inductor" in compile_s:
        ratio = statistics.median(compile_s["ours+inductor"]) / base_compile
        passed = ratio <= COMPILE_TARGET
        ok &= passed
        print(f"\ntarget compile time ours+inductor / inductor <= {COMPILE_TARGET}: {ratio:.2f} {'PASS' if passed else 'FAIL'}")
        ratio = statistics.median(steady["ours+inductor"]) / base_steady
        passed = ratio <= 1 + STEADY_MARGIN
        ok &= passed
        print(f"target steady state ours+inductor / inductor <= 1 (+{STEADY_MARGIN:.0%}): {ratio:.2f} {'PASS' if passed else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
