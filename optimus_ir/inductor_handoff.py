"""The last step before our graph goes to Inductor: wide stacks of graph
inputs become one opaque call.

Under torch.compile the parameters are graph inputs, so a batched linear's
lowering stacks N weight *inputs* on every call (`torch.stack([w0, ...,
wN])`). Inductor generates C++ (or Triton) code for a concatenation with
one loop per input: for the 64-tower recsys model the two kernels holding
the weight stacks were 240 KB of the 380 KB of generated source, and
compiling them was a third of the whole compile. There is nothing for
Inductor to fuse into such a stack (its inputs are graph inputs, its users
batched matmuls, which are extern calls), so the stack is handed over as
`torch.ops.optimus.stack`, a custom op Inductor calls as an extern kernel
(`torch.stack` itself at run time): the same copy, no generated code.
Measured on the 64-tower mixed model (`benchmarks/bench_compile.py`):
first-call compile 28.6 s -> 19.7 s, steady state unchanged.

A graph compiled with grad mode off (inference; Dynamo guards on grad
mode) gets `torch.ops.optimus.stack_inference` instead: the same extern
stack without the custom op's Python autograd kernel, which cost ~10 us per
call (on the 64-tower models, 12 stacks: ~0.1 ms of a ~1.5 ms call; the
activations-64 model measured 0.75x of Inductor alone with it, 1.13x
without, interleaved, on a loaded machine).

Only stacks of at least `OPAQUE_STACK_MIN_INPUTS` tensors that are all
graph inputs are rewritten: a stack of computed values stays a stack, so
Inductor can still write the producers straight into the result.
"""

from __future__ import annotations

import torch
import torch.fx

from optimus_ir.analysis.cost_model import INDUCTOR_EXTERN_STACK_MIN_INPUTS

OPAQUE_STACK_MIN_INPUTS = INDUCTOR_EXTERN_STACK_MIN_INPUTS
"""One more than Inductor's `max_pointwise_cat_inputs` default (8): up to
that many inputs Inductor emits one fused pointwise kernel, which is cheap
to compile (batch-fusion's Inductor target prices the two forms from the
same constant)."""


@torch.library.custom_op("optimus::stack", mutates_args=())
def opaque_stack(tensors: list[torch.Tensor], dim: int) -> torch.Tensor:
    """`torch.stack(tensors, dim)`, opaque to compilers (an extern call in
    Inductor's output instead of generated code)."""
    return torch.stack(tensors, dim)


@opaque_stack.register_fake
def _opaque_stack_fake(tensors: list[torch.Tensor], dim: int) -> torch.Tensor:
    return torch.stack(tensors, dim)


def _opaque_stack_setup(ctx, inputs, output) -> None:
    ctx.dim = inputs[1]


def _opaque_stack_backward(ctx, grad: torch.Tensor) -> tuple[list[torch.Tensor], None]:
    # (`dim` has no default: with one, torch.library's check of the
    # backward's structure depends on whether the caller passed it)
    return list(grad.unbind(ctx.dim)), None


opaque_stack.register_autograd(_opaque_stack_backward, setup_context=_opaque_stack_setup)

OPAQUE_STACK_TARGET = torch.ops.optimus.stack.default

# The same stack without autograd, for graphs compiled for inference (grad
# mode off: Dynamo guards on it, so such a graph never runs with grad). The
# custom op's Python autograd kernel runs on every call, grad mode or not:
# measured (22 inputs of 4 KiB, one thread) torch.stack 4.1 us, the custom
# op 14.5 us, this op 8.1 us; the 64-tower recsys graphs call 12 of them.
_LIBRARY = torch.library.Library("optimus", "FRAGMENT")
_LIBRARY.define("stack_inference(Tensor[] tensors, int dim) -> Tensor")


def _stack_inference(tensors: list[torch.Tensor], dim: int) -> torch.Tensor:
    return torch.stack(tensors, dim)


_LIBRARY.impl("stack_inference", _stack_inference, "CompositeExplicitAutograd")
torch.library.register_fake("optimus::stack_inference", _stack_inference, lib=_LIBRARY)

INFERENCE_STACK_TARGET = torch.ops.optimus.stack_inference.default


def make_wide_input_stacks_opaque(
    gm: torch.fx.GraphModule, min_inputs: int = OPAQUE_STACK_MIN_INPUTS, *, inference: bool = False
) -> int:
    """Replace every `torch.stack` of at least `min_inputs` graph inputs in
    `gm` by `torch.ops.optimus.stack` (in place); the number replaced.
    `inference`: the graph only runs with grad mode off, and the stack
    without autograd (`optimus.stack_inference`, cheaper per call) is used."""
    target = INFERENCE_STACK_TARGET if inference else OPAQUE_STACK_TARGET
    replaced = 0
    for node in gm.graph.find_nodes(op="call_function", target=torch.stack):
        tensors = node.args[0] if node.args else node.kwargs.get("tensors")
        if not isinstance(tensors, list | tuple) or len(tensors) < min_inputs:
            continue
        if not all(isinstance(t, torch.fx.Node) and t.op == "placeholder" for t in tensors):
            continue
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if not isinstance(dim, int) or set(node.kwargs) - {"tensors", "dim"}:
            continue  # `out=` or a computed dim: leave it to Inductor
        node.target = target
        node.args = (list(tensors), dim)
        node.kwargs = {}
        replaced += 1
    if replaced:
        gm.recompile()
    return replaced


__all__ = ["INFERENCE_STACK_TARGET", "OPAQUE_STACK_MIN_INPUTS", "OPAQUE_STACK_TARGET", "make_wide_input_stacks_opaque", "opaque_stack"]
