"""Which lowered form of a batch op Inductor compiles best (issue 23).

`lower-batch` lowers a fused group to torch ops; under
`torch.compile(backend="optimus")` Inductor compiles those ops, and the form
that is fastest eagerly need not be the fastest there. This script times,
for each kind of group, the batched form `lower-batch` emits against the
members left separate (what Inductor would compile without the fusion),
each compiled fresh by Inductor (CPU, one thread, `no_grad`, fp32, batch
rows 64):

* `linear`: `torch.baddbmm(stack(b)[:, None], x, stack(W).transpose(1, 2))`
  on the stacked input vs one `F.linear` (addmm) per member;
* `bmm`: the same without bias (`torch.bmm` vs `mm` per member);
* `layer_norm`: one `F.layer_norm` without affine over the stacked members,
  `* stack(g)[:, None] + stack(b)[:, None]` vs one affine `F.layer_norm`
  per member on its slice of the stack;
* `pointwise`: a chain (`tanh(relu(x) * 0.5 + 1)`) on the stack vs the
  same chain per member (Inductor fuses either vertically).

The parameters are separate `nn.Parameter`s per member, as in the models
`batch-fusion` sees: plain, Dynamo lifts them to graph inputs and the
batched forms stack them on every call; `--freeze` runs Inductor's freezing
(parameters are constants, the stacks folded at compile time). The input
of every form is one stacked tensor `[N, 64, D]` (what an earlier batch op
hands on), sliced per member by the per-member forms (views).

Per (kind, N) both forms are compiled after `torch._dynamo.reset()` with
Inductor's FX graph cache off and a fresh Inductor cache directory per run
(the compile time is real: the first call's wall time), checked against eager, and timed interleaved in this process
(`timing.median_us_each`, this thread's CPU time). It also reports whether
`torch._grouped_mm` (the grouped GEMM a grouped form would lower to) runs
and traces on fp32 CPU tensors.

    python benchmarks/bench_inductor_forms.py                     # all kinds, N = 4, 8, 16, 64
    python benchmarks/bench_inductor_forms.py --kinds layer_norm --freeze
    python benchmarks/bench_inductor_forms.py --kinds linear --sizes 8,64 --rounds 5
    python benchmarks/bench_inductor_forms.py --smoke              # the runner works (tested)

The figures and the choice they support are in docs/architecture/lowering-and-kernels.md
("Lowering forms per target") and `optimus_ir.analysis.cost_model`'s
`INDUCTOR_PER_MEMBER_LAYER_NORM_MAX`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

KINDS = ("linear", "bmm", "layer_norm", "pointwise")
SIZES = (4, 8, 16, 64)
ROWS = 64
"""Rows per member (the batch)."""
TOLERANCE = 1e-4
"""Largest max abs difference to eager accepted (fp32, sums reordered)."""


class Linear(torch.nn.Module):
    """N linears `[ROWS, dim] -> [ROWS, dim]` on the members of a stack:
    `batched` as `lower-batch` lowers `batch.linear` (baddbmm, bmm without
    bias), else one `F.linear` per member."""

    def __init__(self, n: int, dim: int, bias: bool, batched: bool) -> None:
        super().__init__()
        self.batched = batched
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(torch.randn(dim, dim) / dim**0.5) for _ in range(n))
        self.biases = torch.nn.ParameterList(torch.nn.Parameter(torch.randn(dim)) for _ in range(n)) if bias else None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.batched:
            wt = torch.stack(list(self.weights)).transpose(1, 2)
            if self.biases is None:
                return torch.bmm(x, wt).unbind(0)
            return torch.baddbmm(torch.stack(list(self.biases))[:, None], x, wt).unbind(0)
        biases = [None] * len(self.weights) if self.biases is None else list(self.biases)
        return tuple(F.linear(x[i], w, b) for i, (w, b) in enumerate(zip(self.weights, biases)))


class LayerNorm(torch.nn.Module):
    """N affine layer norms over the last dim of the members of a stack:
    `batched` as `lower-batch` lowers `batch.layer_norm` (one layer norm
    without affine, then the stacked weight and bias), else one
    `F.layer_norm` per member on its slice."""

    def __init__(self, n: int, dim: int, batched: bool) -> None:
        super().__init__()
        self.batched = batched
        self.dim = dim
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(1 + 0.1 * torch.randn(dim)) for _ in range(n))
        self.biases = torch.nn.ParameterList(torch.nn.Parameter(0.1 * torch.randn(dim)) for _ in range(n))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.batched:
            y = F.layer_norm(x, (self.dim,))
            return (y * torch.stack(list(self.weights))[:, None] + torch.stack(list(self.biases))[:, None]).unbind(0)
        return tuple(
            F.layer_norm(x[i], (self.dim,), w, b) for i, (w, b) in enumerate(zip(self.weights, self.biases))
        )


class Pointwise(torch.nn.Module):
    """A pointwise chain on the stack (`batched`) or on each member."""

    def __init__(self, n: int, batched: bool) -> None:
        super().__init__()
        self.n = n
        self.batched = batched

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.batched:
            return torch.tanh(torch.relu(x) * 0.5 + 1).unbind(0)
        return tuple(torch.tanh(torch.relu(x[i]) * 0.5 + 1) for i in range(self.n))


def make(kind: str, n: int, dim: int, batched: bool) -> torch.nn.Module:
    """The module of `kind` over `n` members, in eval mode."""
    if kind in ("linear", "bmm"):
        module: torch.nn.Module = Linear(n, dim, kind == "linear", batched)
    elif kind == "layer_norm":
        module = LayerNorm(n, dim, batched)
    elif kind == "pointwise":
        module = Pointwise(n, batched)
    else:
        raise ValueError(f"unknown kind {kind!r} (choose from {', '.join(KINDS)})")
    return module.eval()


def _settings(freeze: bool) -> Any:
    """Inductor's settings for one compile: no FX graph cache (the compile
    time is measured), freezing when asked. Scoped, not set for the process
    (a freezing left on would change how Dynamo hands later graphs their
    parameters)."""
    from torch._inductor import config

    return config.patch(fx_graph_cache=False, freezing=freeze)


def compare(kind: str, n: int, dim: int, freeze: bool, rounds: int, sample_ms: float) -> dict[str, Any]:
    """Both forms of `kind` over `n` members compiled fresh, checked against
    eager and timed interleaved: per form the steady-state microseconds, the
    compile seconds and the max abs difference."""
    from optimus_ir.examples.timing import median_us_each

    torch.manual_seed(0)
    batched = make(kind, n, dim, True)
    per_member = make(kind, n, dim, False)
    per_member.load_state_dict(batched.state_dict())
    x = torch.randn(n, ROWS, dim)
    result: dict[str, Any] = {}
    calls: dict[str, Callable[[], Any]] = {}
    torch._dynamo.reset()
    with _settings(freeze), torch.no_grad():
        expected = batched(x)
        for name, module in (("batched", batched), ("per_member", per_member)):
            function = torch.compile(module)
            start = time.perf_counter()
            got = function(x)
            result[f"{name}_compile_s"] = time.perf_counter() - start
            result[f"{name}_diff"] = max((g - e).abs().max().item() for g, e in zip(got, expected))
            calls[name] = (lambda f: lambda: f(x))(function)
        # under no_grad, as compiled: Dynamo guards on grad mode
        times = median_us_each(calls, rounds, sample_ms)
    torch._dynamo.reset()
    result.update({f"{name}_us": us for name, us in times.items()})
    return result


def warm_up() -> None:
    """One small compile first, so that the first measured compile time
    does not carry Inductor's one-time start (imports, the C++ toolchain)."""
    with _settings(False), torch.no_grad():
        torch.compile(lambda t: torch.relu(t) + 1)(torch.randn(8))
    torch._dynamo.reset()


def grouped_mm_note() -> str:
    """Whether `torch._grouped_mm` runs eagerly and under torch.compile on
    fp32 CPU tensors (the grouped GEMM a grouped form would need)."""
    grouped_mm = getattr(torch, "_grouped_mm", None)
    if grouped_mm is None:
        return "torch._grouped_mm: absent in this torch"
    import logging

    a, b = torch.randn(4, 8, 16), torch.randn(4, 16, 8)
    # the fake-tensor failure is the finding, not a traceback in the output
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    notes = []
    for label, function in (("eager", grouped_mm), ("torch.compile", torch.compile(grouped_mm))):
        try:
            with torch.no_grad():
                function(a, b)
            notes.append(f"{label}: runs")
        except Exception as error:  # noqa: BLE001 -- any failure is the finding
            # the last line is the cause (Dynamo wraps it in a line of its own)
            # the innermost cause says why (Dynamo wraps it in errors of its own)
            cause: BaseException = error
            while (inner := cause.__cause__ or cause.__context__) is not None:
                cause = inner
            text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
            notes.append(f"{label}: fails ({type(cause).__name__}: {text[:120]})")
    torch._dynamo.reset()
    return "torch._grouped_mm on fp32 CPU: " + "; ".join(notes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="member counts N")
    parser.add_argument("--dim", type=int, default=64, help="feature size of each member")
    parser.add_argument("--freeze", action="store_true", help="under Inductor's freezing (parameters are constants)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (the median is reported)")
    parser.add_argument("--sample-ms", type=float, default=20.0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round: checks the runner, not speed")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r} (choose from {', '.join(KINDS)})")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.smoke:
        sizes, args.dim, args.rounds, args.sample_ms = [2], 8, 1, 1.0
    # a fresh Inductor cache per run: compiled kernels of an earlier run
    # would make the compile times of this one look short
    cache = tempfile.TemporaryDirectory(prefix="inductor-forms-")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", cache.name)
    torch.set_num_threads(1)
    warm_up()
    mode = ", Inductor freezing" if args.freeze else ""
    print(f"Inductor (CPU), 1 thread, no_grad, fp32, {ROWS} rows x {args.dim} per member{mode}", flush=True)
    print()
    print("| kind | N | batched us | per-member us | per-member / batched | compile batched s | compile per-member s | max abs diff |")
    print("|---|---|---|---|---|---|---|---|")
    wrong = []
    for kind in kinds:
        for n in sizes:
            r = compare(kind, n, args.dim, args.freeze, args.rounds, args.sample_ms)
            diff = max(r["batched_diff"], r["per_member_diff"])
            if diff > TOLERANCE:
                wrong.append(f"{kind} N={n}")
            print(
                f"| {kind} | {n} | {r['batched_us']:.1f} | {r['per_member_us']:.1f} | "
                f"{r['per_member_us'] / r['batched_us']:.2f}x | {r['batched_compile_s']:.1f} | "
                f"{r['per_member_compile_s']:.1f} | {diff:.1e} |",
                flush=True,
            )
    print()
    print(grouped_mm_note())
    if wrong:
        print(f"\nWRONG RESULTS: {', '.join(wrong)} differ from eager by more than {TOLERANCE}")
    if args.smoke:
        print("\nsmoke run: tiny sizes, timings not meaningful")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
