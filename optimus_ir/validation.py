"""Differential validation: the numerical check Optimus lacks.

After every pass, the IR before and after is exported and run on the same
seeded random inputs (and the same parameters: the real ones where the program
has an owner module, made-up seeded ones where it was parsed from text); the
outputs are compared with dtype-aware tolerances. A mismatch raises
`ValidationError`, which names the pass, the first differing output and the
size of the difference.

`bisect_rewrites` uses the pipeline's global rewrite budget to find the single
pattern application that first breaks validation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from optimus_ir.diagnostics import OptimusError
from optimus_ir.dialects import fx
from optimus_ir.exporter import export_graph, random_tensor
from optimus_ir.importer import ImportedGraph, graph_of
from optimus_ir.types import DYNAMIC, tensor_type

SYMBOLIC_SIZE = 4
"""The size given to every `?` dimension of a made-up input."""

# (rtol, atol) per dtype; integer and bool outputs must match exactly.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


class ValidationError(OptimusError):
    """A pass (or rewrite) changed the program's results; located at the
    graph's `fx.output` when the IR came from text."""

    def __init__(
        self,
        message: str,
        *,
        pass_name: str,
        output_index: int | None,
        max_abs_diff: float | None,
        op: Operation | None = None,
    ) -> None:
        super().__init__(message, op)
        self.pass_name = pass_name
        self.output_index = output_index
        self.max_abs_diff = max_abs_diff


@dataclass
class Difference:
    """The first output that differs beyond tolerance."""

    index: int
    description: str
    max_abs_diff: float | None


def compare_outputs(expected: Sequence[Any], actual: Sequence[Any]) -> Difference | None:
    """The first output of `actual` that differs from `expected`, or None."""
    if len(expected) != len(actual):
        return Difference(-1, f"{len(actual)} outputs instead of {len(expected)}", None)
    for index, (want, got) in enumerate(zip(expected, actual)):
        if not isinstance(want, torch.Tensor):
            if want != got:
                return Difference(index, f"value {got!r} instead of {want!r}", None)
            continue
        if not isinstance(got, torch.Tensor):
            return Difference(index, f"{type(got).__name__} instead of a tensor", None)
        if got.shape != want.shape or got.dtype != want.dtype:
            return Difference(
                index,
                f"{got.dtype} {tuple(got.shape)} instead of {want.dtype} {tuple(want.shape)}",
                None,
            )
        if got.device != want.device:
            return Difference(index, f"device {got.device} instead of {want.device}", None)
        rtol, atol = TOLERANCES.get(want.dtype, (0.0, 0.0))
        if want.numel() == 0:
            continue
        close = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if not bool(close.all()):
            diff = (got.to(torch.float64) - want.to(torch.float64)).abs()
            diff = torch.nan_to_num(diff, nan=float("inf"))
            worst = float(diff.max())
            mismatched = int((~close).sum())
            return Difference(
                index,
                f"{mismatched} of {want.numel()} elements differ, max abs difference "
                f"{worst:.3g} (rtol {rtol:g}, atol {atol:g})",
                worst,
            )
    return None


def random_inputs(module: ModuleOp, seed: int = 0) -> list[Any]:
    """Seeded inputs of the types of the graph's placeholders (`?` -> 4)."""
    generator = torch.Generator().manual_seed(seed)
    inputs: list[Any] = []
    for op in graph_of(module).block.ops:
        if not isinstance(op, fx.PlaceholderOp):
            continue
        ty = op.result.type
        if not isinstance(ty, TensorType):
            raise ValidationError(
                f"placeholder '{op.target.data}' has non-tensor type {ty}: "
                "give real example inputs to validate this graph",
                pass_name="<inputs>", output_index=None, max_abs_diff=None,
            )
        shape = tuple(SYMBOLIC_SIZE if d == DYNAMIC else d for d in ty.get_shape())
        concrete = tensor_type(shape, ty.element_type, None)
        inputs.append(random_tensor(concrete, generator))
    return inputs


def _lower_clone(module: ModuleOp) -> ModuleOp:
    clone = module.clone()
    dialects = {op.dialect_name() for op in graph_of(clone).block.ops}
    if dialects - {"fx"}:
        from optimus_ir.pipeline import run_pipeline

        lowering = "lower-batch,lower-to-fx" if "batch" in dialects else "lower-to-fx"
        run_pipeline(clone, lowering, verify_each=False)
    return clone


class DifferentialValidator:
    """Runs a program's IR on fixed inputs and checks each pass against the last.

    Use as the pipeline's after-pass hook: `validator.after_pass(name, module)`.
    """

    def __init__(
        self,
        program: ImportedGraph | ModuleOp,
        inputs: Sequence[Any] | None = None,
        seed: int = 0,
    ) -> None:
        self.seed = seed
        if isinstance(program, ImportedGraph):
            self._owner = program.owner
            self._objects = program.objects
            self._codegen = program.codegen
            module = program.module
        else:
            self._owner = torch.nn.Module()
            self._objects = None
            self._codegen = None
            module = program
        self.inputs = list(inputs) if inputs is not None else random_inputs(module, seed)
        # Each run starts from the same state and leaves the caller's alone:
        # a graph that writes its inputs or the owner's buffers in place would
        # otherwise feed the next run other values and change the model that
        # `optimize()` promises not to touch. The writes themselves are
        # compared too (a pass that drops or moves one is caught).
        self._state = {
            name: tensor
            for name, tensor in [*self._owner.named_parameters(), *self._owner.named_buffers()]
        }
        self._saved_state = {name: tensor.detach().clone() for name, tensor in self._state.items()}
        self._labels: list[str] = []
        self.reference = self.run(module)
        self.checks = 0

    def run(self, module: ModuleOp) -> list[Any]:
        """Export a lowered copy of `module` and run it on the fixed inputs."""
        lowered = _lower_clone(module)
        program = ImportedGraph(lowered, self._owner, self._objects or _empty_table(), self._codegen)
        gm = export_graph(program, missing_attributes="random", seed=self.seed)
        inputs = [v.clone() if isinstance(v, torch.Tensor) else v for v in self.inputs]
        versions = {name: tensor._version for name, tensor in self._state.items()}
        torch.manual_seed(self.seed)
        try:
            with torch.no_grad():
                outputs = pytree.tree_leaves(gm(*inputs))
            labels = [f"output #{i}" for i in range(len(outputs))]
            for i, (before, after) in enumerate(zip(self.inputs, inputs)):
                if isinstance(before, torch.Tensor) and after._version != 0:
                    outputs.append(after)
                    labels.append(f"input #{i} as written in place")
            for name, tensor in self._state.items():
                if tensor._version != versions[name]:
                    outputs.append(tensor.detach().clone())
                    labels.append(f"'{name}' as written in place")
        finally:
            with torch.no_grad():
                for name, tensor in self._state.items():
                    if tensor._version != versions[name]:
                        tensor.copy_(self._saved_state[name])
        self._labels = labels
        return outputs

    def check(self, module: ModuleOp, pass_name: str) -> list[Any]:
        """Raise ValidationError unless `module` matches the reference outputs."""
        outputs = self.run(module)
        self.checks += 1
        difference = compare_outputs(self.reference, outputs)
        if difference is not None:
            if difference.index < 0:
                where = "the outputs (or the tensors written in place)"
            else:
                where = self._labels[difference.index]
            raise ValidationError(
                f"validation failed after pass '{pass_name}': {where}: {difference.description}",
                pass_name=pass_name,
                output_index=difference.index,
                max_abs_diff=difference.max_abs_diff,
                op=graph_of(module).output(),
            )
        return outputs

    def after_pass(self, pass_name: str, module: ModuleOp) -> None:
        """Check the IR after `pass_name` against the IR before it."""
        self.reference = self.check(module, pass_name)


def _empty_table():
    from optimus_ir.objects import ObjectTable

    return ObjectTable()


@dataclass
class BisectResult:
    """The rewrite that first breaks validation."""

    rewrites_ok: int
    culprit: Any  # the RewriteRecord of rewrite number rewrites_ok + 1
    error: ValidationError

    def format(self) -> str:
        return (
            f"first failing rewrite: #{self.rewrites_ok + 1}: {self.culprit}\n"
            f"  {self.error}"
        )


def bisect_rewrites(
    make_module: Callable[[], ModuleOp],
    pipeline: str,
    validate: Callable[[ModuleOp], None],
) -> BisectResult | None:
    """Find the smallest rewrite budget N for which `pipeline` breaks `validate`.

    `make_module` returns a fresh copy of the input IR; `validate` raises
    ValidationError when the transformed module's results are wrong. Returns
    None when the full pipeline validates. Needs O(log rewrites) pipeline runs.
    """
    from optimus_ir.pipeline import run_pipeline

    def failure(budget: int | None):
        module = make_module()
        stats = run_pipeline(module, pipeline, max_rewrites=budget)
        try:
            validate(module)
        except ValidationError as error:
            return error, stats
        return None, stats

    error, stats = failure(None)
    if error is None:
        return None
    low, high = 0, stats.total_rewrites  # budget `low` passes, `high` fails
    first_error = error
    while high - low > 1:
        middle = (low + high) // 2
        error, _ = failure(middle)
        if error is None:
            low = middle
        else:
            high, first_error = middle, error
    if low == 0:
        error0, _ = failure(0)
        if error0 is not None:
            raise ValidationError(
                f"validation fails with no rewrite at all: {error0.message}",
                pass_name=error0.pass_name, output_index=error0.output_index,
                max_abs_diff=error0.max_abs_diff, op=error0.op,
            )
    _, stats = failure(high)
    culprit = stats.rewrite_log[high - 1]
    return BisectResult(low, culprit, first_error)
