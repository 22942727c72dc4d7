"""Third-party model definitions through optimize(): deepctr-torch's models against PyTorch's Optimus.

Issue 21's real-model target: models we did not write, taken from a package
as a user has them. deepctr-torch 0.3.0 (`pip install -e '.[thirdparty]'`,
or `make bench-third-party`): the multi-task MMOE, PLE, ESMM and
SharedBottom, and the CTR models DCN, DCNMix, DeepFM, xDeepFM, AutoInt,
NFM, WDL, FiBiNET and ONN, on 6 sparse features (vocabulary 50, embedding
8) and 4 dense ones, in eval mode. AutoInt's forward assigns an attribute
(its attention scores), which a captured graph cannot do: `capture` and
`optimize` refuse it (`AttributeAssignmentError`; `optimize` returns a
module running the model), and its row says so with the reason
(torch.compile, which replays the write, compiles it:
`bench_compile_time.py`). deepctr's AFM and CCPM refuse dense features and
DIFM assigns attributes as AutoInt does: not included. deepctr initialises its
embeddings with std 1e-4, which makes every output nearly constant; every
parameter is re-initialised from a seeded normal distribution (std 0.3), so
that a wrong value shows.

For each model and batch size (64 and 512) the script builds and compares:

* captured -- the graph `optimus_ir.api.capture` captures (Dynamo, one graph);
* ours -- `optimus_ir.optimize(model, inputs, freeze=True)`, the default
  pipeline and options (the calibrated cost model, the speed check on) of
  the checkout it runs in: what a user gets;
* pytorch -- PyTorch's pre-grad Optimus on a copy of the captured graph:
  every pre-grad batch fusion and split/cat pass, exactly as
  `benchmarks/bench_batch_fusion.py` runs it (`run_pytorch`).

Reported per row: ops (call nodes, getitem included: `count_fx_ops`; ours
per call, the ops freeze computed once left out), the groups batch fusion
fused, whether the outputs match the captured graph (fp32 tolerance), and
the per-call time of each (one thread, no_grad, interleaved repeats, medians
of this thread's CPU time; `benchmarks/timing.py`) with captured/ours and
captured/pytorch. A markdown table on stdout (and `--markdown FILE`), every
figure as JSON with `--json FILE`.

Usage::

    python benchmarks/bench_third_party.py                    # 13 models x 2 batches: several minutes on one core
    python benchmarks/bench_third_party.py --quick            # few short repeats (~1 minute)
    python benchmarks/bench_third_party.py --models MMOE,PLE --batches 64 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import optimus_ir  # noqa: E402
from bench_batch_fusion import compare, count_calls, pytorch_options, run_pytorch  # noqa: E402
from optimus_ir.api import CaptureError, capture  # noqa: E402
from optimus_ir.examples.timing import CLOCKS, measure, quantile  # noqa: E402

MULTI_TASK = ("MMOE", "PLE", "ESMM", "SharedBottom")
"""deepctr-torch's multi-task models (two binary tasks, dense and sparse
features for the shared part only)."""
MODELS = ("MMOE", "PLE", "DCN", "DeepFM", "xDeepFM", "AutoInt", "NFM", "WDL", "ESMM", "SharedBottom",
          "FiBiNET", "DCNMix", "ONN")
"""The deepctr-torch models, by class name."""

SPARSE_FEATURES, DENSE_FEATURES, VOCABULARY, EMBEDDING = 6, 4, 50, 8
INIT_STD = 0.3
"""Std of the normal re-initialisation of every parameter."""


def build(name: str, batch: int, seed: int = 0) -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    """deepctr-torch's `name` on the benchmark's features, re-initialised
    from a seeded normal distribution, in eval mode, and a seeded input of
    `batch` rows (sparse indices as floats, then dense values, as deepctr
    takes them)."""
    from deepctr_torch import models
    from deepctr_torch.inputs import DenseFeat, SparseFeat

    torch.manual_seed(seed)
    sparse = [SparseFeat(f"s{i}", vocabulary_size=VOCABULARY, embedding_dim=EMBEDDING) for i in range(SPARSE_FEATURES)]
    dense = [DenseFeat(f"d{i}", 1) for i in range(DENSE_FEATURES)]
    columns = sparse + dense
    tasks = dict(task_types=("binary", "binary"), task_names=("a", "b"))
    if name == "MMOE":
        model = models.MMOE(columns, num_experts=4, device="cpu", **tasks)
    elif name in MULTI_TASK:
        model = getattr(models, name)(columns, device="cpu", **tasks)
    elif name in MODELS:  # the CTR models: linear (wide) and DNN features
        model = getattr(models, name)(columns, columns, device="cpu")
    else:
        raise ValueError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * INIT_STD)
    x = torch.cat(
        [
            torch.randint(0, VOCABULARY, (batch, SPARSE_FEATURES), generator=generator).float(),
            torch.randn(batch, DENSE_FEATURES, generator=generator),
        ],
        dim=1,
    )
    return model.eval(), (x,)


@dataclass
class Row:
    """Every figure of one (model, batch)."""

    model: str
    batch: int
    ops: dict[str, int | None] = field(default_factory=dict)
    groups_fused: int | None = None
    ours_fell_back: str | None = None
    """Why ours is not the fused result (speed check, op-count guard), or None."""
    refused: str | None = None
    """Why the model cannot be captured as one graph (`capture` raised a
    `CaptureError`, e.g. its forward assigns an attribute), or None; such a
    row has no other figures: `optimize` runs the model itself."""
    max_abs_diff: dict[str, float | None] = field(default_factory=dict)
    mismatch: dict[str, str | None] = field(default_factory=dict)
    median_ms: dict[str, float] = field(default_factory=dict)
    spread_pct: dict[str, float] = field(default_factory=dict)
    speedup: dict[str, float | None] = field(default_factory=dict)
    """captured time / the callable's time (> 1: faster than captured)."""
    optimize_s: float | None = None
    pytorch_fired: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    output_std: float | None = None
    """Std of the captured graph's outputs over the batch: not ~0 (the re-initialisation worked)."""


VISION: dict[str, tuple[str, str]] = {
    "torchvision.resnet18": ("torchvision", "torchvision.models.resnet18(weights=None)"),
    "timm.resnet10t": ("timm", "timm.create_model('resnet10t', pretrained=False)"),
}
"""Issue 37's image models (name: (package, how it is built)): random
initialisation as the library does it, 224x224 RGB inputs. `make
.venv/.zoo` installs both packages (benchmarks/zoo_requirements.txt); the
registry's torchvision wheels are CUDA builds whose C++ operators do not load
with the CPU torch, which `import_torchvision` works around."""

_TORCHVISION_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
"""The operators torchvision's import registers fake kernels for without
first checking that its C++ extension loaded (torchvision 0.28,
`_meta_registrations.py`); every other registration there is guarded."""

_TORCHVISION_LIBRARY: list[torch.library.Library] = []
"""Keeps the stand-in schemas registered (a Library deregisters its
definitions when it is collected)."""


def import_torchvision() -> Any:
    """`torchvision`, imported even where its C++ extension cannot load (a
    CUDA build of torchvision beside the CPU torch): the import then fails
    registering fake kernels for `_TORCHVISION_SCHEMAS`, so those schemas
    are defined (no kernels: calling `torchvision.ops.nms` still fails
    loudly) and the import is retried. The models are pure Python and need
    none of those operators; a warning says the operators are missing."""
    import importlib

    try:
        return importlib.import_module("torchvision")
    except RuntimeError as error:
        if "torchvision::nms does not exist" not in str(error):
            raise
    for module in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[module]
    library = torch.library.Library("torchvision", "FRAGMENT")
    for schema in _TORCHVISION_SCHEMAS:
        library.define(schema)
    _TORCHVISION_LIBRARY.append(library)
    warnings.warn(
        "torchvision's C++ operators do not load with this torch (a CUDA build of torchvision); "
        "its models are used without them",
        stacklevel=2,
    )
    return importlib.import_module("torchvision")


def build_vision(name: str, batch: int, seed: int = 0) -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    """A `VISION` model, initialised by its library under a seed, in eval
    mode, and a seeded batch of 224x224 images; a missing package exits
    saying which."""
    import importlib.util

    package, how = VISION[name]
    if importlib.util.find_spec(package) is None:
        raise SystemExit(f"{name}: {package} is not installed here (`make .venv/.zoo` installs it)")
    torch.manual_seed(seed)
    if package == "torchvision":
        model = import_torchvision().models.resnet18(weights=None)
    else:
        import_torchvision()  # timm imports torchvision
        import timm

        model = timm.create_model("resnet10t", pretrained=False)
    images = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(seed))
    return model.eval(), (images,)


def build_any(name: str, batch: int, *, train: bool = False) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """A deepctr-torch model of `MODELS`, an image model of `VISION` or a
    zoo model of `zoo_models` (FuxiCTR, torchrec, ...), in train or eval
    mode, with its inputs at `batch`; an unknown name exits naming the
    known ones."""
    if name in MODELS:
        model, inputs = build(name, batch)
        return model.train(train), tuple(inputs)
    if name in VISION:
        model, inputs = build_vision(name, batch)
        return model.train(train), tuple(inputs)
    import zoo_models

    if name not in zoo_models.ZOO:
        known = ", ".join([*MODELS, *VISION, *zoo_models.ZOO])
        raise SystemExit(f"unknown third-party model {name!r} (known: {known})")
    return zoo_models.build(name, train=train), zoo_models.make_inputs(name, batch)


def _fall_back_reason(report: Any) -> str | None:
    if report.fallback is not None:
        return report.fallback
    if report.speed_check is not None and report.speed_check.fell_back:
        return "speed check"
    if any(r.message.startswith("optimize: op-count guard") for r in report.remarks):
        return "op-count guard"
    return None


def bench_row(
    name: str, batch: int, *, repeats: int, sample_ms: float, options: dict[str, dict[str, Any]],
    clock: Callable[[], int],
) -> Row:
    """Build, optimize both ways, check and time one (model, batch)."""
    row = Row(name, batch)
    model, inputs = build(name, batch)
    try:
        gm = capture(model, inputs)
    except CaptureError as error:  # a refusal with its reason, not a failure of ours
        row.refused = f"{type(error).__name__}: {error}"
        return row
    row.ops["captured"] = count_calls(gm)
    calls: dict[str, Callable[[], Any]] = {"captured": lambda: gm(*inputs)}
    start = time.perf_counter()
    try:
        ours = optimus_ir.optimize(model, list(inputs), freeze=True)
    except Exception as error:  # noqa: BLE001 - reported in the table
        row.errors["ours"] = f"{type(error).__name__}: {error}".splitlines()[0]
    else:
        row.optimize_s = time.perf_counter() - start
        report = ours.optimus_report  # type: ignore[attr-defined]
        row.ops["ours"] = sum((report.ops_per_call or report.ops_after).values())
        row.groups_fused = report.groups_fused
        row.ours_fell_back = _fall_back_reason(report)
        calls["ours"] = lambda: ours(*inputs)
    try:
        theirs, _, row.pytorch_fired = run_pytorch(gm, inputs, options)
    except Exception as error:  # noqa: BLE001 - reported in the table
        row.errors["pytorch"] = f"{type(error).__name__}: {error}".splitlines()[0]
    else:
        row.ops["pytorch"] = count_calls(theirs)
        calls["pytorch"] = lambda: theirs(*inputs)

    with torch.no_grad():
        expected = gm(*inputs)
        leaves = expected if isinstance(expected, (list, tuple)) else [expected]
        row.output_std = float(min(t.float().std() for t in leaves))
        for who in ("ours", "pytorch"):
            if who in calls:
                row.max_abs_diff[who], row.mismatch[who] = compare(expected, calls[who]())
            else:
                row.max_abs_diff[who], row.mismatch[who] = None, "did not run"

    samples, _ = measure(calls, repeats, sample_ms, clock)
    for who, values in samples.items():
        median = statistics.median(values)
        row.median_ms[who] = median
        row.spread_pct[who] = 100 * (quantile(values, 0.75) - quantile(values, 0.25)) / median
    for who in ("ours", "pytorch"):
        row.speedup[who] = row.median_ms["captured"] / row.median_ms[who] if who in row.median_ms else None
    return row


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def format_table(rows: Sequence[Row]) -> str:
    """The markdown table, then errors, mismatches and fall backs."""
    lines = [
        "| model | batch | ops captured | ops ours | ops pytorch | groups fused (ours) | "
        "captured ms | ours ms | pytorch ms | captured/ours | captured/pytorch | outputs |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        if r.refused is not None:
            lines.append(f"| {r.model} | {r.batch} | refused (see below) |" + " - |" * 9)
            continue
        times = [
            f"{r.median_ms[w]:.4f} ±{r.spread_pct[w]:.0f}%" if w in r.median_ms else "-"
            for w in ("captured", "ours", "pytorch")
        ]
        outputs = "equal" if all(r.mismatch.get(w) is None for w in ("ours", "pytorch")) else "MISMATCH"
        lines.append(
            f"| {r.model} | {r.batch} | {_cell(r.ops.get('captured'))} | {_cell(r.ops.get('ours'))} | "
            f"{_cell(r.ops.get('pytorch'))} | {_cell(r.groups_fused)} | {' | '.join(times)} | "
            f"{_cell(r.speedup.get('ours'))} | {_cell(r.speedup.get('pytorch'))} | {outputs} |"
        )
    lines.append("")
    for r in rows:
        if r.refused is not None:
            lines.append(f"{r.model} batch {r.batch}: refused, not captured: {r.refused}")
            continue
        fired = ", ".join(f"{k} {v}" for k, v in sorted(r.pytorch_fired.items())) or "nothing"
        lines.append(f"pytorch counters, {r.model} batch {r.batch}: {fired}")
        if r.ours_fell_back:
            lines.append(f"ours, {r.model} batch {r.batch}: fell back ({r.ours_fell_back})")
        for who, text in r.errors.items():
            lines.append(f"{r.model} batch {r.batch} ({who}): {text}")
        for who, text in r.mismatch.items():
            if text not in (None, "did not run"):
                lines.append(f"{r.model} batch {r.batch} ({who}) differs from captured: {text}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 1 when ours differs from the captured graph,
    optimize() fails or ends with more ops than captured, else 0 (a model
    refused with its reason is not a failure)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--batches", default="64,512", help="comma-separated batch sizes")
    parser.add_argument("--repeats", type=int, help="interleaved repeats (default 15, quick 5)")
    parser.add_argument("--sample-ms", type=float, help="time of one sample (default 20 ms, quick 5 ms)")
    parser.add_argument("--quick", action="store_true", help="few, short repeats")
    parser.add_argument("--counter", type=int, default=2, help="runs of each PyTorch split/cat pass")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the table here too")
    args = parser.parse_args(argv)
    try:
        import deepctr_torch  # noqa: F401
    except ImportError:
        parser.error("deepctr-torch is not installed: `make bench-third-party` or pip install -e '.[thirdparty]'")
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {list(MODELS)}")
    batches = [int(b) for b in args.batches.split(",") if b]
    repeats = args.repeats or (5 if args.quick else 15)
    sample_ms = args.sample_ms or (5.0 if args.quick else 20.0)

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    from torch._inductor.fx_passes.pre_grad import lazy_init

    lazy_init()  # PyTorch registers its patterns once; not charged to the first row
    options = pytorch_options(args.counter)
    started = time.perf_counter()
    rows = []
    for name in names:
        for batch in batches:
            row = bench_row(name, batch, repeats=repeats, sample_ms=sample_ms, options=options, clock=CLOCKS[args.clock])
            rows.append(row)
            print(
                f"[{name} batch {batch}] ops {row.ops.get('captured')} -> {row.ops.get('ours')} "
                f"(pytorch {row.ops.get('pytorch')}), captured/ours {_cell(row.speedup.get('ours'))}",
                file=sys.stderr,
                flush=True,
            )
    header = (
        f"deepctr-torch third-party models; torch {torch.__version__}, 1 thread, {args.clock} clock, "
        f"{repeats} repeats, ~{sample_ms:g} ms samples, {time.perf_counter() - started:.0f} s\n"
        "ours: optimus_ir.optimize(model, inputs, freeze=True) (default pipeline, calibrated cost model, "
        "speed check on); pytorch: pre_grad_passes with every pre-grad batch fusion and split/cat pass\n"
    )
    table = format_table(rows)
    print(header)
    print(table)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(header + "\n" + table + "\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    bad = [
        r for r in rows
        if "ours" in r.errors or r.mismatch.get("ours") is not None
        or (r.ops.get("ours") or 0) > (r.ops.get("captured") or 0)
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
