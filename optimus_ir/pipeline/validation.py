"""Differential validation: the numerical check Optimus lacks.

After every pass, the IR before and after is exported and run on the same
seeded random inputs (and the same parameters: the real ones where the program
has an owner module, made-up seeded ones where it was parsed from text); the
outputs are compared with dtype-aware tolerances. A mismatch raises
`ValidationError`, which names the pass, the first differing output and the
size of the difference.

Values are not all: every run also records its *alias structure*
(`alias_structure`): for each output, whether it is, or shares memory with,
a graph input, a parameter or buffer, or an earlier output, and which; and
which inputs and parameters/buffers the run wrote in place. The rule: the
structure of the IR before the first pass (for `optimize()` and the
torch.compile backend, the graph Dynamo captured: our baseline, not the
eager module) must stay exactly the same after every pass, or
`ValidationError` names the pass and the output whose aliasing changed. So
a returned view of an input must stay a view of it (writing into it writes
the input), a fresh output must not become a view of an input or of another
output, two distinct outputs must not become one tensor (nor an output
returned twice two), and no write may be dropped or added. What is *not*
part of the structure, so passes may change it: aliasing among
intermediates (a view of an intermediate may become a copy), and outputs
that share a storage without overlapping (the members of one batched
result, two pieces of one split): no write to one can change the other.

`bisect_rewrites` uses the pipeline's global rewrite budget to find the single
pattern application that first breaks validation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from optimus_ir.foundation.diagnostics import OptimusError
from optimus_ir.dialects import fx
from optimus_ir.translate.exporter import export_graph, random_tensor
from optimus_ir.translate.importer import ImportedGraph, graph_of
from optimus_ir.foundation.types import DYNAMIC, tensor_type

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


_HALF_TYPES = (torch.float16, torch.bfloat16)


def tolerance_for(expected: torch.Tensor) -> tuple[float, float]:
    """(rtol, atol) for comparing a result against `expected`.

    `TOLERANCES` of its dtype; for fp16/bf16 the atol is at least rtol times
    the largest finite magnitude of `expected`. A fused or reordered sum in
    half precision rounds its partial sums at the scale of its terms, not of
    its result: where terms of size ~1 cancel to 0.01, a few units of
    rounding at size 1 are a 7% relative error of that element (seen by the
    fuzzer: 8 bf16 linears fused into one bmm). fp32 and fp64 keep their
    fixed tolerances, where cancellation of that size stays under atol."""
    rtol, atol = TOLERANCES.get(expected.dtype, (0.0, 0.0))
    if expected.dtype in _HALF_TYPES and expected.numel():
        magnitudes = expected.detach().abs().to(torch.float32)
        finite = magnitudes[torch.isfinite(magnitudes)]
        if finite.numel():
            atol = max(atol, rtol * float(finite.max()))
    return rtol, atol


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
        rtol, atol = tolerance_for(want)
        if want.numel() == 0:
            continue
        close = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if not bool(close.all()):
            diff = (got.to(torch.float64) - want.to(torch.float64)).abs()
            diff = torch.where(diff.isnan(), float("inf"), diff)
            worst = float(diff.max())
            mismatched = int((~close).sum())
            return Difference(
                index,
                f"{mismatched} of {want.numel()} elements differ, max abs difference "
                f"{worst:.3g} (rtol {rtol:g}, atol {atol:g})",
                worst,
            )
    return None


# ---------------------------------------------------------------------------
# Alias structure: what the outputs share memory with, what a run writes
# ---------------------------------------------------------------------------

IS = "is"
"""Relation: the output is that very tensor object."""

SHARES = "shares memory with"
"""Relation: the output is another tensor object whose elements overlap
that tensor's in memory (a view of it, it a view of the output, or both
views of one base, overlapping)."""

_EXACT_OVERLAP_LIMIT = 1 << 22
"""Above this many storage elements, overlap is decided on byte intervals
(conservative: interleaved but disjoint views count as overlapping)."""


@dataclass(frozen=True)
class AliasStructure:
    """What aliases what after one run of a graph.

    `outputs[i]` holds the relations of output leaf `i` (in
    `pytree.tree_leaves` order), as sorted `(relation, what)` pairs, where
    `relation` is `IS` or `SHARES` and `what` is `"input #k"`, a parameter
    or buffer as `"'name'"`, or an earlier output `"output #j"`; an empty
    tuple is a tensor that shares memory with none of them (a fresh tensor,
    or a non-tensor). `written` holds the inputs and parameters/buffers the
    run wrote in place (their `_version` changed)."""

    outputs: tuple[tuple[tuple[str, str], ...], ...]
    written: tuple[str, ...]

    def describe_output(self, index: int) -> str:
        """Output `index`'s relations in words."""
        relations = self.outputs[index] if index < len(self.outputs) else ()
        if not relations:
            return "shares memory with no input, parameter, buffer or other output"
        return ", ".join(
            f"is {what} itself" if relation == IS else f"{relation} {what}"
            for relation, what in relations
        )

    def difference(self, actual: AliasStructure) -> str | None:
        """How `actual` differs from this (the expected) structure, in words,
        or None when they are the same."""
        if len(self.outputs) != len(actual.outputs):
            return f"{len(actual.outputs)} outputs instead of {len(self.outputs)}"
        for index, (want, got) in enumerate(zip(self.outputs, actual.outputs)):
            if want != got:
                return (
                    f"output #{index} {actual.describe_output(index)}; "
                    f"before, it {self.describe_output(index)}"
                )
        if self.written != actual.written:
            dropped = [w for w in self.written if w not in actual.written]
            added = [w for w in actual.written if w not in self.written]
            parts = []
            if dropped:
                parts.append(f"{', '.join(dropped)} no longer written in place")
            if added:
                parts.append(f"{', '.join(added)} now written in place")
            return "; ".join(parts)
        return None


def tensor_versions(
    inputs: Sequence[Any], params_and_buffers: Mapping[str, torch.Tensor]
) -> dict[str, int]:
    """The `_version` of every tensor input (`"input #k"`) and parameter or
    buffer (`"'name'"`): take it before a run, give it to `alias_structure`
    after."""
    versions = {
        f"input #{i}": v._version for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)
    }
    versions.update({f"'{name}'": t._version for name, t in params_and_buffers.items()})
    return versions


def _memory(tensor: torch.Tensor) -> tuple[int, int, int] | None:
    """(storage address, first byte, one past the last byte) of the
    elements of `tensor`, or None when it has none (no storage, or empty)."""
    if tensor.numel() == 0 or tensor.layout is not torch.strided or tensor.device.type == "meta":
        return None
    try:
        base = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    size = tensor.element_size()
    first = tensor.storage_offset() * size
    last = first + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride())) * size
    return base, first, last + size


def _element_offsets(tensor: torch.Tensor, storage_elements: int) -> torch.Tensor:
    index = torch.arange(storage_elements, dtype=torch.int64)
    return index.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset()).reshape(-1)


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Some element of `a` lies in memory where an element of `b` lies: a
    write to one may change the other. Exact for tensors of one element
    size (up to `_EXACT_OVERLAP_LIMIT` storage elements), else decided on
    byte intervals."""
    ma, mb = _memory(a), _memory(b)
    if ma is None or mb is None or ma[0] != mb[0]:
        return False
    if ma[1] >= mb[2] or mb[1] >= ma[2]:
        return False
    if a.is_contiguous() or b.is_contiguous() or a.element_size() != b.element_size():
        return True  # a dense block overlaps whatever lies inside its interval
    elements = a.untyped_storage().nbytes() // a.element_size()
    if elements > _EXACT_OVERLAP_LIMIT:
        return True
    return bool(torch.isin(_element_offsets(a, elements), _element_offsets(b, elements)).any())


def alias_structure(
    inputs: Sequence[Any],
    params_and_buffers: Mapping[str, torch.Tensor],
    outputs: Sequence[Any],
    versions_before: Mapping[str, int] | None = None,
    values_before: Mapping[str, torch.Tensor] | None = None,
) -> AliasStructure:
    """What the `outputs` of one run alias, and what the run wrote.

    For every output leaf: whether it *is* (the same tensor object) or
    *shares memory with* (overlapping elements: a view) each tensor of
    `inputs` (the graph's flat inputs, as passed), each parameter or buffer
    of `params_and_buffers` (by qualified name) and each earlier output.
    Tensors that share a storage without overlapping (two pieces of one
    split, members of one batched result) do not alias: no write to one
    can change the other. `written`: the inputs and parameters/buffers
    whose `_version` differs from `versions_before` (`tensor_versions`,
    taken before the run), or whose values differ bit for bit from
    `values_before` (copies taken before the run, by the same labels):
    some kernels write without counting a version (a training-mode batch
    norm updates its running statistics so). Without either, nothing
    counts as written."""
    sources: list[tuple[str, torch.Tensor]] = [
        (f"input #{i}", v) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)
    ]
    sources += [(f"'{name}'", t) for name, t in params_and_buffers.items()]
    # Candidates by object and by storage: only tensors of one storage can
    # overlap, so a model with many parameters costs no scan per output.
    by_object: dict[int, list[str]] = {}
    by_storage: dict[int, list[tuple[str, torch.Tensor]]] = {}

    def add(what: str, tensor: torch.Tensor) -> None:
        by_object.setdefault(id(tensor), []).append(what)
        memory = _memory(tensor)
        if memory is not None:
            by_storage.setdefault(memory[0], []).append((what, tensor))

    for what, tensor in sources:
        add(what, tensor)
    relations: list[tuple[tuple[str, str], ...]] = []
    for index, out in enumerate(outputs):
        found: set[tuple[str, str]] = set()
        if isinstance(out, torch.Tensor):
            same = by_object.get(id(out), [])
            found.update((IS, what) for what in same)
            memory = _memory(out)
            if memory is not None:
                for what, tensor in by_storage.get(memory[0], ()):
                    if what not in same and shares_memory(out, tensor):
                        found.add((SHARES, what))
            add(f"output #{index}", out)
        relations.append(tuple(sorted(found)))
    written: list[str] = []
    now = tensor_versions(inputs, params_and_buffers)
    current = dict(sources)
    for what, version in now.items():
        if versions_before is not None and versions_before.get(what, version) != version:
            written.append(what)
        elif values_before is not None and what in values_before:
            if not _bitwise_equal(values_before[what], current[what]):
                written.append(what)
    return AliasStructure(tuple(relations), tuple(written))


def _bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and bits (NaNs of one payload are equal)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a, b) or torch.isclose(a, b, rtol=0, atol=0, equal_nan=True).all())
    return bool(torch.equal(a, b))


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
        self.last_structure = AliasStructure((), ())
        self.reference = self.run(module)
        self.structure: AliasStructure = self.last_structure
        """The alias structure of the reference run (see `check`)."""
        self.checks = 0

    def run(self, module: ModuleOp) -> list[Any]:
        """Export a lowered copy of `module` and run it on the fixed inputs;
        its alias structure is kept as `self.last_structure`."""
        lowered = _lower_clone(module)
        program = ImportedGraph(lowered, self._owner, self._objects or _empty_table(), self._codegen)
        gm = export_graph(program, missing_attributes="random", seed=self.seed)
        # Attributes made up for text IR now live on the owner: restored too.
        for name, tensor in [*self._owner.named_parameters(), *self._owner.named_buffers()]:
            if name not in self._state:
                self._state[name] = tensor
                self._saved_state[name] = tensor.detach().clone()
        inputs = [v.clone() if isinstance(v, torch.Tensor) else v for v in self.inputs]
        versions = tensor_versions(inputs, self._state)
        values = {f"input #{i}": v for i, v in enumerate(self.inputs) if isinstance(v, torch.Tensor)}
        values.update({f"'{name}'": saved for name, saved in self._saved_state.items()})
        torch.manual_seed(self.seed)
        structure: AliasStructure | None = None
        try:
            with torch.no_grad():
                outputs = pytree.tree_leaves(gm(*inputs))
            structure = alias_structure(inputs, self._state, outputs, versions, values)
            self.last_structure = structure
            # An output that is (a view of) a parameter or buffer would see
            # the state put back below: its value is kept as returned.
            outputs = [
                o.clone()
                if isinstance(o, torch.Tensor)
                and any(what.startswith("'") for _, what in structure.outputs[i])
                else o
                for i, o in enumerate(outputs)
            ]
            labels = [f"output #{i}" for i in range(len(outputs))]
            for i, after in enumerate(inputs):
                if f"input #{i}" in structure.written:
                    outputs.append(after)
                    labels.append(f"input #{i} as written in place")
            for name, tensor in self._state.items():
                if f"'{name}'" in structure.written:
                    outputs.append(tensor.detach().clone())
                    labels.append(f"'{name}' as written in place")
        finally:
            with torch.no_grad():
                for name, tensor in self._state.items():
                    label = f"'{name}'"
                    if structure is None or label in structure.written:
                        tensor.copy_(self._saved_state[name])
        self._labels = labels
        return outputs

    def check(self, module: ModuleOp, pass_name: str) -> list[Any]:
        """Raise ValidationError unless `module` matches the reference: the
        same alias structure (`alias_structure`: what each output is or
        shares memory with, what is written in place) and the same values
        (outputs and the tensors written in place)."""
        outputs = self.run(module)
        self.checks += 1
        changed = self.structure.difference(self.last_structure)
        if changed is not None:
            raise ValidationError(
                f"validation failed after pass '{pass_name}': aliasing changed: {changed}",
                pass_name=pass_name,
                output_index=None,
                max_abs_diff=None,
                op=graph_of(module).output(),
            )
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
        self.structure = self.last_structure


def _empty_table():
    from optimus_ir.foundation.objects import ObjectTable

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
