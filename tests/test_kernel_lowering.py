"""The kernel lowering (`lower-batch{kernels=...}`) and the custom ops
`torch.ops.optimus.*` it emits (`optimus_ir.kernels.ops`).

On a CPU the custom ops run their torch references, which compute what the
torch lowering computes: the recsys models through `kernels=triton` give the
torch lowering's outputs and gradients (compared at fp32 tolerance; on this
machine they agree bit for bit) with fewer ops. With `OPTIMUS_TRITON_ON_CPU=1`
the real Triton kernels run under the interpreter (tests/conftest.py sets
TRITON_INTERPRET=1 without a CUDA device); those tests skip while a kernel
module is not in the checkout.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from optimus_ir.examples.recsys import make_recsys_model
from optimus_ir.api import optimize
from optimus_ir.kernels import ops as K
from optimus_ir.pipeline import PipelineError, parse_pipeline

ROOT = Path(__file__).resolve().parent.parent
F32 = dict(rtol=1e-5, atol=1e-5)
KERNEL_TARGETS = {"grouped_linear", "batched_layer_norm", "multi_pointwise"}


def pipeline(kernels: str, grouped: bool = False) -> str:
    fusion = "batch-fusion{cost-model=none grouped-linear=true}" if grouped else "batch-fusion{cost-model=none}"
    return (
        f"raise-fx,split-cat-simplify,{fusion},lower-batch{{kernels={kernels}}},"
        "split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
    )


def kernel_calls(gm: torch.fx.GraphModule) -> list[str]:
    return [
        n.target._opname  # type: ignore[union-attr]
        for n in gm.graph.nodes
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
        and n.target.namespace == "optimus"
    ]


def compute_calls(gm: torch.fx.GraphModule) -> int:
    """Call nodes other than getitem (what launches work)."""
    return sum(
        1 for n in gm.graph.nodes
        if n.op in ("call_function", "call_method", "call_module") and "getitem" not in str(n.target)
    )


UNIFORM = dict(num_towers=8)
MIXED = dict(
    num_towers=9, tower_width=(16, 32, 64), tower_hidden=32,
    activations=("tanh", "relu", "sigmoid"), tower_depth=2,
)


@pytest.mark.parametrize(
    "variant, grouped",
    [(UNIFORM, False), (MIXED, False), (MIXED, True)],
    ids=["uniform", "mixed", "mixed-grouped"],
)
def test_recsys_kernels_match_the_torch_lowering_with_fewer_ops(variant, grouped) -> None:
    model, (x,) = make_recsys_model(batch=16, **variant)
    torch_gm = optimize(copy.deepcopy(model), (x,), pipeline=pipeline("torch", grouped))
    kernel_model = copy.deepcopy(model)
    kernel_gm = optimize(kernel_model, (x,), pipeline=pipeline("triton", grouped), validate=True)
    calls = kernel_calls(kernel_gm)
    assert {"grouped_linear", "batched_layer_norm"} <= set(calls)
    assert not kernel_calls(torch_gm)
    assert compute_calls(kernel_gm) < compute_calls(torch_gm)
    with torch.no_grad():
        other = torch.randn_like(x)
        torch.testing.assert_close(kernel_gm(x), torch_gm(x), **F32)
        torch.testing.assert_close(kernel_gm(other), torch_gm(other), **F32)
        torch.testing.assert_close(kernel_gm(x), model(x), **F32)


@pytest.mark.parametrize("variant", [UNIFORM, MIXED], ids=["uniform", "mixed"])
def test_recsys_kernel_gradients_match_the_torch_lowering(variant) -> None:
    model, (x,) = make_recsys_model(batch=8, **variant)
    results = {}
    for kernels in ("torch", "triton"):
        owner = copy.deepcopy(model)
        gm = optimize(owner, (x,), pipeline=pipeline(kernels))
        leaf = x.clone().requires_grad_()
        gm(leaf).square().sum().backward()
        results[kernels] = (leaf.grad, {k: p.grad for k, p in owner.named_parameters()})
    (gx_t, gp_t), (gx_k, gp_k) = results["torch"], results["triton"]
    torch.testing.assert_close(gx_k, gx_t, **F32)
    assert set(gp_k) == set(gp_t)
    for name in gp_t:
        assert gp_t[name] is not None and gp_k[name] is not None, name
        torch.testing.assert_close(gp_k[name], gp_t[name], **F32, msg=name)


def test_auto_keeps_cpu_tensors_on_the_torch_lowering() -> None:
    model, (x,) = make_recsys_model(batch=4, num_towers=4)
    gm = optimize(model, (x,), pipeline=pipeline("auto"))
    assert not kernel_calls(gm)
    assert gm.optimus_report is not None


def test_kernels_option_is_validated() -> None:
    with pytest.raises(PipelineError, match="option .kernels. of pass .lower-batch. expects one of auto, triton, torch, got .cuda."):
        parse_pipeline("lower-batch{kernels=cuda}")
    assert parse_pipeline("lower-batch{kernels=triton}")[0].kernels == "triton"  # type: ignore[attr-defined]


class Pointwise(nn.Module):
    """Towers of pointwise chains: what the program grammar says, and not."""

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        outs = []
        for piece in torch.split(x, 8, dim=1):
            y = torch.tanh(piece) * 0.5
            y = torch.add(y, t)              # a shared 1-D operand
            y = torch.clamp(y, -0.25, 0.75)
            y = 1.0 - y                      # reversed sub: neg;add(1.0)
            y = torch.add(y, t, alpha=2)     # alpha != 1: torch lowering
            outs.append(F.gelu(y, approximate="tanh"))
        return torch.cat(outs, dim=1)


def test_pointwise_programs_and_what_stays_torch() -> None:
    model = Pointwise()
    x, t = torch.randn(5, 32), torch.randn(8)
    torch_gm = optimize(model, (x, t), pipeline=pipeline("torch"))
    gm = optimize(model, (x, t), pipeline=pipeline("triton"), validate=True)
    programs = [
        n.args[2] for n in gm.graph.nodes
        if n.op == "call_function" and "multi_pointwise" in str(n.target)
    ]
    assert {"tanh", "mul(0.5)", "add(other)", "maximum(-0.25);minimum(0.75)", "neg;add(1.0)", "gelu_tanh"} <= set(programs)
    assert not any("alpha" in p for p in programs)
    assert any("add" in str(n.target) and n.kwargs.get("alpha") == 2 for n in gm.graph.nodes)
    with torch.no_grad():
        torch.testing.assert_close(gm(x, t), torch_gm(x, t), **F32)
        torch.testing.assert_close(gm(x, t), model(x, t), **F32)


def test_pointwise_program_text() -> None:
    assert K.parse_program("add(other); mul(0.5);tanh") == (
        ("add", "tensor", None), ("mul", "scalar", 0.5), ("tanh", "none", None)
    )
    for bad in ("swish", "pow(2.0)", "mul(x)", "add(inf)"):
        with pytest.raises(ValueError, match="pointwise program step 0"):
            K.parse_program(bad)


def test_exported_code_calls_the_ops_and_a_fresh_process_resolves_them() -> None:
    model, (x,) = make_recsys_model(batch=4, num_towers=4)
    gm = optimize(model, (x,), pipeline=pipeline("triton"))
    assert "torch.ops.optimus.grouped_linear.default" in gm.code
    assert "torch.ops.optimus.batched_layer_norm.default" in gm.code
    script = (
        "import sys, torch, optimus_ir\n"
        "assert 'triton' not in sys.modules\n"
        "for name in ('grouped_linear', 'batched_layer_norm', 'multi_pointwise'):\n"
        "    getattr(torch.ops.optimus, name).default\n"
        "from optimus_ir.foundation.objects import resolve_qualified_name\n"
        "resolve_qualified_name('torch.ops.optimus.grouped_linear.default')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)


def test_kernel_calls_are_pure_for_dce_and_cse() -> None:
    from optimus_ir.foundation.effects import _target_kind

    for target in K.CUSTOM_OP_TARGETS:
        assert _target_kind(target) == "pure"
    assert _target_kind("torch.ops.mylib.thing.default") == "impure"


def _op_args() -> dict[str, list[tuple]]:
    g = torch.Generator().manual_seed(0)

    def r(*shape, grad=True):
        return torch.randn(*shape, generator=g).requires_grad_(grad)

    return {
        "grouped_linear": [
            ([r(4, 8), r(2, 3, 16)], [r(5, 8), r(6, 16)], [r(5), r(6)], "gelu_tanh"),
            ([r(4, 8, grad=False), r(1, 7)], [r(3, 8), r(2, 7)], [None, None], "none"),
        ],
        "batched_layer_norm": [
            ([r(4, 8), r(2, 3, 16)], [r(8), r(16)], [r(8), r(16)], 1e-5, "silu"),
            ([r(4, 8), r(5, 12)], [None, None], [None, None], 1e-6, "none"),
        ],
        "multi_pointwise": [
            ([r(4, 8), r(3, 8)], [r(4, 8), r(8)], "add(other);mul(0.5);tanh;maximum(0.1)"),
            ([r(4, 8), r(3, 6)], [], "sigmoid;neg;exp;abs"),
        ],
    }


@pytest.mark.parametrize("name", sorted(KERNEL_TARGETS))
def test_op_schemas_fake_and_autograd_pass_opcheck(name) -> None:
    op = getattr(torch.ops.optimus, name).default
    for args in _op_args()[name]:
        torch.library.opcheck(op, args)


def test_schemas_are_the_interface() -> None:
    assert str(torch.ops.optimus.grouped_linear.default._schema) == (
        "optimus::grouped_linear(Tensor[] inputs, Tensor[] weights, Tensor?[] biases, "
        'str activation="none") -> Tensor[]'
    )
    assert str(torch.ops.optimus.batched_layer_norm.default._schema) == (
        "optimus::batched_layer_norm(Tensor[] inputs, Tensor?[] weights, Tensor?[] biases, "
        'float eps, str activation="none") -> Tensor[]'
    )
    assert str(torch.ops.optimus.multi_pointwise.default._schema) == (
        "optimus::multi_pointwise(Tensor[] inputs, Tensor[] others, str program) -> Tensor[]"
    )


def test_references_equal_the_member_ops() -> None:
    args = _op_args()
    xs, ws, bs, act = args["grouped_linear"][0]
    for y, x, w, b in zip(torch.ops.optimus.grouped_linear(xs, ws, bs, act), xs, ws, bs):
        torch.testing.assert_close(y, F.gelu(F.linear(x, w, b), approximate="tanh"), rtol=0, atol=0)
    xs, ws, bs, eps, act = args["batched_layer_norm"][0]
    for y, x, w, b in zip(torch.ops.optimus.batched_layer_norm(xs, ws, bs, eps, act), xs, ws, bs):
        expected = F.silu(F.layer_norm(x, (x.shape[-1],), None, None, eps) * w + b)
        torch.testing.assert_close(y, expected, rtol=0, atol=0)
    with pytest.raises(ValueError, match="unknown activation"):
        torch.ops.optimus.grouped_linear(xs[:1], ws[:1], bs[:1], "swish")


def test_fake_results_are_fresh_members_of_eagers_layout() -> None:
    # grouped_linear and batched_layer_norm are contiguous, as eager's linear
    # and layer_norm; multi_pointwise keeps a permuted input's layout, as
    # eager's pointwise ops do (issue 19): fake and real agree.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        ys = torch.ops.optimus.grouped_linear([torch.empty(3, 5, 8)], [torch.empty(4, 8)], [None])
        ns = torch.ops.optimus.batched_layer_norm([torch.empty(3, 6).t()], [None], [None], 1e-5)
        zs = torch.ops.optimus.multi_pointwise([torch.empty(3, 6).t()], [], "relu")
    assert ys[0].shape == (3, 5, 4) and ys[0].is_contiguous()
    assert ns[0].shape == (6, 3) and ns[0].is_contiguous()
    assert zs[0].shape == (6, 3) and zs[0].stride() == (1, 6)
    x = torch.randn(3, 6).t()
    real = torch.ops.optimus.multi_pointwise([x], [], "relu")
    assert real[0].stride() == torch.relu(x).stride() == (1, 6)
    assert real[0].data_ptr() != x.data_ptr()


def test_gradients_cannot_be_lost_through_a_list_with_none() -> None:
    x, w = torch.randn(2, 4), torch.randn(3, 4)
    b = torch.randn(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="mixes None"):
        torch.ops.optimus.grouped_linear([x, x], [w, w], [b, None])


class TwoTowers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.norm = nn.ModuleList(nn.LayerNorm(8) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 8, dim=1)
        return torch.cat([torch.relu(n(l(p))) for p, l, n in zip(pieces, self.lin, self.norm)], dim=1)


def test_inductor_treats_the_custom_ops_as_opaque() -> None:
    model = TwoTowers().eval()
    x = torch.randn(4, 24)
    gm = optimize(model, (x,), pipeline=pipeline("triton"))
    assert kernel_calls(gm)
    compiled = torch.compile(gm, backend="inductor", fullgraph=True)
    through_backend = torch.compile(
        model, backend="optimus", options={"pipeline": pipeline("triton"), "inner": "inductor"}
    )
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), **F32)
        torch.testing.assert_close(through_backend(x), model(x), **F32)


# ---------------------------------------------------------------------------
# The real kernels under the Triton interpreter
# ---------------------------------------------------------------------------


def _kernel_modules() -> list[str]:
    return [
        name for name in ("grouped_gemm", "layer_norm", "pointwise")
        if importlib.util.find_spec(f"optimus_ir.kernels.{name}") is not None
    ]


@pytest.fixture
def triton_on_cpu(monkeypatch):
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs TRITON_INTERPRET=1 (tests/conftest.py sets it without CUDA)")
    monkeypatch.setenv("OPTIMUS_TRITON_ON_CPU", "1")
    assert K.triton_on_cpu()


def _needs(*modules: str) -> None:
    missing = sorted(set(modules) - set(_kernel_modules()))
    if missing:
        pytest.skip(f"kernel modules not in this checkout yet: {missing}")


def test_env_switch_sends_cpu_tensors_to_the_launchers(triton_on_cpu, monkeypatch) -> None:
    calls = []

    def fake_launcher(module: str, name: str):
        def run(*args):
            calls.append((module, name))
            return [torch.zeros(2, 3)]
        return run

    monkeypatch.setattr(K, "_launcher", fake_launcher)
    out = torch.ops.optimus.grouped_linear([torch.randn(2, 4)], [torch.randn(3, 4)], [None])
    assert calls == [("grouped_gemm", "grouped_linear_forward")] and out[0].shape == (2, 3)
    monkeypatch.setenv("OPTIMUS_TRITON_ON_CPU", "0")
    torch.ops.optimus.grouped_linear([torch.randn(2, 4)], [torch.randn(3, 4)], [None])
    assert len(calls) == 1
    monkeypatch.setenv("OPTIMUS_TRITON_ON_CPU", "1")
    torch.ops.optimus.grouped_linear([torch.randn(2, 4).double()], [torch.randn(3, 4).double()], [None])
    assert len(calls) == 1  # fp64: not a kernel dtype, the reference runs


KERNEL_TOL = dict(rtol=2e-4, atol=2e-4)
"""The kernels accumulate in another order (and use their own tanh/erf)."""


def test_small_model_runs_the_real_kernels_under_the_interpreter(triton_on_cpu) -> None:
    _needs("grouped_gemm", "layer_norm")
    model = TwoTowers().eval()
    x = torch.randn(5, 24)
    gm = optimize(copy.deepcopy(model), (x,), pipeline=pipeline("triton"))
    assert {"grouped_linear", "batched_layer_norm"} <= set(kernel_calls(gm))
    with torch.no_grad():
        torch.testing.assert_close(gm(x), model(x), **KERNEL_TOL)
    leaf, ref_leaf = x.clone().requires_grad_(), x.clone().requires_grad_()
    gm(leaf).square().sum().backward()
    model(ref_leaf).square().sum().backward()
    torch.testing.assert_close(leaf.grad, ref_leaf.grad, **KERNEL_TOL)


def test_pointwise_kernel_under_the_interpreter(triton_on_cpu) -> None:
    _needs("pointwise")
    xs = [torch.randn(4, 8, requires_grad=True), torch.randn(3, 5, requires_grad=True)]
    others = [torch.randn(4, 8), torch.randn(5)]
    program = "add(other);mul(0.5);tanh"
    got = torch.ops.optimus.multi_pointwise(xs, others, program)
    want = K.multi_pointwise_reference(xs, others, program)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **KERNEL_TOL)


def test_a_failing_kernel_falls_back_to_the_reference_with_one_warning(monkeypatch) -> None:
    # A kernel that does not compile on the user's Triton or GPU must not
    # stop the program: one KernelFallbackWarning, the reference's results,
    # and no second try for that op.
    def broken(*args, **kwargs):
        raise RuntimeError("PassManager::run failed")

    monkeypatch.delenv("OPTIMUS_TRITON_ON_CPU", raising=False)
    monkeypatch.setattr(K, "_takes_triton", lambda tensors, op: op not in K._FAILED_KERNELS)
    monkeypatch.setattr(K, "_launcher", lambda module, name: broken)
    monkeypatch.setattr(K, "_FAILED_KERNELS", set())
    xs = [torch.randn(3, 4), torch.randn(2, 5)]
    ws = [torch.randn(6, 4), torch.randn(1, 5)]
    bs = [torch.randn(6), torch.randn(1)]
    with pytest.warns(K.KernelFallbackWarning, match="grouped_linear.*PassManager::run failed"):
        got = torch.ops.optimus.grouped_linear(xs, ws, bs, "relu")
    expected = K.grouped_linear_reference(xs, ws, bs, "relu")
    assert all(torch.equal(g, e) for g, e in zip(got, expected))
    assert K._FAILED_KERNELS == {"grouped_linear"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.ops.optimus.grouped_linear(xs, ws, bs, "relu")


class TransposedTowers(nn.Module):
    """Issue 19 point 6: `sigmoid(tanh(piece).t())` is transposed in eager."""

    def forward(self, x: torch.Tensor, o: torch.Tensor) -> tuple[torch.Tensor, ...]:
        pieces = torch.split(x, 4, dim=1)
        outs = [torch.sigmoid(torch.tanh(p).t()) for p in pieces]
        # a transposed binary member with a contiguous other
        outs += [torch.tanh(p).t() * o for p in pieces]
        return tuple(outs)


@pytest.mark.parametrize("real_kernels", [False, True], ids=["reference", "interpreter"])
def test_kernel_lowering_keeps_eagers_output_strides(real_kernels, monkeypatch) -> None:
    if real_kernels:
        if os.environ.get("TRITON_INTERPRET") != "1" or importlib.util.find_spec("triton") is None:
            pytest.skip("needs triton and TRITON_INTERPRET=1 (tests/conftest.py sets it without CUDA)")
        monkeypatch.setenv("OPTIMUS_TRITON_ON_CPU", "1")
    model = TransposedTowers()
    x, o = torch.randn(5, 16), torch.randn(4, 5)
    gm = optimize(model, (x, o), pipeline=pipeline("triton"))
    assert kernel_calls(gm).count("multi_pointwise") >= 2
    with torch.no_grad():
        got, want = gm(x, o), model(x, o)
    assert [y.stride() for y in got] == [y.stride() for y in want]
    assert want[0].stride() == (1, 4)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **KERNEL_TOL)
