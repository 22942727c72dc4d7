"""The exported module's generated code: parameters and buffers read from the
module dicts, plain calling conventions written out directly, and everything a
GraphModule user relies on still true (values bit for bit, parameter updates
and reassignments followed, gradients, kwargs, nested outputs, readable code).
"""

from __future__ import annotations

import collections
import copy
import re
import pickle

import pytest
import torch
import torch.fx
from torch import nn

import optimus_ir
from models import CASES_BY_NAME, capture, clone_inputs
from optimus_ir.translate.exporter import _FastAttributes, ATTR_PATH_META, FastCodeGen, FastPyTreeCodeGen, export_graph
from optimus_ir.translate.importer import import_graph
from optimus_ir.examples.recsys import make_recsys_model


def _assert_identical(actual, expected) -> None:
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


# The exporter's fast path on a graph the passes leave alone (batch fusion
# would add the parameter cache and the stride guard; it has its own tests).
NO_FUSION = "raise-fx,split-cat-simplify,dce,cse,lower-to-fx"


@pytest.fixture
def recsys():
    model, inputs = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=5)
    return model, inputs, optimus_ir.optimize(model, inputs, pipeline=NO_FUSION)


def test_recsys_code_has_no_getattr_per_parameter_and_no_pytree(recsys) -> None:
    model, (x,), gm = recsys
    code = gm.code
    assert isinstance(gm.graph._codegen, _FastAttributes)  # noqa: SLF001 - the model's calling convention, fast
    assert "def forward(self, x):" in code
    assert "tree_flatten_spec" not in code and "tree_unflatten" not in code
    fetched = [n for n in gm.graph.nodes if n.op == "get_attr"]
    assert len(fetched) == len(list(model.parameters()))
    assert {str(n.target) for n in fetched} == {name for name, _ in model.named_parameters()}
    # Until something is reassigned on the module itself (its `OwnState`),
    # each parameter is one read from the model's dicts: the `else:` branch
    # after the state check; once something was, the module's own attribute
    # first, then the model's where it is unchanged (`is not _made_with[`).
    # The state is read twice: for the snapshot of the last call's reads
    # (`attribute_snapshot`), and by the full read that runs without one.
    assert code.count("self.__dict__.get('_optimus_own_state')") == 2
    lines = code.splitlines()
    state_check = next(i for i, line in enumerate(lines) if "if _own_state is None or _own_state.changed" in line)
    branch = next(i for i, line in enumerate(lines) if i > state_check and line.strip() == "else:")
    end = next(i for i, line in enumerate(lines) if "except (KeyError, AttributeError)" in line)
    fast = [line.strip() for line in lines[branch + 1 : end] if line.strip() != "_walked = True"]
    assert len(fast) == len(fetched)
    assert all("= _parameters__optimus_model_" in line for line in fast)
    assert code.count("is not _made_with[") == len(fetched)
    assert code.count("self.optimus_guard.") == 2
    assert code.count("self.__dict__[") == 2  # the model, the tensors the code was made with
    assert gm._optimus_own_state.changed is False  # noqa: SLF001
    assert code.count("if self.training is not False:") == 1
    _assert_identical(gm(x), model(x))
    _assert_identical(gm(x=x), model(x))


@pytest.mark.parametrize(
    "name",
    [
        "recsys",
        "nested_splits_symbolic",
        "tuple_outputs",
        "tuple_outputs_dynamo",
        "dict_output",
        "module_calls",
        "buffers_constants",
        "buffers_constants_export",
        "dtypes",
        "default_args",
        "in_place_dynamo",
    ],
)
def test_round_trip_is_identical_with_fast_code(name: str) -> None:
    gm, inputs = capture(CASES_BY_NAME[name])
    exported = export_graph(import_graph(gm, inputs))
    assert exported.graph._codegen.__class__ in (FastCodeGen, FastPyTreeCodeGen)  # noqa: SLF001
    expected = gm(*clone_inputs(inputs))
    actual = exported(*clone_inputs(inputs))
    assert type(actual) is type(expected)
    _assert_identical(actual, expected)


def test_in_place_updates_and_load_state_dict_are_followed(recsys) -> None:
    model, (x,), gm = recsys
    with torch.no_grad():
        model.towers[1].weight.mul_(2.0)
        model.norms[0].bias.add_(0.5)
    _assert_identical(gm(x), model(x))
    other, _ = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=5, seed=7)
    model.load_state_dict(other.state_dict())
    _assert_identical(gm(x), other(x))
    # and through the optimized module's own state dict (the model's names)
    fresh, _ = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=5, seed=3)
    state = fresh.state_dict()
    assert list(gm.state_dict()) == list(state)
    gm.load_state_dict(state)
    _assert_identical(gm(x), fresh(x))
    gm.load_state_dict({k: v.clone() for k, v in state.items()}, assign=True)
    _assert_identical(gm(x), fresh(x))


def test_reassigned_parameter_is_followed(recsys) -> None:
    model, (x,), gm = recsys
    gm.mlp[2].bias = nn.Parameter(torch.full((1,), 10.0))
    _assert_identical(gm(x), model(x) - model.mlp[2].bias + 10.0)
    assert model.mlp[2].bias is not gm.mlp[2].bias  # the module's own tree: the model is unchanged


def test_reassigned_nested_parameter_and_submodule_are_followed() -> None:
    model, (x,) = make_recsys_model(num_towers=2, tower_width=4, hidden=8, batch=3)
    traced = torch.fx.symbolic_trace(model.mlp)
    gm = optimus_ir.optimize(traced, (torch.randn(3, 8),))
    assert "_modules['0']" in gm.code
    h = torch.randn(3, 8)
    gm.get_submodule("0").weight = nn.Parameter(torch.ones(8, 8))
    expected = model.mlp[2](torch.relu(h @ torch.ones(8, 8).T + model.mlp[0].bias))
    _assert_identical(gm(h), expected)
    replacement = nn.Module()
    replacement.weight = nn.Parameter(torch.zeros(8, 8))
    replacement.bias = nn.Parameter(torch.zeros(8))
    gm.add_module("0", replacement)
    _assert_identical(gm(h), model.mlp[2](torch.zeros(3, 8)))
    gm.add_module("0", None)  # no module at all: the slow path reports it as getattr does
    with pytest.raises(AttributeError, match="weight"):
        gm(h)


def test_attribute_that_changes_kind_falls_back_to_getattr(recsys) -> None:
    model, (x,), gm = recsys
    head = gm.mlp[2]
    delattr(head, "bias")
    head.register_buffer("bias", torch.full((1,), -1.0))  # now a buffer: the dict read misses
    _assert_identical(gm(x), model(x) - model.mlp[2].bias - 1.0)
    delattr(head, "bias")
    with pytest.raises(AttributeError, match="bias"):
        gm(x)


def test_gradients_reach_the_original_parameters(recsys) -> None:
    model, (x,), gm = recsys
    gm(x).sum().backward()
    ours = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    model(x).sum().backward()
    for name, p in model.named_parameters():
        _assert_identical(ours[name], p.grad)
    assert {id(p) for p in gm.parameters()} == {id(p) for p in model.parameters()}


def test_to_and_train_see_the_real_parameters(recsys) -> None:
    model, (x,), gm = recsys
    assert all(isinstance(p, nn.Parameter) for p in gm.parameters())
    gm.to(torch.float64)
    assert all(p.dtype == torch.float64 for p in gm.parameters())
    assert gm(x.double()).dtype == torch.float64
    _assert_identical(gm(x.double()), model(x.double()))  # the model's own parameters moved
    gm.train()
    assert gm.training


def test_kwargs_and_nested_outputs_keep_the_calling_convention() -> None:
    class KeywordNested(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x, y, scale=None):
            h = self.proj(x) * y
            return {"h": h, "parts": (h + 1, [h * 2, None])}, scale

    model = KeywordNested().eval()
    x, y, s = torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 4)
    gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(x, y=y, scale=s)  # noqa: SLF001
    exported = export_graph(import_graph(gm, (x,)))
    code = exported.code
    assert "tree_flatten_spec" not in code and "tree_unflatten" not in code
    assert "def forward(self, x, y, scale):" in code
    expected = model(x, y, s)
    for result in (exported(x, y=y, scale=s), exported(x, y, s), exported(scale=s, y=y, x=x)):
        _assert_identical(result, expected)
        assert type(result[0]["parts"][1]) is list and result[0]["parts"][1][1] is None


def test_namedtuple_output_keeps_the_pytree_code() -> None:
    Pair = collections.namedtuple("Pair", ["a", "b"])

    class NamedOutput(nn.Module):
        def forward(self, x):
            return Pair(x + 1, x * 2)

    model = NamedOutput()
    x = torch.randn(3)
    gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(x)  # noqa: SLF001
    exported = export_graph(import_graph(gm, (x,)))
    assert "tree_unflatten" in exported.code
    result = exported(x)
    assert type(result) is Pair
    _assert_identical(tuple(result), tuple(model(x)))


def test_code_stays_readable_and_copies_work(recsys) -> None:
    model, (x,), gm = recsys
    code = gm.code
    compile(code, "<exported>", "exec")
    assert "try:" in code and "except (KeyError, AttributeError):" in code
    assert "= read_attributes(self, ('towers.0.weight', " in code
    assert "linear = torch._C._nn.linear(" in code
    assert "class GraphModule" in gm.print_readable(print_output=False)
    copied = copy.deepcopy(gm)
    _assert_identical(copied(x), gm(x))
    with torch.no_grad():
        next(copied.parameters()).add_(1.0)  # the copy has parameters of its own
    _assert_identical(gm(x), model(x))
    restored = pickle.loads(pickle.dumps(gm))
    _assert_identical(restored(x), gm(x))


def test_line_numbers_map_to_the_right_nodes(recsys) -> None:
    """`_lineno_map` (line offset from `def forward` -> node index), which Dynamo
    and FX tracebacks use to find the node of a line, skips the hoisted reads."""
    _, _, gm = recsys
    nodes = list(gm.graph.nodes)
    lines = gm.code.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def forward"))
    mapped = {k: i for k, i in gm._lineno_map.items() if i is not None}  # noqa: SLF001
    computed = [n for n in nodes if n.op in ("call_function", "call_method", "output")]
    assert {nodes[i] for i in mapped.values()} >= set(computed)
    for offset, index in mapped.items():
        node = nodes[index]
        line = lines[start + offset].strip()
        if node.op == "output":
            assert line.startswith("return ") or not line
        elif node.op != "placeholder":
            assert line.startswith(f"{node.name} = "), (line, node.name)


def test_dynamo_compiles_the_exported_module(recsys) -> None:
    model, (x,), gm = recsys
    torch._dynamo.reset()  # noqa: SLF001
    compiled = torch.compile(gm, backend="eager", fullgraph=True)
    _assert_identical(compiled(x), model(x))
    torch._dynamo.reset()  # noqa: SLF001


def test_get_attr_without_recorded_path_uses_getattr(recsys) -> None:
    _, (x,), gm = recsys
    expected = gm(x)
    for node in gm.graph.find_nodes(op="get_attr"):
        node.meta.pop(ATTR_PATH_META)
    gm.recompile()
    assert "_parameters" not in gm.code and 'getattr(self.towers, "0").weight' in gm.code
    _assert_identical(gm(x), expected)


def _count_code_generations(monkeypatch: pytest.MonkeyPatch) -> list[torch.fx.Graph]:
    """Record the graph of every code generation (`Graph.python_code`)."""
    generated: list[torch.fx.Graph] = []
    original = torch.fx.Graph.python_code

    def python_code(self, *args, **kwargs):
        generated.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.fx.Graph, "python_code", python_code)
    return generated


@pytest.mark.parametrize("freeze", [False, True], ids=["fresh", "frozen"])
def test_optimize_generates_the_returned_modules_code_once(monkeypatch: pytest.MonkeyPatch, freeze: bool) -> None:
    """Binding the parameters to the model, freezing and the guard each
    change the code: it is generated once, last (seconds at 100k nodes)."""
    model, (x,) = make_recsys_model(num_towers=16, batch=64)
    generated = _count_code_generations(monkeypatch)
    opt = optimus_ir.optimize(model, (x,), freeze=freeze, check_speed=False)
    assert opt.optimus_report.groups_fused > 0  # parameters bound, stride guard, (frozen values)
    assert sum(graph is opt.graph for graph in generated) == 1
    assert "self.optimus_guard.check(x) is False" in opt.code
    assert "_optimus_code_pending" not in opt.__dict__
    with torch.no_grad():
        torch.testing.assert_close(opt(x), model(x))


def test_backend_path_returns_generated_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_optimize` without deferral (the torch.compile backend's path)
    returns a module with its code, generated once."""
    from optimus_ir.api import _optimize

    model, (x,) = make_recsys_model(num_towers=4, batch=8)
    gm = optimus_ir.capture(model, (x,))
    generated = _count_code_generations(monkeypatch)
    result = _optimize(
        gm, (x,), None, validate=False, statistics=None, example_kwargs=None, verify_each=None,
        guard_strides=True, tensors_from=model,
    )
    assert sum(graph is result.graph for graph in generated) == 1
    with torch.no_grad():
        torch.testing.assert_close(result(x), model(x))


def test_deferred_export_is_pending_until_finish_code() -> None:
    """`export_graph(defer_code=True)`: no code until `finish_code` (a call
    raises, `exporter.recompile` leaves it pending), then the same code as
    the export that generates it at once."""
    from optimus_ir.translate.exporter import CODE_PENDING_ATTRIBUTE, finish_code, recompile

    model, (x,) = make_recsys_model(num_towers=4, tower_width=8, hidden=16, batch=5)
    gm = optimus_ir.capture(model, (x,))
    eager = export_graph(import_graph(gm, (x,)))
    pending = export_graph(import_graph(gm, (x,)), defer_code=True)
    assert pending.__dict__[CODE_PENDING_ATTRIBUTE] is True
    with pytest.raises(RuntimeError, match="not generated yet"):
        pending(x)
    recompile(pending)
    assert pending.__dict__[CODE_PENDING_ATTRIBUTE] is True
    finish_code(pending)
    assert CODE_PENDING_ATTRIBUTE not in pending.__dict__
    assert pending.code == eager.code
    _assert_identical(pending(x), eager(x))
    _assert_identical(pending(x), model(x))
