"""Compile time of torch.compile(backend="optimus") against Inductor alone,
on the recsys family and on third-party (deepctr-torch) models.

Method (as `bench_compile.py`'s compile time): each (model, variant, repeat)
is one fresh Python process with a fresh, empty Inductor cache directory
(`TORCHINDUCTOR_CACHE_DIR`, `TRITON_CACHE_DIR`), so nothing is served from
an earlier run; the variants alternate within each repeat; the figure is
the first call's wall time (Dynamo's capture, our stage, Inductor), the
median over the repeats; and its CPU time (the process's and that of the
compiler processes it waited for; Inductor compiles in the process,
`TORCHINDUCTOR_COMPILE_THREADS=1`), which load from other processes
inflates far less than the wall time. Under `torch.no_grad()`, eval mode,
one thread.

* `inductor`        -- `torch.compile(model)`;
* `ours+inductor`   -- `torch.compile(model, backend=optimus_ir.backend())`:
  our pipeline on each Dynamo graph, then Inductor. The time our stage took
  (`GraphOutcome.seconds`, import + passes + export, summed over the
  graphs) is printed too: the share of the compile that is ours.

Every first call's output is checked against the eager model (max abs
difference). The target (issue 23): ours+inductor / inductor <= 0.8.

Usage::

    python benchmarks/bench_compile_time.py                              # every model, 2 repeats
    python benchmarks/bench_compile_time.py --models recsys-mixed-8,DCN --repeats 1
    python benchmarks/bench_compile_time.py --smoke                      # the runner works (tested)
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
for _path in (_HERE, _HERE.parent, _HERE.parent / "examples"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

VARIANTS = ("inductor", "ours+inductor")
RECSYS = {"recsys-mixed-8": 8, "recsys-mixed-64": 64}
THIRD_PARTY = ("MMOE", "PLE", "DCN", "DeepFM", "xDeepFM")
MODELS = (*RECSYS, *THIRD_PARTY)
DEFAULT_MODELS = ("recsys-mixed-8", "recsys-mixed-64", "MMOE", "DCN", "DeepFM")
COMPILE_TARGET = 0.8
TOLERANCE = 1e-4


def build(name: str, batch: int) -> tuple[Any, Any]:
    """The model `name` in eval mode and its one input."""
    if name in RECSYS:
        from bench_compile import build as build_recsys

        return build_recsys(RECSYS[name], batch)
    if name in THIRD_PARTY:
        from bench_third_party import build as build_third_party

        model, (x,) = build_third_party(name, batch)
        return model, x
    raise ValueError(f"unknown model {name!r} (known: {', '.join(MODELS)})")


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the C++
    compiler runs Inductor starts and waits for)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def child(name: str, variant: str, batch: int) -> dict[str, Any]:
    """In a fresh process: the first call's wall time, our stage's share,
    and the max abs difference to eager."""
    import torch

    torch.set_num_threads(1)
    model, x = build(name, batch)
    ours = None
    if variant == "inductor":
        function = torch.compile(model)
    elif variant == "ours+inductor":
        import optimus_ir

        ours = optimus_ir.backend()
        function = torch.compile(model, backend=ours)
    else:
        raise ValueError(f"unknown variant {variant!r}")
    with torch.no_grad():
        expected = model(x)
        start, start_cpu = time.perf_counter(), _cpu_seconds()
        got = function(x)
        seconds, cpu = time.perf_counter() - start, _cpu_seconds() - start_cpu
    outcomes = ours.outcomes if ours is not None else []
    return {
        "seconds": seconds,
        "cpu_s": cpu,
        "ours_s": sum(o.seconds for o in outcomes),
        "graphs": len(outcomes),
        "fusions": sum(o.fusions for o in outcomes),
        "max_abs_diff": (got - expected).abs().max().item(),
    }


def run_child(name: str, variant: str, batch: int, timeout_s: float) -> dict[str, Any]:
    """`child` in a fresh process with empty compile caches."""
    with tempfile.TemporaryDirectory(prefix="compile-time-") as cache:
        env = dict(
            os.environ,
            TORCHINDUCTOR_CACHE_DIR=str(Path(cache) / "inductor"),
            TRITON_CACHE_DIR=str(Path(cache) / "triton"),
            # compile in this process and its waited-for compiler runs (no
            # worker pool), so that its CPU time is all counted
            TORCHINDUCTOR_COMPILE_THREADS="1",
        )
        done = subprocess.run(
            [sys.executable, __file__, "--child", f"{name}:{variant}", "--batch", str(batch)],
            env=env, capture_output=True, text=True, timeout=timeout_s,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{name} {variant}: the child process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="fresh processes per (model, variant)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--smoke", action="store_true", help="one small model, one repeat: checks the runner")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, variant = args.child.split(":")
        print(json.dumps(child(name, variant, args.batch)))
        return 0
    models = ["recsys-mixed-8"] if args.smoke else [m.strip() for m in args.models.split(",") if m.strip()]
    if args.smoke:
        args.repeats, args.batch = 1, 8
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown} (known: {', '.join(MODELS)})")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"compile time, first call, fresh process and empty caches per run; batch {args.batch}, "
          f"1 thread, no_grad; {os.cpu_count()} cores, load average {load:.1f} at the start", flush=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {m: {v: [] for v in VARIANTS} for m in models}
    for repeat in range(args.repeats):
        for name in models:
            order = VARIANTS if repeat % 2 == 0 else tuple(reversed(VARIANTS))  # alternate who goes first
            for variant in order:
                result = run_child(name, variant, args.batch, args.timeout)
                results[name][variant].append(result)
                print(f"  {name} {variant} run {repeat + 1}/{args.repeats}: {result['seconds']:.1f} s, "
                      f"CPU {result['cpu_s']:.1f} s"
                      + (f" (ours {result['ours_s']:.2f} s)" if variant != "inductor" else ""),
                      file=sys.stderr, flush=True)
    print()
    print("| model | inductor s | ours+inductor s | ratio | CPU: inductor s | ours+inductor s | ratio "
          "| our stage s | fusions | max abs diff |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    table = []
    for name in models:
        base = statistics.median(r["seconds"] for r in results[name]["inductor"])
        ours = statistics.median(r["seconds"] for r in results[name]["ours+inductor"])
        stage = statistics.median(r["ours_s"] for r in results[name]["ours+inductor"])
        base_cpu = statistics.median(r["cpu_s"] for r in results[name]["inductor"])
        ours_cpu = statistics.median(r["cpu_s"] for r in results[name]["ours+inductor"])
        fusions = results[name]["ours+inductor"][0]["fusions"]
        diff = max(r["max_abs_diff"] for v in VARIANTS for r in results[name][v])
        ratio = ours / base
        ok &= diff <= TOLERANCE
        table.append({"model": name, "inductor_s": base, "ours_s": ours, "ratio": ratio,
                      "inductor_cpu_s": base_cpu, "ours_cpu_s": ours_cpu, "cpu_ratio": ours_cpu / base_cpu,
                      "stage_s": stage, "fusions": fusions, "max_abs_diff": diff})
        print(f"| {name} | {base:.1f} | {ours:.1f} | {ratio:.2f}x | {base_cpu:.1f} | {ours_cpu:.1f} | "
              f"{ours_cpu / base_cpu:.2f}x | {stage:.2f} | {fusions} | {diff:.1e} |")
    print(f"\n(medians of {args.repeats} fresh processes per cell; target ratio <= {COMPILE_TARGET})")
    if args.json is not None:
        args.json.write_text(json.dumps({"table": table, "runs": results, "load_start": load}, indent=1))
    if not ok:
        print(f"WRONG RESULTS: a compiled model differs from eager by more than {TOLERANCE}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
