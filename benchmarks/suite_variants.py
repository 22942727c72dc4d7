"""The variants of the benchmark suite (`benchmarks/suite.py`): their names
and groups (`VARIANTS`, `COMPILED`, `OURS`, the `--vs-inductor` pairs), and
how a model becomes one -- built on a device, prepared (captured, optimized
by ours or PyTorch's Optimus, compiled by Inductor), called once and timed
(`prepare`), its ops counted (`op_counts`) and its outputs compared with the
original's (`compare`). Runs in the suite's child processes; imported by
name with `benchmarks/` on `sys.path` (as `suite.py` sets it).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

EAGER = ("original", "captured", "ours", "pytorch")
FROZEN = ("inductor-frozen", "inductor+ours-frozen")
"""The variants compiled and timed under Inductor's freezing."""
COMPILED = ("inductor", "inductor+pytorch", "inductor+ours") + FROZEN
GPU_ONLY = ("ours+triton",)
VARIANTS = EAGER + COMPILED + GPU_ONLY
OURS = ("ours", "inductor+ours", "inductor+ours-frozen", "ours+triton")
"""The variants whose failure or mismatch fails the run."""
WITH_OUR_BACKEND = ("inductor+ours", "inductor+ours-frozen")
"""The variants compiled through our torch.compile backend (their remarks
say which groups were fused or declined for the Inductor target)."""
VS_INDUCTOR_PAIRS = (("inductor", "inductor+ours"), ("inductor-frozen", "inductor+ours-frozen"))
"""`--vs-inductor`'s comparisons: (Inductor alone, Inductor after ours)."""
VS_INDUCTOR_DEFAULT = ("inductor", "inductor+ours")
VS_INDUCTOR_TARGET = 1.0
"""Inductor alone's median over Inductor after ours', at least (issue 23:
never slower than Inductor alone)."""
INDUCTOR_TARGET_MARK = "target inductor:"
"""What batch-fusion's remark says of a group priced for Inductor
(`optimus_ir.analysis.cost_model.GroupEstimate.describe`)."""

RTOL, ATOL = 1e-4, 1e-5
TRITON_PIPELINE = (
    "raise-fx,split-cat-simplify,batch-fusion{cost-model=none grouped-linear=true},"
    "lower-batch{kernels=triton},split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
)


# ---------------------------------------------------------------------------
# Building and preparing variants (run in the child processes)
# ---------------------------------------------------------------------------


def op_counts(gm: Any) -> tuple[int, int]:
    """(compute ops, all calls): the calls that compute or move data
    (every call less `PLUMBING_KINDS`), and every call (getitem included)."""
    from optimus_ir.api import is_plumbing, op_kind

    calls = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    return sum(1 for n in calls if not is_plumbing(op_kind(n))), len(calls)


def to_device(value: Any, device: Any) -> Any:
    import torch

    return value.to(device) if isinstance(value, torch.Tensor) else value


def build_on(name: str, batch: int, device: str) -> tuple[Any, tuple[Any, ...]]:
    """The seeded model and inputs on `device`."""
    from suite_models import build

    model, inputs = build(name, batch)
    return model.to(device).eval(), tuple(to_device(x, device) for x in inputs)


class PreGradProbe:
    """Wraps Inductor's `pre_grad_passes` while active: the seconds spent in
    it and the call ops of the graphs it hands on to Inductor's lowering."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.ops = (0, 0)
        self.graphs = 0

    @contextlib.contextmanager
    def active(self) -> Iterator[PreGradProbe]:
        from torch._inductor import compile_fx

        original = compile_fx.pre_grad_passes

        def timed(gm: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            result = original(gm, *args, **kwargs)
            self.seconds += time.perf_counter() - start
            compute, calls = op_counts(result)
            self.ops = (self.ops[0] + compute, self.ops[1] + calls)
            self.graphs += 1
            return result

        compile_fx.pre_grad_passes = timed
        try:
            yield self
        finally:
            compile_fx.pre_grad_passes = original


def pytorch_options() -> dict[str, dict[str, Any]]:
    """PyTorch's Optimus: every pre-grad batch fusion and split/cat pass."""
    from bench_batch_fusion import pytorch_options as options

    return options(counter=2)


def inductor_with_pytorch_optimus(gm: Any, example_inputs: Sequence[Any]) -> Any:
    """Inductor with PyTorch's Optimus, as a backend of its own: Dynamo
    then keeps its code apart from plain Inductor's (one `torch.compile(model)`
    after another on the same model class shares compiled code), and a
    recompile gets the same options."""
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx

    with config.patch(pre_grad_fusion_options=pytorch_options(), pattern_matcher=True):
        return compile_fx(gm, list(example_inputs))


def inductor_frozen(gm: Any, example_inputs: Sequence[Any]) -> Any:
    """Inductor with its freezing, as a backend of its own: Dynamo then keeps
    its code apart from plain Inductor's (the same model class compiled
    with the same backend shares compiled code), and a recompile freezes
    too. (The first call runs under `freezing` as well: Dynamo reads the
    option when it traces.)"""
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx

    with config.patch(freezing=True):
        return compile_fx(gm, list(example_inputs))


@dataclass
class Prepared:
    """A variant ready to call: the callable, its ops and pass time, and
    the first call's output and wall time (preparation included)."""

    call: Callable[[], Any]
    ops: tuple[int, int] | None
    """(compute ops, all calls), see `op_counts`."""
    pass_ms: float | None
    first_output: Any
    first_call_s: float
    remarks: list[str] = field(default_factory=list)
    """Our backend's variants: every remark of every graph it optimized."""
    unchanged: bool | None = None
    """Our backend's variants: every graph went to Inductor as Dynamo made
    it (nothing fused or rewritten: then Inductor's code is Inductor
    alone's, and a difference in time is noise)."""


def variant_freezing(variant: str) -> Any:
    """Inductor's freezing for a `-frozen` variant, else nothing. A scoped
    patch, never set for the process: a freezing left on makes Dynamo hand
    the later variants' graphs their parameters as attributes."""
    if variant not in FROZEN:
        return contextlib.nullcontext()
    from torch._inductor import config

    return config.patch(freezing=True)


def group_summaries(remarks: Sequence[str]) -> tuple[list[str], list[str]]:
    """(fused, declined): one line per batch-fusion group priced for the
    Inductor target -- `N op gain ~X us` from its remark (`batch-fusion:
    fused N op(...) into ... (target inductor: ... gain ~X us)` and
    `batch-fusion: N op(...) not fused: unprofitable: target inductor: ...`)."""
    fused, declined = [], []
    for message in remarks:
        if INDUCTOR_TARGET_MARK not in message or not message.startswith("batch-fusion: "):
            continue
        body = message[len("batch-fusion: "):]
        gain = message.rsplit("gain ~", 1)[-1].split(" us", 1)[0] if "gain ~" in message else "?"
        if body.startswith("fused "):
            count, op = body[len("fused "):].split(" ", 2)[:2]
            fused.append(f"{count} {op.split('(')[0]} (gain ~{gain} us)")
        elif "not fused: unprofitable:" in body:
            count, op = body.split(" ", 2)[:2]
            declined.append(f"{count} {op.split('(')[0]} (gain ~{gain} us)")
    return fused, declined


def _since(start: float) -> float:
    """Seconds since `start`, after the GPU (if any) finished its work."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def prepare(variant: str, model: Any, inputs: tuple[Any, ...]) -> Prepared:
    """Turn `model` into `variant` and call it once, timed from the start."""
    import torch

    import optimus_ir
    from optimus_ir.api import capture

    start = time.perf_counter()
    if variant == "original":
        output = model(*inputs)
        return Prepared(lambda: model(*inputs), None, None, output, _since(start))
    if variant == "captured":
        gm = capture(model, inputs)
        output = gm(*inputs)
        return Prepared(lambda: gm(*inputs), op_counts(gm), None, output, _since(start))
    if variant in ("ours", "ours+triton"):
        pipeline = TRITON_PIPELINE if variant == "ours+triton" else None
        ours = optimus_ir.optimize(model, list(inputs), pipeline, freeze=True)
        output = ours(*inputs)
        seconds = _since(start)
        passes = ours.optimus_report.phase_seconds.get("passes", 0.0)  # type: ignore[attr-defined]
        return Prepared(lambda: ours(*inputs), op_counts(ours), passes * 1e3, output, seconds)
    if variant == "pytorch":
        from bench_batch_fusion import run_pytorch

        gm = capture(model, inputs)
        theirs, pass_seconds, _fired = run_pytorch(gm, inputs, pytorch_options())
        output = theirs(*inputs)
        seconds = _since(start)
        return Prepared(lambda: theirs(*inputs), op_counts(theirs), pass_seconds * 1e3, output, seconds)
    if variant in COMPILED:
        probe = PreGradProbe()
        made = None
        if variant in WITH_OUR_BACKEND:
            made = optimus_ir.backend(freeze=variant in FROZEN)
            function = torch.compile(model, backend=made)
        elif variant == "inductor+pytorch":
            function = torch.compile(model, backend=inductor_with_pytorch_optimus)
        elif variant == "inductor-frozen":
            function = torch.compile(model, backend=inductor_frozen)
        else:
            function = torch.compile(model)
        frames = _compiled_frames()
        with probe.active(), variant_freezing(variant):
            output = function(*inputs)
        seconds = _since(start)
        if _compiled_frames() == frames:
            raise RuntimeError("Dynamo compiled nothing: the call ran code another variant compiled")
        remarks: list[str] = []
        unchanged = None
        if made is not None:
            failed = [o for o in made.outcomes if not o.optimized]
            if failed:
                raise RuntimeError(f"the optimus backend passed a graph through: {failed[0].reason}")
            pass_ms = 1e3 * sum(
                o.report.phase_seconds.get("passes", 0.0) for o in made.outcomes if o.report is not None
            )
            remarks = [r.message for o in made.outcomes if o.report is not None for r in o.report.remarks]
            unchanged = all(o.unchanged for o in made.outcomes)
        else:
            pass_ms = probe.seconds * 1e3 if variant == "inductor+pytorch" else None
        # With a warm cache AOTAutograd serves the graph before the pre-grad
        # passes run (torch >= 2.13): then no ops are known.
        ops = probe.ops if probe.graphs else None
        return Prepared(lambda: function(*inputs), ops, pass_ms, output, seconds, remarks, unchanged)
    raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")


def compare(expected: Any, got: Any) -> tuple[float, str | None]:
    """(max abs difference, None or the first line of assert_close's message)."""
    import torch
    from torch.utils import _pytree as pytree

    want, have = pytree.tree_leaves(expected), pytree.tree_leaves(got)
    if len(want) != len(have):
        return math.inf, f"{len(have)} outputs, expected {len(want)}"
    diff, problem = 0.0, None
    for a, b in zip(want, have):
        if isinstance(a, torch.Tensor) and a.numel():
            diff = max(diff, float((a.double() - b.double()).abs().max()))
        try:
            torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL)
        except AssertionError as error:
            problem = problem or str(error).strip().splitlines()[0]
    return diff, problem


def _compiled_frames() -> int:
    from torch._dynamo.utils import counters

    return sum(counters["frames"].values())


def vs_inductor_pairs(variants: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of `VS_INDUCTOR_PAIRS` whose both variants are in `variants`."""
    return [(alone, ours) for alone, ours in VS_INDUCTOR_PAIRS if alone in variants and ours in variants]


if __name__ == "__main__":
    # A module of the benchmark suite, not a benchmark: run as a script it
    # only answers --help (every script of benchmarks/ does).
    import argparse

    argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Run benchmarks/suite.py instead."
    ).parse_args()
