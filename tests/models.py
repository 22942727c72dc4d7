"""A corpus of small models that exercise the FX import/export round trip.

Each `ModelCase` names a model factory and the way its graph is captured:

* ``"dynamo"``   -- ``torch._dynamo.export(model, assume_static_by_default=True)``
* ``"symbolic"`` -- ``torch.fx.symbolic_trace``
* ``"export"``   -- ``torch.export.export(...).module()``
* ``"aten"``     -- ``torch.export.export(...).run_decompositions({}).module()``

`capture(case)` returns ``(graph_module, example_inputs)``. Factories are
seeded: calling one twice gives identical parameters and inputs.

Import as a plain module from tests (``tests/conftest.py`` puts tests/ on
sys.path): ``from models import CASES, capture``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT / "examples") not in sys.path:
    sys.path.insert(0, str(_ROOT / "examples"))

from optimus_ir.examples.recsys import make_recsys_model  # noqa: E402

Capture = Literal["dynamo", "symbolic", "export", "aten"]


@dataclass(frozen=True)
class ModelCase:
    """One model of the corpus.

    `factory()` returns ``(module, example_inputs)``; `capture` says how the
    graph is obtained. `dynamic_shapes` is handed to torch.export for the
    "export"/"aten" captures. `other_inputs`, when given, makes extra inputs
    (e.g. another batch size for a dynamic graph) to run the round trip on.
    """

    name: str
    factory: Callable[[], tuple[nn.Module, tuple[Any, ...]]]
    capture: Capture
    dynamic_shapes: Any = None
    other_inputs: Callable[[], tuple[Any, ...]] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __str__(self) -> str:  # pytest ids
        return self.name


def _seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_seeded(seed)).to(dtype)


def _build(module_cls: Callable[[], nn.Module], *inputs: Any, seed: int = 0):
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        module = module_cls().eval()
    finally:
        torch.random.set_rng_state(state)
    return module, tuple(inputs)


# ---------------------------------------------------------------------------
# Helper functions the models call
# ---------------------------------------------------------------------------


def user_gate(x: torch.Tensor, scale: float) -> torch.Tensor:
    """A plain user function: Dynamo and symbolic_trace trace through it."""
    return torch.sigmoid(x * scale) * x


def wrapped_mix(x: torch.Tensor, y: torch.Tensor, alpha: float = 0.5) -> torch.Tensor:
    """Kept as one opaque call_function node by torch.fx.wrap."""
    if alpha > 0:  # Python control flow: symbolic_trace could not trace this
        return x * alpha + y * (1 - alpha)
    return x - y


torch.fx.wrap("wrapped_mix")


@torch._dynamo.allow_in_graph
def opaque_scale(x: torch.Tensor) -> torch.Tensor:
    """Kept as one call_function node by Dynamo (allow_in_graph)."""
    return x * 3.0 + 1.0


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


class NestedSplits(nn.Module):
    def forward(self, x):
        a, b, c = torch.split(x, [8, 16, 8], dim=1)
        b0, b1 = torch.split(b, 8, dim=1)
        c0, c1, c2, c3 = c.split(2, dim=1)
        d = torch.cat([a, b1], dim=1)
        e = torch.cat([c3, c2, c1, c0], dim=1)
        d0, d1 = torch.chunk(d, 2, dim=1)
        return torch.cat([d1, e, b0 * 2, d0], dim=1)


class CatStackUnbind(nn.Module):
    def forward(self, x, y):
        rows = torch.unbind(x, dim=0)
        stacked = torch.stack([r * 2 for r in rows], dim=1)
        cols = y.unbind(1)
        mixed = torch.cat([stacked, torch.stack(cols, 1)], dim=0)
        parts = torch.tensor_split(mixed, 3, dim=1)
        return torch.stack([p.sum(1) for p in parts], dim=-1), torch.hstack([x, x])


class UserFunctions(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = user_gate(self.proj(x), 0.5)
        return opaque_scale(y) - x


class WrappedFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        return wrapped_mix(y, x, alpha=0.25) + wrapped_mix(x, y)


class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.proj = nn.Linear(6, 6)

    def forward(self, x, y):
        h = self.proj(x)
        h.add_(1.0)
        h.mul_(y)
        h = self.act(h)
        out = torch.zeros_like(h)
        out[:, :3].copy_(h[:, 3:])
        self.assign(out, h)
        F.relu_(out)
        return out + h

    def assign(self, out, h):
        out.narrow(1, 3, 3).copy_(h[:, :3])


class InPlaceSetitem(InPlace):
    """Dynamo only: symbolic_trace cannot trace `tensor[...] = value`."""

    def assign(self, out, h):
        out[:, 3:] = h[:, :3]


class TupleOutputs(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return a + 1, (b * 2, a - b), [x.sum()]


class DictOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_a = nn.Linear(8, 2)
        self.head_b = nn.Linear(8, 3)

    def forward(self, x):
        return {"a": self.head_a(x), "b": torch.softmax(self.head_b(x), dim=-1), "x": x}


class MethodCalls(nn.Module):
    def forward(self, x):
        b = x.size(0)
        y = x.view(b, 4, 6)
        y = y.permute(0, 2, 1).contiguous()
        p, q = y.split(3, dim=1)
        s = p.sum(1) + q.sum(dim=1, keepdim=False)
        t = y.transpose(1, 2).reshape(b, -1)
        return s.mean(-1, keepdim=True) * t.max(dim=1).values.unsqueeze(1), t.flatten()


def _sequential() -> nn.Module:
    return nn.Sequential(
        nn.Linear(12, 16),
        nn.LayerNorm(16),
        nn.ReLU(),
        nn.Sequential(nn.Linear(16, 8), nn.Tanh()),
        nn.Dropout(0.5),
    )


class ModuleCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = _sequential()
        self.norm = nn.LayerNorm(8, elementwise_affine=False)
        self.emb = nn.Embedding(10, 8)

    def forward(self, x, idx):
        return self.norm(self.body(x)) + self.emb(idx)


class DynamicBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.ln = nn.LayerNorm(8)

    def forward(self, x):
        a, b = torch.split(self.proj(x), 8, dim=1)
        y = torch.cat([torch.tanh(self.ln(a)), torch.relu(self.ln(b))], dim=1)
        return y.reshape(x.shape[0], 2, 8).mean(1) + x.new_ones(x.shape[0], 1)


class Dtypes(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(20, 8))

    def forward(self, x16, xbf, idx, mask):
        gathered = torch.index_select(self.table, 0, idx)  # int64 indices
        emb = F.embedding(idx, self.table)
        masked = gathered.masked_fill(mask[:, None], 0.0)  # bool mask
        h = x16.float() + xbf.to(torch.float32)
        lowp = (x16 * 2).to(torch.bfloat16) + xbf
        ints = (idx * 3 + 1) // 2
        where = torch.where(mask[:, None], h, -h)
        return masked + emb, lowp, ints, where.to(torch.float16), mask.logical_not().sum()


class ShapeOps(nn.Module):
    def forward(self, x):
        a = x.unsqueeze(1).squeeze(1)
        b = torch.flatten(a, 1)
        c = b.unflatten(1, (3, 20))
        d = torch.movedim(c, 1, -1)
        e = torch.narrow(d, 1, 1, 2)
        f = e.select(2, 0)
        g = x[..., None, 1:3]
        h = x[:, None, ::2, ...]
        i = x[0, ..., -1]
        j = x[1:, 2]
        k = x[None]
        return f, g, h, i, j, k.squeeze(0), a.squeeze(), torch.unsqueeze(f, -1)


class ScalarArith(nn.Module):
    def forward(self, x, n):
        a = x * 2
        b = 1 - x
        c = x / 3
        d = torch.div(x, 3, rounding_mode="floor")
        e = torch.div(n, 2, rounding_mode="trunc")
        f = 2.5 ** x.abs() + x**2 - (-x)
        g = n // 3 + n % 4
        h = torch.remainder(x, 1.5) + torch.fmod(x, 0.7)
        return a + b + c + d, e + g, f + h, torch.rsub(x, 1.0)


class ClampEtc(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        y = torch.clamp(x, min=-0.5, max=0.5) + x.clamp_min(0.1) + x.clamp(max=1)
        z = torch.nan_to_num(torch.log(x), nan=0.0, posinf=1.0, neginf=-1.0)
        w = F.dropout(x, p=0.2, training=False) + self.drop(x)
        return y + z + w, torch.clip(x, -1, 1)


class Reductions(nn.Module):
    def forward(self, x):
        return (
            x.sum(),
            x.sum(dim=1),
            torch.sum(x, dim=(0, 2), keepdim=True),
            x.mean(-1),
            torch.mean(x, [1, 2]),
            x.amax(1),
            torch.var(x, dim=2, unbiased=False),
            x.std(1, keepdim=True),
            x.prod(dim=0),
            torch.logsumexp(x, dim=-1),
        )


class Matmuls(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 5))
        self.b = nn.Parameter(torch.randn(5))

    def forward(self, x, bx, by, bias):
        a = torch.matmul(x, self.w)
        b = torch.bmm(bx, by)
        c = torch.baddbmm(bias, bx, by, beta=0.5, alpha=2.0)
        d = torch.addmm(self.b, x, self.w)
        e = x @ self.w
        f = torch.mm(x, self.w)
        g = torch.einsum("bij,bjk->bik", bx, by)
        return a + d + e + f, b + c + g


class BuffersConstants(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8))
        self.register_buffer("index", torch.tensor([3, 1, 2, 0]))
        self.offset = torch.arange(8, dtype=torch.float32)  # a plain tensor constant
        self.sub = nn.Module()
        self.sub.register_buffer("shift", torch.full((8,), 0.25))

    def forward(self, x):
        y = x * self.scale + self.offset - self.sub.shift
        return y[:, self.index]


class DefaultArgs(nn.Module):
    def forward(self, x, scale: float = 2.0, offset: float = 0.5):
        return x * scale + offset


class MultiTaskDict(nn.Module):
    """A dict-in, dict-out multi-task model as a new user writes one (issue
    34): a linear per dense feature (each on its own input tensor), shared
    experts on the concatenated features (linears on one shared input) and
    a head per task returning a dict of predictions."""

    def __init__(self, features: int = 6, dim: int = 4, hidden: int = 16, experts: int = 6,
                 tasks: tuple[str, ...] = ("click", "like", "share")) -> None:
        super().__init__()
        self.features = [f"f{i}" for i in range(features)]
        self.embed = nn.ModuleDict({f: nn.Linear(dim, hidden) for f in self.features})
        self.experts = nn.ModuleList(nn.Linear(hidden * features, hidden) for _ in range(experts))
        self.heads = nn.ModuleDict({
            t: nn.Sequential(nn.Linear(hidden * experts, hidden), nn.ReLU(), nn.Linear(hidden, 1)) for t in tasks
        })

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        x = torch.cat([torch.relu(self.embed[f](batch[f])) for f in self.features], dim=1)
        mixed = torch.cat([torch.relu(expert(x)) for expert in self.experts], dim=1)
        return {t: torch.sigmoid(head(mixed)).squeeze(-1) for t, head in self.heads.items()}


def multi_task_dict(batch: int = 64, steps: int = 3) -> tuple[MultiTaskDict, dict[str, torch.Tensor]]:
    """`MultiTaskDict` trained `steps` Adam steps (so its parameters are
    not the initial ones), in eval mode, and a batch of its features."""
    torch.manual_seed(0)
    model = MultiTaskDict()
    features = {f: _randn(batch, 4, seed=i) for i, f in enumerate(model.features)}
    labels = {t: torch.rand(batch, generator=_seeded(7)) for t in model.heads}
    optimizer = torch.optim.Adam(model.parameters())
    for _ in range(steps):
        out = model(features)
        loss = sum(F.binary_cross_entropy(out[t], labels[t]) for t in out)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval(), features


# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------


def _recsys():
    return make_recsys_model(num_towers=8, tower_width=16, hidden=64, batch=32, seed=0)


def _recsys_small():
    return make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=6, seed=1)


def _dtypes_inputs():
    g = _seeded(3)
    return (
        torch.randn(5, 8, generator=g).to(torch.float16),
        torch.randn(5, 8, generator=g).to(torch.bfloat16),
        torch.randint(0, 20, (5,), generator=g),
        torch.rand(5, generator=g) > 0.5,
    )


def _clamp_input():
    x = _randn(4, 6, seed=4)
    x[0, 0] = -1.0  # log -> nan
    x[1, 1] = 0.0  # log -> -inf
    return (x,)


CASES: list[ModelCase] = [
    ModelCase("recsys", _recsys, "dynamo", tags=("recsys",)),
    ModelCase("recsys_export", _recsys_small, "export", tags=("recsys",)),
    ModelCase("recsys_aten", _recsys_small, "aten", tags=("recsys", "aten")),
    ModelCase("nested_splits", lambda: _build(NestedSplits, _randn(4, 32)), "dynamo"),
    ModelCase(
        "nested_splits_symbolic", lambda: _build(NestedSplits, _randn(4, 32)), "symbolic"
    ),
    ModelCase(
        "cat_stack_unbind",
        lambda: _build(CatStackUnbind, _randn(3, 6, seed=1), _randn(6, 3, seed=2)),
        "dynamo",
    ),
    ModelCase("user_functions", lambda: _build(UserFunctions, _randn(4, 8)), "dynamo"),
    ModelCase(
        "user_functions_symbolic", lambda: _build(UserFunctions, _randn(4, 8)), "symbolic"
    ),
    ModelCase("wrapped_function", lambda: _build(WrappedFunction, _randn(4, 8)), "symbolic"),
    ModelCase(
        "in_place", lambda: _build(InPlace, _randn(4, 6), _randn(4, 6, seed=1)), "symbolic"
    ),
    ModelCase(
        "in_place_dynamo", lambda: _build(InPlaceSetitem, _randn(4, 6), _randn(4, 6, seed=1)), "dynamo"
    ),
    ModelCase("tuple_outputs", lambda: _build(TupleOutputs, _randn(3, 8)), "symbolic"),
    ModelCase("tuple_outputs_dynamo", lambda: _build(TupleOutputs, _randn(3, 8)), "dynamo"),
    ModelCase("dict_output", lambda: _build(DictOutput, _randn(5, 8)), "dynamo"),
    ModelCase("method_calls", lambda: _build(MethodCalls, _randn(2, 24)), "symbolic"),
    ModelCase("method_calls_dynamo", lambda: _build(MethodCalls, _randn(2, 24)), "dynamo"),
    ModelCase(
        "module_calls",
        lambda: _build(ModuleCalls, _randn(3, 12), torch.tensor([1, 5, 9])),
        "symbolic",
    ),
    ModelCase("sequential", lambda: _build(_sequential, _randn(3, 12)), "symbolic"),
    ModelCase(
        "dynamic_batch",
        lambda: _build(DynamicBatch, _randn(6, 16)),
        "export",
        dynamic_shapes=({0: torch.export.Dim("batch", min=2, max=1024)},),
        other_inputs=lambda: (_randn(11, 16, seed=5),),
    ),
    ModelCase(
        "dynamic_batch_aten",
        lambda: _build(DynamicBatch, _randn(6, 16)),
        "aten",
        dynamic_shapes=({0: torch.export.Dim("batch", min=2, max=1024)},),
        other_inputs=lambda: (_randn(3, 16, seed=6),),
        tags=("aten",),
    ),
    ModelCase("dtypes", lambda: _build(Dtypes, *_dtypes_inputs()), "dynamo"),
    ModelCase("dtypes_aten", lambda: _build(Dtypes, *_dtypes_inputs()), "aten", tags=("aten",)),
    ModelCase("shape_ops", lambda: _build(ShapeOps, _randn(4, 5, 12)), "symbolic"),
    ModelCase("shape_ops_dynamo", lambda: _build(ShapeOps, _randn(4, 5, 12)), "dynamo"),
    ModelCase(
        "scalar_arith",
        lambda: _build(ScalarArith, _randn(4, 5), torch.arange(-6, 14).reshape(4, 5)),
        "dynamo",
    ),
    ModelCase(
        "scalar_arith_symbolic",
        lambda: _build(ScalarArith, _randn(4, 5), torch.arange(-6, 14).reshape(4, 5)),
        "symbolic",
    ),
    ModelCase("clamp_etc", lambda: _build(ClampEtc, *_clamp_input()), "symbolic"),
    ModelCase("clamp_etc_dynamo", lambda: _build(ClampEtc, *_clamp_input()), "dynamo"),
    ModelCase("reductions", lambda: _build(Reductions, _randn(3, 4, 5)), "dynamo"),
    ModelCase(
        "reductions_aten", lambda: _build(Reductions, _randn(3, 4, 5)), "aten", tags=("aten",)
    ),
    ModelCase(
        "matmuls",
        lambda: _build(
            Matmuls,
            _randn(4, 6),
            _randn(2, 3, 4, seed=1),
            _randn(2, 4, 5, seed=2),
            _randn(2, 3, 5, seed=3),
        ),
        "symbolic",
    ),
    ModelCase(
        "matmuls_aten",
        lambda: _build(
            Matmuls,
            _randn(4, 6),
            _randn(2, 3, 4, seed=1),
            _randn(2, 4, 5, seed=2),
            _randn(2, 3, 5, seed=3),
        ),
        "aten",
        tags=("aten",),
    ),
    ModelCase("buffers_constants", lambda: _build(BuffersConstants, _randn(3, 8)), "symbolic"),
    ModelCase(
        "buffers_constants_export", lambda: _build(BuffersConstants, _randn(3, 8)), "export"
    ),
    ModelCase("default_args", lambda: _build(DefaultArgs, _randn(3, 4)), "symbolic"),
]

CASES_BY_NAME: dict[str, ModelCase] = {case.name: case for case in CASES}


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, tuple | list):
        return type(value)(_clone(v) for v in value)
    return value


def clone_inputs(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies, so that in-place models cannot leak state between runs."""
    return tuple(_clone(x) for x in inputs)


def capture(case: ModelCase) -> tuple[torch.fx.GraphModule, tuple[Any, ...]]:
    """Capture `case`'s model as a GraphModule; returns it with its inputs."""
    model, inputs = case.factory()
    if case.capture == "dynamo":
        torch._dynamo.reset()
        gm, _guards = torch._dynamo.export(model, assume_static_by_default=True)(
            *clone_inputs(inputs)
        )
    elif case.capture == "symbolic":
        gm = torch.fx.symbolic_trace(model)
    elif case.capture in ("export", "aten"):
        program = torch.export.export(
            model, clone_inputs(inputs), dynamic_shapes=case.dynamic_shapes
        )
        if case.capture == "aten":
            program = program.run_decompositions({})
        gm = program.module()
    else:
        raise ValueError(f"unknown capture kind {case.capture!r}")
    return gm, inputs


__all__ = ["CASES", "CASES_BY_NAME", "ModelCase", "capture", "clone_inputs"]
