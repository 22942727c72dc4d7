"""Issue 9: mutation and aliasing safety.

No rewrite may change what aliases what. Every model here runs eagerly, as
the graph Dynamo captured (the baseline), through `optimize()` (the default
pipeline, with and without differential validation) and through
`torch.compile(backend="optimus", options={"inner": "eager"})`; each run is
compared with the captured graph and with eager on

* the values of the outputs, bit for bit;
* the alias structure (`optimus_ir.pipeline.validation.alias_structure`): what each
  output is or shares memory with (an input, a parameter or buffer, an
  earlier output) and which inputs, parameters and buffers were written;
* the values the writes left in the inputs, parameters and buffers.

The cases: in-place ops on intermediates, on graph inputs, on buffers and on
parameters under no_grad; in-place ops inside the split/cat chains and
sibling groups that split-cat-simplify and batch fusion rewrite; views of
inputs returned as outputs (and the same value returned twice, a view of
another output); buffers read after they are written in the same forward;
writes through an alias inside regions CSE, split-cat-simplify and batch
fusion touch. Hand-built FX graphs cover what Dynamo does not emit, and a
deliberately broken pass (`test-alias-miscompile`) shows that validation
catches a change of aliasing that leaves every value intact.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.fx
import torch.utils._pytree as pytree
from torch import nn

import optimus_ir
from plugins import miscompile_passes  # noqa: F401 - registers the test-only passes (test-miscompile, test-fail, ...)
from optimus_ir.pipeline.validation import (
    IS,
    SHARES,
    TOLERANCES,
    AliasStructure,
    ValidationError,
    alias_structure,
    shares_memory,
    tensor_versions,
)

# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------


def _state(module: Any) -> dict[str, torch.Tensor]:
    if not isinstance(module, nn.Module):
        return {}
    return dict([*module.named_parameters(), *module.named_buffers()])


@dataclass
class Run:
    """One call: its outputs, its alias structure, and what the inputs and
    the module's state hold afterwards."""

    outputs: list[Any]
    structure: AliasStructure
    inputs: list[Any]
    state: dict[str, torch.Tensor]


def _run(fn: Callable[..., Any], module: Any, inputs: Sequence[Any]) -> Run:
    inputs = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
    state = _state(module)
    versions = tensor_versions(inputs, state)
    values = {f"input #{i}": v.clone() for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)}
    values.update({f"'{k}'": v.detach().clone() for k, v in state.items()})
    outputs = pytree.tree_leaves(fn(*inputs))
    structure = alias_structure(inputs, state, outputs, versions, values)
    return Run(outputs, structure, inputs, {k: v.detach().clone() for k, v in state.items()})


def _assert_close(got: torch.Tensor, want: torch.Tensor, exact: bool, what: str) -> None:
    rtol, atol = (0.0, 0.0) if exact else TOLERANCES.get(want.dtype, (0.0, 0.0))
    assert got.shape == want.shape and got.dtype == want.dtype, what
    close = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    assert bool(close.all()), f"{what}: max abs difference {(got - want).abs().max()}"


def _assert_same_run(got: Run, want: Run, what: str, exact: bool = True) -> None:
    """Same alias structure and writes; same values, bit for bit unless
    `exact` is off (batch fusion fused something: its kernels round
    differently), then within the dtype's validation tolerance."""
    assert got.structure == want.structure, (
        f"{what}: alias structure {got.structure} instead of {want.structure}"
    )
    assert len(got.outputs) == len(want.outputs), what
    for i, (g, w) in enumerate(zip(got.outputs, want.outputs)):
        if isinstance(w, torch.Tensor):
            _assert_close(g, w, exact, f"{what}: output #{i}")
        else:
            assert g == w, f"{what}: output #{i}"
    for i, (g, w) in enumerate(zip(got.inputs, want.inputs)):
        if isinstance(w, torch.Tensor):
            _assert_close(g, w, exact, f"{what}: input #{i} after the call")
    assert got.state.keys() == want.state.keys(), what
    for name, w in want.state.items():
        _assert_close(got.state[name], w, exact, f"{what}: '{name}' after the call")


def _fused_groups(optimized: torch.fx.GraphModule) -> int:
    # no statistics when optimize returned the captured graph (a fall back)
    return optimized.optimus_report.groups_fused  # type: ignore[attr-defined]


def check(
    make: Callable[[], nn.Module],
    inputs: Sequence[Any],
    *,
    calls: int = 2,
    compile_too: bool = True,
    expect: AliasStructure | None = None,
) -> Run:
    """Run `make()`'s model eagerly, as captured, optimized (validate off and
    on) and compiled with the optimus backend, `calls` times each from the
    same initial state, and assert that every run matches the captured
    graph's (values, alias structure, writes) and the captured graph matches
    eager. Returns the eager run of the first call."""
    torch.manual_seed(0)
    prototype = make()
    eager_model = copy.deepcopy(prototype)
    eager = [_run(eager_model, eager_model, inputs) for _ in range(calls)]
    if expect is not None:
        assert eager[0].structure == expect, eager[0].structure

    captured_model = copy.deepcopy(prototype)
    torch._dynamo.reset()
    gm = optimus_ir.capture(captured_model, [v.clone() for v in inputs])
    captured = [_run(gm, captured_model, inputs) for _ in range(calls)]
    for call, (c, e) in enumerate(zip(captured, eager)):
        _assert_same_run(c, e, f"captured graph vs eager, call {call}")

    exact = True
    for validate in (False, True):
        model = copy.deepcopy(prototype)
        torch._dynamo.reset()
        optimized = optimus_ir.optimize(model, [v.clone() for v in inputs], validate=validate)
        exact = _fused_groups(optimized) == 0
        for call, c in enumerate(captured):
            got = _run(optimized, model, inputs)
            _assert_same_run(got, c, f"optimize(validate={validate}), call {call}", exact)

    if compile_too:
        model = copy.deepcopy(prototype)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="optimus", options={"inner": "eager"}, fullgraph=True)
        for call, c in enumerate(captured):
            got = _run(compiled, model, inputs)
            _assert_same_run(got, c, f"torch.compile(backend='optimus'), call {call}", exact)
        torch._dynamo.reset()
    return eager[0]


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class Fn(nn.Module):
    """A module around a function of the inputs (no state)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def _structure(*outputs: Sequence[tuple[str, str]], written: Sequence[str] = ()) -> AliasStructure:
    return AliasStructure(tuple(tuple(sorted(o)) for o in outputs), tuple(written))


# ---------------------------------------------------------------------------
# 1. In-place ops on intermediates
# ---------------------------------------------------------------------------


def _add_(x):
    y = x * 2
    y.add_(1)
    return y * 3, y


def _relu_(x):
    y = x - 0.5
    z = y.relu_()
    return y, z  # relu_ returns y itself


def _mul_self(x):
    y = x + 1
    y.mul_(y)
    return y.sum(0), y


def _copy_(x, w):
    y = x * 1
    y.copy_(w)
    return y + x


def _index_put_(x, idx, v):
    y = x * 1
    y.index_put_((idx,), v)
    return y, y + 1


def _setitem(x):
    y = x * 1
    y[0] = 5.0
    y[:, 1] = x[:, 0]
    return y


def _chain_of_writes(x):
    y = torch.tanh(x)
    y.mul_(2).add_(1).clamp_(min=0.5)
    return torch.cat([y, x], 1), y


def _functional_inplace(x):
    h = x - 0.25
    torch.nn.functional.relu(h, inplace=True)
    return h * 2


def _unbind_piece_setitem_then_stack(x):
    h = x * 1
    rows = h.unbind(0)
    rows[0][1] = 3.0
    return torch.stack(rows), torch.stack(rows[1:])


INTERMEDIATE_CASES = {
    "functional_inplace": (_functional_inplace, lambda: [_x(4, 6)]),
    "unbind_piece_setitem_then_stack": (_unbind_piece_setitem_then_stack, lambda: [_x(4, 6)]),
    "add_": (_add_, lambda: [_x(4, 6)]),
    "relu_": (_relu_, lambda: [_x(4, 6)]),
    "mul_self": (_mul_self, lambda: [_x(4, 6)]),
    "copy_": (_copy_, lambda: [_x(4, 6), _x(4, 6, seed=1)]),
    "index_put_": (_index_put_, lambda: [_x(5, 3), torch.tensor([0, 3]), _x(2, 3, seed=1)]),
    "setitem": (_setitem, lambda: [_x(4, 6)]),
    "chain_of_writes": (_chain_of_writes, lambda: [_x(4, 6)]),
}


@pytest.mark.parametrize("name", sorted(INTERMEDIATE_CASES))
def test_in_place_on_intermediates(name: str) -> None:
    fn, inputs = INTERMEDIATE_CASES[name]
    run = check(lambda: Fn(fn), inputs())
    assert run.structure.written == ()  # only intermediates are written


def test_relu_returns_the_tensor_it_wrote() -> None:
    run = check(lambda: Fn(_relu_), [_x(4, 6)])
    assert run.structure == _structure((), [(IS, "output #0")])


# ---------------------------------------------------------------------------
# 2. In-place ops on graph inputs
# ---------------------------------------------------------------------------


def _input_add_(x):
    x.add_(1)
    return x * 2


def _input_mul_returned(x):
    x.mul_(2)
    return x


def _input_setitem(x):
    x[0] = 0.0
    return x.sum(0)


def _input_view_written_view_returned(x, y):
    x[1:].add_(y)
    return x[0]


def _input_written_between_reads(x):
    a = x * 2
    x.sub_(1)
    b = x * 2
    return a, b


def _input_iadd_returned(x):
    x += 1
    return x, x * 2


def _input_view_written_returned(x):
    v = x[0]
    v.mul_(2)
    return v


def _input_index_put(x, idx, v):
    x[idx] = v
    return x.sum(0)


INPUT_CASES = {
    "iadd_returned": (
        _input_iadd_returned, lambda: [_x(4, 6)], _structure([(IS, "input #0")], (), written=["input #0"])
    ),
    "view_written_returned": (
        _input_view_written_returned, lambda: [_x(4, 6)], _structure([(SHARES, "input #0")], written=["input #0"])
    ),
    "index_put": (
        _input_index_put,
        lambda: [_x(5, 3), torch.tensor([1, 4]), _x(2, 3, seed=1)],
        _structure((), written=["input #0"]),
    ),
    "add_": (_input_add_, lambda: [_x(4, 6)], _structure((), written=["input #0"])),
    "mul_returned": (
        _input_mul_returned, lambda: [_x(4, 6)], _structure([(IS, "input #0")], written=["input #0"])
    ),
    "setitem": (_input_setitem, lambda: [_x(4, 6)], _structure((), written=["input #0"])),
    "view_written_view_returned": (
        _input_view_written_view_returned,
        lambda: [_x(4, 6), _x(3, 6, seed=1)],
        _structure([(SHARES, "input #0")], written=["input #0"]),
    ),
    "written_between_reads": (
        _input_written_between_reads, lambda: [_x(4, 6)], _structure((), (), written=["input #0"])
    ),
}


@pytest.mark.parametrize("name", sorted(INPUT_CASES))
def test_in_place_on_inputs(name: str) -> None:
    fn, inputs, expect = INPUT_CASES[name]
    check(lambda: Fn(fn), inputs(), expect=expect)


# ---------------------------------------------------------------------------
# 3. Buffers and parameters
# ---------------------------------------------------------------------------


class Count(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count.add_(1)
        return x * self.count


class CountAugmented(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count += 1
        return x + self.count


class RunningStats(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running", torch.zeros(6))

    def forward(self, x):
        self.running.mul_(0.9).add_(x.mean(0), alpha=0.1)
        return x - self.running


class BatchNormTraining(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(x) * 2


class BatchNormTwice(nn.Module):
    """Two identical training-mode batch norms: equal results, but each
    updates the running statistics (CSE must not merge them)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(x) + self.bn(x)


class BatchNormUnused(nn.Module):
    """A batch norm whose result is unused still updates the running
    statistics (DCE must not remove it)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        self.bn(x)
        return x * 2


class ParameterUpdate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(6, 6)

    def forward(self, x):
        with torch.no_grad():
            self.linear.weight.mul_(0.5)
        return self.linear(x)


class ParameterReturned(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(6, 6))

    def forward(self, x):
        return x @ self.weight, self.weight.t(), self.weight, self.weight.view(6, 6)


BUFFER_CASES: dict[str, tuple[Callable[[], nn.Module], AliasStructure | None]] = {
    "counter": (Count, _structure((), written=["'count'"])),
    "counter_augmented": (CountAugmented, _structure((), written=["'count'"])),
    "running_stats": (RunningStats, _structure((), written=["'running'"])),
    "batch_norm_training": (BatchNormTraining, None),
    "batch_norm_twice": (BatchNormTwice, None),
    "batch_norm_unused": (BatchNormUnused, None),
    "parameter_under_no_grad": (ParameterUpdate, _structure((), written=["'linear.weight'"])),
    "parameter_returned": (
        ParameterReturned,
        _structure(
            (),
            [(SHARES, "'weight'")],
            [(IS, "'weight'"), (SHARES, "output #1")],
            [(SHARES, "'weight'"), (SHARES, "output #1"), (SHARES, "output #2")],
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(BUFFER_CASES))
def test_buffers_and_parameters(name: str) -> None:
    make, expect = BUFFER_CASES[name]
    run = check(make, [_x(4, 6)], calls=3, expect=expect)
    if name.startswith("batch_norm"):
        assert "'bn.running_mean'" in run.structure.written
        assert "'bn.num_batches_tracked'" in run.structure.written


class ParameterExpressionReturned(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(6, 6))

    def forward(self, x):
        return self.weight * 2, torch.stack([self.weight, self.weight]), x + 1


def test_a_returned_parameter_expression_is_a_fresh_tensor_each_call() -> None:
    """Values computed from parameters alone are cached by the exported
    module (param_cache), but never one that is returned: the caller may
    write into it."""
    model = ParameterExpressionReturned()
    check(ParameterExpressionReturned, [_x(4, 6)], calls=2, expect=_structure((), (), ()))
    with torch.no_grad():
        optimized = optimus_ir.optimize(model, [_x(4, 6)])
        first = optimized(_x(4, 6))
        for out in first:
            out.fill_(0.0)
        second = optimized(_x(4, 6))
    torch.testing.assert_close(second[0], model.weight.detach() * 2, rtol=0, atol=0)
    torch.testing.assert_close(second[1][0], model.weight.detach(), rtol=0, atol=0)
    assert first[0].untyped_storage().data_ptr() != second[0].untyped_storage().data_ptr()


def test_buffer_writes_land_on_the_models_own_buffer() -> None:
    model = Count()
    optimized = optimus_ir.optimize(model, [_x(2, 3)])
    buffer = model.count
    for expected in (1.0, 2.0, 3.0):
        out = optimized(torch.ones(2, 3))
        assert model.count is buffer
        assert float(buffer) == expected
        torch.testing.assert_close(out, torch.full((2, 3), expected), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# 4. In-place ops inside split/cat chains and sibling groups
# ---------------------------------------------------------------------------


class SiblingLinears(nn.Module):
    """8 sibling linears on the pieces of a split; `write` says which piece
    is written in place (after the first `after` linears ran), and whether
    the split input is the graph input or an intermediate."""

    def __init__(self, write: int | None, after: int, intermediate: bool) -> None:
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(4, 5) for _ in range(8))
        self.write, self.after, self.intermediate = write, after, intermediate

    def forward(self, x):
        h = x * 1 if self.intermediate else x
        pieces = h.split(4, dim=1)
        outs = []
        for i, (linear, piece) in enumerate(zip(self.linears, pieces)):
            if i == self.after and self.write is not None:
                pieces[self.write].mul_(2)
            outs.append(linear(piece))
        return torch.cat(outs, dim=1), h.sum(1)


class SiblingPointwise(nn.Module):
    """8 sibling pointwise ops on the pieces of a fresh tensor, one piece
    written between them; the cat of the results and the written tensor
    returned."""

    def forward(self, x):
        h = x + 1
        pieces = h.split(2, dim=1)
        outs = []
        for i, piece in enumerate(pieces):
            if i == 4:
                pieces[6].add_(10)
            outs.append(torch.relu(piece) * 3)
        return torch.cat(outs, dim=1), h


class SiblingLinearsSeparateInputs(nn.Module):
    """8 sibling linears on 8 separate inputs, one input written between
    the linears (batch fusion must not move the reader across the write)."""

    def __init__(self) -> None:
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(4, 4) for _ in range(8))

    def forward(self, *xs):
        outs = []
        for i, (linear, x) in enumerate(zip(self.linears, xs)):
            if i == 3:
                xs[5].add_(1)
                xs[1].add_(1)
            outs.append(linear(x))
        return torch.stack(outs)


class SiblingLayerNormsBufferBetween(nn.Module):
    """Sibling layer norms with a counter buffer written between them."""

    def __init__(self) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(4) for _ in range(8))
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        pieces = x.unbind(0)
        outs = []
        for i, (norm, piece) in enumerate(zip(self.norms, pieces)):
            if i == 4:
                self.count.add_(1)
            outs.append(norm(piece) * self.count)
        return torch.stack(outs)


def _split_piece_mutated_then_cat(x):
    h = x * 1
    a, b = h.split(3, dim=1)
    a.add_(1)
    return torch.cat([a, b], dim=1), torch.cat([b, a], dim=1)


def _split_then_cat_then_piece_mutated(x):
    h = x * 1
    pieces = h.split(2, dim=1)
    c = torch.cat(pieces, dim=1)
    pieces[0].add_(1)
    return c, h


def _input_split_cat_then_input_mutated(x):
    pieces = x.split(2, dim=1)
    c = torch.cat(pieces, dim=1)
    x.mul_(2)
    return c * 1


def _cat_input_mutated_after_cat(x):
    h = x * 1
    c = torch.cat([h, h * 2], dim=1)
    h.mul_(3)
    return c, h


def _stack_unbind_member_zeroed(x):
    h = x * 1
    rows = h.unbind(0)
    s = torch.stack(rows)
    rows[1].zero_()
    return s, h


def _cat_split_forwarded_then_written(x, y):
    a, b = x * 1, y * 1
    c = torch.cat([a, b], dim=1)
    p, q = c.split([6, 6], dim=1)
    a.add_(1)
    return p + 0, q, a


def _nested_split_mutated(x):
    h = x * 1
    a, b = h.split(4, dim=1)
    a1, a2 = a.split(2, dim=1)
    a2.mul_(-1)
    return torch.cat([a1, a2, b], dim=1), torch.cat([b, a1], dim=1)


SPLIT_CAT_CASES: dict[str, tuple[Callable[[], nn.Module], Callable[[], list[torch.Tensor]]]] = {
    "siblings_piece_written_input": (lambda: SiblingLinears(5, 3, False), lambda: [_x(3, 32)]),
    "siblings_piece_written_intermediate": (lambda: SiblingLinears(5, 3, True), lambda: [_x(3, 32)]),
    "siblings_earlier_piece_written": (lambda: SiblingLinears(1, 6, True), lambda: [_x(3, 32)]),
    "siblings_no_write": (lambda: SiblingLinears(None, 0, True), lambda: [_x(3, 32)]),
    "sibling_pointwise_piece_written": (SiblingPointwise, lambda: [_x(3, 16)]),
    "siblings_separate_inputs_written": (
        SiblingLinearsSeparateInputs, lambda: [_x(2, 4, seed=i) for i in range(8)]
    ),
    "sibling_layer_norms_buffer_between": (SiblingLayerNormsBufferBetween, lambda: [_x(8, 3, 4)]),
    "split_piece_mutated_then_cat": (lambda: Fn(_split_piece_mutated_then_cat), lambda: [_x(4, 6)]),
    "split_cat_then_piece_mutated": (lambda: Fn(_split_then_cat_then_piece_mutated), lambda: [_x(4, 6)]),
    "input_split_cat_then_mutated": (lambda: Fn(_input_split_cat_then_input_mutated), lambda: [_x(4, 6)]),
    "cat_input_mutated_after_cat": (lambda: Fn(_cat_input_mutated_after_cat), lambda: [_x(4, 6)]),
    "stack_unbind_member_zeroed": (lambda: Fn(_stack_unbind_member_zeroed), lambda: [_x(4, 6)]),
    "cat_split_forwarded_then_written": (
        lambda: Fn(_cat_split_forwarded_then_written), lambda: [_x(4, 6), _x(4, 6, seed=1)]
    ),
    "nested_split_mutated": (lambda: Fn(_nested_split_mutated), lambda: [_x(4, 8)]),
}


@pytest.mark.parametrize("name", sorted(SPLIT_CAT_CASES))
def test_in_place_inside_split_cat_and_sibling_groups(name: str) -> None:
    make, inputs = SPLIT_CAT_CASES[name]
    check(make, inputs())


def test_the_sibling_group_without_a_write_is_still_fused() -> None:
    """The control case: the barriers above are what stops fusion, not the
    shape of the model."""
    model = SiblingLinears(None, 0, True)
    optimized = optimus_ir.optimize(model, [_x(3, 32)])
    assert optimized.optimus_report.ops_after["linear"] < 8 or optimized.optimus_report.ops_after["baddbmm"]


# ---------------------------------------------------------------------------
# 5. Views of inputs returned as outputs
# ---------------------------------------------------------------------------


VIEW_CASES: dict[str, tuple[Callable[..., Any], AliasStructure]] = {
    "view": (lambda x: x.view(-1), _structure([(SHARES, "input #0")])),
    "identity_view": (lambda x: x.view(4, 6), _structure([(SHARES, "input #0")])),
    "reshape": (lambda x: x.reshape(2, 12), _structure([(SHARES, "input #0")])),
    "getitem": (lambda x: x[0], _structure([(SHARES, "input #0")])),
    "t": (lambda x: x.t(), _structure([(SHARES, "input #0")])),
    "t_t": (lambda x: x.t().t(), _structure([(SHARES, "input #0")])),
    "split_pieces": (
        lambda x: x.split(2, dim=1),
        _structure([(SHARES, "input #0")], [(SHARES, "input #0")], [(SHARES, "input #0")]),
    ),
    "split_whole": (lambda x: x.split(6, dim=1), _structure([(SHARES, "input #0")])),
    "unbind": (
        lambda x: x.unbind(1)[:3],
        _structure(*[[(SHARES, "input #0")]] * 3),
    ),
    "itself": (lambda x: x, _structure([(IS, "input #0")])),
    "itself_and_compute": (lambda x: (x, torch.relu(x)), _structure([(IS, "input #0")], ())),
    "itself_and_view": (
        lambda x: (x, x.view(-1)), _structure([(IS, "input #0")], [(SHARES, "input #0"), (SHARES, "output #0")])
    ),
    "same_value_twice": (lambda x: ((y := x + 1), y), _structure((), [(IS, "output #0")])),
    "view_of_another_output": (
        lambda x: ((y := x + 1), y.view(-1)), _structure((), [(SHARES, "output #0")])
    ),
    "identity_view_of_another_output": (
        lambda x: ((y := x + 1), y.view(4, 6)), _structure((), [(SHARES, "output #0")])
    ),
    "two_identity_views": (
        lambda x: ((y := x + 1).view(4, 6), y.view(4, 6)), _structure((), [(SHARES, "output #0")])
    ),
    "input_twice": (lambda x: (x, x), _structure([(IS, "input #0")], [(IS, "input #0"), (IS, "output #0")])),
    "cat_of_one": (lambda x: torch.cat([x]), _structure(())),
    "cat_of_all_pieces": (lambda x: torch.cat(x.split(2, dim=1), dim=1), _structure(())),
    "stack_of_unbind": (lambda x: torch.stack(x.unbind(0)), _structure(())),
    "contiguous": (lambda x: x.contiguous(), _structure([(IS, "input #0")])),
    "two_equal_views": (
        lambda x: (x.view(-1), x.view(-1)),
        _structure([(SHARES, "input #0")], [(SHARES, "input #0"), (SHARES, "output #0")]),
    ),
    "detach": (lambda x: x.detach(), _structure([(SHARES, "input #0")])),
    "unsqueeze_squeeze": (lambda x: x.unsqueeze(0).squeeze(0), _structure([(SHARES, "input #0")])),
    "identity_permute": (lambda x: x.permute(0, 1), _structure([(SHARES, "input #0")])),
    "full_slice": (lambda x: x[:, :], _structure([(SHARES, "input #0")])),
    "flatten_noop": (lambda x: x.flatten(1), _structure([(IS, "input #0")])),  # eager returns x
    "copying_reshape_chain": (lambda x: x.t().reshape(24).reshape(6, 4), _structure(())),
    "copying_flatten_chain": (lambda x: x.t().flatten().unflatten(0, (6, 4)), _structure(())),
    "view_chain_back_to_shape": (
        lambda x: (x.view(2, 12).view(4, 6), x * 2), _structure([(SHARES, "input #0")], ())
    ),
    "view_and_fused_siblings": (
        lambda x: (x.view(-1), *[torch.relu(p) * 2 for p in x.split(1, dim=1)]),
        _structure([(SHARES, "input #0")], *[()] * 6),
    ),
}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_views_of_inputs_returned(name: str) -> None:
    fn, expect = VIEW_CASES[name]
    check(lambda: Fn(fn), [_x(4, 6)], expect=expect)


@pytest.mark.parametrize("name", ["view", "getitem", "t", "split_pieces", "unbind", "itself"])
def test_writing_into_a_returned_view_writes_the_input(name: str) -> None:
    fn, _ = VIEW_CASES[name]
    x = _x(4, 6)
    optimized = optimus_ir.optimize(Fn(fn), [x.clone()])
    x_in = x.clone()
    outs = pytree.tree_leaves(optimized(x_in))
    for out in outs:
        assert out.untyped_storage().data_ptr() == x_in.untyped_storage().data_ptr()
        out.fill_(7.0)
    eager_in = x.clone()
    for out in pytree.tree_leaves(fn(eager_in)):
        out.fill_(7.0)
    torch.testing.assert_close(x_in, eager_in, rtol=0, atol=0)
    assert not torch.equal(x_in, x)


def test_a_returned_view_is_not_the_input_object() -> None:
    """`x.view(x.shape)` is a new tensor object in eager and in the captured
    graph: changing its metadata must not change the caller's input."""
    x = _x(4, 6)
    optimized = optimus_ir.optimize(Fn(lambda t: t.view(4, 6)), [x])
    out = optimized(x)
    assert out is not x
    out.unsqueeze_(0)
    assert x.shape == (4, 6)


def test_distinct_outputs_do_not_become_one_tensor_object() -> None:
    x = _x(4, 6)
    optimized = optimus_ir.optimize(Fn(lambda t: ((y := t + 1).view(4, 6), y.view(4, 6))), [x])
    a, b = optimized(x)
    assert a is not b
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    a.unsqueeze_(0)
    assert b.shape == (4, 6)


# ---------------------------------------------------------------------------
# 6. Buffers read after they are written in the same forward
# ---------------------------------------------------------------------------


class ReadAfterWrite(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(()))
        self.register_buffer("memory", torch.zeros(4, 6))

    def forward(self, x):
        self.count.add_(1)
        a = x * self.count
        self.count.mul_(2)
        b = x * self.count
        before = self.memory * 1
        self.memory.copy_(x)
        after = self.memory * 1
        return a, b, before, after, torch.cat([self.memory, before], 0)


class ReadAfterWriteThroughSplit(nn.Module):
    """A buffer written through one split piece, read through the other
    pieces and whole, with sibling ops over the pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.zeros(3, 8))

    def forward(self, x):
        pieces = self.state.split(2, dim=1)
        first = [torch.tanh(p + x) for p in pieces]
        pieces[2].add_(x)
        second = [torch.tanh(p + x) for p in pieces]
        return torch.cat(first, 1), torch.cat(second, 1), self.state * 1


@pytest.mark.parametrize("make", [ReadAfterWrite, ReadAfterWriteThroughSplit], ids=lambda m: m.__name__)
def test_buffer_read_after_write(make) -> None:
    inputs = [_x(4, 6)] if make is ReadAfterWrite else [_x(3, 2)]
    run = check(make, inputs, calls=3)
    assert run.structure.written  # the buffers were written


# ---------------------------------------------------------------------------
# 7. A write through an alias inside regions CSE, split-cat and batch fusion touch
# ---------------------------------------------------------------------------


def _cse_through_view(x):
    v = x.view(-1)
    y1 = torch.tanh(x)
    v.add_(1)
    y2 = torch.tanh(x)
    return y1, y2


def _cse_through_slice_of_intermediate(x):
    h = x * 1
    y1 = torch.sigmoid(h) + 1
    h[:, 1:3].mul_(5)
    y2 = torch.sigmoid(h) + 1
    return y1, y2


def _split_cat_through_slice(x):
    s1 = torch.cat(list(reversed(x.split(2, dim=1))), dim=1)
    x[:, :2].mul_(2)
    s2 = torch.cat(list(reversed(x.split(2, dim=1))), dim=1)
    return s1, s2


def _split_cat_through_transpose(x):
    h = x + 0
    c = torch.cat(h.split(3, dim=1), dim=1)
    h.t()[0].fill_(9.0)
    return c, torch.cat(h.split(3, dim=1), dim=1)


def _siblings_through_view(x):
    h = x * 1
    pieces = h.split(2, dim=1)
    first = [p * 2 for p in pieces]
    h.view(-1)[:4].add_(100)
    second = [p * 2 for p in pieces]
    return torch.cat(first, 1), torch.cat(second, 1)


class LinearsThroughView(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(4, 3) for _ in range(8))

    def forward(self, x):
        pieces = x.split(4, dim=1)
        outs = [self.linears[i](pieces[i]) for i in range(4)]
        x.view(-1)[5:9].mul_(-1)
        outs += [self.linears[i](pieces[i]) for i in range(4, 8)]
        return torch.cat(outs, 1)


ALIAS_WRITE_CASES = {
    "cse_through_view": (lambda: Fn(_cse_through_view), lambda: [_x(4, 6)]),
    "cse_through_slice_of_intermediate": (lambda: Fn(_cse_through_slice_of_intermediate), lambda: [_x(4, 6)]),
    "split_cat_through_slice": (lambda: Fn(_split_cat_through_slice), lambda: [_x(4, 6)]),
    "split_cat_through_transpose": (lambda: Fn(_split_cat_through_transpose), lambda: [_x(4, 6)]),
    "siblings_through_view": (lambda: Fn(_siblings_through_view), lambda: [_x(4, 8)]),
    "linears_through_view": (LinearsThroughView, lambda: [_x(3, 32)]),
}


@pytest.mark.parametrize("name", sorted(ALIAS_WRITE_CASES))
def test_write_through_an_alias(name: str) -> None:
    make, inputs = ALIAS_WRITE_CASES[name]
    run = check(make, inputs())
    assert len(run.outputs) >= 1


# ---------------------------------------------------------------------------
# 8. Hand-built FX graphs
# ---------------------------------------------------------------------------


def _graph_module(build: Callable[[torch.fx.Graph], Any]) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    graph.output(build(graph))
    return torch.fx.GraphModule(nn.Module(), graph)


def _g_split_piece_written_returned(g: torch.fx.Graph):
    x = g.placeholder("x")
    split = g.call_function(torch.split, (x, 2), {"dim": 1})
    a = g.call_function(operator.getitem, (split, 0))
    b = g.call_function(operator.getitem, (split, 1))
    g.call_method("add_", (a, 1.0))
    cat = g.call_function(torch.cat, ([a, b],), {"dim": 1})
    return (cat, b, x)


def _g_same_node_twice_and_views(g: torch.fx.Graph):
    x = g.placeholder("x")
    y = g.call_function(torch.add, (x, 1.0))
    v = g.call_method("view", (x, -1))
    t = g.call_method("t", (x,))
    return (y, y, v, x, t)


def _g_aten_in_place(g: torch.fx.Graph):
    x = g.placeholder("x")
    y = g.call_function(torch.ops.aten.mul.Tensor, (x, 2.0))
    g.call_function(torch.ops.aten.add_.Tensor, (y, 1.0))
    pieces = g.call_function(torch.ops.aten.split.Tensor, (y, 2, 1))
    p0 = g.call_function(operator.getitem, (pieces, 0))
    p1 = g.call_function(operator.getitem, (pieces, 1))
    g.call_function(torch.ops.aten.mul_.Tensor, (p1, 3.0))
    cat = g.call_function(torch.ops.aten.cat.default, ([p1, p0], 1))
    g.call_function(torch.ops.aten.add_.Tensor, (x, 1.0))
    return (cat, y, x)


def _g_setitem_between_equal_ops(g: torch.fx.Graph):
    x = g.placeholder("x")
    a = g.call_function(torch.tanh, (x,))
    sl = g.call_function(operator.getitem, (x, (slice(None), slice(0, 2))))
    g.call_function(operator.setitem, (sl, 0, 0.0))
    b = g.call_function(torch.tanh, (x,))
    return (a, b)


def _g_sibling_pointwise_one_written(g: torch.fx.Graph):
    x = g.placeholder("x")
    pieces = g.call_function(torch.unbind, (x, 0))
    outs = []
    for i in range(8):
        p = g.call_function(operator.getitem, (pieces, i))
        if i == 5:
            g.call_method("mul_", (g.call_function(operator.getitem, (pieces, 6)), 2.0))
        outs.append(g.call_function(torch.relu, (p,)))
    return (g.call_function(torch.stack, (outs,)),)


def _g_out_kwarg_into_input(g: torch.fx.Graph):
    x = g.placeholder("x")
    y = g.placeholder("y")
    a = g.call_function(torch.tanh, (y,))
    g.call_function(torch.add, (x, 1.0), {"out": y})
    b = g.call_function(torch.tanh, (y,))
    return (a, b, y)


GRAPH_CASES: dict[str, tuple[Callable[[torch.fx.Graph], Any], Callable[[], list[torch.Tensor]]]] = {
    "split_piece_written_returned": (_g_split_piece_written_returned, lambda: [_x(4, 4)]),
    "same_node_twice_and_views": (_g_same_node_twice_and_views, lambda: [_x(4, 6)]),
    "aten_in_place": (_g_aten_in_place, lambda: [_x(4, 4)]),
    "setitem_between_equal_ops": (_g_setitem_between_equal_ops, lambda: [_x(4, 6)]),
    "out_kwarg_into_input": (_g_out_kwarg_into_input, lambda: [_x(4, 6), _x(4, 6, seed=1)]),
    "sibling_pointwise_one_written": (_g_sibling_pointwise_one_written, lambda: [_x(8, 5)]),
}


@pytest.mark.parametrize("name", sorted(GRAPH_CASES))
@pytest.mark.parametrize("validate", [False, True])
def test_hand_built_graphs(name: str, validate: bool) -> None:
    build, make_inputs = GRAPH_CASES[name]
    inputs = make_inputs()
    want = _run(_graph_module(build), None, inputs)
    optimized = optimus_ir.optimize(_graph_module(build), [v.clone() for v in inputs], validate=validate)
    _assert_same_run(_run(optimized, None, inputs), want, f"optimize(validate={validate})")


def test_hand_built_graph_structure_is_what_it_says() -> None:
    build, make_inputs = GRAPH_CASES["same_node_twice_and_views"]
    run = _run(_graph_module(build), None, make_inputs())
    assert run.structure == _structure(
        (),
        [(IS, "output #0")],
        [(SHARES, "input #0")],
        [(IS, "input #0"), (SHARES, "output #2")],
        [(SHARES, "input #0"), (SHARES, "output #2"), (SHARES, "output #3")],
    )


# ---------------------------------------------------------------------------
# 9. The alias structure itself, and validation catching an aliasing change
# ---------------------------------------------------------------------------


def test_shares_memory_is_exact_for_interleaved_views() -> None:
    x = torch.randn(4, 6)
    even, odd = x[:, ::2], x[:, 1::2]
    assert not shares_memory(even, odd)  # interleaved, disjoint
    assert shares_memory(even, x[:, 2:4])
    assert not shares_memory(x[:2], x[2:])
    assert shares_memory(x.t(), x[3])
    assert not shares_memory(x, x.clone())
    assert not shares_memory(x[:0], x)  # no elements


def test_alias_structure_names_inputs_state_outputs_and_writes() -> None:
    x, y = torch.randn(4), torch.randn(4)
    buf = torch.zeros(4)
    versions = tensor_versions([x, y], {"buf": buf})
    buf.add_(1)
    y[0] = 1.0
    structure = alias_structure([x, y], {"buf": buf}, [x[1:], buf, x + 1, buf.view(2, 2), 3], versions)
    assert structure == _structure(
        [(SHARES, "input #0")],
        [(IS, "'buf'")],
        (),
        [(SHARES, "'buf'"), (SHARES, "output #1")],
        (),
        written=["input #1", "'buf'"],
    )
    assert "shares memory with input #0" in structure.describe_output(0)


@pytest.mark.parametrize(
    ("mode", "fn", "message"),
    [
        ("copy-output", lambda x: (x.view(-1), x + 1), "output #0 shares memory with no input"),
        ("merge-outputs", lambda x: (x + 1, x + 1), "output #1 is output #0 itself"),
        ("drop-write", _input_add_, "input #0 no longer written in place"),
    ],
)
def test_validation_catches_a_pass_that_breaks_aliasing(mode: str, fn, message: str) -> None:
    """`test-alias-miscompile` keeps every value but changes aliasing: a
    returned view becomes a copy, two equal outputs one tensor, a write to
    an input is dropped (its result kept). Only the alias structure sees
    the first two."""
    x = _x(4, 6)
    pipeline = f"test-alias-miscompile{{mode={mode}}}"
    optimized = optimus_ir.optimize(Fn(fn), [x.clone()], pipeline=pipeline)  # unvalidated: it runs
    assert optimized is not None
    with pytest.raises(ValidationError, match="aliasing changed") as info:
        optimus_ir.optimize(Fn(fn), [x.clone()], pipeline=pipeline, validate=True)
    assert info.value.pass_name == "test-alias-miscompile"
    assert message in str(info.value)


def test_validation_of_run_pipeline_checks_alias_structure() -> None:
    from optimus_ir.translate.parsing import parse_module
    from optimus_ir.pipeline import run_pipeline
    from optimus_ir.pipeline.validation import DifferentialValidator

    text = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x6xf32>
  %v = fx.call_method "view"(%x, -1) : tensor<24xf32>
  fx.output (%v)
}
"""
    module = parse_module(text)
    validator = DifferentialValidator(module)
    assert validator.structure == _structure([(SHARES, "input #0")])
    with pytest.raises(ValidationError, match="aliasing changed: output #0 shares memory with no input"):
        run_pipeline(
            module,
            "test-alias-miscompile{mode=copy-output}",
            validate_each=lambda p, m: validator.after_pass(p.name, m),
        )


def test_validation_leaves_batch_norm_running_stats_untouched() -> None:
    """A training-mode batch norm updates its running statistics without
    counting a `_version`: validation saw no write, did not put the
    statistics back, and `optimize(validate=True)` left the model changed
    (each validation run updating it once more)."""
    torch.manual_seed(0)
    model = BatchNormTraining()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimus_ir.optimize(model, [_x(4, 6)], validate=True)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0, msg=key)
