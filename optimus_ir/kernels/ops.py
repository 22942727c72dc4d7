"""The batch dialect's kernels as torch custom ops (`torch.ops.optimus.*`).

Three ops, registered through `torch.library.custom_op` when this module is
imported (`import optimus_ir` imports it, so a graph exported with them
runs in a fresh process once optimus_ir is imported):

* `optimus::grouped_linear(Tensor[] inputs, Tensor[] weights, Tensor?[] biases,
  str activation="none") -> Tensor[]`: `act(linear(x_i, W_i, b_i))` per member;
* `optimus::batched_layer_norm(Tensor[] inputs, Tensor?[] weights,
  Tensor?[] biases, float eps, str activation="none") -> Tensor[]`: layer
  norm over each member's last dim, per-member affine, then the activation;
* `optimus::multi_pointwise(Tensor[] inputs, Tensor[] others, str program)
  -> Tensor[]`: one chain of pointwise steps (`PROGRAM_GRAMMAR`) per member.

Implementations:

* CUDA tensors: the Triton launchers of `grouped_gemm.py`, `layer_norm.py`
  and `pointwise.py`, imported on the first call (never at import: triton
  is optional). Without triton, or for a dtype the kernels do not take
  (`KERNEL_DTYPES`), the reference runs.
* Every other device: the reference, plain torch ops computing what
  `lower-batch`'s torch lowering computes for the same members (one
  `F.linear` per member; `layer_norm` without affine, `* weight`, `+ bias`;
  the member op itself), so `kernels=triton` on a CPU changes no value.
  With `OPTIMUS_TRITON_ON_CPU=1` (and `TRITON_INTERPRET=1`) CPU tensors take
  the Triton launchers too: the real kernels, run by Triton's interpreter.
* Fake (meta) implementations give fresh results of the layout both real
  implementations return: contiguous for grouped_linear and
  batched_layer_norm (as eager's linear and layer_norm), eager's strides
  for multi_pointwise (a transposed member's result stays transposed,
  `multi_pointwise_strides`).
* Autograd (`register_autograd`): the backward launchers where the forward
  took Triton, else autograd through the reference recomputed from the saved
  inputs (the gradients the torch lowering gets). The layer norm's Triton
  backward recomputes the statistics with the forward launcher.

The outputs never alias the inputs (custom ops must not): the references
return new tensors (grouped_linear's and batched_layer_norm's made
contiguous where torch kept an input's layout).
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from optimus_ir.kernels.programs import (
    ACTIVATIONS,
    BINARY,
    PROGRAM_GRAMMAR,
    UNARY,
    binary_reference,
    parse_program,
    tensor_step_count,
    torch_activation,
    unary_reference,
)
from optimus_ir.foundation.environment import environment

NAMESPACE = "optimus"

GROUPED_LINEAR_SCHEMA = (
    '(Tensor[] inputs, Tensor[] weights, Tensor?[] biases, str activation="none") -> Tensor[]'
)
BATCHED_LAYER_NORM_SCHEMA = (
    "(Tensor[] inputs, Tensor?[] weights, Tensor?[] biases, float eps, "
    'str activation="none") -> Tensor[]'
)
MULTI_POINTWISE_SCHEMA = "(Tensor[] inputs, Tensor[] others, str program) -> Tensor[]"

KERNEL_DTYPES: frozenset[torch.dtype] = frozenset({torch.float32, torch.bfloat16, torch.float16})
"""The dtypes the Triton kernels take; others run the reference everywhere."""

ACTIVATION_NAMES: tuple[str, ...] = tuple(ACTIVATIONS)
"""The epilogue activations (`programs.ACTIVATIONS`)."""

UNARY_STEPS: tuple[str, ...] = tuple(UNARY)
BINARY_STEPS: tuple[str, ...] = tuple(BINARY)

reference_activation = torch_activation
"""The torch function of epilogue activation `name` (ValueError if unknown)."""


def triton_importable() -> bool:
    """Whether triton can be imported here (checked once)."""
    try:
        importlib.import_module("triton")
    except Exception:  # noqa: BLE001 - a broken install is as good as none
        return False
    return True


def triton_on_cpu() -> bool:
    """`OPTIMUS_TRITON_ON_CPU=1` with `TRITON_INTERPRET=1`: CPU tensors take
    the Triton launchers (read per call, so tests can switch it)."""
    return environment().triton_on_cpu


class KernelFallbackWarning(UserWarning):
    """A Triton kernel failed on the device; its op runs the torch reference
    from then on (same results, without the kernel's speed)."""


_FAILED_KERNELS: set[str] = set()
"""Ops whose Triton kernel failed in this process (`_guarded`)."""


def _guarded(op: str, launch: Callable[[], Any], reference: Callable[[], Any]) -> Any:
    """`launch()` (a Triton kernel of `op`), or, when it fails on a real
    device, `reference()` after one warning, with `op` off Triton for the
    rest of the process: a kernel that does not compile on this Triton or
    GPU must not stop the user's program. Under `triton_on_cpu` (the tests
    of the kernels) a failure raises."""
    try:
        return launch()
    except Exception as error:  # noqa: BLE001 - any kernel failure falls back
        if triton_on_cpu():
            raise
        _FAILED_KERNELS.add(op)
        warnings.warn(
            f"optimus::{op}: the Triton kernel failed ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}); running the torch "
            "reference for this op from now on",
            KernelFallbackWarning,
            stacklevel=3,
        )
        return reference()


def _takes_triton(tensors: Sequence[torch.Tensor], op: str) -> bool:
    """Whether a call of `op` on `tensors` runs the Triton launcher: CUDA
    tensors (or CPU ones under `triton_on_cpu`) of kernel dtypes, with triton
    importable and `op`'s kernel not failed before."""
    if not tensors or op in _FAILED_KERNELS:
        return False
    first = tensors[0]
    if first.device.type == "cuda":
        wanted = True
    elif first.device.type == "cpu":
        wanted = triton_on_cpu()
    else:
        return False
    return wanted and all(t.dtype in KERNEL_DTYPES for t in tensors) and triton_importable()


def _launcher(module: str, name: str) -> Callable[..., Any]:
    """`optimus_ir.kernels.<module>.<name>`, imported on first use."""
    return getattr(importlib.import_module(f"optimus_ir.kernels.{module}"), name)


def _triton_or_reference(
    op: str, triton: bool, launch: Callable[[], Any], reference: Callable[[], Any]
) -> Any:
    """`launch()` (the Triton launcher, `_guarded`) where `triton` says the
    call takes Triton (`_takes_triton`, forward or saved for backward), else
    `reference()`."""
    return _guarded(op, launch, reference) if triton else reference()


def _custom_op(name: str, schema: str) -> Callable[[Callable[..., Any]], Any]:
    """Registers the decorated function as the custom op `optimus::<name>`
    of `schema`, mutating none of its arguments."""
    return torch.library.custom_op(f"{NAMESPACE}::{name}", mutates_args=(), schema=schema)


def check_member_counts(
    what: str, inputs: Sequence[Any], weights: Sequence[Any], biases: Sequence[Any], note: str = ""
) -> None:
    """ValueError, naming `what`, unless there are as many weights and biases
    (each may be None, as `note` says) as inputs: one each per member."""
    if not (len(inputs) == len(weights) == len(biases)):
        raise ValueError(
            f"{what}: {len(inputs)} inputs, {len(weights)} weights, {len(biases)} biases "
            f"(one each per member{note})"
        )


def _fresh(outputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """`outputs` contiguous, as the fake implementations promise (torch keeps
    a dense input's permuted layout in pointwise results). Every reference
    step is a torch op returning a new tensor, so none aliases an input."""
    return [y if y.is_contiguous() else y.contiguous() for y in outputs]


def _grad_or_zeros(grads: Sequence[torch.Tensor | None], outputs_like: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [torch.zeros_like(o) if g is None else g for g, o in zip(grads, outputs_like)]


def _as_input(values: Sequence[torch.Tensor | None], grads: Sequence[torch.Tensor | None]) -> Any:
    """The gradient of one list argument in the structure torch.library
    expects: a list where every entry is a tensor, else one None (a list with
    Nones is not a tensor list to autograd; `_no_grad_through_nones` makes
    sure none of its tensors needed a gradient)."""
    if all(v is not None for v in values):
        return list(grads)
    return None


def _no_grad_through_nones(op: str, values: Sequence[torch.Tensor | None], what: str) -> None:
    """torch.library passes a list that holds a None to autograd as one
    opaque value: its tensors would silently get no gradient, so refuse."""
    if not torch.is_grad_enabled() or not any(v is None for v in values):
        return
    if any(v is not None and v.requires_grad for v in values):
        raise NotImplementedError(
            f"optimus::{op}: {what} mixes None and tensors that require grad; autograd "
            "cannot reach them through such a list (give every member one, or none)"
        )


def _differentiate(
    reference: Callable[..., list[torch.Tensor]],
    lists: Sequence[Sequence[torch.Tensor | None]],
    extra: Sequence[Any],
    grads: Sequence[torch.Tensor | None],
) -> list[list[torch.Tensor | None]]:
    """The gradients of `reference(*lists, *extra)` for every tensor of
    `lists` (None where it has none), by autograd through the reference
    recomputed on detached copies of the saved inputs."""
    with torch.enable_grad():
        leaves = [
            [None if t is None else t.detach().requires_grad_(t.is_floating_point()) for t in group]
            for group in lists
        ]
        outputs = reference(*leaves, *extra)
        flat = [t for group in leaves for t in group if t is not None and t.requires_grad]
        got = torch.autograd.grad(
            outputs, flat, _grad_or_zeros(grads, outputs), allow_unused=True
        )
    it = iter(got)
    return [
        [None if t is None or not t.requires_grad else next(it) for t in group]
        for group in leaves
    ]


# ---------------------------------------------------------------------------
# grouped_linear
# ---------------------------------------------------------------------------


def grouped_linear_reference(
    inputs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor | None],
    activation: str = "none",
) -> list[torch.Tensor]:
    """`act(F.linear(x_i, W_i, b_i))` per member (what lower-batch's torch
    lowering of batch.grouped_linear computes, and the activation op)."""
    act = reference_activation(activation)
    return [act(F.linear(x, w, b)) for x, w, b in zip(inputs, weights, biases, strict=True)]


def _check_grouped(inputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], biases: Sequence[Any]) -> None:
    check_member_counts("optimus::grouped_linear", inputs, weights, biases)


def _grouped_linear_triton(inputs, weights, biases, activation) -> list[torch.Tensor]:
    forward = _launcher("grouped_gemm", "grouped_linear_forward")
    return list(forward(list(inputs), list(weights), list(biases), activation))


@_custom_op("grouped_linear", GROUPED_LINEAR_SCHEMA)
def grouped_linear(
    inputs: list[torch.Tensor],
    weights: list[torch.Tensor],
    biases: list[torch.Tensor | None],
    activation: str = "none",
) -> list[torch.Tensor]:
    """N linears (+ bias, + activation) in one call: Triton's grouped GEMM on
    CUDA (and on CPU under `OPTIMUS_TRITON_ON_CPU=1`), else the reference."""
    _check_grouped(inputs, weights, biases)
    reference_activation(activation)
    _no_grad_through_nones("grouped_linear", biases, "biases")
    return _triton_or_reference(
        "grouped_linear",
        _takes_triton([*inputs, *weights], "grouped_linear"),
        lambda: _grouped_linear_triton(inputs, weights, biases, activation),
        lambda: _fresh(grouped_linear_reference(inputs, weights, biases, activation)),
    )


@grouped_linear.register_fake
def _grouped_linear_fake(inputs, weights, biases, activation="none"):
    _check_grouped(inputs, weights, biases)
    return [x.new_empty((*x.shape[:-1], w.shape[0])) for x, w in zip(inputs, weights)]


def _grouped_linear_setup(ctx, inputs, output) -> None:
    xs, ws, bs, *rest = inputs
    activation = rest[0] if rest else "none"
    ctx.arg_count = _passed_args(inputs, activation)
    ctx.count = len(xs)
    ctx.has_bias = [b is not None for b in bs]
    ctx.activation = activation
    ctx.triton = _takes_triton([*xs, *ws], "grouped_linear")
    ctx.save_for_backward(*xs, *ws, *[b for b in bs if b is not None])


def _passed_args(inputs: Sequence[Any], activation: str) -> int:
    """How many arguments autograd saw: the dispatcher drops a trailing
    argument equal to its default (`activation="none"`) before autograd,
    and setup_context gets it back filled in; backward must return one
    gradient per argument autograd saw."""
    return len(inputs) - (1 if activation == "none" else 0)


def _split_saved(ctx) -> tuple[list, list, list]:
    saved = list(ctx.saved_tensors)
    n = ctx.count
    xs, ws, rest = saved[:n], saved[n : 2 * n], iter(saved[2 * n :])
    bs = [next(rest) if has else None for has in ctx.has_bias]
    return xs, ws, bs


def _grouped_linear_backward(ctx, grads):
    xs, ws, bs = _split_saved(ctx)

    def launch() -> Any:
        outs_like = [x.new_empty((*x.shape[:-1], w.shape[0])) for x, w in zip(xs, ws)]
        backward = _launcher("grouped_gemm", "grouped_linear_backward")
        return backward(_grad_or_zeros(grads, outs_like), xs, ws, bs, ctx.activation)

    gx, gw, gb = _triton_or_reference(
        "grouped_linear",
        ctx.triton,
        launch,
        lambda: _differentiate(grouped_linear_reference, (xs, ws, bs), (ctx.activation,), grads),
    )
    return (list(gx), list(gw), _as_input(bs, gb), None)[: ctx.arg_count]


grouped_linear.register_autograd(_grouped_linear_backward, setup_context=_grouped_linear_setup)


# ---------------------------------------------------------------------------
# batched_layer_norm
# ---------------------------------------------------------------------------


def batched_layer_norm_reference(
    inputs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor | None],
    biases: Sequence[torch.Tensor | None],
    eps: float,
    activation: str = "none",
) -> list[torch.Tensor]:
    """Per member: `layer_norm` over the last dim without affine, `* w`,
    `+ b`, then the activation (lower-batch's torch lowering of
    batch.layer_norm, member by member, and the activation op)."""
    act = reference_activation(activation)
    out = []
    for x, w, b in zip(inputs, weights, biases, strict=True):
        y = F.layer_norm(x, (x.shape[-1],), None, None, eps)
        if w is not None:
            y = y * w
        if b is not None:
            y = y + b
        out.append(act(y))
    return out


def _check_norm(inputs: Sequence[torch.Tensor], weights: Sequence[Any], biases: Sequence[Any]) -> None:
    check_member_counts("optimus::batched_layer_norm", inputs, weights, biases, "; None for no affine")


@_custom_op("batched_layer_norm", BATCHED_LAYER_NORM_SCHEMA)
def batched_layer_norm(
    inputs: list[torch.Tensor],
    weights: list[torch.Tensor | None],
    biases: list[torch.Tensor | None],
    eps: float,
    activation: str = "none",
) -> list[torch.Tensor]:
    """N layer norms over their last dims (+ per-member affine, + activation)
    in one call: Triton on CUDA (and on CPU under `OPTIMUS_TRITON_ON_CPU=1`),
    else the reference."""
    _check_norm(inputs, weights, biases)
    reference_activation(activation)
    _no_grad_through_nones("batched_layer_norm", weights, "weights")
    _no_grad_through_nones("batched_layer_norm", biases, "biases")

    def launch() -> list[torch.Tensor]:
        forward = _launcher("layer_norm", "batched_layer_norm_forward")
        return list(forward(list(inputs), list(weights), list(biases), eps, activation)[0])

    return _triton_or_reference(
        "batched_layer_norm",
        _takes_triton(inputs, "batched_layer_norm"),
        launch,
        lambda: _fresh(batched_layer_norm_reference(inputs, weights, biases, eps, activation)),
    )


@batched_layer_norm.register_fake
def _batched_layer_norm_fake(inputs, weights, biases, eps, activation="none"):
    _check_norm(inputs, weights, biases)
    return [x.new_empty(x.shape) for x in inputs]


def _batched_layer_norm_setup(ctx, inputs, output) -> None:
    xs, ws, bs, eps, *rest = inputs
    activation = rest[0] if rest else "none"
    ctx.arg_count = _passed_args(inputs, activation)
    ctx.count = len(xs)
    ctx.has_weight = [w is not None for w in ws]
    ctx.has_bias = [b is not None for b in bs]
    ctx.eps = eps
    ctx.activation = activation
    ctx.triton = _takes_triton(xs, "batched_layer_norm")
    ctx.save_for_backward(*xs, *[w for w in ws if w is not None], *[b for b in bs if b is not None])


def _batched_layer_norm_backward(ctx, grads):
    saved = iter(ctx.saved_tensors)
    xs = [next(saved) for _ in range(ctx.count)]
    ws = [next(saved) if has else None for has in ctx.has_weight]
    bs = [next(saved) if has else None for has in ctx.has_bias]

    def launch() -> Any:
        forward = _launcher("layer_norm", "batched_layer_norm_forward")
        backward = _launcher("layer_norm", "batched_layer_norm_backward")
        # the statistics are recomputed (the op's schema returns only outputs)
        outputs, means, rstds = forward(xs, ws, bs, ctx.eps, ctx.activation)
        return backward(_grad_or_zeros(grads, outputs), xs, ws, bs, means, rstds, ctx.activation)

    gx, gw, gb = _triton_or_reference(
        "batched_layer_norm",
        ctx.triton,
        launch,
        lambda: _differentiate(
            batched_layer_norm_reference, (xs, ws, bs), (ctx.eps, ctx.activation), grads
        ),
    )
    return (list(gx), _as_input(ws, gw), _as_input(bs, gb), None, None)[: ctx.arg_count]


batched_layer_norm.register_autograd(
    _batched_layer_norm_backward, setup_context=_batched_layer_norm_setup
)


# ---------------------------------------------------------------------------
# multi_pointwise
# ---------------------------------------------------------------------------


def multi_pointwise_reference(
    inputs: Sequence[torch.Tensor], others: Sequence[torch.Tensor], program: str
) -> list[torch.Tensor]:
    """Each member through the program's steps with torch's own ops (the
    member op of batch.pointwise); `others[j*N + i]` is member i's tensor of
    the j-th tensor step."""
    steps = parse_program(program)
    n = len(inputs)
    out = []
    for i, x in enumerate(inputs):
        j = 0
        y = x
        for name, kind, scalar in steps:
            if kind == "none":
                y = unary_reference(name)(y)
            elif kind == "scalar":
                y = binary_reference(name, scalar)(y, scalar)
            else:
                y = binary_reference(name, others[j * n + i])(y, others[j * n + i])
                j += 1
        out.append(y)
    return out


_Layout = tuple[tuple[int, ...], tuple[int, ...], torch.dtype]


@functools.lru_cache(maxsize=1024)
def _eager_member_strides(program: str, x: _Layout, others: tuple[_Layout, ...]) -> tuple[int, ...]:
    """The strides of the reference's result for one member of these layouts,
    computed by torch itself on meta tensors (no data, no compute)."""

    def meta(layout: _Layout) -> torch.Tensor:
        return torch.empty_strided(layout[0], layout[1], dtype=layout[2], device="meta")

    # One member: others[j * 1 + 0] is its other of tensor step j.
    (y,) = multi_pointwise_reference([meta(x)], [meta(o) for o in others], program)
    return tuple(y.stride())


def multi_pointwise_strides(
    inputs: Sequence[torch.Tensor], others: Sequence[torch.Tensor], program: str
) -> list[tuple[int, ...] | None]:
    """The strides eager torch gives each member's result of `program`, None
    where that is contiguous (torch's pointwise ops keep a permuted input's
    layout: `f(x.t())` has the strides of `x.t()`); the Triton kernel's
    results have them too.

    A member whose input and others are all contiguous is contiguous (no
    work: a flag test per tensor); any other is asked of torch on meta
    tensors once per (program, layouts) and cached."""
    n = len(inputs)
    k = len(others) // n if n else 0
    if all(x.is_contiguous() for x in inputs) and all(o.is_contiguous() for o in others):
        return [None] * n  # the usual case: one flag test a tensor
    strides: list[tuple[int, ...] | None] = []
    for i, x in enumerate(inputs):
        mine = others[i::n] if k else ()
        if x.is_contiguous() and all(o.is_contiguous() for o in mine):
            strides.append(None)
            continue
        # torch.Size is a tuple: hashable as it is.
        strides.append(_eager_member_strides(
            program,
            (x.shape, x.stride(), x.dtype),
            tuple((o.shape, o.stride(), o.dtype) for o in mine),
        ))
    return strides


def _check_pointwise(inputs: Sequence[torch.Tensor], others: Sequence[torch.Tensor], program: str) -> None:
    k = tensor_step_count(program)
    if len(others) != k * len(inputs):
        raise ValueError(
            f"optimus::multi_pointwise: program '{program}' has {k} tensor steps, so "
            f"{k * len(inputs)} others for {len(inputs)} members; got {len(others)}"
        )


@_custom_op("multi_pointwise", MULTI_POINTWISE_SCHEMA)
def multi_pointwise(
    inputs: list[torch.Tensor], others: list[torch.Tensor], program: str
) -> list[torch.Tensor]:
    """One pointwise program applied to N members in one call: Triton on
    CUDA (and on CPU under `OPTIMUS_TRITON_ON_CPU=1`), else the reference.
    Results have eager's strides (`multi_pointwise_strides`), not
    necessarily contiguous ones: the member op of a transposed input keeps
    its layout in eager, so the fused op does too."""
    _check_pointwise(inputs, others, program)

    def launch() -> list[torch.Tensor]:
        forward = _launcher("pointwise", "multi_pointwise_forward")
        return list(forward(list(inputs), list(others), program))

    return _triton_or_reference(
        "multi_pointwise",
        _takes_triton([*inputs, *others], "multi_pointwise"),
        launch,
        # Every reference step is a torch op returning a new tensor: no
        # result aliases an input.
        lambda: multi_pointwise_reference(inputs, others, program),
    )


@multi_pointwise.register_fake
def _multi_pointwise_fake(inputs, others, program):
    _check_pointwise(inputs, others, program)
    # The reference on fake tensors: fresh results with eager's strides (the
    # real implementations' layout), symbolic sizes included.
    return multi_pointwise_reference(inputs, others, program)


def _multi_pointwise_setup(ctx, inputs, output) -> None:
    xs, others, program = inputs
    ctx.count = len(xs)
    ctx.program = program
    ctx.triton = _takes_triton([*xs, *others], "multi_pointwise")
    ctx.save_for_backward(*xs, *others)


def _multi_pointwise_backward(ctx, grads):
    saved = list(ctx.saved_tensors)
    xs, others = saved[: ctx.count], saved[ctx.count :]

    def launch() -> Any:
        backward = _launcher("pointwise", "multi_pointwise_backward")
        return backward(_grad_or_zeros(grads, xs), xs, others, ctx.program)

    gx, go = _triton_or_reference(
        "multi_pointwise",
        ctx.triton,
        launch,
        lambda: _differentiate(multi_pointwise_reference, (xs, others), (ctx.program,), grads),
    )
    return list(gx), list(go), None


multi_pointwise.register_autograd(_multi_pointwise_backward, setup_context=_multi_pointwise_setup)


CUSTOM_OP_TARGETS: tuple[str, ...] = tuple(
    f"torch.ops.{NAMESPACE}.{name}.default"
    for name in ("grouped_linear", "batched_layer_norm", "multi_pointwise")
)
"""The fx call targets of the three ops (pure: `optimus_ir.foundation.effects`)."""

__all__ = [
    "KernelFallbackWarning",
    "ACTIVATION_NAMES",
    "BINARY_STEPS",
    "CUSTOM_OP_TARGETS",
    "KERNEL_DTYPES",
    "PROGRAM_GRAMMAR",
    "UNARY_STEPS",
    "batched_layer_norm",
    "batched_layer_norm_reference",
    "grouped_linear",
    "grouped_linear_reference",
    "multi_pointwise",
    "multi_pointwise_reference",
    "multi_pointwise_strides",
    "parse_program",
    "reference_activation",
    "tensor_step_count",
    "triton_importable",
    "triton_on_cpu",
]
