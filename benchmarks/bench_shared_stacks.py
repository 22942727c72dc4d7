"""Fusion without freezing: `parameter_stacks="shared"` against `"copy"`,
`freeze=True` and the graph Dynamo captured, for inference and training.

The recsys model (`examples/recsys.py`, variant `mixed`, 64 towers by
default), one thread, interleaved medians of the per-call CPU time
(`optimus_ir.examples.timing`) of:

* no_grad, eval mode: captured, copy (`optimize()`'s default), shared,
  freeze;
* a training step (forward + backward of the output's sum; the gradients set
  to None first), train mode: captured, copy, shared;
* check: what a call's whole prologue pays when nothing moved: the input
  guard (`InputGuard.check`), the snapshot's test of the model's dicts
  (`AttributeSnapshot.valid`: with shared stacks the dicts are watched, so
  one epoch test) and each stack's read (`stack_reads`: one flag test per
  verified stack), alone, under no_grad; for a training step also with the
  differentiable views the stacks are read through (`_StackView`: what
  replaces the per-call `torch.stack` copies, not a test);
* member test: the per-member test an unverified stack runs
  (`SharedStack.holds`, every member's `is_set_to`), alone, for scale.

The checks take microseconds, so each is timed with an inner count of its
own (`median_us_each`), interleaved with the shared module's call.

Each model column also gives its page faults per call
(`page_faults_per_call`, counted after the timing): fresh pages the
kernel had to map for the call's allocations. They explain what timing
alone cannot: at batch 512 the captured graph ran a training step in 31 ms
in one process and 40 ms in the next, with the same code, by the C
allocator's state. `--processes N` repeats the whole run in N fresh
processes and summarizes each column's speed over its baseline (median,
range) with every process's faults; `--retain-freed-memory` runs with
`optimus_ir.retain_freed_memory()` (every column alike), where none faults.

Every module is optimized from its own copy of the model (shared re-homes
the parameters of the copy it is given); every output, and every gradient of
a training step, is compared with the captured graph's before timing.

Usage::

    python benchmarks/bench_shared_stacks.py                      # batch 64 and 512
    python benchmarks/bench_shared_stacks.py --batch 64 --rounds 10 --json out.json
    python benchmarks/bench_shared_stacks.py --compile --batch 64   # under torch.compile
    python benchmarks/bench_shared_stacks.py --third-party MMOE,PLE,fuxictr.MMoE --batch 64
    python benchmarks/bench_shared_stacks.py --batch 512 --processes 5 # five processes, summarized

`--compare-chains`: one more column, `shared alone`: shared stacks with
`batch-fusion{chains=false}`, each group priced alone as before issue 36
(`plan._fuse_through_chains`), beside `shared` in the same process.

`--third-party`: others' models (deepctr-torch's, the zoo's FuxiCTR and
torchrec models) instead of the recsys model: the captured graph, copy and
shared, in inference and a training step, and shared's speed over copy's,
next to the speed of a second copy module over the first (the same code on
another copy of the model: the noise floor; on the 2-core CI machine two
identical modules of these small models differ by up to ~5-10%).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, get_args

import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import optimus_ir  # noqa: E402
from optimus_ir.api import capture  # noqa: E402
from optimus_ir.api.guards import GUARD_ATTRIBUTE  # noqa: E402
from optimus_ir.api.shared_stacks import shared_stacks  # noqa: E402
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model  # noqa: E402
from optimus_ir.examples.timing import measure as measure_interleaved  # noqa: E402
from optimus_ir.examples.timing import median_us_each  # noqa: E402
from optimus_ir.api.allocator import page_faults_per_call  # noqa: E402
from optimus_ir.foundation.environment import CostModelChoice  # noqa: E402
from optimus_ir.passes.registry import DEFAULT_PIPELINE  # noqa: E402
from optimus_ir.translate.attribute_snapshot import SNAPSHOT_ATTRIBUTE  # noqa: E402


def _groups(module: Any) -> int:
    report = getattr(module, "optimus_report", None)
    return int(report.groups_fused) if report is not None else 0


def _step(module: Callable[..., torch.Tensor], parameters: Sequence[torch.Tensor], x: torch.Tensor) -> Callable[[], None]:
    def step() -> None:
        for p in parameters:
            p.grad = None
        with torch.enable_grad():
            module(x).sum().backward()

    return step


def _grads(step: Callable[[], None], parameters: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    step()
    return [p.grad.clone() for p in parameters]  # type: ignore[union-attr]


ALONE_PIPELINE = DEFAULT_PIPELINE.replace("batch-fusion,", "batch-fusion{chains=false},", 1)
"""The default pipeline with each fusion group priced alone (`--compare-chains`)."""


def measure(
    towers: int, batch: int, variant: str, rounds: int, sample_ms: float, cost_model: str = "calibrated",
    compare_chains: bool = False,
) -> dict[str, Any]:
    """Per-call milliseconds of every column, in inference and training
    (`cost_model`: `optimize()`'s, for every optimized column;
    `compare_chains`: a `shared alone` column, `ALONE_PIPELINE`)."""
    result: dict[str, Any] = {"towers": towers, "batch": batch, "variant": variant, "cost model": cost_model}
    for mode in ("no_grad", "train"):
        base, (x,) = make_recsys_model(num_towers=towers, batch=batch, seed=0, **VARIANTS[variant])
        base.train(mode == "train")
        names = ("captured", "copy", "shared", "freeze") + (("shared alone",) if compare_chains else ())
        models = {name: copy.deepcopy(base) for name in names}
        modules: dict[str, Any] = {"captured": capture(models["captured"], (x,))}
        modules["copy"] = optimus_ir.optimize(models["copy"], (x,), check_speed=False, cost_model=cost_model)
        modules["shared"] = optimus_ir.optimize(
            models["shared"], (x,), check_speed=False, parameter_stacks="shared", cost_model=cost_model
        )
        if compare_chains:
            modules["shared alone"] = optimus_ir.optimize(
                models["shared alone"], (x,), check_speed=False, parameter_stacks="shared", cost_model=cost_model,
                pipeline=ALONE_PIPELINE,
            )
        if mode == "no_grad":
            modules["freeze"] = optimus_ir.optimize(
                models["freeze"], (x,), check_speed=False, freeze=True, cost_model=cost_model
            )
        calls: dict[str, Callable[[], Any]] = {}
        if mode == "no_grad":
            with torch.no_grad():
                expected = modules["captured"](x)
                for name, module in modules.items():
                    torch.testing.assert_close(module(x), expected, msg=name)
                    calls[name] = lambda module=module: module(x)
        else:
            steps = {name: _step(m, list(models[name].parameters()), x) for name, m in modules.items()}
            expected_grads = _grads(steps["captured"], list(models["captured"].parameters()))
            for name, step in steps.items():
                for got, want in zip(_grads(step, list(models[name].parameters())), expected_grads, strict=True):
                    torch.testing.assert_close(got, want, msg=name)
            calls = dict(steps)
        stacks = shared_stacks(modules["shared"])
        snapshot = modules["shared"].__dict__[SNAPSHOT_ATTRIBUTE]
        if not snapshot.valid():
            raise RuntimeError("the shared module's attribute snapshot is not valid after its calls")

        guard = modules["shared"].__dict__.get(GUARD_ATTRIBUTE)
        guard_check = guard.check if guard is not None else (lambda _x: True)

        def prologue() -> None:  # measure() runs its calls under no_grad
            guard_check(x) and snapshot.valid() and snapshot.stack_reads()

        def prologue_with_grad() -> None:  # as a training step's forward runs it
            with torch.enable_grad():
                guard_check(x) and snapshot.valid() and snapshot.stack_reads()

        samples, _ = measure_interleaved(calls, rounds, sample_ms)
        ms = {name: statistics.median(values) for name, values in samples.items()}
        # the checks take microseconds: each its own inner count (measure()'s
        # one count, set by the slowest call, ran them a few times a sample,
        # where the clock's granularity and the first cold run dominated),
        # interleaved with the shared module's call as in use
        checks: dict[str, Callable[[], Any]] = {"check": prologue}  # under no_grad: the tests alone
        if mode == "train":
            checks["check + grad views"] = prologue_with_grad
        checks["member test"] = lambda: [s.holds(s.members) for s in stacks]
        us = median_us_each({**checks, "shared call": calls["shared"]}, rounds, sample_ms)
        ms.update({name: us[name] / 1e3 for name in checks})
        with torch.no_grad():  # as measure() ran them
            faults = {name: page_faults_per_call(calls[name]) for name in modules}
        result[mode] = {
            "ms": ms,
            "page faults": faults,
            "shared stacks": len(stacks),
            "groups": {name: _groups(m) for name, m in modules.items() if name != "captured"},
        }
    return result


def _loss(output: Any) -> torch.Tensor:
    """The sum of every floating tensor an output holds (a tensor, tuple,
    list or dict of them): what a training step differentiates."""
    leaves = [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return sum(t.sum() for t in leaves)  # type: ignore[return-value]


def measure_third_party(name: str, batch: int, rounds: int, sample_ms: float) -> dict[str, Any]:
    """Per-call milliseconds of a third-party model (`bench_third_party.build_any`:
    deepctr-torch, FuxiCTR, torchrec, ...): the captured graph, `copy` and
    `shared`, in inference (eval, no_grad) and a training step (train mode,
    forward + backward of the outputs' sum, gradients set to None first);
    each output and gradient checked against the captured graph's first."""
    from bench_third_party import build_any

    result: dict[str, Any] = {"model": name, "batch": batch}
    for mode in ("no_grad", "train"):
        base, inputs = build_any(name, batch, train=mode == "train")
        models = {key: copy.deepcopy(base) for key in ("captured", "copy", "copy again", "shared")}
        modules: dict[str, Any] = {"captured": capture(models["captured"], inputs)}
        for key in ("copy", "copy again", "shared"):
            stacks = "shared" if key == "shared" else "copy"
            modules[key] = optimus_ir.optimize(models[key], inputs, check_speed=False, parameter_stacks=stacks)
        calls: dict[str, Callable[[], Any]] = {}
        if mode == "no_grad":
            with torch.no_grad():
                expected = modules["captured"](*inputs)
                for key, module in modules.items():
                    torch.testing.assert_close(module(*inputs), expected, rtol=1e-4, atol=1e-5, msg=key)
                    calls[key] = lambda module=module: module(*inputs)
        else:
            grads: dict[str, list[torch.Tensor | None]] = {}
            for key, module in modules.items():
                parameters = [p for p in models[key].parameters() if p.requires_grad]

                def step(module: Any = module, parameters: list[torch.Tensor] = parameters) -> None:
                    for p in parameters:
                        p.grad = None
                    with torch.enable_grad():
                        _loss(module(*inputs)).backward()

                step()
                grads[key] = [None if p.grad is None else p.grad.clone() for p in parameters]
                calls[key] = step
            for key in ("copy", "copy again", "shared"):
                for got, want in zip(grads[key], grads["captured"], strict=True):
                    if want is None or got is None:
                        assert got is None and want is None, key
                    else:
                        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=key)
        samples, _ = measure_interleaved(calls, rounds, sample_ms)
        result[mode] = {
            "ms": {key: statistics.median(values) for key, values in samples.items()},
            "groups": {key: _groups(m) for key, m in modules.items() if key != "captured"},
        }
    return result


def _print_third_party(result: dict[str, Any]) -> None:
    print(f"{result['model']}, batch {result['batch']}, one thread: per-call ms (interleaved medians, CPU time)")
    for mode in ("no_grad", "train"):
        ms, groups = result[mode]["ms"], result[mode]["groups"]
        captured = ms["captured"]
        cells = [f"  {mode:<8}", f"captured {captured:.3f}"]
        cells += [f"{key} {ms[key]:.3f} ({captured / ms[key]:.2f}x, {groups[key]} groups)" for key in ("copy", "shared")]
        cells.append(
            f"shared/copy speed {ms['copy'] / ms['shared']:.2f}x (noise: the same copy module twice "
            f"{ms['copy'] / ms['copy again']:.2f}x)"
        )
        print(" | ".join(cells))


def measure_compiled(towers: int, batch: int, variant: str, rounds: int, sample_ms: float) -> dict[str, Any]:
    """Steady-state per-call milliseconds under torch.compile (no freezing):
    Inductor alone, `backend="optimus"` (stacks copied per call) and
    `backend="optimus"` with `parameter_stacks="shared"`, in inference and
    training; each checked against the eager model first."""
    result: dict[str, Any] = {"towers": towers, "batch": batch, "variant": variant}
    backends: dict[str, dict[str, Any]] = {
        "inductor": {},
        "optimus copy": {"backend": "optimus"},
        "optimus shared": {"backend": "optimus", "options": {"parameter_stacks": "shared"}},
    }
    for mode in ("no_grad", "train"):
        torch._dynamo.reset()
        base, (x,) = make_recsys_model(num_towers=towers, batch=batch, seed=0, **VARIANTS[variant])
        base.train(mode == "train")
        models = {name: copy.deepcopy(base) for name in ("eager", *backends)}
        calls: dict[str, Callable[[], Any]] = {}
        for name, kwargs in backends.items():
            compiled = torch.compile(models[name], **kwargs)
            if mode == "no_grad":
                with torch.no_grad():
                    torch.testing.assert_close(compiled(x), models["eager"](x), msg=name)
                    compiled(x)

                def call(compiled: Any = compiled) -> None:
                    with torch.no_grad():
                        compiled(x)

                calls[name] = call
            else:
                step = _step(compiled, list(models[name].parameters()), x)
                expected = _grads(_step(models["eager"], list(models["eager"].parameters()), x), list(models["eager"].parameters()))
                for got, want in zip(_grads(step, list(models[name].parameters())), expected, strict=True):
                    torch.testing.assert_close(got, want, msg=name)
                calls[name] = step
        samples, _ = measure_interleaved(calls, rounds, sample_ms)
        result[mode] = {"ms": {name: statistics.median(values) for name, values in samples.items()}}
    return result


def _print_compiled(result: dict[str, Any]) -> None:
    print(
        f"recsys-{result['variant']}-{result['towers']}, batch {result['batch']}, one thread, torch.compile "
        "steady state: per-call ms (interleaved medians, CPU time)"
    )
    for mode in ("no_grad", "train"):
        ms = result[mode]["ms"]
        inductor = ms["inductor"]
        print("  " + " | ".join([f"{mode:<8}"] + [f"{name} {v:.3f} ({inductor / v:.2f}x)" for name, v in ms.items()]))


def _print(result: dict[str, Any]) -> None:
    print(
        f"recsys-{result['variant']}-{result['towers']}, batch {result['batch']}, one thread, "
        f"cost model {result.get('cost model', 'calibrated')}: per-call ms (interleaved medians, CPU time)"
    )
    for mode in ("no_grad", "train"):
        ms = result[mode]["ms"]
        captured = ms["captured"]
        line = [f"  {mode:<8}"]
        faults = result[mode].get("page faults", {})
        for name in ("captured", "copy", "shared", "freeze"):
            if name in ms:
                fresh = f", {faults[name]:.0f} faults" if name in faults else ""
                line.append(f"{name} {ms[name]:.3f} ({captured / ms[name]:.2f}x{fresh})")
        check = ms["check"]
        views = f" (with grad views {ms['check + grad views'] * 1e3:.1f} us)" if "check + grad views" in ms else ""
        line.append(
            f"check {check * 1e3:.1f} us{views} ({check / ms['shared'] * 100:.2f}% of shared; "
            f"{result[mode]['shared stacks']} stacks; member test {ms['member test'] * 1e3:.1f} us), "
            f"groups {result[mode]['groups']}"
        )
        print(" | ".join(line))


_NOT_A_MODEL = ("check", "member test")
"""Columns that time a prologue's tests, not a call of a model: left out of
`summarize`."""


def _label(result: dict[str, Any]) -> str:
    name = result.get("model") or f"recsys-{result['variant']}-{result['towers']}"
    return f"{name}, batch {result['batch']}"


def summarize(runs: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each row's speed over its baseline (the captured graph; Inductor
    alone under `--compile`) in every process of `runs` (one list of
    results per process, in the same order): the median and range of each
    column's ratio, and its page faults per call where counted."""
    rows = []
    for results in zip(*runs, strict=True):
        for mode in ("no_grad", "train"):
            ms = [r[mode]["ms"] for r in results]
            baseline = "inductor" if "inductor" in ms[0] else "captured"
            columns: dict[str, Any] = {}
            for name in ms[0]:
                if name == baseline or name.startswith(_NOT_A_MODEL):
                    continue
                ratios = [m[baseline] / m[name] for m in ms]
                faults = [r[mode]["page faults"][name] for r in results if name in r[mode].get("page faults", {})]
                columns[name] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "ratios": ratios}
                if faults:
                    columns[name]["page faults"] = faults
            base_faults = [r[mode]["page faults"][baseline] for r in results if baseline in r[mode].get("page faults", {})]
            rows.append({
                "row": _label(results[0]), "mode": mode, "baseline": baseline, "columns": columns,
                "baseline ms": [m[baseline] for m in ms], "baseline page faults": base_faults,
            })
    return rows


def _print_summary(rows: Sequence[dict[str, Any]], processes: int) -> None:
    print(f"over {processes} processes (each column's speed over the baseline: median, min-max; page faults per call):")
    for row in rows:
        base_ms = ", ".join(f"{v:.2f}" for v in row["baseline ms"])
        cells = [f"  {row['row']}, {row['mode']:<8}", f"{row['baseline']} ms {base_ms}"]
        if row["baseline page faults"]:
            cells[-1] += f" (faults {', '.join(f'{f:.0f}' for f in row['baseline page faults'])})"
        for name, c in row["columns"].items():
            fresh = f", faults {', '.join(f'{f:.0f}' for f in c['page faults'])}" if "page faults" in c else ""
            cells.append(f"{name} {c['median']:.2f}x ({c['min']:.2f}-{c['max']:.2f}x{fresh})")
        print(" | ".join(cells))


_PARENT_ONLY = ("--processes", "--json")
"""Options that only the parent of `--processes` runs acts on: left out of
each child's command line (the child writes its own `--json`)."""


def _child_argv(argv: Sequence[str]) -> list[str]:
    """`argv`, this run's options, without `_PARENT_ONLY` ones (as
    `--name value` or `--name=value`): what each child process runs."""
    child: list[str] = []
    skip_value = False
    for arg in argv:
        if skip_value:
            skip_value = False
        elif arg in _PARENT_ONLY:
            skip_value = True
        elif not arg.startswith(tuple(f"{name}=" for name in _PARENT_ONLY)):
            child.append(arg)
    return child


def in_processes(args: argparse.Namespace, argv: Sequence[str]) -> list[list[dict[str, Any]]]:
    """This run repeated in `args.processes` fresh processes, one after the
    other: each its own allocator state (see `optimus_ir.examples.timing`),
    so that a figure is not one process's luck. `argv`: this run's
    options, which each child gets but for `_PARENT_ONLY`'s."""
    runs = []
    for index in range(args.processes):
        print(f"process {index + 1} of {args.processes}:", flush=True)
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "run.json"
            subprocess.run([sys.executable, str(Path(__file__).resolve()), *_child_argv(argv), "--json", str(out)], check=True)
            runs.append(json.loads(out.read_text()))
    return runs


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    # no abbreviations: `_child_argv` drops `--processes` by its full name
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--towers", type=int, default=64)
    parser.add_argument("--batch", type=int, action="append", default=None, help="repeatable; default 64 and 512")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="mixed")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--sample-ms", type=float, default=50.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--compile", action="store_true", help="torch.compile steady state: Inductor alone, optimus copy, optimus shared"
    )
    parser.add_argument(
        "--third-party", default=None, metavar="NAMES",
        help="comma-separated third-party models instead of the recsys model (bench_third_party.py's: MMOE, PLE, "
        "DCN, ...; zoo_models.py's: fuxictr.MMoE, torchrec.DLRM, ...): captured, copy and shared",
    )
    parser.add_argument(
        "--processes", type=int, default=1, metavar="N",
        help="repeat the whole run in N fresh processes and summarize each column's speed over them "
        "(batch 512 moves by up to ~25%% between processes with the C allocator's state)",
    )
    parser.add_argument(
        "--retain-freed-memory", action="store_true",
        help="call optimus_ir.retain_freed_memory() first: glibc keeps freed heap, so no column faults fresh pages "
        "(process-wide: every column alike)",
    )
    parser.add_argument(
        "--compare-chains", action="store_true",
        help="one more column, 'shared alone': shared stacks with each fusion group priced alone "
        "(batch-fusion{chains=false})",
    )
    parser.add_argument(
        "--cost-model", choices=get_args(CostModelChoice), default="calibrated",
        help="optimize()'s cost_model for the recsys model's optimized columns (none: every group found is fused)",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.processes < 1:
        parser.error(f"--processes must be at least 1, got {args.processes}")
    if args.processes > 1:
        runs = in_processes(args, argv)
        rows = summarize(runs)
        _print_summary(rows, args.processes)
        if args.json is not None:
            args.json.write_text(json.dumps({"runs": runs, "summary": rows}, indent=2))
        return rows
    if args.retain_freed_memory:
        setting = optimus_ir.retain_freed_memory()
        print(f"allocator: {'freed memory retained' if setting.applied else setting.reason}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    results = []
    try:
        for batch in args.batch or [64, 512]:
            if args.third_party:
                for name in (n.strip() for n in args.third_party.split(",") if n.strip()):
                    result = measure_third_party(name, batch, args.rounds, args.sample_ms)
                    _print_third_party(result)
                    results.append(result)
                continue
            if args.compile:
                result = measure_compiled(args.towers, batch, args.variant, args.rounds, args.sample_ms)
                _print_compiled(result)
            else:
                result = measure(
                    args.towers, batch, args.variant, args.rounds, args.sample_ms, args.cost_model, args.compare_chains
                )
                _print(result)
            results.append(result)
    finally:
        torch.set_num_threads(threads)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
