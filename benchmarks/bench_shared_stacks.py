"""Fusion without freezing: `parameter_stacks="shared"` against `"copy"`,
`freeze=True` and the graph Dynamo captured, for inference and training.

The recsys model (`examples/recsys.py`, variant `mixed`, 64 towers by
default), one thread, interleaved medians of the per-call CPU time
(`optimus_ir.examples.timing`) of:

* no_grad, eval mode: captured, copy (`optimize()`'s default), shared,
  freeze;
* a training step (forward + backward of the output's sum; the gradients set
  to None first), train mode: captured, copy, shared;
* check: what a call's prologue pays for the shared stacks when nothing
  moved: the snapshot's test of the model's dicts and each stack's read
  (`AttributeSnapshot.valid` and `stack_reads`: one flag test per verified
  stack; under grad, the differentiable view), alone;
* member test: the per-member test an unverified stack runs
  (`SharedStack.holds`, every member's `is_set_to`), alone, for scale.

Every module is optimized from its own copy of the model (shared re-homes
the parameters of the copy it is given); every output, and every gradient of
a training step, is compared with the captured graph's before timing.

Usage::

    python benchmarks/bench_shared_stacks.py                      # batch 64 and 512
    python benchmarks/bench_shared_stacks.py --batch 64 --rounds 10 --json out.json
    python benchmarks/bench_shared_stacks.py --compile --batch 64   # under torch.compile
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import optimus_ir  # noqa: E402
from optimus_ir.api import capture  # noqa: E402
from optimus_ir.api.shared_stacks import shared_stacks  # noqa: E402
from optimus_ir.examples.recsys import VARIANTS, make_recsys_model  # noqa: E402
from optimus_ir.examples.timing import measure as measure_interleaved  # noqa: E402
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


def measure(towers: int, batch: int, variant: str, rounds: int, sample_ms: float) -> dict[str, Any]:
    """Per-call milliseconds of every column, in inference and training."""
    result: dict[str, Any] = {"towers": towers, "batch": batch, "variant": variant}
    for mode in ("no_grad", "train"):
        base, (x,) = make_recsys_model(num_towers=towers, batch=batch, seed=0, **VARIANTS[variant])
        base.train(mode == "train")
        models = {name: copy.deepcopy(base) for name in ("captured", "copy", "shared", "freeze")}
        modules: dict[str, Any] = {"captured": capture(models["captured"], (x,))}
        modules["copy"] = optimus_ir.optimize(models["copy"], (x,), check_speed=False)
        modules["shared"] = optimus_ir.optimize(models["shared"], (x,), check_speed=False, parameter_stacks="shared")
        if mode == "no_grad":
            modules["freeze"] = optimus_ir.optimize(models["freeze"], (x,), check_speed=False, freeze=True)
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

        def prologue() -> None:  # measure() runs its calls under no_grad
            snapshot.valid() and snapshot.stack_reads()

        def prologue_with_grad() -> None:  # as a training step's forward runs it
            with torch.enable_grad():
                snapshot.valid() and snapshot.stack_reads()

        calls["check"] = prologue if mode == "no_grad" else prologue_with_grad
        calls["member test"] = lambda: [s.holds(s.members) for s in stacks]
        samples, _ = measure_interleaved(calls, rounds, sample_ms)
        result[mode] = {
            "ms": {name: statistics.median(values) for name, values in samples.items()},
            "shared stacks": len(stacks),
            "groups": {name: _groups(m) for name, m in modules.items() if name != "captured"},
        }
    return result


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
        f"recsys-{result['variant']}-{result['towers']}, batch {result['batch']}, one thread: "
        "per-call ms (interleaved medians, CPU time)"
    )
    for mode in ("no_grad", "train"):
        ms = result[mode]["ms"]
        captured = ms["captured"]
        line = [f"  {mode:<8}"]
        for name in ("captured", "copy", "shared", "freeze"):
            if name in ms:
                line.append(f"{name} {ms[name]:.3f} ({captured / ms[name]:.2f}x)")
        check = ms["check"]
        line.append(
            f"check {check * 1e3:.1f} us ({check / ms['shared'] * 100:.2f}% of shared; "
            f"{result[mode]['shared stacks']} stacks; member test {ms['member test'] * 1e3:.1f} us), "
            f"groups {result[mode]['groups']}"
        )
        print(" | ".join(line))


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--towers", type=int, default=64)
    parser.add_argument("--batch", type=int, action="append", default=None, help="repeatable; default 64 and 512")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="mixed")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--sample-ms", type=float, default=50.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--compile", action="store_true", help="torch.compile steady state: Inductor alone, optimus copy, optimus shared"
    )
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    results = []
    try:
        for batch in args.batch or [64, 512]:
            if args.compile:
                result = measure_compiled(args.towers, batch, args.variant, args.rounds, args.sample_ms)
                _print_compiled(result)
            else:
                result = measure(args.towers, batch, args.variant, args.rounds, args.sample_ms)
                _print(result)
            results.append(result)
    finally:
        torch.set_num_threads(threads)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
