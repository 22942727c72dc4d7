"""Aliasing facts from torch (issue 34): the analysis against eager torch.

The property: for every op class of the torch dialect (instances from the
dialect's round-trip test, plus the conditions under which an op returns its
input) and every `torch.Tensor` method that returns a tensor on simple
inputs, run eagerly on real tensors, the analysis never says "fresh" where
the result shares storage with an operand, nor "a new object" where it is
an operand object. It may say "may alias" where storage is fresh
(conservative); the test counts those too, so a regression to "everything
may alias" shows as a drop in the fresh answers.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

import pytest
import torch
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation

from optimus_ir.analysis import alias_facts
from optimus_ir.analysis.op_classes import (
    may_alias_operands,
    may_return_operand,
    may_write_operands,
    written_operands,
)
from optimus_ir.dialects import fx
from optimus_ir.dialects import torch as T
from optimus_ir.translate.exporter import export_graph
from optimus_ir.dialects.literals import encode_literal
from optimus_ir.translate.parsing import parse_module
from optimus_ir.pipeline import run_pipeline
from optimus_ir.foundation.types import DYNAMIC, UnsupportedDTypeError, dtype_of, tensor_type_of

DIALECT_TESTS = Path(__file__).parent / "lit" / "dialects" / "torch"
INSTANCE_FILES = (DIALECT_TESTS / "roundtrip.mlir", DIALECT_TESTS / "softmax-where.mlir")
"""The dialect's round-trip tests: one instance of (almost) every op."""

EXTRA_INSTANCES = """
builtin.module {
  fx.graph @extra {
    %x = fx.placeholder "x" : tensor<2x12xf32, "cpu">
    %v = fx.placeholder "v" : tensor<12xf32, "cpu">
    %e = fx.placeholder "e" : tensor<0x12xf32, "cpu">
    %fl_same = torch.flatten %x start_dim 1 end_dim 1 : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %fl_1d = torch.flatten %v start_dim 0 end_dim 0 : tensor<12xf32, "cpu"> -> tensor<12xf32, "cpu">
    %drop_p0 = torch.dropout %x p 0.0 train : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %drop_empty = torch.dropout %e p 0.5 train : tensor<0x12xf32, "cpu"> -> tensor<0x12xf32, "cpu">
    %rs_same = torch.reshape %x shape [2, 12] : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %perm_id = torch.permute %x dims [0, 1] : tensor<2x12xf32, "cpu"> -> tensor<2x12xf32, "cpu">
    %u0, %u1 = torch.unbind_copy %x dim 0 : tensor<2x12xf32, "cpu"> -> tensor<12xf32, "cpu">, tensor<12xf32, "cpu">
    fx.output (%fl_same, %fl_1d, %drop_p0, %drop_empty, %rs_same, %perm_id, %u0, %u1)
  }
}
"""
"""Instances where an op of the dialect returns its input itself (or looks
as if it might), beside the round-trip file's."""


def _real_input(ty: TensorType, generator: torch.Generator) -> torch.Tensor:
    shape = [5 if s == DYNAMIC else s for s in ty.get_shape()]
    dtype = dtype_of(ty.element_type)
    if dtype.is_floating_point:
        return torch.rand(shape, dtype=dtype, generator=generator) + 0.5
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    return torch.randint(1, 3, shape, dtype=dtype, generator=generator)


def _storages(value: Any) -> set[int]:
    return {t.untyped_storage()._cdata for t in alias_facts._tensors(value)}  # noqa: SLF001


def _dialect_cases() -> list[tuple[str, Operation, bool, bool, bool]]:
    """(result name, op, analysis may alias, eager shares storage, eager is
    an operand object) for every torch op of the instances."""
    cases = []
    for text in (*(path.read_text() for path in INSTANCE_FILES), EXTRA_INSTANCES):
        module = parse_module(text)
        graph = next(op for op in module.walk() if isinstance(op, fx.GraphOp))
        decided: dict[str, tuple[Operation, bool, bool]] = {}
        for op in graph.block.ops:
            if op.dialect_name() == "torch":
                for result in op.results:
                    decided[result.name_hint] = (op, may_alias_operands(op), may_return_operand(op))
        operand_names = {
            name: [v.name_hint for v in op.operands] for name, (op, _, _) in decided.items()
        }
        run_pipeline(module, "lower-to-fx")
        gm = export_graph(module, torch.nn.Module(), missing_attributes="random")
        generator = torch.Generator().manual_seed(0)
        inputs = {}
        for op in graph.block.ops:
            if isinstance(op, fx.PlaceholderOp):
                inputs[op.result.name_hint] = _real_input(op.result.type, generator)
        # the exporter makes one node per op, in block order
        hints = [op.results[0].name_hint for op in graph.block.ops if op.results]
        nodes = [n for n in gm.graph.nodes if n.op != "output"]
        assert len(hints) == len(nodes)
        node_hint = {n: h for n, h in zip(nodes, hints, strict=True)}
        values: dict[str, Any] = {}

        class _Record(torch.fx.Interpreter):
            def run_node(self, n: torch.fx.Node) -> Any:
                result = super().run_node(n)
                if n in node_hint:
                    values[node_hint[n]] = result
                return result

        placeholders = [node_hint[n] for n in nodes if n.op == "placeholder"]
        _Record(gm).run(*[inputs[h] for h in placeholders])
        for name, (op, may_alias, may_be_operand) in decided.items():
            result = values[name]
            operands = [values[o] for o in operand_names[name]]
            shares = bool(_storages(result) & _storages(operands))
            is_operand = any(result is o for o in operands)
            cases.append((name, op, may_alias, shares, is_operand))
    return cases


def test_dialect_ops_alias_decisions_agree_with_eager() -> None:
    cases = _dialect_cases()
    covered = {type(op) for _, op, *_ in cases}
    assert covered == set(T.ALL_OPS), sorted(op.name for op in set(T.ALL_OPS) - covered)
    wrong = [
        f"%{name} ({op.name}): eager shares storage, the analysis says fresh"
        for name, op, may_alias, shares, _ in cases
        if shares and not may_alias
    ]
    wrong += [
        f"%{name} ({op.name}): eager returns the operand itself, the analysis says a new object"
        for name, op, _, _, is_operand in cases
        if is_operand and not may_return_operand(op)
    ]
    assert not wrong, "\n".join(wrong)
    # the analysis is not trivially conservative: fresh results are fresh
    assert sum(1 for _, _, may_alias, shares, _ in cases if not may_alias and not shares) > 30


# ---------------------------------------------------------------------------
# Every torch.Tensor method
# ---------------------------------------------------------------------------

_OTHER = object()
"""A second tensor operand (same shape and dtype as self) in a pattern."""

PATTERNS: tuple[tuple[Any, ...], ...] = (
    (),
    (_OTHER,),
    (0,),
    (1,),
    (-1,),
    (0, 1),
    (1, 0),
    (2,),
    (2.0,),
    ((4, 3),),
    ((12,),),
    ((3, 4),),
    (torch.float32,),
    (torch.int16,),
    (torch.uint8,),
    (torch.int8,),
    (torch.float64,),
    (_OTHER, _OTHER),
    (0, _OTHER),
)
"""Argument lists tried after `self`, in order; the first ones a method
accepts for a dtype are the cases."""

DTYPES = (torch.float32, torch.int16, torch.uint8, torch.int8, torch.int64, torch.bool, torch.float64)

NOT_CALLED: dict[str, str] = {
    "backward": "autograd on a tensor without grad: an error, or global autograd state",
    "register_hook": "takes a callable",
    "register_post_accumulate_grad_hook": "takes a callable",
    "apply_": "takes a callable",
    "map_": "takes a callable",
    "map2_": "takes a callable",
    "share_memory_": "moves the storage to shared memory (a process-wide effect)",
    "pin_memory": "needs an accelerator",
    "cuda": "needs CUDA",
    "record_stream": "needs a stream",
    "numpy": "returns a numpy array",
    "tolist": "returns a list",
    "item": "returns a number",
}
"""Methods never called here, with the reason (anything else a simple
pattern calls is checked)."""


def _tensor_methods() -> list[str]:
    names = []
    for name in dir(torch.Tensor):
        if not callable(getattr(torch.Tensor, name, None)):
            continue
        if name.startswith("__") and name.endswith("__"):
            plain = name.strip("_")
            if not hasattr(operator, plain) or plain in ("setitem", "delitem"):
                continue  # not an operator (`__init__`, `__reduce_ex__`, ...)
        elif name.startswith("_"):
            continue
        names.append(name)
    return names


def _method_op(name: str, args: tuple[Any, ...], operands: list[torch.Tensor], result: Any) -> fx.CallMethodOp:
    block = Block(arg_types=[tensor_type_of(t) for t in operands])
    refs = {id(t): i for i, t in enumerate(operands)}

    def ref(value: Any) -> Any:
        index = refs.get(id(value))
        return None if index is None else fx.ref(index)

    encoded = [encode_literal(a, ref) for a in (operands[0], *args)]
    try:
        result_type = tensor_type_of(result) if isinstance(result, torch.Tensor) else fx.VALUE
    except UnsupportedDTypeError:
        result_type = fx.VALUE
    return fx.CallMethodOp(name, encoded, {}, list(block.args), result_type)


def _method_cases() -> tuple[list[tuple[str, fx.CallMethodOp, bool, bool]], dict[str, str]]:
    cases = []
    skipped: dict[str, str] = dict(NOT_CALLED)
    for name in _tensor_methods():
        if name in NOT_CALLED:
            continue
        exercised = False
        for dtype in DTYPES:
            for pattern in PATTERNS:
                generator = torch.Generator().manual_seed(0)
                x = _real_input(tensor_type_of(torch.empty(3, 4, dtype=dtype)), generator)
                other = _real_input(tensor_type_of(torch.empty(3, 4, dtype=dtype)), generator)
                args = tuple(other if a is _OTHER else a for a in pattern)
                operands = [x, *([other] if _OTHER in pattern else [])]
                try:
                    with torch.no_grad():
                        result = getattr(x, name)(*args)
                except Exception:  # noqa: BLE001 - not this pattern
                    continue
                tensors = list(alias_facts._tensors(result))  # noqa: SLF001
                if not tensors or any(t.layout is not torch.strided for t in tensors):
                    continue
                shares = bool(_storages(result) & _storages(operands))
                is_operand = any(t is o for t in tensors for o in operands)
                op = _method_op(name, args, operands, result)
                cases.append((f"{name}{pattern} on {dtype}", op, shares, is_operand))
                exercised = True
                break
        if not exercised:
            skipped[name] = "no simple argument pattern returns a strided tensor"
    return cases, skipped


def test_tensor_methods_alias_decisions_agree_with_eager() -> None:
    cases, skipped = _method_cases()
    wrong = [
        f"{what}: eager shares storage, the analysis says fresh"
        for what, op, shares, _ in cases
        if shares and not may_alias_operands(op)
    ]
    wrong += [
        f"{what}: eager returns the operand itself, the analysis says a new object"
        for what, op, _, is_operand in cases
        if is_operand and not may_return_operand(op)
    ]
    assert not wrong, "\n".join(wrong)
    methods = {what.split("(")[0] for what, *_ in cases}
    # most methods are exercised; what is not has a recorded reason
    assert len(methods) > 300, (len(methods), sorted(skipped))
    assert set(_tensor_methods()) == methods | set(skipped)
    fresh = sum(1 for _, op, shares, _ in cases if not shares and not may_alias_operands(op))
    assert fresh > 200, fresh
    # the cases of the issue, by name
    by_name = {what: (op, shares) for what, op, shares, _ in cases}
    assert any(w.startswith("short") and "int16" in w and s for w, (_, s) in by_name.items())
    assert any(w.startswith("__pos__") and s for w, (_, s) in by_name.items())


# ---------------------------------------------------------------------------
# Unit facts
# ---------------------------------------------------------------------------


def _call(target: str, operand_types: list[Any], args: list[Any], kwargs: dict[str, Any] | None = None,
          *, method: bool = False) -> fx.NodeOp:
    block = Block(arg_types=operand_types)
    cls = fx.CallMethodOp if method else fx.CallFunctionOp
    return cls(target, args, kwargs or {}, list(block.args), operand_types[0])


F32 = tensor_type_of(torch.empty(2, 4))
I16 = tensor_type_of(torch.empty(2, 4, dtype=torch.int16))


@pytest.mark.parametrize(
    ("target", "types", "args", "method", "aliases"),
    [
        ("short", [I16], [fx.ref(0)], True, True),
        ("short", [F32], [fx.ref(0)], True, False),
        ("_operator.pos", [F32], [fx.ref(0)], False, True),
        ("torch.functional.einsum", [F32], ["bd->db", fx.ref(0)], False, True),
        ("torch.nn.functional.dropout", [F32], [fx.ref(0), 0.5, False], False, True),
        ("torch.nn.functional.dropout", [F32], [fx.ref(0), 0.5, True], False, False),
        ("torch.exp", [F32], [fx.ref(0)], False, False),
        ("contiguous", [F32], [fx.ref(0)], True, True),
        ("my_module.f", [F32], [fx.ref(0)], False, True),
    ],
)
def test_call_may_alias(target: str, types: list[Any], args: list[Any], method: bool, aliases: bool) -> None:
    encoded = [encode_literal(a) for a in args]
    op = _call(target, types, encoded, method=method)
    assert may_alias_operands(op) is aliases


def test_reshape_may_alias_whatever_the_run_shows() -> None:
    """`reshape` of a contiguous operand is a view, of a strided one a copy:
    the schema's `Tensor(a)` keeps it "may alias" even where one run copied."""
    assert alias_facts.schema_may_alias("reshape")
    assert alias_facts.schema_may_alias("contiguous")
    assert not alias_facts.schema_may_alias("add")
    assert not alias_facts.schema_may_alias("einsum")  # declared fresh; the run decides


def test_functional_forms_pair_as_torchgen_does() -> None:
    assert alias_facts.functional_form("add_") == "add"
    assert alias_facts.functional_form("pow_") == "pow"  # another overload name, same arguments
    assert alias_facts.functional_form("index_add_") == "index_add"
    assert alias_facts.functional_form("bernoulli_") is None  # random
    assert alias_facts.functional_form("dropout_") is None  # random
    assert alias_facts.functional_form("t_") is None  # changes metadata in place
    assert alias_facts.functional_form("relu") is None  # not in place


def test_written_operands_follow_the_schemas() -> None:
    add_ = _call("add_", [F32, F32], [fx.ref(0), fx.ref(1)], method=True)
    assert written_operands(add_) == [add_.operands[0]]
    aten = _call("torch.ops.aten.add_.Tensor", [F32, F32], [fx.ref(0), fx.ref(1)])
    assert written_operands(aten) == [aten.operands[0]]
    item = _call("item", [F32], [fx.ref(0)], method=True)
    assert not may_write_operands(item)
    unknown = _call("my_module.f", [F32, F32], [fx.ref(0), fx.ref(1)])
    assert written_operands(unknown) == list(unknown.operands)


def test_batch_norm_in_training_writes_its_statistics() -> None:
    """`native_batch_norm`'s schema does not mark the running statistics
    written; the probe sees the write through torch's decomposition."""
    vec = tensor_type_of(torch.empty(4))
    op = _call(
        "torch.nn.functional.batch_norm", [F32, vec, vec, vec, vec],
        [fx.ref(0), fx.ref(1), fx.ref(2), fx.ref(3), fx.ref(4), fx.bool_literal(True),
         encode_literal(0.1), encode_literal(1e-5)],
    )
    assert alias_facts.call_facts(op).writes
    assert may_write_operands(op) and written_operands(op) == list(op.operands)
    eval_op = _call(
        "torch.nn.functional.batch_norm", [F32, vec, vec, vec, vec],
        [fx.ref(0), fx.ref(1), fx.ref(2), fx.ref(3), fx.ref(4), fx.bool_literal(False),
         encode_literal(0.1), encode_literal(1e-5)],
    )
    assert not may_write_operands(eval_op)


def test_torch_modules_run_on_fake_tensors() -> None:
    x = tensor_type_of(torch.empty(2, 4))
    ids = tensor_type_of(torch.zeros(2, 3, dtype=torch.long))
    cases = [
        (torch.nn.Linear(4, 3), x, True, True),
        (torch.nn.ReLU(inplace=True), x, False, False),
        (torch.nn.Dropout(0.5).eval(), x, False, True),
        (torch.nn.Dropout(0.5).train(), x, True, False),
        (torch.nn.Embedding(10, 4), ids, True, True),
        (torch.nn.Embedding(10, 4, max_norm=1.0), ids, True, False),
        (torch.nn.BatchNorm1d(4).train(), x, True, False),
        (torch.nn.Flatten(0, 1), x, False, True),
    ]
    for module, ty, fresh, effect_free in cases:
        facts = alias_facts.module_facts(module, [ty], [fx.ref(0)], {})
        assert facts.known, module
        assert facts.fresh is fresh, module
        assert (not facts.writes and not facts.random) is effect_free, module


def test_probing_leaves_the_generator_and_the_module_alone() -> None:
    module = torch.nn.BatchNorm1d(4).train()
    before = module.running_mean.clone()
    state = torch.get_rng_state()
    alias_facts.module_facts(module, [F32], [fx.ref(0)], {})
    op = _call("torch.rand_like", [F32], [fx.ref(0)])
    assert not may_alias_operands(op)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(module.running_mean, before)
