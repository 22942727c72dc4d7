"""`register_replacement`: a rewrite written as two plain torch functions, checked.

    import torch, torch.nn.functional as F
    import optimus_ir

    optimus_ir.register_replacement(
        "my-rewrite",
        pattern_function,                   # the subgraph to find
        replacement_function,               # what it becomes
        [torch.randn(8, 16)],               # example inputs
    )

(`docs/extending.md` walks through a whole example: hand-written swish
becoming the fused activation.)

Both functions are traced with `torch.fx.symbolic_trace`, imported with the
example inputs (`import_graph`) and raised in memory: the pattern through
`maximize-value-semantics,raise-fx` (the form the graph has when
`user-replacements` runs, right after `raise-fx` in the default pipeline),
the replacement through `maximize-value-semantics,raise-fx,canonicalize`.
The pass `user-replacements` (`optimus_ir/passes/user_replacements.py`)
then matches the pattern's ops and rebuilds the replacement for the matched
types; see that module for the matching and safety rules.

At registration both functions run, on copies, on

1. the example inputs;
2. variants with the example shapes: new random values, zeros, negative
   values, large magnitudes (up to 1e4, less for float16), tiny magnitudes
   (around the dtype's smallest normal), and non-finite values (+inf, -inf,
   NaN mixed with zeros of both signs and +-1): floating inputs only;
   integer inputs get random values within the example's range, bool inputs
   random bools;
3. random values at scaled shapes: every size above 1 doubled, then every
   size above 1 plus one (sizes 0 and 1 stay: they are what broadcasting
   depends on);
4. layout variants (`check_layouts`): each input in turn, with the
   example's values, laid out as every other column of a tensor twice as
   wide, transposed (its last two dims of size above 1), channels-last
   (rank 4) and expanded (stride 0 in its first dim of size above 1, the
   values of the example's first slice there), the other inputs
   contiguous; then every input in one layout at once. A variant the
   shape does not allow (rank, sizes 0 and 1) is left out.

Each output must agree in shape, dtype and value within the dtype's
tolerance (`torch.testing.assert_close`'s defaults; integers and bools
exactly); NaN must be at the same positions, and infinities must be equal:
the non-finite variant is checked like any other, so the swish example of
`docs/extending.md` (inf at +inf, NaN at -inf and NaN, both ways) registers, and a
rewrite that differs at an infinity is refused. A disagreement is a
`ValueError` naming the variant, the output, the first differing index, both
values and the largest absolute difference. Variants at the example shapes
on which *both* functions raise are skipped (the graph would raise too); one
raising is a disagreement. When either function fails at the scaled shapes,
the replacement matches only inputs of exactly the example shapes;
otherwise any static shape of the example's ranks whose size-0 and size-1
dims are kept. Dtypes are always the example's.

On a layout variant, a pattern that raises skips the variant (a graph with
that layout there would raise itself); a replacement that raises where the
pattern runs (`x.view(...)` on a transpose) makes that input *require a
contiguous layout* (`InputPolicy.layout`, with the variant and the error
kept for remarks): the matcher then rewrites only where the bound value is
provably contiguous. Both running and disagreeing is a `ValueError` naming
the variant and the input strides.

Other refusals (`ValueError`): a name that is not kebab-case or is taken (by
a replacement, a pass or a named pipeline), functions that do not trace,
input counts that differ from the examples, non-tensor examples, a pattern
without an op, a pattern op with effects (in-place, random, unknown calls:
such a pattern could never match), a pattern that reads a constant tensor,
a replacement that does not raise completely to the torch dialect, and
different numbers of outputs.

Each replacement is registered as a pass of its own name as well, so
`optimus-opt -p raise-fx,my-rewrite` runs it alone;
`user-replacements{only=a,b}` runs a selection.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from optimus_ir.translate.importer import import_graph
from optimus_ir.passes.registry import PASSES, PIPELINES
from optimus_ir.passes.user_replacements import (
    ANY_LAYOUT,
    CONTIGUOUS,
    KEBAB_CASE,
    PASS_NAME,
    REPLACEMENTS,
    CompiledReplacement,
    InputPolicy,
    ReplacementMatch,
    register_replacement_pass,
    unregister_replacement_pass,
)
from optimus_ir.pipeline import run_pipeline
from optimus_ir.foundation.types import element_type_of
from optimus_ir.pipeline.validation import TOLERANCES  # the differential validator's (rtol, atol) per dtype

PATTERN_PIPELINE = "maximize-value-semantics,raise-fx"
"""What the pattern is raised with: the graph's form when the pass runs."""

REPLACEMENT_PIPELINE = "maximize-value-semantics,raise-fx,canonicalize"
"""What the replacement is raised with."""

_SPECIAL_VALUES = (math.inf, -math.inf, math.nan, 0.0, -0.0, 1.0, -1.0)


def register_replacement(
    name: str,
    pattern: Callable[..., Any],
    replacement: Callable[..., Any],
    example_inputs: Sequence[torch.Tensor],
    *,
    extra_check: Callable[[ReplacementMatch], bool] | None = None,
) -> None:
    """Register the rewrite `pattern(*xs) -> replacement(*xs)` under `name`.

    `pattern` and `replacement` are plain torch functions of the same
    tensors, traceable by `torch.fx.symbolic_trace`; `example_inputs` are
    tensors for them. Both are checked to agree (see the module docstring)
    and `ValueError` says where they do not. From then on the
    `user-replacements` pass (in the default pipeline, right after
    `raise-fx`) rewrites every safe match, and the pass named `name` runs
    this replacement alone. `extra_check(match)`, if given, is called with
    a `ReplacementMatch` (the bound input values, their types, shapes and
    dtypes, the matched ops, the root) and must return True for the rewrite
    to happen."""
    where = f"register_replacement({name!r})"
    _check_name(name, where)
    for role, function in (("pattern", pattern), ("replacement", replacement)):
        if not callable(function):
            raise ValueError(f"{where}: the {role} must be a function, not {type(function).__name__}")
    if extra_check is not None and not callable(extra_check):
        raise ValueError(f"{where}: extra_check must be a function, not {type(extra_check).__name__}")
    if isinstance(example_inputs, torch.Tensor) or not isinstance(example_inputs, Sequence):
        raise ValueError(f"{where}: example_inputs must be a list or tuple of tensors")
    examples = tuple(example_inputs)
    if not examples:
        raise ValueError(f"{where}: example_inputs is empty; the functions need at least one tensor")
    for index, example in enumerate(examples):
        if not isinstance(example, torch.Tensor):
            raise ValueError(
                f"{where}: example input #{index} is a {type(example).__name__}, not a tensor "
                "(literal arguments belong in the functions' bodies)"
            )
    examples = tuple(e.detach() for e in examples)

    pattern_graph = _trace(pattern, "pattern", examples, where)
    replacement_graph = _trace(replacement, "replacement", examples, where)
    input_names = tuple(n.name for n in pattern_graph.graph.nodes if n.op == "placeholder")
    pattern_module = _raise(pattern_graph, examples, PATTERN_PIPELINE, "pattern", where)
    replacement_module = _raise(replacement_graph, examples, REPLACEMENT_PIPELINE, "replacement", where)
    pattern_block = pattern_module.ops.first.regions[0].blocks[0]  # type: ignore[union-attr]
    replacement_block = replacement_module.ops.first.regions[0].blocks[0]  # type: ignore[union-attr]
    _check_pattern_ops(pattern_block, input_names, where)
    _check_replacement_ops(replacement_block, where)

    shapes_vary = check_agreement(name, pattern, replacement, examples)
    layouts = check_layouts(name, pattern, replacement, examples, input_names)
    policies = tuple(
        InputPolicy(
            dtype=e.dtype,
            element_type=element_type_of(e.dtype),
            rank=e.dim(),
            fixed_dims=tuple(s if (not shapes_vary or s <= 1) else None for s in e.shape),
            layout=layout.requirement,
            layout_evidence=layout.evidence,
        )
        for e, layout in zip(examples, layouts, strict=True)
    )
    try:
        compiled = CompiledReplacement(
            name=name,
            input_names=input_names,
            inputs=policies,
            pattern_block=pattern_block,
            replacement_block=replacement_block,
            extra_check=extra_check,
            keep_alive=(pattern_module, replacement_module),
        )
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    reached = {v for op in compiled.pattern_ops for v in op.operands}
    for placeholder, index in compiled.pattern_inputs.items():
        if placeholder not in reached:
            raise ValueError(
                f"{where}: the pattern's input '{input_names[index]}' is not read by the ops "
                "that compute its last output"
            )
    needed = set(compiled.pattern_ops)
    for index, value in enumerate(compiled.pattern_outputs):
        if value in compiled.pattern_inputs:
            raise ValueError(f"{where}: the pattern's output #{index} is one of its inputs, not computed")
        if value.owner not in needed:
            raise ValueError(
                f"{where}: the pattern's output #{index} is not computed on the way to its last "
                "output (the matcher starts at the last output's op)"
            )
    for index, value in enumerate(compiled.replacement_outputs):
        if value in compiled.replacement_inputs:
            raise ValueError(
                f"{where}: the replacement's output #{index} is its input unchanged (after raising); "
                "the rewrite would make a new tensor an alias of its input"
            )
    if len(compiled.replacement_outputs) != len(compiled.pattern_outputs):
        raise ValueError(
            f"{where}: the pattern returns {len(compiled.pattern_outputs)} tensor(s), "
            f"the replacement {len(compiled.replacement_outputs)}"
        )
    REPLACEMENTS[name] = compiled
    register_replacement_pass(name, PASSES)


def pattern_ir(function: Callable[..., Any], example_inputs: Sequence[torch.Tensor]) -> str:
    """The IR that `function` becomes as a replacement's pattern (traced,
    imported with `example_inputs`, raised as `register_replacement` raises
    it): the ops the matcher looks for, as text, to read while writing a
    pattern or a FileCheck test for it."""
    examples = tuple(torch.as_tensor(e).detach() for e in example_inputs)
    where = "pattern_ir"
    module = _raise(_trace(function, "function", examples, where), examples, PATTERN_PIPELINE, "function", where)
    return str(module.ops.first)


def unregister_replacement(name: str) -> None:
    """Forget the replacement `name` and its pass (KeyError if it is not
    registered); for tests and interactive sessions."""
    del REPLACEMENTS[name]
    unregister_replacement_pass(name, PASSES)


def registered_replacements() -> tuple[str, ...]:
    """The names of the registered replacements, in registration order."""
    return tuple(REPLACEMENTS)


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


def _check_name(name: object, where: str) -> None:
    if not isinstance(name, str) or not KEBAB_CASE.match(name):
        raise ValueError(f"{where}: the name must be kebab-case (like 'my-rewrite')")
    if name in REPLACEMENTS:
        raise ValueError(f"{where}: a replacement named '{name}' is already registered")
    if name == PASS_NAME or name in PASSES:
        raise ValueError(f"{where}: '{name}' is the name of a pass; choose another name")
    if name in PIPELINES:
        raise ValueError(f"{where}: '{name}' is the name of a pipeline; choose another name")


def _trace(function: Callable[..., Any], role: str, examples: tuple[torch.Tensor, ...], where: str) -> torch.fx.GraphModule:
    try:
        traced = torch.fx.symbolic_trace(_with_arity(function, len(examples)))
    except Exception as err:  # noqa: BLE001 - any tracing failure is the user's function
        raise ValueError(
            f"{where}: the {role} cannot be traced by torch.fx.symbolic_trace: "
            f"{type(err).__name__}: {err}"
        ) from err
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(examples):
        raise ValueError(
            f"{where}: the {role} takes {len(placeholders)} argument(s) but "
            f"{len(examples)} example input(s) were given"
        )
    return traced


def _with_arity(function: Callable[..., Any], count: int) -> Callable[..., Any]:
    """`function` as a function of exactly `count` tensors when its further
    parameters all have defaults, so that a library function such as
    `F.<activation>(input, inplace=False)` can be given as it is (tracing it alone
    would make `inplace` a graph input). Otherwise `function` itself."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature
        return function
    positional = [
        p for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    extras = positional[count:]
    if not extras or any(p.default is inspect.Parameter.empty for p in extras):
        return function
    names = [p.name for p in positional[:count]]
    if any(not name.isidentifier() for name in names):
        return function
    namespace: dict[str, Any] = {}
    arguments = ", ".join(names)
    exec(f"def with_defaults({arguments}):\n    return function({arguments})\n",
         {"function": function}, namespace)
    return next(iter(namespace.values()))


def _raise(gm: torch.fx.GraphModule, examples: tuple[torch.Tensor, ...], pipeline: str, role: str, where: str):
    try:
        imported = import_graph(gm, examples)
        run_pipeline(imported.module, pipeline, verify_each=True)
    except Exception as err:  # noqa: BLE001 - reported with the function's role
        raise ValueError(
            f"{where}: the {role} cannot be imported with the example inputs: {type(err).__name__}: {err}"
        ) from err
    return imported.module


def _check_pattern_ops(block, input_names: tuple[str, ...], where: str) -> None:
    from optimus_ir.foundation.effects import effect_kind

    ops = [op for op in block.ops if op.name not in ("fx.placeholder", "fx.output")]
    if not ops:
        raise ValueError(f"{where}: the pattern has no op (it returns its inputs)")
    for op in ops:
        if op.name == "fx.get_attr":
            raise ValueError(
                f"{where}: the pattern reads a constant or parameter ('{op.name}'); "
                "pass such tensors as inputs"
            )
        kind = effect_kind(op)
        if kind != "pure":
            raise ValueError(
                f"{where}: the pattern's op '{_describe(op)}' has effects ({kind}: in-place, random "
                "or unknown); a pattern must be pure to ever match"
            )


def _check_replacement_ops(block, where: str) -> None:
    from optimus_ir.foundation.effects import effect_kind

    for op in block.ops:
        if op.name in ("fx.placeholder", "fx.output"):
            continue
        if not hasattr(op, "expected_types") or op.name.startswith("fx."):
            raise ValueError(
                f"{where}: the replacement's op '{_describe(op)}' is not an operator of the torch "
                "dialect after raise-fx; a replacement must raise completely (it is rebuilt for "
                "each match's types)"
            )
        if effect_kind(op) != "pure":
            raise ValueError(f"{where}: the replacement's op '{_describe(op)}' has effects")


def _describe(op) -> str:
    target = op.properties.get("target") or op.attributes.get("target")
    data = getattr(target, "data", None)
    return f"{op.name} {data}" if isinstance(data, str) else op.name


# ---------------------------------------------------------------------------
# The numerical check
# ---------------------------------------------------------------------------


def check_agreement(
    name: str,
    pattern: Callable[..., Any],
    replacement: Callable[..., Any],
    examples: tuple[torch.Tensor, ...],
    seed: int = 0,
) -> bool:
    """Run both functions on the examples and their variants and raise
    `ValueError` where they differ; returns whether they also ran at
    scaled shapes (then the replacement may match any static shape)."""
    where = f"register_replacement({name!r})"
    generator = torch.Generator().manual_seed(seed)
    shapes = [tuple(e.shape) for e in examples]
    value_variants: list[tuple[str, tuple[torch.Tensor, ...]]] = [("the example inputs", examples)]
    for kind in ("random values", "zeros", "negative values", "large magnitudes", "tiny magnitudes",
                 "infinities and NaN"):
        value_variants.append(
            (kind, tuple(_make(kind, e, s, i, generator) for i, (e, s) in enumerate(zip(examples, shapes))))
        )
    for label, inputs in value_variants:
        outcome = _run_both(pattern, replacement, inputs)
        if outcome is None:
            if label == "the example inputs":
                raise ValueError(f"{where}: both functions fail on the example inputs")
            continue
        _compare(where, label, inputs, *outcome)
    for label, scale in (("shapes doubled", lambda s: 2 * s), ("shapes plus one", lambda s: s + 1)):
        scaled = [tuple(scale(d) if d > 1 else d for d in s) for s in shapes]
        inputs = tuple(_make("random values", e, s, i, generator) for i, (e, s) in enumerate(zip(examples, scaled)))
        try:
            outcome = _run_both(pattern, replacement, inputs, scaled=True)
        except _ScaledFailure:
            return False
        if outcome is None:
            return False
        _compare(where, label, inputs, *outcome)
    return True


class _ScaledFailure(Exception):
    pass


# ---------------------------------------------------------------------------
# The layout check
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutFinding:
    """What the layout variants showed about one input: the requirement
    (`ANY_LAYOUT` or `CONTIGUOUS`) and, for `CONTIGUOUS`, the variant the
    replacement raised on and its error."""

    requirement: str = ANY_LAYOUT
    evidence: str = ""


LAYOUT_KINDS = ("column slice", "transposed", "channels-last", "expanded")
"""The layout variants of an input (`_layout_variant`), in the order they run."""


def check_layouts(
    name: str,
    pattern: Callable[..., Any],
    replacement: Callable[..., Any],
    examples: tuple[torch.Tensor, ...],
    input_names: Sequence[str] | None = None,
) -> tuple[LayoutFinding, ...]:
    """Run both functions with one input at a time laid out otherwise (a
    slice of every other column, a transpose, channels-last for rank 4, an
    expanded stride-0 tensor; the example's values, the other inputs
    contiguous), then with every input in one layout at once. Where both
    run, they must agree (`ValueError` naming the variant, as in
    `check_agreement`); where the replacement raises and the pattern does
    not, the input needs a contiguous layout (`CONTIGUOUS`; when only the
    every-input-at-once variant fails, each input in it). A variant on
    which the pattern raises is skipped: a graph with that layout there
    would raise itself. Returns one finding per input."""
    where = f"register_replacement({name!r})"
    names = list(input_names) if input_names is not None else [f"#{i}" for i in range(len(examples))]
    plain = tuple(e.contiguous() for e in examples)
    failures: list[str | None] = [None] * len(examples)
    variants = [{kind: _layout_variant(kind, e) for kind in LAYOUT_KINDS} for e in plain]
    for index, input_name in enumerate(names):
        for kind in LAYOUT_KINDS:
            variant = variants[index][kind]
            if variant is None:
                continue
            inputs = plain[:index] + (variant,) + plain[index + 1:]
            failure = _run_layout_variant(where, _variant_label(input_name, kind), pattern, replacement, inputs)
            if failure is not None and failures[index] is None:
                failures[index] = failure
    for kind in LAYOUT_KINDS:
        together = [i for i in range(len(examples)) if variants[i][kind] is not None and failures[i] is None]
        if len(together) < 2:
            continue
        inputs = tuple(variants[i][kind] if i in together else plain[i] for i in range(len(examples)))
        label = f"{', '.join(repr(names[i]) for i in together)} {kind} at once"
        failure = _run_layout_variant(where, label, pattern, replacement, inputs)
        if failure is not None:
            for i in together:
                failures[i] = failure
    return tuple(
        LayoutFinding() if failure is None else LayoutFinding(CONTIGUOUS, failure) for failure in failures
    )


def _variant_label(input_name: str, kind: str) -> str:
    return {
        "column slice": f"every other column of {input_name!r}",
        "transposed": f"{input_name!r} transposed",
        "channels-last": f"{input_name!r} channels-last",
        "expanded": f"{input_name!r} expanded",
    }[kind]


def _run_layout_variant(where: str, label: str, pattern, replacement, inputs) -> str | None:
    """Run both functions on one layout variant: None when they agree or
    the pattern raises; the replacement's error when only it raises
    (`ValueError` when they disagree)."""
    outcome = _run_both(pattern, replacement, inputs)
    if outcome is None:
        return None
    got_pattern, got_replacement, error_pattern, error_replacement = outcome
    if error_pattern is not None:
        return None
    if error_replacement is not None:
        text = str(error_replacement).strip().splitlines()
        strides = ", ".join(str(list(t.stride())) for t in inputs)
        return (
            f"at registration it raised on {label} (input strides {strides}): "
            f"{type(error_replacement).__name__}: {text[0] if text else ''}"
        )
    _compare(where, label, inputs, got_pattern, got_replacement, None, None, with_strides=True)
    return None


def _layout_variant(kind: str, example: torch.Tensor) -> torch.Tensor | None:
    """`example`'s values laid out as `kind` says, or None when its shape
    allows no such non-contiguous layout (rank, sizes 0 and 1):

    * "column slice": every other element along the last dim of size > 1
      (a slice of a tensor twice as wide there);
    * "transposed": the last two dims of size > 1 swapped in memory;
    * "channels-last": rank 4, `torch.channels_last`;
    * "expanded": the first dim of size > 1 broadcast from size 1 (stride
      0; the values of the example's first slice there)."""
    if example.numel() == 0:
        return None
    big = [d for d, size in enumerate(example.shape) if size > 1]
    if not big:
        return None
    variant: torch.Tensor | None
    if kind == "column slice":
        dim = big[-1]
        wide = list(example.shape)
        wide[dim] *= 2
        base = torch.zeros(wide, dtype=example.dtype, device=example.device)
        variant = _every_other(base, dim)
        variant.copy_(example)
    elif kind == "transposed":
        if len(big) < 2:
            return None
        a, b = big[-2], big[-1]
        variant = example.transpose(a, b).contiguous().transpose(a, b)
    elif kind == "channels-last":
        if example.dim() != 4:
            return None
        variant = example.contiguous(memory_format=torch.channels_last)
    elif kind == "expanded":
        dim = big[0]
        variant = example.narrow(dim, 0, 1).clone().expand(example.shape)
    else:
        raise ValueError(f"unknown layout variant {kind!r}")
    return None if variant.is_contiguous() else variant


def _every_other(base: torch.Tensor, dim: int) -> torch.Tensor:
    index = [slice(None)] * base.dim()
    index[dim] = slice(None, None, 2)
    return base[tuple(index)]


def _fresh_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of `tensor` in storage of its own with the same sizes, strides
    and storage offset (a clone makes a strided slice or an expanded
    tensor contiguous; the layout variants must stay as they are)."""
    if tensor.is_contiguous():
        return tensor.clone()
    extent = tensor.untyped_storage().nbytes() // tensor.element_size()
    whole = tensor.as_strided((extent,), (1,), 0).clone()
    return whole.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())


def _make(kind: str, example: torch.Tensor, shape: tuple[int, ...], index: int, generator: torch.Generator) -> torch.Tensor:
    """One input of a variant: `kind` of values, `shape`, the example's
    dtype (and device)."""
    dtype = example.dtype
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).to(dtype=dtype, device=example.device)
    if not (dtype.is_floating_point or dtype.is_complex):
        low = int(example.min()) if example.numel() else 0
        high = int(example.max()) if example.numel() else 0
        if kind == "zeros" and low <= 0 <= high:
            values = torch.zeros(shape, dtype=torch.int64)
        else:
            values = torch.randint(low, high + 1, shape, generator=generator)
        return values.to(dtype=dtype, device=example.device)
    real = torch.randn(shape, generator=generator, dtype=torch.float64)
    finfo = torch.finfo(dtype)
    if kind == "zeros":
        values = torch.zeros(shape, dtype=torch.float64)
    elif kind == "negative values":
        values = -(real.abs() + 0.25)
    elif kind == "large magnitudes":
        values = real.sign() * (real.abs() + 1) * (min(1e4, math.sqrt(finfo.max)) / 4)
    elif kind == "tiny magnitudes":
        values = real * finfo.tiny * 4
    elif kind == "infinities and NaN":
        flat = [_SPECIAL_VALUES[(k + index) % len(_SPECIAL_VALUES)] for k in range(math.prod(shape))]
        values = torch.tensor(flat, dtype=torch.float64).reshape(shape)
    else:
        values = real
    return values.to(dtype=dtype, device=example.device)


def _run_both(pattern, replacement, inputs, *, scaled: bool = False):
    """(pattern outputs, replacement outputs), or None when both raise.
    One raising is a `ValueError`-worthy disagreement, reported by
    `_compare` as such (at scaled shapes: `_ScaledFailure`)."""
    results = []
    errors = []
    for function in (pattern, replacement):
        copies = [_fresh_copy(t) for t in inputs]
        try:
            with torch.no_grad():
                result = function(*copies)
            results.append((result, _aliasing(result, copies)))
            errors.append(None)
        except Exception as err:  # noqa: BLE001 - the user's function
            results.append((None, []))
            errors.append(err)
    if scaled and any(errors):
        raise _ScaledFailure
    if all(errors):
        return None
    return results[0], results[1], errors[0], errors[1]


def _aliasing(result: Any, inputs: list[torch.Tensor]) -> list[bool]:
    """Per output: does it share storage with an input (a view, or the
    input itself)?"""
    storages = {t.untyped_storage().data_ptr() for t in inputs if t.numel()}
    return [
        isinstance(out, torch.Tensor) and out.numel() > 0 and out.untyped_storage().data_ptr() in storages
        for out in _flatten(result)
    ]


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


def _compare(
    where: str, label: str, inputs, got_pattern, got_replacement, error_pattern, error_replacement,
    *, with_strides: bool = False,
) -> None:
    shapes = ", ".join(str(list(t.shape)) for t in inputs)
    strides = ", strides " + ", ".join(str(list(t.stride())) for t in inputs) if with_strides else ""
    on = f"on {label} (input shapes {shapes}{strides})"
    if error_pattern is not None or error_replacement is not None:
        role, err = ("pattern", error_pattern) if error_pattern is not None else ("replacement", error_replacement)
        raise ValueError(f"{where}: the {role} raises {on} and the other does not: {type(err).__name__}: {err}")
    (got_pattern, aliases_p), (got_replacement, aliases_r) = got_pattern, got_replacement
    outs_p, outs_r = _flatten(got_pattern), _flatten(got_replacement)
    if len(outs_p) != len(outs_r):
        raise ValueError(f"{where}: the pattern returns {len(outs_p)} value(s), the replacement {len(outs_r)}, {on}")
    for index, (a, b) in enumerate(zip(outs_p, outs_r)):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            raise ValueError(f"{where}: output #{index} is not a tensor in both functions {on}")
        if a.shape != b.shape:
            raise ValueError(
                f"{where}: the functions differ {on}: output #{index} has shape {list(a.shape)} "
                f"from the pattern and {list(b.shape)} from the replacement"
            )
        if a.dtype != b.dtype:
            raise ValueError(
                f"{where}: the functions differ {on}: output #{index} has dtype "
                f"{str(a.dtype).removeprefix('torch.')} from the pattern and "
                f"{str(b.dtype).removeprefix('torch.')} from the replacement"
            )
        if aliases_p[index] != aliases_r[index]:
            which, other = ("pattern", "replacement") if aliases_p[index] else ("replacement", "pattern")
            raise ValueError(
                f"{where}: the functions differ {on}: output #{index} of the {which} shares storage "
                f"with an input (a view or the input itself), the {other}'s is a new tensor"
            )
        rtol, atol = TOLERANCES.get(a.dtype, (0.0, 0.0))
        a_cpu, b_cpu = a.detach().cpu(), b.detach().cpu()
        if a.dtype.is_floating_point or a.dtype.is_complex:
            close = torch.isclose(a_cpu, b_cpu, rtol=rtol, atol=atol, equal_nan=True)
        else:
            close = a_cpu == b_cpu
        if bool(close.all()):
            continue
        differing = (~close).nonzero()
        first = tuple(int(i) for i in differing[0])
        wide = torch.complex128 if a.dtype.is_complex else torch.float64
        diff = (a_cpu.to(wide) - b_cpu.to(wide)).abs()[~close]
        largest = float(torch.where(diff.isnan(), math.inf, diff).max())  # NaN against a number: unbounded
        raise ValueError(
            f"{where}: the functions differ {on}: output #{index} at index {list(first)}: "
            f"the pattern gives {a_cpu[first].item()!r}, the replacement {b_cpu[first].item()!r} "
            f"({len(differing)} of {close.numel()} elements differ; largest absolute difference "
            f"{largest:.6g}; rtol {rtol:g}, atol {atol:g})"
        )


__all__ = [
    "LAYOUT_KINDS",
    "LayoutFinding",
    "ReplacementMatch",
    "check_agreement",
    "check_layouts",
    "pattern_ir",
    "register_replacement",
    "registered_replacements",
    "unregister_replacement",
]
