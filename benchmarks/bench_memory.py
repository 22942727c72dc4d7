"""Issue 24's memory targets in one command: tensor memory of the graph
Dynamo captured against the module `optimize` returns, at the allocator.

For the recsys model (`optimus_ir/examples/recsys.py`, the suite's 'mixed' variant:
64 towers of widths 16/32/64, hidden 256 by default), at each batch size:

* forward peak: the peak of the tensor bytes live during one call, above
  what was live before it, under no_grad, eval mode, after a warm-up call
  (`optimus_ir.memory.measure_call_memory`, the dispatch tracker: exact for
  eager graphs);
* forward+backward peak: the same for `out.sum().backward()` in train mode
  (the model and `optimize` in train mode; gradients included);
* held between calls, default mode and `freeze=True` after `del model`:
  the tensor bytes still reachable from the returned module, against the
  model's parameter and buffer bytes (`resident_tensor_bytes`);
* views: how much of ours' forward peak only views of part of a stack keep
  alive (`graph_value_lifetimes`; 0 for the captured graph).

Memory, not time: one measured call each, deterministic for a cost model.
The targets: forward peak <= 1.5x the captured graph's, and <= 1.05x the
parameters held after `del model` with freeze.

    .venv/bin/python benchmarks/bench_memory.py                        # batch 64 and 512
    .venv/bin/python benchmarks/bench_memory.py --batches 64 --towers 8 --json out.json
    .venv/bin/python benchmarks/bench_memory.py --third-party MMOE,PLE,DCN,DeepFM   # deepctr-torch models
    .venv/bin/python benchmarks/bench_memory.py --third-party torchvision.resnet18,timm.resnet10t --batches 64

With `--third-party`, real models written by others (deepctr-torch's and
the image models torchvision.resnet18 and timm.resnet10t, as
`bench_third_party.py` builds them, and the zoo's FuxiCTR/torchrec models,
as `zoo_models.py` builds them, at each of `--batches`) instead: forward
peak of the captured graph and of ours under each `--budgets` budget, with
the groups fused, results checked against the model; the speed of ours
under the first budget against the captured graph (interleaved medians of
`--rounds` samples, one thread) and the in-place ops of both (issue 37:
`reinplace` restores the model's own).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import attrs
import torch

_BENCHMARKS = Path(__file__).resolve().parent
if str(_BENCHMARKS) not in sys.path:  # bench_third_party, imported by name like the other scripts do
    sys.path.insert(0, str(_BENCHMARKS))

def _model(towers: int, hidden: int, batch: int, train: bool) -> tuple[torch.nn.Module, torch.Tensor]:
    from optimus_ir.examples.recsys import VARIANTS, make_recsys_model

    model, (x,) = make_recsys_model(num_towers=towers, hidden=hidden, batch=batch, seed=0, **VARIANTS["mixed"])
    return model.train(train), x


def _forward_and_backward(module: Any, x: torch.Tensor) -> None:
    module(x).sum().backward()


def measure(towers: int, hidden: int, batch: int, cost_model: str) -> dict[str, Any]:
    """The figures of one batch size (see the module docstring)."""
    import optimus_ir
    from optimus_ir.api import capture
    from optimus_ir.memory import graph_value_lifetimes, measure_call_memory, resident_tensor_bytes
    from optimus_ir.options import OptimizeOptions

    options = OptimizeOptions(cost_model=cost_model, check_speed=False)  # type: ignore[arg-type]
    row: dict[str, Any] = {"batch": batch, "towers": towers, "hidden": hidden, "cost_model": cost_model}

    model, x = _model(towers, hidden, batch, train=False)
    with torch.no_grad():
        ours = optimus_ir.optimize(model, (x,), options=options)
        captured = capture(model, (x,))
        for name, module in (("captured", captured), ("ours", ours)):
            module(x)
            row[f"{name}_forward_peak"] = measure_call_memory(module, x, method="dispatch").peak_bytes
        lifetimes = graph_value_lifetimes(ours, x)
    row["ours_view_overhead"] = lifetimes.view_overhead_bytes
    row["ours_readable_peak"] = lifetimes.peak_needed_bytes
    row["groups_fused"] = ours.optimus_report.groups_fused
    row["model_bytes"] = resident_tensor_bytes(model, model).model_bytes
    row["held_default"] = resident_tensor_bytes(ours, model).total_bytes
    del ours, captured

    train_model, x = _model(towers, hidden, batch, train=True)
    ours = optimus_ir.optimize(train_model, (x,), options=options)
    captured = capture(train_model, (x,))
    for name, module in (("captured", captured), ("ours", ours)):
        _forward_and_backward(module, x)  # warm-up: first-call work, gradients allocated
        train_model.zero_grad(set_to_none=True)
        row[f"{name}_train_peak"] = measure_call_memory(
            lambda m=module: _forward_and_backward(m, x), method="dispatch"
        ).peak_bytes
        train_model.zero_grad(set_to_none=True)
    del ours, captured, train_model

    frozen_model, x = _model(towers, hidden, batch, train=False)
    model_bytes = row["model_bytes"]
    with torch.no_grad():
        frozen = optimus_ir.optimize(frozen_model, (x,), options=attrs.evolve(options, freeze=True))
    del frozen_model
    gc.collect()
    row["held_frozen_after_del"] = resident_tensor_bytes(frozen).total_bytes
    row["held_frozen_ratio"] = row["held_frozen_after_del"] / model_bytes
    del frozen
    row["forward_ratio"] = row["ours_forward_peak"] / row["captured_forward_peak"]
    row["train_ratio"] = row["ours_train_peak"] / row["captured_train_peak"]
    return row


def measure_third_party(
    name: str, batch: int, budgets: list[str], rounds: int = 7, sample_ms: float = 20.0
) -> dict[str, Any]:
    """Forward peak (dispatch tracker, no_grad, after a warm-up call) of a
    third-party model's captured graph and of ours under each budget; the
    speed of ours under the first budget against the captured graph
    (interleaved medians, `rounds` samples of about `sample_ms` each), and
    the in-place ops of both."""
    import statistics

    import optimus_ir
    from optimus_ir.api import capture
    from optimus_ir.api.op_counts import count_inplace_ops
    from optimus_ir.examples.timing import measure as measure_interleaved
    from optimus_ir.memory import measure_call_memory

    from bench_third_party import build_any

    model, inputs = build_any(name, batch)
    row: dict[str, Any] = {"model": name, "batch": batch, "budgets": {}}
    timed: dict[str, Any] = {}
    with torch.no_grad():
        captured = capture(model, inputs)
        captured(*inputs)
        timed["captured"] = lambda: captured(*inputs)
        row["captured_forward_peak"] = measure_call_memory(captured, *inputs, method="dispatch").peak_bytes
        row["captured_inplace"] = count_inplace_ops(captured).total
        for budget in budgets:
            ours = optimus_ir.optimize(model, inputs, memory_budget=budget, check_speed=False)
            ours(*inputs)
            torch.testing.assert_close(ours(*inputs), model(*inputs), rtol=1e-4, atol=1e-5)
            row["budgets"][budget] = {
                "forward_peak": measure_call_memory(ours, *inputs, method="dispatch").peak_bytes,
                "groups_fused": ours.optimus_report.groups_fused,
                "inplace": ours.optimus_report.inplace_after.total,
            }
            if len(timed) == 1:
                timed["ours"] = lambda ours=ours: ours(*inputs)
    samples, _ = measure_interleaved(timed, rounds, sample_ms)
    row["captured_ms"], row["ours_ms"] = (statistics.median(samples[k]) for k in ("captured", "ours"))
    row["speed"] = row["captured_ms"] / row["ours_ms"]
    return row


def third_party_table(rows: list[dict[str, Any]]) -> str:
    budgets = list(rows[0]["budgets"]) if rows else []
    lines = [
        "| model | batch | captured peak MiB | "
        + " | ".join(f"ours, budget {b}: peak MiB (groups)" for b in budgets)
        + f" | ms captured / ours, budget {budgets[0] if budgets else ''} (speed) | in-place ops captured / ours |",
        "|---|---|---|" + "---|" * len(budgets) + "---|---|",
    ]
    for r in rows:
        cells = [
            f"{_mib(c['forward_peak'])} ({c['forward_peak'] / r['captured_forward_peak']:.2f}x, {c['groups_fused']})"
            for c in r["budgets"].values()
        ]
        first = next(iter(r["budgets"].values()))
        lines.append(
            f"| {r['model']} | {r['batch']} | {_mib(r['captured_forward_peak'])} | " + " | ".join(cells)
            + f" | {r['captured_ms']:.3f} / {r['ours_ms']:.3f} ({r['speed']:.2f}x) "
            f"| {r['captured_inplace']} / {first['inplace']} |"
        )
    return "\n".join(lines)


def _mib(count: int) -> str:
    return f"{count / 2**20:.2f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| batch | groups fused | forward peak MiB captured / ours (ratio) | of ours kept only by views | "
        "fwd+bwd peak MiB captured / ours (ratio) | held MiB default | held MiB freeze, model deleted (x params) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['batch']} | {r['groups_fused']} | {_mib(r['captured_forward_peak'])} / {_mib(r['ours_forward_peak'])} "
            f"({r['forward_ratio']:.2f}x) | {_mib(r['ours_view_overhead'])} | "
            f"{_mib(r['captured_train_peak'])} / {_mib(r['ours_train_peak'])} ({r['train_ratio']:.2f}x) | "
            f"{_mib(r['held_default'])} | {_mib(r['held_frozen_after_del'])} ({r['held_frozen_ratio']:.2f}x "
            f"of {_mib(r['model_bytes'])}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--towers", type=int, default=64, help="towers of the recsys model (default 64)")
    parser.add_argument("--hidden", type=int, default=256, help="the MLP's hidden width (default 256)")
    parser.add_argument("--batches", default="64,512", help="comma-separated batch sizes (default 64,512)")
    parser.add_argument(
        "--cost-model",
        default="calibrated",
        choices=("calibrated", "default", "none"),
        help="batch-fusion's cost model ('none': every group fused; default: calibrated, what users get)",
    )
    parser.add_argument(
        "--third-party",
        default="",
        help="comma-separated models written by others to measure instead of recsys: deepctr-torch's "
        "(bench_third_party.py's names: DeepFM, DCN, xDeepFM, MMOE, PLE) and the zoo's (zoo_models.py: "
        "fuxictr.DCNv2, fuxictr.FinalMLP, ...)",
    )
    parser.add_argument(
        "--budgets",
        default="1.5x+1MiB,none,1.0x",
        help="memory budgets for --third-party (default: the default budget, none, 1.0x)",
    )
    parser.add_argument("--rounds", type=int, default=7, help="interleaved speed samples for --third-party")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    if args.third_party:
        budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
        models = [m.strip() for m in args.third_party.split(",") if m.strip()]
        third = []
        for name in models:
            print(f"{name}: measuring ...", file=sys.stderr, flush=True)
            for batch in batches:
                third.append(measure_third_party(name, batch, budgets, rounds=args.rounds))
        print(third_party_table(third))
        if args.json:
            args.json.write_text(json.dumps(third, indent=2))
        return 0
    rows = []
    for batch in batches:
        print(f"batch {batch}: measuring ...", file=sys.stderr, flush=True)
        rows.append(measure(args.towers, args.hidden, batch, args.cost_model))
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
