"""The differential check every generated FX program must pass
(`fx_graph_strategies`): `FxProgram` (a drawn program, whose `repr` is the
source that rebuilds it), `assert_optimized_matches` (optimize and compare
outputs, strides, aliasing and in-place writes against the original) and
`pipeline_changed`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from torch import nn
from torch.utils import _pytree as pytree

import optimus_ir
from optimus_ir.pipeline.validation import tolerance_for

# ---------------------------------------------------------------------------
# The differential check
# ---------------------------------------------------------------------------


class FxProgram:
    """A generated program: the GraphModule, its example inputs, whether it
    only moves data, and the Python source that rebuilds it (its `repr`; a
    plain class, not a dataclass, so that hypothesis prints that source)."""

    def __init__(self, gm: torch.fx.GraphModule, inputs: list[torch.Tensor],
                 data_movement_only: bool, source: str, ops: list[str],
                 exact: bool | None = None, features: frozenset[str] = frozenset()) -> None:
        self.gm = gm
        self.inputs = inputs
        self.data_movement_only = data_movement_only
        self.source = source
        self.ops = ops
        # bit-identical results expected: no arithmetic that a fused or
        # reordered evaluation may round differently (matmul, normalization,
        # transcendental functions, division)
        self.exact = data_movement_only if exact is None else exact
        self.features = features

    def __repr__(self) -> str:
        return (
            f"FxProgram(data_movement_only={self.data_movement_only}, exact={self.exact}, "
            f"features={sorted(self.features)})\n"
            f"# --- builder ---\n{self.source}\n# --- gm.code ---{self.gm.code}"
        )


def _clone(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer (by name), cloned."""
    return {k: v.detach().clone() for k, v in module.state_dict(keep_vars=True).items()}


def _restore(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    live = module.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, value in state.items():
            live[name].copy_(value)


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _assert_equal(got: Any, want: Any, exact: bool, what: str, code: str,
                  tolerance: tuple[float, float] | None = None) -> None:
    """Equal dtype, shape and values: bit-identical when `exact` (NaN at the
    same positions, and the sign of every zero: `1/x` observes it), else
    within `tolerance` (default: the dtype's, `tolerance_for`)."""
    if not isinstance(want, torch.Tensor):
        assert got == want, f"{what}: {got!r} != {want!r}\n{code}"
        return
    assert isinstance(got, torch.Tensor), f"{what}: not a tensor: {type(got)}\n{code}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}\n{code}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}\n{code}"
    rtol, atol = (0.0, 0.0) if exact else (tolerance or tolerance_for(want))
    torch.testing.assert_close(
        got.detach(), want.detach(), rtol=rtol, atol=atol, equal_nan=True,
        msg=lambda m: f"{what}: {m}\n{code}",
    )
    if exact and want.dtype.is_floating_point:
        zeros = want == 0
        signs_differ = zeros & (torch.signbit(got.detach()) != torch.signbit(want.detach()))
        assert not bool(signs_differ.any()), (
            f"{what}: the sign of {int(signs_differ.sum())} zero(s) differs "
            f"(first at {tuple(signs_differ.nonzero()[0].tolist())})\n{code}"
        )


def _layout(tensor: torch.Tensor) -> tuple[int | None, ...]:
    """The strides that address memory: a dim of size 1 is never stepped
    over, so its stride is arbitrary (torch's own contiguity checks ignore
    it, and views give it different values: `x.permute(...).unsqueeze(0)`
    and its folded form differ only there)."""
    return tuple(s if n > 1 else None for n, s in zip(tensor.shape, tensor.stride()))


def run_reference(gm: torch.nn.Module, inputs: Sequence[Any]):
    """Run `gm` on clones of `inputs`: (outputs, inputs after the call)."""
    args = [_clone(v) for v in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = gm(*args)
    return out, args


def assert_optimized_matches(
    gm: torch.fx.GraphModule,
    inputs: Sequence[Any],
    exact: bool,
    *,
    validate: bool = True,
    pipeline: str | None = None,
    tolerance: tuple[float, float] | None = None,
) -> torch.fx.GraphModule:
    """Optimize `gm` and check the result against it on clones of `inputs`:
    equal outputs (bit-identical when `exact`, dtype tolerance otherwise) of
    the same structure, dtype, shape and strides; the same aliasing between
    outputs and between outputs and inputs; the same in-place writes to the
    inputs and to the parameters and buffers; and `gm` itself unchanged.
    `tolerance` (rtol, atol) replaces the dtype's where not `exact` (the
    Triton kernels round their own way). Returns the optimized module."""
    code = gm.code
    state = _state(gm)
    attributes = {k: id(v) for k, v in gm.state_dict(keep_vars=True).items()}
    want, want_inputs = run_reference(gm, inputs)
    want_state = _state(gm)
    _restore(gm, state)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = optimus_ir.optimize(gm, [_clone(v) for v in inputs], pipeline, validate=validate)

    assert gm.code == code, "optimize() changed the original GraphModule's code"
    for name, value in _state(gm).items():
        _assert_equal(value, state[name], True, f"optimize() changed {name} of the original", code)
    assert {k: id(v) for k, v in gm.state_dict(keep_vars=True).items()} == attributes, (
        "optimize() rebound a parameter or buffer of the original"
    )

    got, got_inputs = run_reference(result, inputs)
    got_state = _state(gm)
    _restore(gm, state)

    want_leaves, want_spec = pytree.tree_flatten(want)
    got_leaves, got_spec = pytree.tree_flatten(got)
    assert got_spec == want_spec, f"output structure {got_spec} != {want_spec}\n{code}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        _assert_equal(g, w, exact, f"output {i}", code, tolerance)
        if isinstance(w, torch.Tensor) and w.numel() > 1:
            assert _layout(g) == _layout(w), f"output {i}: strides {g.stride()} != {w.stride()}\n{code}"
    for i, (g, w) in enumerate(zip(got_inputs, want_inputs)):
        _assert_equal(g, w, exact, f"input {i} after the call", code, tolerance)
    for name, w in want_state.items():
        _assert_equal(got_state[name], w, exact, f"{name} after the call", code, tolerance)

    # What aliases what: output/output and output/input storage sharing.
    def aliasing(leaves: list[Any], args: list[Any]) -> set[tuple[str, int, int]]:
        found = set()
        tensors = [(i, t) for i, t in enumerate(leaves) if isinstance(t, torch.Tensor)]
        for a, (i, x) in enumerate(tensors):
            for j, y in tensors[a + 1:]:
                if _same_storage(x, y):
                    found.add(("output", i, j))
            for k, arg in enumerate(args):
                if isinstance(arg, torch.Tensor) and _same_storage(x, arg):
                    found.add(("input", i, k))
        return found

    want_alias = aliasing(want_leaves, want_inputs)
    got_alias = aliasing(got_leaves, got_inputs)
    assert got_alias == want_alias, (
        f"aliasing changed: optimized {sorted(got_alias)} vs original {sorted(want_alias)}\n{code}"
    )
    return result


def pipeline_changed(result: torch.fx.GraphModule) -> bool:
    """Did any rewrite pattern of the pipeline fire (beyond raising/lowering)?"""
    report = result.optimus_report  # type: ignore[attr-defined]
    return report.statistics is not None and report.statistics.budget.used > 0
