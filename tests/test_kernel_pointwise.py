"""Multi-tensor pointwise kernels (`optimus_ir.kernels.pointwise`) against
the chain in fp64 torch, forward and backward (grads vs torch autograd), under
the Triton interpreter on CPU (tests/conftest.py).

The kernel computes the whole chain in fp32 and rounds once; tolerances vs
fp64: fp32 rtol=atol=1e-5; fp16 2e-3/2e-3; bf16 1.6e-2/1.6e-2 (inputs O(1),
chains kept well conditioned: divisors bounded away from 0)."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from optimus_ir.kernels import pointwise as pw
from torch_paths import scalar_path, torch_reference

pytestmark = [
    pytest.mark.gpu,  # the GPU check runs it on the device (`pytest -m gpu`)
    pytest.mark.skipif(
        os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
        reason="needs the Triton interpreter or a CUDA device",
    ),
]
DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}

_UNARY = {
    "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "neg": torch.neg,
    "exp": torch.exp, "abs": torch.abs,
    # issue 20's steps, spelled out here independently of programs.STEPS
    "log": torch.log, "erf": torch.erf, "softplus": F.softplus, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "mish": F.mish, "elu": F.elu, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos,
    "log1p": torch.log1p, "expm1": torch.expm1,
}
_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum,
}

_CLAMP = {"maximum": torch.clamp_min, "minimum": torch.clamp_max}


def _reference(xs, others, program):
    steps, n = pw.parse_program(program), len(xs)
    outs = []
    for i, x in enumerate(xs):
        v, j = x, 0
        for s in steps:
            if s.operand == "none":
                v = _UNARY[s.name](v)
            elif s.operand == "scalar" and s.name in _CLAMP:
                v = _CLAMP[s.name](v, s.scalar)  # what the lowering maps to maximum(s)
            elif s.operand == "scalar":
                v = _BINARY[s.name](v, torch.tensor(s.scalar, dtype=v.dtype, device=v.device))
            else:
                v = _BINARY[s.name](v, others[j * n + i])
                j += 1
        outs.append(v)
    return outs


def _members(dtype, seed=0):
    """Ragged shapes (numel 1, 3, not multiples of the block), a split piece
    of a wider tensor (strided rows), leading batch dims."""
    g = torch.Generator().manual_seed(seed)
    wide = torch.randn(3, 7, 150, generator=g).to(DEVICE, dtype)
    return [
        torch.randn(1, generator=g).to(DEVICE, dtype),
        torch.randn(3, generator=g).to(DEVICE, dtype),
        wide[..., :65],
        torch.randn(9, 130, generator=g).to(DEVICE, dtype),
        torch.randn(2, 5, 64, generator=g).to(DEVICE, dtype),
    ]


def _others(xs, program, broadcast, seed=1, positive=()):
    """Step-major others: per tensor step j and member i, full-shape or (when
    `broadcast(j, i)`) 1-D of the last dim; tensor steps in `positive` get
    values in [1, 2] (divisors)."""
    g = torch.Generator().manual_seed(seed)
    k = sum(1 for s in pw.parse_program(program) if s.operand == "tensor")
    out = []
    for j in range(k):
        for i, x in enumerate(xs):
            shape = (x.shape[-1],) if broadcast(j, i) else x.shape
            if j in positive:
                o = torch.rand(shape, generator=g) + 1.0
            else:
                o = torch.randn(shape, generator=g)
            out.append(o.to(DEVICE, x.dtype))
    # A strided full-shape other: the split piece of a wider tensor.
    for idx, o in enumerate(out):
        if o.dim() >= 2:
            padded = torch.zeros(*o.shape[:-1], o.shape[-1] + 3, device=DEVICE, dtype=o.dtype)
            padded[..., : o.shape[-1]] = o
            out[idx] = padded[..., : o.shape[-1]]
            break
    return out


def _check(xs, others, program, dtype):
    rtol, atol = TOL[dtype]
    outs = pw.multi_pointwise_forward(xs, others, program)
    lx = [x.detach().double().requires_grad_() for x in xs]
    lo = [o.detach().double().requires_grad_() for o in others]
    expected = _reference(lx, lo, program)
    for out, exp, x in zip(outs, expected, xs):
        assert out.dtype == x.dtype and out.shape == x.shape
        torch.testing.assert_close(out.double(), exp.detach(), rtol=rtol, atol=atol)
    g = torch.Generator().manual_seed(2)
    grads = [torch.randn(x.shape, generator=g).to(DEVICE, dtype) for x in xs]
    torch.autograd.backward(expected, [gy.double() for gy in grads])
    gx, go = pw.multi_pointwise_backward(grads, xs, others, program)
    for got, leaf in zip(gx, lx):
        assert got.dtype == dtype and got.shape == leaf.shape
        torch.testing.assert_close(got.double(), leaf.grad, rtol=rtol * 2, atol=atol * 2)
    assert len(go) == len(others)
    for got, leaf in zip(go, lo):
        assert got.shape == leaf.shape and got.dtype == dtype
        # Broadcast others' grads sum over rows (up to 42 here).
        scale = 1 if leaf.dim() > 1 or len(xs) == 0 else 10
        torch.testing.assert_close(got.double(), leaf.grad, rtol=rtol * 2, atol=atol * 2 * scale)


@pytest.mark.parametrize("program", [
    "relu", "gelu;tanh", "gelu_tanh;silu;sigmoid", "neg;exp;abs", "abs;relu;neg;tanh",
])
def test_unary_chains(program: str) -> None:
    xs = _members(torch.float32)
    _check(xs, [], program, torch.float32)


@pytest.mark.parametrize("program", [
    # issue 20's steps; abs;add(0.5) keeps log/sqrt/rsqrt/reciprocal in their domain
    "erf;softplus;hardswish;hardsigmoid", "mish;elu;sin;cos", "tanh;log1p;expm1",
    "abs;add(0.5);log;abs;add(0.5);sqrt;rsqrt;reciprocal",
])
def test_issue20_unary_chains(program: str) -> None:
    xs = _members(torch.float32)
    _check(xs, [], program, torch.float32)


def test_issue20_steps_in_half_precision() -> None:
    program = "mul(other);softplus;mish;elu;hardswish"
    xs = _members(torch.float16)
    _check(xs, _others(xs, program, broadcast=lambda j, i: i == 1), program, torch.float16)


def test_binary_with_tensors_and_broadcast_others() -> None:
    program = "mul(other);add(other);maximum(other);div(other);minimum(other);sub(other)"
    xs = _members(torch.float32)
    others = _others(xs, program, broadcast=lambda j, i: (i + j) % 2 == 1, positive=(3,))
    _check(xs, others, program, torch.float32)


def test_scalar_steps_and_mixed_chain() -> None:
    program = "mul(0.5);add(-1.25e0);silu;div(2);maximum(-0.1);minimum(.75);mul(other)"
    xs = _members(torch.float32)
    _check(xs, _others(xs, program, broadcast=lambda j, i: i == 3), program, torch.float32)


def test_maximum_minimum_ties_split_the_gradient() -> None:
    x = torch.tensor([1.0, 2.0, 3.0], device=DEVICE)
    other = torch.tensor([1.0, 0.0, 3.0], device=DEVICE)
    _check([x], [other], "maximum(other)", torch.float32)
    _check([x], [other], "minimum(other)", torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_dtypes(dtype: torch.dtype) -> None:
    program = "mul(other);add(other);gelu;mul(0.5)"
    xs = _members(dtype)
    _check(xs, _others(xs, program, broadcast=lambda j, i: j == 1), program, dtype)


def test_one_and_many_members() -> None:
    program = "add(other);tanh"
    xs = _members(torch.float32)[3:4]
    _check(xs, _others(xs, program, broadcast=lambda j, i: True), program, torch.float32)
    g = torch.Generator().manual_seed(4)
    many = [torch.randn(1 + i % 4, 1 + 7 * i, generator=g).to(DEVICE) for i in range(17)]
    _check(many, _others(many, program, broadcast=lambda j, i: i % 3 == 0), program,
           torch.float32)


def test_programs_longer_than_one_launch() -> None:
    program = ";".join(["mul(other)", "tanh", "add(0.25)"] * 4)  # 12 steps: 2 launches
    assert len(pw.parse_program(program)) > pw.MAX_STEPS
    xs = _members(torch.float32)
    _check(xs, _others(xs, program, broadcast=lambda j, i: j % 2 == 1), program, torch.float32)


def test_parse_program() -> None:
    steps = pw.parse_program(" relu ; mul(other);add( 1.5e-3 )")
    assert steps == (pw.Step("relu", "none"), pw.Step("mul", "tensor"),
                     pw.Step("add", "scalar", 1.5e-3))


@pytest.mark.parametrize("program, message", [
    ("", "empty"),
    ("relu;;tanh", "step 1 ''"),
    ("relu;swish", "step 1 'swish': unknown unary op"),
    ("add", "step 0 'add': unknown unary op \\(a binary step needs an operand\\)"),
    ("relu(other)", "step 0 'relu\\(other\\)': unknown binary op"),
    ("mul(x)", "step 0 'mul\\(x\\)': operand must be 'other' or a float literal"),
    ("mul(1e)", "step 0"),
    ("mul(nan)", "step 0"),
    ("relu tanh", "step 0 'relu tanh'"),
])
def test_invalid_programs_name_the_step(program: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pw.parse_program(program)


def test_others_are_checked() -> None:
    x = torch.randn(2, 4, device=DEVICE)
    with pytest.raises(ValueError, match="0 others for 1 tensor steps"):
        pw.multi_pointwise_forward([x], [], "add(other)")
    with pytest.raises(ValueError, match="has shape \\(3,\\)"):
        pw.multi_pointwise_forward([x], [torch.randn(3, device=DEVICE)], "add(other)")
    with pytest.raises(ValueError, match="torch.float16"):
        pw.multi_pointwise_forward([x], [x.half()], "add(other)")


# ---------------------------------------------------------------------------
# Issue 19: copies live until the launch, eager's strides, special values


def _odd_layouts(seed=7):
    """Members no flat index reads: transposed (several, same shape: the
    copies of one launch must not share memory), expanded along the last dim
    (stride 0 columns: copied), expanded rows (stride 0 rows: read in place),
    a sliced piece, a 3-D permuted slice."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(DEVICE)

    return [
        r(5, 6).t(), r(5, 6).t(), r(5, 6).t(),
        r(5, 1).expand(5, 6), r(5, 1).expand(5, 6),
        r(1, 6).expand(5, 6),
        r(5, 9)[:, 2:8],
        r(4, 5, 6)[:, :3].transpose(0, 2),
    ]


def test_issue19_transposed_members_are_all_right() -> None:
    # The issue's repro: every member but the last read a freed copy.
    from optimus_ir.kernels import ops  # noqa: F401 - registers torch.ops.optimus

    xs = [torch.randn(5, 6).t().to(DEVICE) for _ in range(3)]
    for x, y in zip(xs, pw.multi_pointwise_forward(xs, [], "tanh")):
        torch.testing.assert_close(y, torch.tanh(x), rtol=1e-6, atol=1e-6)


def test_copied_members_and_others_live_until_the_launch() -> None:
    xs = _odd_layouts()
    g = torch.Generator().manual_seed(8)
    # Others that need copies too: transposed and expanded full-shape ones,
    # 1-D broadcast ones, with contiguous inputs (results stay contiguous, so
    # the copies are what the kernel reads).
    plain = [torch.randn(6, 5, generator=g).to(DEVICE) for _ in range(3)]
    others = [torch.randn(5, 6, generator=g).to(DEVICE).t() for _ in range(3)] + [
        torch.randn(6, 1, generator=g).to(DEVICE).expand(6, 5) for _ in range(3)
    ]
    program = "mul(other);add(other);tanh"
    for members, members_others in ((xs, []), (plain, others)):
        prog = "tanh;mul(0.5)" if not members_others else program
        got = pw.multi_pointwise_forward(members, members_others, prog)
        want = _reference(members, members_others, prog)
        for y, e in zip(got, want):
            torch.testing.assert_close(y, e, rtol=1e-6, atol=1e-6)
    # The backward reads the same copies.
    _check(xs, [], "gelu;sigmoid", torch.float32)
    _check(plain, others, program, torch.float32)


def test_results_have_eager_strides() -> None:
    # Issue 19 point 6: sigmoid(tanh(piece).t()) is transposed in eager; the
    # kernel's results keep that layout (here and after chained launches).
    xs = _odd_layouts()
    g = torch.Generator().manual_seed(9)
    others = [torch.randn(x.shape[::-1], generator=g).to(DEVICE).transpose(0, -1) for x in xs]
    others += [torch.randn(x.shape[-1], generator=g).to(DEVICE) for x in xs]
    long_program = ";".join(["tanh", "mul(0.5)", "add(0.25)"] * 3)  # two launches
    for members_others, program in (
        ([], "sigmoid"), (others, "add(other);mul(other);relu"), ([], long_program),
    ):
        got = pw.multi_pointwise_forward(xs, members_others, program)
        want = _reference(xs, members_others, program)
        for y, e in zip(got, want):
            assert y.stride() == e.stride(), (program, y.stride(), e.stride())
            torch.testing.assert_close(y, e, rtol=1e-6, atol=1e-6)


SPECIALS = [
    float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40, -1e-40, 1e-30, -1e-30,
    3e-5, -3e-5, 0.3, -0.3, 5.0, -5.0, 30.0, -30.0, 100.0, -100.0,
]
"""NaN, +-inf, signed zeros, fp32 denormals, fp16 denormals (3e-5), values
where the activations bend and saturate."""


def assert_same_special_values(got: torch.Tensor, want: torch.Tensor, x: torch.Tensor,
                               rtol: float, zero_sign: bool = True) -> None:
    """NaN exactly where torch has NaN, infinities exactly, zeros with torch's
    sign (unless `zero_sign` is False), results of tiny inputs (denormals)
    within `rtol` and no absolute slack (a flushed denormal fails), the rest
    within `rtol` and an absolute 1e-6 (cancellation near gelu's tail)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    got, want, x = got.double(), want.double(), x.double()
    assert torch.equal(got.isnan(), want.isnan()), (got, want)
    infinite = want.isinf()
    assert torch.equal(got[infinite], want[infinite]), (got, want)
    zeros = want == 0
    assert torch.equal(got[zeros], want[zeros]), (got, want)
    if zero_sign:
        assert torch.equal(got[zeros].signbit(), want[zeros].signbit()), (got, want)
    tiny = (x.abs() < 1e-20) & (x != 0)
    torch.testing.assert_close(got[tiny], want[tiny], rtol=rtol, atol=0)
    torch.testing.assert_close(got, want, rtol=rtol, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"])
def test_activations_keep_torchs_special_values(name: str, dtype: torch.dtype) -> None:
    # Issue 19 point 4: relu turned NaN into 0; tanh turned -0.0 into +0.0
    # and denormals into 0.
    values = SPECIALS
    if dtype == torch.bfloat16 and os.environ.get("TRITON_INTERPRET") == "1":
        # Triton 3.9's interpreter converts bf16 denormals wrongly (its
        # software bf16 <-> fp32 conversion): `mul(1.0)` of bf16 1e-40 gives
        # 0 there, independent of any activation. GPUs convert in hardware.
        values = [v for v in SPECIALS if v == 0 or not 0 < abs(v) < 1.2e-38]
    x = torch.tensor(values, dtype=dtype, device=DEVICE)
    (got,) = pw.multi_pointwise_forward([x], [], name)
    rtol = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    # torch's own gelu gives +0.0 or -0.0 for -0.0 and negative underflow
    # depending on dtype and vector lane; the kernel gives -0.0 (the formula).
    want = torch_reference(got, _UNARY[name](x), scalar_path(_UNARY[name], x))
    assert_same_special_values(got, want, x, rtol, zero_sign=name != "gelu")


@pytest.mark.parametrize("program", ["maximum(other)", "minimum(other)", "maximum(0.0)",
                                     "minimum(0.0)", "maximum(-1.0)", "maximum(-0.0)",
                                     "minimum(-0.0)", "add(-0.0)", "mul(-0.0)"])
def test_maximum_minimum_match_torch_at_nan_ties_and_signed_zeros(program: str) -> None:
    # torch.maximum/clamp_min keep the input at ties (maximum(-0.0, 0.0) is
    # -0.0) and NaN from either side; gradients: tensor ties split, a NaN
    # passes the whole gradient to both sides, clamp's input gets it where
    # x >= min (all of it at a tie, none at NaN).
    nan = float("nan")
    x = torch.tensor([-0.0, 0.0, -0.0, nan, 1.0, nan, 2.0, -1.0, 0.0], device=DEVICE)
    o = torch.tensor([0.0, -0.0, -0.0, 1.0, nan, nan, 2.0, 3.0, 0.0], device=DEVICE)
    others = [o] if "other" in program else []
    (got,) = pw.multi_pointwise_forward([x], others, program)
    (want,) = _reference([x], others, program)
    assert torch.equal(got.isnan(), want.isnan()), (got, want)
    real = ~want.isnan()
    assert torch.equal(got[real], want[real]) and torch.equal(got[real].signbit(), want[real].signbit()), (got, want)
    lx = x.clone().requires_grad_()
    lo = [t.clone().requires_grad_() for t in others]
    g = torch.arange(1.0, 10.0, device=DEVICE)
    _reference([lx], lo, program)[0].backward(g)
    gx, go = pw.multi_pointwise_backward([g], [x], others, program)
    assert torch.equal(gx[0], lx.grad), (gx[0], lx.grad)
    for got_o, leaf in zip(go, lo):
        assert torch.equal(got_o, leaf.grad), (got_o, leaf.grad)
