"""`user-replacements`: the rewrites users register as two torch functions.

`optimus_ir.register_replacement(name, pattern, replacement, example_inputs)`
(`optimus_ir/replacements.py`) traces both functions, imports and raises them
to the torch dialect in memory, checks that they agree, and stores the result
here as a `CompiledReplacement` in `REPLACEMENTS`. This module is the pass
that applies them; it knows nothing of tracing (layering: a pass may not
import the importer or the pipeline).

Matching (`ReplacementPattern`, one named `RewritePattern` per replacement,
so `--pass-statistics`, `--bisect-rewrites` and `--validate-each` see each
replacement by its name):

* the pattern's ops form a DAG from its inputs to its root (the op that
  computes its last output); the driver tries a replacement only on ops of
  the root's class (`roots`), and the matcher walks the pattern backwards
  from the root through operands: same op name, same properties and
  attributes (the literal arguments), same result index; pattern inputs are
  wildcards bound consistently (an input used twice must be the same SSA
  value); two pattern ops never match one graph op. The pattern's commuted
  spellings (swapped operands of up to `MAX_COMMUTED_OPS` two-tensor
  `torch.mul` / alpha-1 `torch.add` ops) are templates too, tried in turn.
  Cost: the pattern's size times its templates per candidate root, so the
  pass is linear in the graph;
* types: each bound input must be a tensor of the example's dtype and rank;
  its sizes must be static (a symbolic `?` size declines, with a remark) and
  equal to the example's where the registration check found that the
  functions need them (`InputPolicy.fixed_dims`);
* layout: an input whose replacement raised on a strided layout variant at
  registration (`InputPolicy.layout == CONTIGUOUS`) binds only a value the
  layout analysis proves contiguous (`known_contiguous`: recorded input
  strides, contiguous-result ops, views through their relation); anything
  else declines with a remark naming the variant the replacement failed
  on and its error;
* safety: every matched op is pure (`optimus_ir.foundation.effects`); every result of a
  matched op that is not a pattern output is used only inside the match
  (else it "escapes": a graph output or another reader would lose it); no
  op that may write to the alias class of a bound input or of a non-root
  output (an in-place write, an unknown call) lies between the first matched
  op and the root, and no reader of a non-root output lies before the root
  (the replacement is computed at the root);
* `extra_check(match)`, when given, is called with a `ReplacementMatch` and
  must return True;
* the replacement is rebuilt for the matched types: its template's torch
  ops are cloned onto the bound values and their result types inferred by
  the ops themselves (`TorchOp.expected_types`); the new outputs' types must
  equal the matched outputs' types, else no rewrite.

Every match that passed the structural walk and was then declined gets a
remark saying why (`user-replacements: 'NAME' not applied: ...`), every
rewrite a remark saying where (`user-replacements: 'NAME' applied`); each
(op, replacement, reason) is reported once per run.

Pass options: `user-replacements{only=a,b}` runs only the named
replacements. Each replacement is also registered as a pass of its own name
(`replacement_pass_class`, written into the pass registry by
`register_replacement_pass`), so `-p raise-fx,my-replacement` runs just it.
With no replacement registered the pass returns before looking at the IR.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from optimus_ir.analysis import alias_class, known_contiguous, may_write_operands, target_name
from optimus_ir.analysis.graph_walk import reachable
from optimus_ir.foundation.diagnostics import OptimusError, emit_remark
from optimus_ir.foundation.effects import effect_kind
from optimus_ir.foundation.rewriting import GreedyRewriteDriver, PatternPass, RewriteConfig, patch_operands
from optimus_ir.foundation.statistics import current_pass_context
from optimus_ir.foundation.types import dtype_of

PASS_NAME = "user-replacements"

KEBAB_CASE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
"""What a replacement's name must look like (a pass name)."""


# ---------------------------------------------------------------------------
# What registration stores
# ---------------------------------------------------------------------------


ANY_LAYOUT = "any"
"""A layout requirement (`InputPolicy.layout`): the replacement ran and
agreed with the pattern on every layout variant of this input."""

CONTIGUOUS = "contiguous"
"""A layout requirement (`InputPolicy.layout`): the replacement raised on a
layout variant of this input (a slice, a transpose, a channels-last or an
expanded tensor) on which the pattern ran; the bound value must be provably
contiguous (`known_contiguous`)."""

LAYOUT_REQUIREMENTS = (ANY_LAYOUT, CONTIGUOUS)


@dataclass(frozen=True)
class InputPolicy:
    """Which tensors a pattern input may be bound to: the example's dtype
    and rank, the sizes the registration check could not vary, and the
    layout the replacement needs (the registration's layout variants)."""

    dtype: torch.dtype
    element_type: Attribute
    rank: int
    fixed_dims: tuple[int | None, ...]
    """Per dim: the size it must have, or None for any static size."""
    layout: str = ANY_LAYOUT
    """`ANY_LAYOUT` or `CONTIGUOUS`."""
    layout_evidence: str = ""
    """Why the layout is required: the variant the replacement failed on at
    registration and its error (for the remark of a declined match)."""

    def __post_init__(self) -> None:
        if self.layout not in LAYOUT_REQUIREMENTS:
            raise ValueError(
                f"unknown layout requirement {self.layout!r} (one of {', '.join(LAYOUT_REQUIREMENTS)})"
            )

    def problem(self, value: SSAValue) -> str | None:
        """Why `value` cannot be bound to this input (None: it can)."""
        ty = value.type
        if not isinstance(ty, TensorType):
            return f"{_value_name(value)} is not a tensor"
        if ty.element_type != self.element_type:
            return (
                f"{_value_name(value)} has dtype {_dtype_name(ty.element_type)}; the replacement "
                f"was checked for {str(self.dtype).removeprefix('torch.')}"
            )
        shape = ty.get_shape()
        if len(shape) != self.rank:
            return f"{_value_name(value)} has rank {len(shape)}, the pattern's input has rank {self.rank}"
        if any(size < 0 for size in shape):
            return f"{_value_name(value)} has symbolic sizes ({_format_type(ty)})"
        for dim, (size, fixed) in enumerate(zip(shape, self.fixed_dims)):
            if fixed is not None and size != fixed:
                return (
                    f"{_value_name(value)} has size {size} in dim {dim}; the replacement was "
                    f"checked only with size {fixed} there"
                )
        return self.layout_problem(value)

    def layout_problem(self, value: SSAValue) -> str | None:
        """Why `value`'s layout (what `strides_of` proves about it) may not
        be the one the replacement needs (None: it is)."""
        if self.layout == ANY_LAYOUT or known_contiguous(value):
            return None
        needs = "the replacement needs a contiguous input here"
        why = f"{needs}: {self.layout_evidence}" if self.layout_evidence else needs
        return f"{_value_name(value)} may not be contiguous ({why})"


@dataclass(frozen=True)
class ReplacementMatch:
    """What `extra_check(match)` is given: one match of a pattern.

    `inputs[i]` is the SSA value bound to the pattern function's i-th
    parameter (`input_names[i]`), `input_types[i]` its `TensorType`,
    `input_shapes[i]` / `input_dtypes[i]` the same as Python values;
    `ops` are the matched graph ops in the pattern's order (the root last),
    `root` the op computing the pattern's last output, `outputs` the matched
    values of the pattern's outputs."""

    name: str
    inputs: tuple[SSAValue, ...]
    input_names: tuple[str, ...]
    input_types: tuple[TensorType, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[torch.dtype, ...]
    ops: tuple[Operation, ...]
    root: Operation
    outputs: tuple[SSAValue, ...]


@dataclass
class CompiledReplacement:
    """A registered replacement, ready for the matcher: the raised pattern
    and replacement graphs (kept in memory), the input policies and the
    user's `extra_check`."""

    name: str
    input_names: tuple[str, ...]
    inputs: tuple[InputPolicy, ...]
    pattern_block: Block
    """The raised pattern graph's block: placeholders, ops, `fx.output`."""
    replacement_block: Block
    """The raised replacement graph's block; its ops are torch ops only."""
    extra_check: Callable[[ReplacementMatch], bool] | None = None
    keep_alive: tuple[Any, ...] = ()
    """The modules owning the blocks (so they stay attached)."""
    # derived by `__post_init__`:
    templates: tuple[PatternTemplate, ...] = field(init=False)
    """The pattern as written, then its commuted spellings (`_commuted`)."""
    replacement_inputs: dict[SSAValue, int] = field(init=False)
    replacement_ops: tuple[Operation, ...] = field(init=False)
    replacement_outputs: tuple[SSAValue, ...] = field(init=False)

    def __post_init__(self) -> None:
        written = PatternTemplate.of(self.pattern_block)
        self.templates = (written, *_commuted(written))
        self.replacement_inputs, self.replacement_ops, self.replacement_outputs = _split_graph(
            self.replacement_block
        )

    # the pattern as written
    @property
    def pattern_inputs(self) -> dict[SSAValue, int]:
        return self.templates[0].inputs

    @property
    def pattern_ops(self) -> tuple[Operation, ...]:
        return self.templates[0].ops

    @property
    def pattern_outputs(self) -> tuple[SSAValue, ...]:
        return self.templates[0].outputs

    @property
    def root(self) -> Operation:
        return self.templates[0].root


@dataclass(frozen=True)
class PatternTemplate:
    """One spelling of a pattern for the matcher: its placeholders (value ->
    parameter index), the ops its last output depends on (block order), its
    outputs and its root (the op computing the last output)."""

    inputs: dict[SSAValue, int]
    ops: tuple[Operation, ...]
    outputs: tuple[SSAValue, ...]
    root: Operation
    block: Block

    @staticmethod
    def of(block: Block) -> PatternTemplate:
        """The template of a raised pattern graph's block."""
        inputs, body, outputs = _split_graph(block)
        owners = [v.owner for v in outputs if isinstance(v.owner, Operation)]
        if not owners:
            raise ValueError("the pattern returns its inputs unchanged: it has no op to match")
        position = {op: i for i, op in enumerate(body)}
        root = max(owners, key=lambda op: position.get(op, -1))
        # the ops the root depends on, in block order (dead ops left out)
        needed = reachable(
            root, lambda op: (v.owner for v in op.operands if v.owner in position)  # type: ignore[misc]
        )
        return PatternTemplate(inputs, tuple(op for op in body if op in needed), outputs, root, block)


MAX_COMMUTED_OPS = 3
"""Commuted spellings are made for at most this many commutative ops of a
pattern (2**3 = 8 templates); operands of further ones match as written."""


def _is_commutative(op: Operation) -> bool:
    """A two-tensor `torch.mul`, or `torch.add` with alpha 1: the same value
    (bit for bit, with the same result type) with the operands swapped."""
    if len(op.operands) != 2 or op.operands[0] is op.operands[1]:
        return False
    if op.name == "torch.mul":
        return True
    if op.name == "torch.add":
        alpha = op.properties.get("alpha")
        return alpha is None or getattr(alpha, "data", None) == 1
    return False


def _commuted(template: PatternTemplate) -> list[PatternTemplate]:
    """The pattern's other spellings: every combination of swapped operands
    of its first `MAX_COMMUTED_OPS` commutative ops (`x * f(x)` for
    `f(x) * x`). Each is a clone of the pattern's graph op."""
    positions = [i for i, op in enumerate(template.ops) if _is_commutative(op)][:MAX_COMMUTED_OPS]
    graph = template.block.parent_op()
    if not positions or graph is None:
        return []
    body_index = {op: i for i, op in enumerate(template.block.ops)}
    wanted = [body_index[template.ops[i]] for i in positions]
    variants: list[PatternTemplate] = []
    for mask in range(1, 2 ** len(wanted)):
        clone = graph.clone()
        block = clone.regions[0].blocks[0]
        ops = list(block.ops)
        for bit, index in enumerate(wanted):
            if mask >> bit & 1:
                op = ops[index]
                op.operands = [op.operands[1], op.operands[0]]
        variants.append(PatternTemplate.of(block))
    return variants


def _split_graph(block: Block) -> tuple[dict[SSAValue, int], tuple[Operation, ...], tuple[SSAValue, ...]]:
    """(placeholder result -> parameter index, the ops between, the returned
    values) of a raised `fx.graph` block of a traced function."""
    inputs: dict[SSAValue, int] = {}
    ops: list[Operation] = []
    outputs: tuple[SSAValue, ...] = ()
    for op in block.ops:
        if op.name == "fx.placeholder":
            inputs[op.results[0]] = len(inputs)
        elif op.name == "fx.output":
            outputs = tuple(op.operands)
        else:
            ops.append(op)
    return inputs, tuple(ops), outputs


REPLACEMENTS: dict[str, CompiledReplacement] = {}
"""Every registered replacement by name, in registration order (the order
the pass tries them in). Written by `optimus_ir.replacements`."""


# ---------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------


class _WriteIndex:
    """Per pass run: the ops that may write to a value's alias class,
    computed once per value. Replacements insert only pure torch ops and
    erase only pure ones, so a list stays a (conservative) superset."""

    def __init__(self) -> None:
        self.writers: dict[SSAValue, tuple[Operation, ...]] = {}

    def of(self, value: SSAValue) -> tuple[Operation, ...]:
        known = self.writers.get(value)
        if known is None:
            found: dict[Operation, None] = {}
            for member in alias_class(value):
                for use in member.uses:
                    if may_write_operands(use.operation):
                        found[use.operation] = None
            known = self.writers[value] = tuple(found)
        return known


MAX_ROUNDS = 4
"""Driver runs per pass run at most: a round after one that rewrote finds
the matches over the previous round's replacements."""


class _Run:
    """What the patterns of one pass run share.

    Rewrites are applied in two steps so that the pass stays linear when a
    replaced value feeds a wide op (a `cat` of thousands of towers): xDSL
    rebuilds an op's operand tuple for each operand replaced, so redirecting
    the uses at every rewrite would cost the consumer's width each time.
    A rewrite inserts the replacement's ops and records old value -> new
    value (`subst`); the matched ops stay, marked dead (no later match may
    use them), until `finish` patches every op's operands in one walk and
    erases the dead ops. A match that needs a replaced value's new users
    (a pattern over another replacement's result) is found by the next
    round (`MAX_ROUNDS`)."""

    def __init__(self) -> None:
        self.writes = _WriteIndex()
        self.reported: set[tuple[Operation, str]] = set()
        self.subst: dict[SSAValue, SSAValue] = {}
        self.dead: list[Operation] = []
        self.dead_set: set[Operation] = set()

    def finish(self, root: Operation) -> bool:
        """Point every use of a replaced value at its replacement and erase
        the replaced ops; returns whether there was anything to do."""
        if not self.subst:
            return False
        final: dict[SSAValue, SSAValue] = {}
        for old in self.subst:
            new = self.subst[old]
            while new in self.subst:  # a replacement's value replaced again
                new = self.subst[new]
            final[old] = new
        for op in root.walk():
            patch_operands(op, final)
        for op in reversed(self.dead):
            op.parent_block().erase_op(op)  # type: ignore[union-attr]
        self.subst.clear()
        self.dead.clear()
        self.dead_set.clear()
        return True


class ReplacementPattern(RewritePattern):
    """One registered replacement as a rewrite pattern named after it."""

    def __init__(self, replacement: CompiledReplacement, run: _Run) -> None:
        self.replacement = replacement
        self.name = replacement.name
        self.roots = tuple({type(t.root): None for t in replacement.templates})
        self._run = run
        self._writes = run.writes
        self._reported = run.reported
        self._types: dict[tuple[Attribute, ...], list[list[Attribute]] | str] = {}
        """Per tuple of bound input types: the result types of the
        replacement's ops (or why it cannot be built for them)."""

    # -- the structural walk ------------------------------------------------

    def _walk(
        self, root: Operation, spec: PatternTemplate
    ) -> tuple[dict[Operation, Operation], list[SSAValue | None]] | None:
        """Map the template's ops onto the graph's from `root` backwards;
        None when the structure differs."""
        op_map: dict[Operation, Operation] = {}
        used: set[Operation] = set()
        binding: list[SSAValue | None] = [None] * len(spec.inputs)
        inputs = spec.inputs

        def same_op(pattern_op: Operation, graph_op: Operation) -> bool:
            return (
                graph_op.name == pattern_op.name
                and len(graph_op.operands) == len(pattern_op.operands)
                and len(graph_op.results) == len(pattern_op.results)
                and graph_op.properties == pattern_op.properties
                and graph_op.attributes == pattern_op.attributes
            )

        # an explicit stack of (pattern value, graph value) pairs to unify
        dead = self._run.dead_set
        if root in dead or not same_op(spec.root, root):
            return None
        op_map[spec.root] = root
        used.add(root)
        stack: list[tuple[SSAValue, SSAValue]] = list(zip(spec.root.operands, root.operands))
        while stack:
            pattern_value, graph_value = stack.pop()
            index = inputs.get(pattern_value)
            if index is not None:
                bound = binding[index]
                if bound is None:
                    binding[index] = graph_value
                elif bound is not graph_value:
                    return None
                continue
            pattern_op = pattern_value.owner
            graph_op = graph_value.owner
            if not isinstance(graph_op, Operation) or not isinstance(pattern_op, Operation):
                return None
            if graph_value.index != pattern_value.index:  # type: ignore[attr-defined]
                return None
            mapped = op_map.get(pattern_op)
            if mapped is not None:
                if mapped is not graph_op:
                    return None
                continue
            if graph_op in used or graph_op in dead or not same_op(pattern_op, graph_op):
                return None
            op_map[pattern_op] = graph_op
            used.add(graph_op)
            stack.extend(zip(pattern_op.operands, graph_op.operands))
        return op_map, binding

    # -- the rewrite --------------------------------------------------------

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        spec = self.replacement
        for template in spec.templates:
            walked = self._walk(op, template)
            if walked is not None:
                break
        else:
            return
        op_map, binding = walked
        if any(value is None for value in binding):  # an input the root does not reach
            return
        bound: list[SSAValue] = binding  # type: ignore[assignment]
        matched = [op_map[p] for p in template.ops]
        outputs = [op_map[v.owner].results[v.index] for v in template.outputs]  # type: ignore[union-attr,index,attr-defined]
        reason = self._problem(op, matched, bound, outputs)
        if reason is None and spec.extra_check is not None:
            match = ReplacementMatch(
                name=spec.name,
                inputs=tuple(bound),
                input_names=spec.input_names,
                input_types=tuple(v.type for v in bound),  # type: ignore[misc]
                input_shapes=tuple(tuple(v.type.get_shape()) for v in bound),  # type: ignore[attr-defined]
                input_dtypes=tuple(p.dtype for p in spec.inputs),
                ops=tuple(matched),
                root=op,
                outputs=tuple(outputs),
            )
            if spec.extra_check(match) is not True:
                reason = "extra_check returned False"
        new_ops: list[Operation] = []
        new_values: list[SSAValue] = []
        if reason is None:
            new_ops, new_values, reason = self._build(bound, outputs)
        if reason is not None:
            self._remark(op, f"user-replacements: '{spec.name}' not applied: {reason}")
            return
        self._remark(op, f"user-replacements: '{spec.name}' applied")
        rewriter.insert(new_ops, InsertPoint.before(op))
        run = self._run
        for old, new in zip(outputs, new_values, strict=True):
            run.subst[old] = new
        run.dead.extend(matched)
        run.dead_set.update(matched)

    def _problem(
        self, root: Operation, matched: list[Operation], bound: list[SSAValue], outputs: list[SSAValue]
    ) -> str | None:
        """Why this structural match may not be rewritten (None: it may)."""
        spec = self.replacement
        for value, policy, name in zip(bound, spec.inputs, spec.input_names):
            problem = policy.problem(value)
            if problem is not None:
                return f"input '{name}': {problem}"
        block = root.parent
        for graph_op in matched:
            if graph_op.parent is not block:
                return f"'{graph_op.name}' is in another block than the root"
            kind = effect_kind(graph_op)
            if kind != "pure":
                return f"{_describe_op(graph_op)} has effects ({kind})"
        members = set(matched)
        returned = set(outputs)
        for graph_op in matched:
            for result in graph_op.results:
                if result in returned:
                    continue
                for use in result.uses:
                    if use.operation not in members:
                        return (
                            f"the inner value {_value_name(result)} escapes: it is used by "
                            f"'{use.operation.name}' outside the match"
                        )
        # in-place writes between the first matched op and the root, and
        # readers of an earlier output before the root
        early_outputs = [v for v in outputs if v.owner is not root]
        watched = [
            *((f"input '{n}'", v) for n, v in zip(spec.input_names, bound)),
            *((f"the output {_value_name(v)}", v) for v in early_outputs),
        ]
        writers = {
            writer: what for what, value in watched for writer in self._writes.of(value) if writer not in members
        }
        if writers or early_outputs:
            span = _span(root, members)
            if span is None:
                return "the matched ops are not all before the root"
            for writer, what in writers.items():
                if writer in span:
                    return f"{_describe_op(writer)} may write in place to {what} between the matched ops"
            for value in early_outputs:
                for use in value.uses:
                    if use.operation in span and use.operation not in members:
                        return (
                            f"the output {_value_name(value)} is read by '{use.operation.name}' "
                            "before the root"
                        )
        return None

    def _build(
        self, bound: list[SSAValue], outputs: list[SSAValue]
    ) -> tuple[list[Operation], list[SSAValue], str | None]:
        """The replacement's ops for the bound values, their output values,
        or why it cannot be built for these types. The result types are
        inferred once per tuple of input types (`_types`)."""
        spec = self.replacement
        key = tuple(v.type for v in bound)
        types = self._types.get(key)
        if types is None:
            types = self._types[key] = self._infer(bound)
        if isinstance(types, str):
            return [], [], types
        values: dict[SSAValue, SSAValue] = {
            placeholder: bound[index] for placeholder, index in spec.replacement_inputs.items()
        }
        new_ops: list[Operation] = []
        for template, result_types in zip(spec.replacement_ops, types):
            new = type(template).create(
                operands=[values[v] for v in template.operands],
                result_types=result_types,
                properties=dict(template.properties),
                attributes=dict(template.attributes),
            )
            for old, result in zip(template.results, new.results):
                values[old] = result
                result.name_hint = old.name_hint
            new_ops.append(new)
        new_values = [values[v] for v in spec.replacement_outputs]
        for index, (old, new) in enumerate(zip(outputs, new_values)):
            if old.type != new.type:
                _discard(new_ops)
                return [], [], (
                    f"the replacement's output #{index} has type {_format_type(new.type)}, "
                    f"the matched value {_value_name(old)} has {_format_type(old.type)}"
                )
        return new_ops, new_values, None

    def _infer(self, bound: list[SSAValue]) -> list[list[Attribute]] | str:
        """The result types of the replacement's ops for inputs of the
        types of `bound`, from the ops' own inference (on probes that are
        never inserted and are dropped after), or why they refuse."""
        spec = self.replacement
        values: dict[SSAValue, SSAValue] = {
            placeholder: bound[index] for placeholder, index in spec.replacement_inputs.items()
        }
        probes: list[Operation] = []
        types: list[list[Attribute]] = []
        try:
            for template in spec.replacement_ops:
                properties = dict(template.properties)
                attributes = dict(template.attributes)
                operands = [values[v] for v in template.operands]
                probe = type(template).create(
                    operands=operands,
                    result_types=[r.type for r in template.results],
                    properties=properties,
                    attributes=attributes,
                )
                probes.append(probe)
                try:
                    expected = list(probe.expected_types())  # type: ignore[attr-defined]
                except Exception as err:  # noqa: BLE001 - the op's inference refuses these types
                    return f"the replacement's '{template.name}' does not accept these types: {err}"
                if expected != [r.type for r in probe.results]:
                    probe = type(template).create(
                        operands=operands, result_types=expected, properties=properties, attributes=attributes
                    )
                    probes.append(probe)
                for old, result in zip(template.results, probe.results):
                    values[old] = result
                types.append(expected)
            return types
        finally:
            _discard(probes)

    def _remark(self, op: Operation, text: str) -> None:
        key = (op, text)
        if key in self._reported:
            return
        self._reported.add(key)
        emit_remark(op, text)


def _discard(ops: Sequence[Operation]) -> None:
    """Drop ops that were built but never inserted (their operands'
    use lists must forget them), users first."""
    for op in reversed(ops):
        op.drop_all_references()


def _span(root: Operation, members: set[Operation]) -> set[Operation] | None:
    """The ops from the first matched op up to the root (both included),
    found by walking back from the root until every matched op is seen;
    None if some matched op is not before the root."""
    span: set[Operation] = set()
    missing = len(members)
    op: Operation | None = root
    while op is not None:
        span.add(op)
        if op in members:
            missing -= 1
            if missing == 0:
                return span
        op = op.prev_op
    return None


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UserReplacementsPass(PatternPass):
    """Apply the registered user replacements (`register_replacement`),
    each a pattern named after it; `only` runs the named ones alone. A
    no-op that does not look at the IR when none is registered."""

    name = "user-replacements"

    only: tuple[str, ...] = ()
    """Names of the replacements to run (default: every registered one)."""

    def selected(self) -> tuple[str, ...]:
        """The names of the replacements this pass runs, in registration order."""
        if self.only:
            return tuple(self.only)
        return tuple(REPLACEMENTS)

    def check_options(self) -> None:
        """Refuse names of replacements that are not registered."""
        unknown = [n for n in self.only if n not in REPLACEMENTS]
        if unknown:
            known = ", ".join(REPLACEMENTS) or "none"
            raise OptimusError(
                f"{self.name}: unknown replacement(s) {', '.join(repr(n) for n in unknown)} "
                f"(registered: {known})"
            )

    def patterns(self, run: _Run | None = None) -> Sequence[RewritePattern]:
        run = run if run is not None else _Run()
        return [ReplacementPattern(REPLACEMENTS[n], run) for n in self.selected()]

    def rewrite_config(self) -> RewriteConfig:
        return RewriteConfig()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.check_options()
        if not self.selected():
            current_pass_context(self.name)  # the pass shows in the statistics, with nothing done
            return
        run = _Run()
        patterns = self.patterns(run)
        for _ in range(MAX_ROUNDS):
            try:
                GreedyRewriteDriver(patterns, self.rewrite_config(), name=self.name).rewrite(op)
            finally:
                rewrote = run.finish(op)
            if not rewrote:
                return


def replacement_pass_class(name: str) -> type[ModulePass]:
    """The pass that runs the replacement `name` alone, under its own name
    (so a pipeline can say `-p raise-fx,NAME`)."""

    @dataclass(frozen=True)
    class SingleReplacementPass(UserReplacementsPass):
        __doc__ = f"Apply the user replacement '{name}' alone."

        def selected(self) -> tuple[str, ...]:
            return (self.name,) if self.name in REPLACEMENTS else ()

        def check_options(self) -> None:
            if self.only:
                raise OptimusError(f"{self.name}: 'only' is an option of '{PASS_NAME}'")

    SingleReplacementPass.name = name  # type: ignore[misc]
    SingleReplacementPass.__qualname__ = SingleReplacementPass.__name__ = (
        "Replacement_" + name.replace("-", "_")
    )
    return SingleReplacementPass


_REPLACEMENT_PASS_MARK = "replacement"


def register_replacement_pass(name: str, passes: dict[str, Callable[..., type[ModulePass]]]) -> None:
    """Write the single-replacement pass `name` into the pass registry
    `passes` (`optimus_ir.passes.registry.PASSES`), as a loader of the shape
    the registry's own entries have (`module` attribute; called with the
    expected name), marked as a replacement's (`unregister_replacement_pass`
    removes only such entries)."""
    pass_class = replacement_pass_class(name)

    def load(expected_name: str | None = None) -> type[ModulePass]:
        return pass_class

    load.module = __name__  # type: ignore[attr-defined]
    load.pass_class = pass_class  # type: ignore[attr-defined]
    load.kind = _REPLACEMENT_PASS_MARK  # type: ignore[attr-defined]
    # what the registry names when another registration clashes with it
    load.registered_by = f"register_replacement({name!r})"  # type: ignore[attr-defined]
    passes[name] = load


def is_replacement_pass_entry(entry: object) -> bool:
    """Whether a pass registry entry is a replacement's own pass."""
    return getattr(entry, "kind", None) == _REPLACEMENT_PASS_MARK


def unregister_replacement_pass(name: str, passes: dict[str, Callable[..., type[ModulePass]]]) -> None:
    """Remove the single-replacement pass `name` from `passes` (if it is one)."""
    if is_replacement_pass_entry(passes.get(name)):
        del passes[name]


# ---------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _dtype_name(element_type: Attribute) -> str:
    try:
        return str(dtype_of(element_type)).removeprefix("torch.")
    except (KeyError, ValueError, TypeError):
        return str(element_type)


def _format_type(ty: Attribute) -> str:
    if isinstance(ty, TensorType):
        dims = "".join(f"{'?' if d < 0 else d}x" for d in ty.get_shape())
        return f"tensor<{dims}{ty.element_type}>"
    return str(ty)


def _describe_op(op: Operation) -> str:
    """`'add_' (fx.call_method)` for fx calls, `'torch.mul'` for others."""
    target = target_name(op)
    return f"'{target}' ({op.name})" if target is not None else f"'{op.name}'"


__all__ = [
    "ANY_LAYOUT",
    "CONTIGUOUS",
    "CompiledReplacement",
    "InputPolicy",
    "KEBAB_CASE",
    "LAYOUT_REQUIREMENTS",
    "REPLACEMENTS",
    "ReplacementMatch",
    "ReplacementPattern",
    "UserReplacementsPass",
    "is_replacement_pass_entry",
    "register_replacement_pass",
    "replacement_pass_class",
    "unregister_replacement_pass",
]
