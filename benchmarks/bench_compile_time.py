"""Compile time of torch.compile(backend="optimus") against Inductor alone,
on the recsys family and on third-party models (deepctr-torch's, and the
zoo's FuxiCTR, torchrec and torchfm models: `zoo_models.ZOO`, called with
their own input structures).

Method (as `bench_compile.py`'s compile time): each (model, variant, repeat)
is one fresh Python process with a fresh Inductor cache directory
(`TORCHINDUCTOR_CACHE_DIR`, `TRITON_CACHE_DIR`), so no compiled kernel is
served from an earlier run; the variants alternate within each repeat (who
goes first swaps); the figure is the wall time of `torch.compile(...)` and
the first call (Dynamo's capture, our stage, Inductor; from before
`torch.compile`, which imports Inductor's compiler for Inductor alone but
not for our backend, which imports it inside the first call), the median
over the repeats with the range;
and its CPU time (the process's and that of the compiler processes it
waited for; Inductor compiles in the process,
`TORCHINDUCTOR_COMPILE_THREADS=1`), which load from other processes
inflates far less than the wall time. Under `torch.no_grad()`, eval mode,
one thread.

The vector-ISA probe. The first time a process generates a C++ kernel,
Inductor's `pick_vec_isa` finds out which vector instruction sets this
machine can build and load: it compiles a test program per candidate ISA
(ten g++ runs) into the cache directory and dlopens each in a subprocess.
With a truly empty cache that is ~8-13 s on the reference machine, the same
for both variants, once per machine in real use (the `.so` files stay in
the cache; nothing about the model or our stage changes it), and about
half of a small model's compile: counted, it pulls every ratio towards 1
and its noise (+-1.5 s) swamps the difference being measured. So by default
every fresh cache directory is seeded with the probe's files only (one
probe process at the start, `seed_isa_cache`; the child then only dlopens
them, ~1 s, still counted), which is what a user's machine has after its
first compile of anything. `--cold-isa` keeps the caches fully empty (the
probe counted in every run). The probe's cost and the other phases are in
the breakdown table (`torch._dynamo.utils.compilation_time_metrics`):
Dynamo's tracing, our stage, the ISA probe, the C++ compiler on the
generated kernels, the rest of Inductor (AOT, lowering, scheduling,
codegen, loading), and what is left (torch.compile's set-up and imports,
guards, the call). `kernels` counts the C++ kernels compiled: one g++ run
per distinct generated kernel (Inductor names identical kernel sources
once: the four experts of MMOE share one), ~0.2-0.7 s each.

`--freeze` compiles both variants under Inductor's freezing (inference,
parameters constant): `torch._inductor.config.freezing = True` around the
compile, ours with `freeze=True`. Without it Dynamo lifts the parameters to
graph inputs and our cost model prices every weight stack as a per-call
copy, so under the Inductor target these models fuse nothing and
ours+inductor compiles what Inductor compiles; frozen, parameters are
constants that Inductor folds (ours: the stacks too), which is the setting
where fusing the experts' or towers' linears can change what Inductor
generates. Inference-only users set it anyway (`bench_compile.py --freeze`).

* `inductor`        -- `torch.compile(model)`;
* `ours+inductor`   -- `torch.compile(model, backend=optimus_ir.backend())`:
  our pipeline on each Dynamo graph, then Inductor. The time our stage took
  (`GraphOutcome.seconds`, import + passes + export, summed over the
  graphs) is printed too: the share of the compile that is ours.

Every first call's output is checked against the eager model (max abs
difference). The target (issue 23): ours+inductor / inductor <= 0.8.

Usage::

    python benchmarks/bench_compile_time.py                              # the default models, 2 repeats
    python benchmarks/bench_compile_time.py --models recsys-mixed-8,DCN --repeats 1
    python benchmarks/bench_compile_time.py --models fuxictr.MMoE,fuxictr.DCNv2,torchrec.DLRM_DCN
    python benchmarks/bench_compile_time.py --freeze --models MMOE,PLE  # under Inductor freezing
    python benchmarks/bench_compile_time.py --cold-isa --models DCN      # the ISA probe counted
    python benchmarks/bench_compile_time.py --models '' --towers 512,1024,2048 --repeats 1  # scaling
    python benchmarks/bench_compile_time.py --smoke                      # the runner works (tested)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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

from bench_third_party import MODELS as THIRD_PARTY  # noqa: E402
from zoo_models import ZOO  # noqa: E402

VARIANTS = ("inductor", "ours+inductor")
RECSYS = {"recsys-mixed-8": 8, "recsys-mixed-64": 64}
"""The recsys models named in the help; any `recsys-mixed-N` (N towers) is
accepted too (`--towers 512,1024,2048` names them)."""
MODELS = (*RECSYS, *THIRD_PARTY, *ZOO)
DEFAULT_MODELS = ("recsys-mixed-8", "recsys-mixed-64", "MMOE", "PLE", "DCN", "DeepFM")
COMPILE_TARGET = 0.8
TOLERANCE = 1e-4
PHASES = ("dynamo", "ours", "isa_probe", "kernel_cxx", "inductor_rest", "other")
"""The breakdown of a first call (seconds; they add up to it): Dynamo's
bytecode tracing, our stage, Inductor's vector-ISA probe, the C++ compiler
on the generated kernels, the rest of the backend compile (AOT, lowering,
scheduling, codegen, loading), and the rest (torch.compile's set-up and
imports, guards, the call itself)."""
OUR_PHASES = ("capture", "import", "passes", "export", "rest")
"""Our stage's share split (`OptimizeReport.phase_seconds`, summed over the
graphs): re-capture, import to IR, the passes, export to FX (code
generation included), and the rest (the hand-off to Inductor, the report,
passed-through graphs)."""


def recsys_towers(name: str) -> int | None:
    """The tower count of a `recsys-mixed-N` model name (None: not one)."""
    match = re.fullmatch(r"recsys-mixed-([1-9][0-9]*)", name)
    return int(match.group(1)) if match else None


def build(name: str, batch: int) -> tuple[Any, tuple[Any, ...]]:
    """The model `name` in eval mode and its inputs."""
    towers = recsys_towers(name)
    if towers is not None:
        from bench_compile import build as build_recsys

        model, x = build_recsys(towers, batch)
        return model, (x,)
    if name in THIRD_PARTY or name in ZOO:
        from bench_third_party import build_any

        model, inputs = build_any(name, batch)
        return model.eval(), tuple(inputs)
    raise ValueError(f"unknown model {name!r} (known: {', '.join(MODELS)})")


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the C++
    compiler runs Inductor starts and waits for)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class _IsaProbeTimer:
    """Times Inductor's vector-ISA probe in this process: wraps
    `cpu_vec_isa.valid_vec_isa_list` (what `pick_vec_isa`, every caller's
    way in, looks up at call time; its first call is the probe) and notes
    the C++ compile time spent inside it, so that the kernels' share can be
    told apart."""

    def __init__(self) -> None:
        from torch._dynamo.utils import compilation_time_metrics
        from torch._inductor import cpu_vec_isa

        self.seconds = 0.0
        self.cxx_seconds = 0.0
        self.builds = 0
        """C++ compiles inside the probe (0 when the cache holds its files)."""
        original = cpu_vec_isa.valid_vec_isa_list

        def timed() -> Any:
            before = len(compilation_time_metrics.get("compile_file", []))
            start = time.perf_counter()
            try:
                return original()
            finally:
                self.seconds += time.perf_counter() - start
                builds = compilation_time_metrics.get("compile_file", [])[before:]
                self.builds += len(builds)
                self.cxx_seconds += sum(builds)

        cpu_vec_isa.valid_vec_isa_list = timed  # type: ignore[assignment]


def _phases(seconds: float, ours_s: float, probe: _IsaProbeTimer) -> dict[str, float]:
    """`seconds` (a first call) split into `PHASES`, from Dynamo's timers."""
    from torch._dynamo.utils import compilation_time_metrics

    def total(key: str) -> float:
        return sum(compilation_time_metrics.get(key, []))

    dynamo = total("bytecode_tracing")
    backend = total("OutputGraph.call_user_compiler")  # ours (if any) + Inductor
    kernel_cxx = total("compile_file") - probe.cxx_seconds
    return {
        "dynamo": dynamo,
        "ours": ours_s,
        "isa_probe": probe.seconds,
        "kernel_cxx": kernel_cxx,
        "inductor_rest": backend - ours_s - probe.seconds - kernel_cxx,
        "other": seconds - dynamo - backend,
    }


def child(name: str, variant: str, batch: int, freeze: bool = False) -> dict[str, Any]:
    """In a fresh process: the first call's wall and CPU time, its phases,
    our stage's share, the number of C++ kernels compiled (g++ runs
    outside the ISA probe: Inductor compiles each distinct generated kernel
    once) and the max abs difference to eager. `freeze`: both compile under Inductor's freezing, ours with
    `freeze=True`."""
    import torch
    from torch._dynamo.utils import compilation_time_metrics

    from bench_compile import freezing

    import optimus_ir

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    torch.set_num_threads(1)
    model, inputs = build(name, batch)
    probe = _IsaProbeTimer()
    with torch.no_grad():
        expected = model(*inputs)
    # The clock starts before torch.compile(): `torch.compile(model)` imports
    # Inductor's compile_fx (~0.8 s) there, our backend only when it hands
    # the graph on, inside the first call; timing the first call alone
    # charged that import to ours.
    start, start_cpu = time.perf_counter(), _cpu_seconds()
    ours = None
    if variant == "inductor":
        function = torch.compile(model)
    else:
        ours = optimus_ir.backend(freeze=freeze)
        function = torch.compile(model, backend=ours)
    with freezing(freeze), torch.no_grad():
        got = function(*inputs)
        seconds, cpu = time.perf_counter() - start, _cpu_seconds() - start_cpu
    outcomes = ours.outcomes if ours is not None else []
    ours_s = sum(o.seconds for o in outcomes)
    our_phases = dict.fromkeys(OUR_PHASES, 0.0)
    for outcome in outcomes:
        for phase, phase_s in (outcome.report.phase_seconds if outcome.report is not None else {}).items():
            if phase in our_phases:
                our_phases[phase] += phase_s
    our_phases["rest"] = ours_s - sum(our_phases.values())
    from torch.utils import _pytree

    leaves = [t for t in _pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    wants = [t for t in _pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
    return {
        "seconds": seconds,
        "cpu_s": cpu,
        "ours_s": ours_s,
        "phases": _phases(seconds, ours_s, probe),
        "our_phases": our_phases,
        "kernels": len(compilation_time_metrics.get("compile_file", [])) - probe.builds,
        "isa_probe_builds": probe.builds,
        "graphs": len(outcomes),
        "fusions": sum(o.fusions for o in outcomes),
        "passed_through": [o.reason for o in outcomes if not o.optimized],
        "max_abs_diff": max((g - e).abs().max().item() for g, e in zip(leaves, wants)),
    }


def probe_isa() -> float:
    """Run Inductor's vector-ISA probe into `TORCHINDUCTOR_CACHE_DIR` (the
    `--probe-isa` process); its seconds."""
    from torch._inductor import cpu_vec_isa

    start = time.perf_counter()
    cpu_vec_isa.pick_vec_isa()
    return time.perf_counter() - start


def seed_isa_cache(directory: Path, timeout_s: float) -> float:
    """Fill `directory` (an Inductor cache directory) with the vector-ISA
    probe's files and nothing else, in a fresh process; the probe's seconds."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(directory))
    done = subprocess.run(
        [sys.executable, __file__, "--probe-isa"], env=env, capture_output=True, text=True, timeout=timeout_s
    )
    if done.returncode != 0:
        raise RuntimeError(f"the vector-ISA probe failed:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def run_child(
    name: str, variant: str, batch: int, timeout_s: float, *, freeze: bool = False, seed: Path | None = None
) -> dict[str, Any]:
    """`child` in a fresh process with fresh compile caches: empty, or an
    Inductor cache holding only a copy of `seed` (the ISA probe's files)."""
    with tempfile.TemporaryDirectory(prefix="compile-time-") as cache:
        inductor_cache = Path(cache) / "inductor"
        if seed is not None:
            shutil.copytree(seed, inductor_cache)
        env = dict(
            os.environ,
            TORCHINDUCTOR_CACHE_DIR=str(inductor_cache),
            TRITON_CACHE_DIR=str(Path(cache) / "triton"),
            # compile in this process and its waited-for compiler runs (no
            # worker pool), so that its CPU time is all counted
            TORCHINDUCTOR_COMPILE_THREADS="1",
        )
        command = [sys.executable, __file__, "--child", f"{name}:{variant}", "--batch", str(batch)]
        done = subprocess.run(
            command + (["--freeze"] if freeze else []),
            env=env, capture_output=True, text=True, timeout=timeout_s,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{name} {variant}: the child process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _spread(values: Sequence[float]) -> str:
    """`min-max` of the runs (one run: its value)."""
    return f"{min(values):.1f}-{max(values):.1f}" if len(values) > 1 else f"{values[0]:.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--towers", help="comma-separated tower counts: adds recsys-mixed-N for each "
                        "(the compile-time scaling: --towers 512,1024,2048 --models '')")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="fresh processes per (model, variant)")
    parser.add_argument("--freeze", action="store_true",
                        help="both variants under Inductor's freezing (ours with freeze=True): inference")
    parser.add_argument("--cold-isa", action="store_true",
                        help="fully empty caches: every run pays Inductor's vector-ISA probe")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--smoke", action="store_true", help="one small model, one repeat: checks the runner")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--probe-isa", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe_isa:
        print(probe_isa())
        return 0
    if args.child:
        name, variant = args.child.split(":")
        print(json.dumps(child(name, variant, args.batch, args.freeze)))
        return 0
    models = ["recsys-mixed-8"] if args.smoke else [m.strip() for m in args.models.split(",") if m.strip()]
    if args.smoke:
        args.repeats, args.batch = 1, 8
    if args.towers and not args.smoke:
        models += [f"recsys-mixed-{int(n)}" for n in args.towers.split(",") if n.strip()]
    unknown = [m for m in models if m not in MODELS and recsys_towers(m) is None]
    if unknown:
        parser.error(f"unknown models {unknown} (known: {', '.join(MODELS)})")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    mode = (", Inductor freezing (ours: freeze=True)" if args.freeze else "") + (
        ", fully empty caches (ISA probe counted)" if args.cold_isa else ", caches seeded with the ISA probe only"
    )
    print(f"compile time, first call, fresh process and cache per run; batch {args.batch}, "
          f"1 thread, no_grad{mode}; {os.cpu_count()} cores, load average {load:.1f} at the start", flush=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {m: {v: [] for v in VARIANTS} for m in models}
    with tempfile.TemporaryDirectory(prefix="isa-probe-") as seed_root:
        seed = None
        if not args.cold_isa:
            seed = Path(seed_root) / "inductor"
            probe_s = seed_isa_cache(seed, args.timeout)
            print(f"vector-ISA probe (once, not counted): {probe_s:.1f} s", flush=True)
        for repeat in range(args.repeats):
            for name in models:
                order = VARIANTS if repeat % 2 == 0 else tuple(reversed(VARIANTS))  # alternate who goes first
                for variant in order:
                    result = run_child(name, variant, args.batch, args.timeout, freeze=args.freeze, seed=seed)
                    results[name][variant].append(result)
                    print(f"  {name} {variant} run {repeat + 1}/{args.repeats}: {result['seconds']:.1f} s, "
                          f"CPU {result['cpu_s']:.1f} s, {result['kernels']} kernels"
                          + (f" (ours {result['ours_s']:.2f} s)" if variant != "inductor" else ""),
                          file=sys.stderr, flush=True)
    print()
    print("| model | inductor s | ours+inductor s | ratio | CPU: inductor s | ours+inductor s | ratio "
          "| kernels: inductor | ours | our stage s | fusions | max abs diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    table = []
    for name in models:
        runs = results[name]
        seconds = {v: [r["seconds"] for r in runs[v]] for v in VARIANTS}
        base, ours = (statistics.median(seconds[v]) for v in VARIANTS)
        base_cpu, ours_cpu = (statistics.median(r["cpu_s"] for r in runs[v]) for v in VARIANTS)
        stage = statistics.median(r["ours_s"] for r in runs["ours+inductor"])
        kernels = {v: runs[v][0]["kernels"] for v in VARIANTS}
        fusions = runs["ours+inductor"][0]["fusions"]
        passed_through = sorted({reason for r in runs["ours+inductor"] for reason in r["passed_through"]})
        diff = max(r["max_abs_diff"] for v in VARIANTS for r in runs[v])
        ratio = ours / base
        ok &= diff <= TOLERANCE
        table.append({"model": name, "inductor_s": base, "ours_s": ours, "ratio": ratio,
                      "inductor_range_s": [min(seconds["inductor"]), max(seconds["inductor"])],
                      "ours_range_s": [min(seconds["ours+inductor"]), max(seconds["ours+inductor"])],
                      "inductor_cpu_s": base_cpu, "ours_cpu_s": ours_cpu, "cpu_ratio": ours_cpu / base_cpu,
                      "stage_s": stage, "kernels": kernels, "fusions": fusions,
                      "passed_through": passed_through, "max_abs_diff": diff,
                      "phases": {v: {p: statistics.median(r["phases"][p] for r in runs[v]) for p in PHASES}
                                 for v in VARIANTS}})
        print(f"| {name} | {base:.1f} ({_spread(seconds['inductor'])}) | {ours:.1f} ({_spread(seconds['ours+inductor'])}) "
              f"| {ratio:.2f}x | {base_cpu:.1f} | {ours_cpu:.1f} | {ours_cpu / base_cpu:.2f}x | {kernels['inductor']} "
              f"| {kernels['ours+inductor']} | {stage:.2f} | {fusions} | {diff:.1e} |")
    print(f"\n(medians of {args.repeats} fresh processes per cell, (min-max); target ratio <= {COMPILE_TARGET})")
    for row in table:
        if row["passed_through"]:
            print(f"{row['model']}: our stage passed a graph through unoptimized: {'; '.join(row['passed_through'])}")
    print("\nwhere the first call's time goes (s, medians): " + ", ".join(PHASES))
    print("| model | variant | " + " | ".join(PHASES) + " |")
    print("|---|---|" + "---|" * len(PHASES))
    for row in table:
        for variant in VARIANTS:
            phases = row["phases"][variant]
            print(f"| {row['model']} | {variant} | " + " | ".join(f"{phases[p]:.2f}" for p in PHASES) + " |")
    print("\nour stage's share (s, medians): " + ", ".join(OUR_PHASES))
    print("| model | " + " | ".join(OUR_PHASES) + " |")
    print("|---|" + "---|" * len(OUR_PHASES))
    for name in models:
        runs = results[name]["ours+inductor"]
        print(f"| {name} | " + " | ".join(f"{statistics.median(r['our_phases'][p] for r in runs):.2f}"
                                        for p in OUR_PHASES) + " |")
    if args.json is not None:
        args.json.write_text(json.dumps({"table": table, "runs": results, "load_start": load,
                                         "freeze": args.freeze, "cold_isa": args.cold_isa}, indent=1))
    if not ok:
        print(f"WRONG RESULTS: a compiled model differs from eager by more than {TOLERANCE}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
