"""Type inference of the torch dialect's ops: pure functions of operand types
and property values, shared by the builders and the verifiers (they raise
`VerifyException` on inconsistent operands). dtype rules are computed with
torch once per combination and cached."""


from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute

from optimus_ir.foundation.types import (
    DYNAMIC,
    UnsupportedDTypeError,
    device_of,
    dims_compatible,
    dtype_of,
    element_type_of,
    format_shape,
    is_floating,
)
from optimus_ir.dialects.torch.facts import declared_facts
from optimus_ir.dialects.torch.base import (
    NumberLike,
    _Check,
    _F32,
    _HALF_TYPES,
    _SCALAR_SAMPLES,
    _check_broadcastable_to,
    _fmt_dim,
    _make,
    _operand,
    _prod_dims,
    _refine,
    _scalar_kind,
    _shape,
    _sum_dims,
    broadcast_shapes,
    number_attr,
    number_value,
)



# ---------------------------------------------------------------------------
# dtype rules computed with torch (cached: a handful of combinations per model)
# ---------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _sample(element: Attribute, zero_dim: bool) -> Any:
    import torch

    return torch.ones(() if zero_dim else (1,), dtype=dtype_of(element))


def _torch_error(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@lru_cache(maxsize=None)
def _promote(a: Attribute, b: Attribute) -> Attribute:
    """torch.promote_types on element types (cat/stack)."""
    if a == b:
        return a
    import torch

    return element_type_of(torch.promote_types(dtype_of(a), dtype_of(b)))


@lru_cache(maxsize=None)
def _unary_probe(name: str) -> Callable[..., Any] | None:
    """The torch function computing the unary op called `name` (its declared
    `FACTS.reference_function()`), which gives the result dtype of an
    integral input; None for an op without one (the dtype is kept)."""
    facts = declared_facts(name)
    return None if facts is None else facts.reference_function()


@lru_cache(maxsize=None)
def _unary_element(
    name: str, element: Attribute, bound_kinds: tuple[str | None, ...]
) -> Attribute | str:
    """The result element type of a unary op, or an error message."""
    if is_floating(element):
        return element
    probe = _unary_probe(name)
    if probe is None:
        return element
    try:
        bounds = [None if k is None else _SCALAR_SAMPLES[k] for k in bound_kinds]
        out = probe(_sample(element, False), *bounds)
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        return f"does not support element type {element}: {_torch_error(error)}"


@lru_cache(maxsize=None)
def _binary_element(
    name: str,
    lhs: Attribute,
    lhs_0d: bool,
    rhs: Attribute | str,
    rhs_0d: bool,
    alpha_kind: str | None,
    rounding_mode: str,
) -> Attribute | str:
    """The promoted element type of a binary op, or an error message.

    `rhs` is an element type (tensor operand) or a scalar kind ('int'...)."""
    import torch

    a = _sample(lhs, lhs_0d)
    b = _sample(rhs, rhs_0d) if isinstance(rhs, Attribute) else _SCALAR_SAMPLES[rhs]
    kwargs: dict[str, Any] = {}
    if alpha_kind is not None:
        kwargs["alpha"] = _SCALAR_SAMPLES[alpha_kind]
    try:
        if name == "torch.add":
            out = torch.add(a, b, **kwargs)
        elif name == "torch.sub":
            out = torch.sub(a, b, **kwargs)
        elif name == "torch.mul":
            out = torch.mul(a, b)
        else:
            mode = None if rounding_mode == "none" else rounding_mode
            out = torch.div(a, b, rounding_mode=mode)
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        rhs_text = rhs if isinstance(rhs, str) else str(rhs)
        return (
            f"does not support operands of element types {lhs} and {rhs_text}: "
            f"{_torch_error(error)}"
        )


@lru_cache(maxsize=None)
def _reduction_element(name: str, element: Attribute, dtype: Attribute | None) -> Attribute | str:
    import torch

    fn = torch.sum if name == "torch.sum" else torch.mean
    try:
        out = fn(_sample(element, False), dim=0, dtype=None if dtype is None else dtype_of(dtype))
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        what = f"element type {element}" + ("" if dtype is None else f" with dtype {dtype}")
        return f"does not support {what}: {_torch_error(error)}"


def _element_or_fail(check: _Check, result: Attribute | str) -> Attribute:
    if isinstance(result, str):
        check.fail(result)
    return result


def _known_element(check: _Check, element: Attribute, what: str) -> None:
    try:
        dtype_of(element)
    except UnsupportedDTypeError:
        check.fail(f"{what} has element type {element}, which has no torch dtype")


# ---------------------------------------------------------------------------
# Type inference (shared by the builders and the verifiers)
# ---------------------------------------------------------------------------


def _same_elements(check: _Check, labelled: Sequence[tuple[str, TensorType]]) -> Attribute:
    ref_what, ref = labelled[0]
    for what, ty in labelled[1:]:
        check.same_element(ty, what, ref, ref_what)
    return ref.element_type


def _check_scale_kinds(check: _Check, element: Attribute, **scales: Attribute) -> None:
    """Integral inputs reject float beta/alpha, as torch does."""
    for name, attr in scales.items():
        check.number(attr, name)
        if isinstance(attr, FloatAttr) and not is_floating(element):
            check.fail(f"{name} must be an integer for integral inputs of type {element}")


def infer_linear_type(
    input: TensorType, weight: TensorType, bias: TensorType | None = None
) -> TensorType:
    """`linear(input [*, in], weight [out, in], bias [out]?) -> [*, out]`."""
    check = _Check("torch.linear")
    labelled = [(_operand(0, "input"), input), (_operand(1, "weight"), weight)]
    shape, w = _shape(input), _shape(weight)
    check.min_rank(shape, labelled[0][0], 1)
    check.rank(w, labelled[1][0], 2)
    if not dims_compatible(shape[-1], w[1]):
        check.fail(
            f"operand #0 (input) has {_fmt_dim(shape[-1])} features but operand #1 "
            f"(weight) has shape {format_shape(w)} (expected {_fmt_dim(w[1])} features)"
        )
    if bias is not None:
        labelled.append((_operand(2, "bias"), bias))
        b = _shape(bias)
        if len(b) > 1:
            check.fail(f"operand #2 (bias) has rank {len(b)}, expected 1")
        if b:
            check.size(b[0], w[0], "operand #2 (bias)")
    element = _same_elements(check, labelled)
    return _make((*shape[:-1], w[0]), element, check.device(labelled))


def _check_inner_dims(
    check: _Check,
    a: Sequence[int],
    b: Sequence[int],
    names: tuple[str, str],
    inner: tuple[int, int],
) -> None:
    """A matrix product's contracted sizes (`inner`: `a`'s, `b`'s) agree;
    the message shows the operands' own shapes."""
    if not dims_compatible(*inner):
        check.fail(
            f"{names[0]} of shape {format_shape(a)} and {names[1]} of shape "
            f"{format_shape(b)} have mismatched inner dims "
            f"({_fmt_dim(inner[0])} vs {_fmt_dim(inner[1])})"
        )


def _mm_shape(
    check: _Check, a: Sequence[int], b: Sequence[int], names: tuple[str, str]
) -> tuple[int, int]:
    check.rank(a, names[0], 2)
    check.rank(b, names[1], 2)
    _check_inner_dims(check, a, b, names, (a[1], b[0]))
    return a[0], b[1]


def _bmm_shape(
    check: _Check, a: Sequence[int], b: Sequence[int], names: tuple[str, str]
) -> tuple[int, int, int]:
    check.rank(a, names[0], 3)
    check.rank(b, names[1], 3)
    if not dims_compatible(a[0], b[0]):
        check.fail(
            f"{names[0]} and {names[1]} have different batch sizes "
            f"({_fmt_dim(a[0])} vs {_fmt_dim(b[0])})"
        )
    _check_inner_dims(check, a, b, names, (a[2], b[1]))
    return _refine(a[0], b[0]), a[1], b[2]


def _matmul_shape(
    check: _Check, a: Sequence[int], b: Sequence[int], names: tuple[str, str]
) -> tuple[int, ...]:
    """`matmul`'s rules: 1-D operands are promoted and squeezed back, batch
    dims broadcast."""
    check.min_rank(a, names[0], 1)
    check.min_rank(b, names[1], 1)
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    _check_inner_dims(check, a, b, names, (a2[-1], b2[-2]))
    batch = broadcast_shapes(a2[:-2], b2[:-2], check)
    rows = a2[-2:-1] if len(a) > 1 else ()
    cols = b2[-1:] if len(b) > 1 else ()
    return (*batch, *rows, *cols)


_ProductShape = Callable[[_Check, Sequence[int], Sequence[int], tuple[str, str]], tuple[int, ...]]


def _infer_product(op: str, product_shape: _ProductShape, lhs: TensorType, rhs: TensorType) -> TensorType:
    """The type of `op(lhs, rhs)`, a matrix product whose shape is
    `product_shape`'s."""
    check = _Check(op)
    labelled = [(_operand(0, "lhs"), lhs), (_operand(1, "rhs"), rhs)]
    shape = product_shape(check, _shape(lhs), _shape(rhs), (labelled[0][0], labelled[1][0]))
    return _make(shape, _same_elements(check, labelled), check.device(labelled))


def _infer_scaled_product(
    op: str,
    product_shape: _ProductShape,
    names: tuple[str, str],
    input: TensorType,
    a: TensorType,
    b: TensorType,
    beta: NumberLike,
    alpha: NumberLike,
) -> TensorType:
    """The type of `op(input, a, b, beta=, alpha=)`: `beta * input + alpha *`
    the matrix product of `a` and `b` (operands named `names`), to whose
    shape `input` broadcasts."""
    check = _Check(op)
    labelled = [
        (_operand(0, "input"), input),
        (_operand(1, names[0]), a),
        (_operand(2, names[1]), b),
    ]
    shape = product_shape(check, _shape(a), _shape(b), (labelled[1][0], labelled[2][0]))
    _check_broadcastable_to(check, _shape(input), shape, labelled[0][0])
    element = _same_elements(check, labelled)
    _check_scale_kinds(check, element, beta=number_attr(beta), alpha=number_attr(alpha))
    return _make(shape, element, check.device(labelled))


def _product_inference(name: str, op: str, product_shape: _ProductShape, doc: str) -> Callable[[TensorType, TensorType], TensorType]:
    """The type inference `name` of the matrix product `op(lhs, rhs)`."""

    def infer(lhs: TensorType, rhs: TensorType) -> TensorType:
        return _infer_product(op, product_shape, lhs, rhs)

    infer.__name__ = infer.__qualname__ = name
    infer.__doc__ = doc
    return infer


def _scaled_product_inference(
    name: str, op: str, product_shape: _ProductShape, names: tuple[str, str], doc: str
) -> Callable[..., TensorType]:
    """The type inference `name` of `op(input, a, b, beta=1, alpha=1)`, its
    product operands named `names`."""

    def infer(
        input: TensorType, a: TensorType, b: TensorType, beta: NumberLike = 1, alpha: NumberLike = 1
    ) -> TensorType:
        return _infer_scaled_product(op, product_shape, names, input, a, b, beta, alpha)

    infer.__name__ = infer.__qualname__ = name
    infer.__doc__ = doc
    return infer


infer_mm_type = _product_inference("infer_mm_type", "torch.mm", _mm_shape, "`mm([n, k], [k, m]) -> [n, m]`.")
infer_bmm_type = _product_inference(
    "infer_bmm_type", "torch.bmm", _bmm_shape, "`bmm([b, n, k], [b, k, m]) -> [b, n, m]`."
)
infer_matmul_type = _product_inference(
    "infer_matmul_type", "torch.matmul", _matmul_shape,
    "`matmul` with torch's rules: 1-D operands are promoted and squeezed back, batch dims broadcast.",
)
infer_addmm_type = _scaled_product_inference(
    "infer_addmm_type", "torch.addmm", _mm_shape, ("mat1", "mat2"),
    "`addmm(input, mat1 [n, k], mat2 [k, m]) -> [n, m]`; input broadcasts to [n, m].",
)
infer_baddbmm_type = _scaled_product_inference(
    "infer_baddbmm_type", "torch.baddbmm", _bmm_shape, ("batch1", "batch2"),
    "`baddbmm(input, batch1 [b, n, k], batch2 [b, k, m]) -> [b, n, m]`.",
)


def infer_layer_norm_type(
    input: TensorType,
    normalized_shape: Sequence[int],
    weight: TensorType | None = None,
    bias: TensorType | None = None,
) -> TensorType:
    """`layer_norm(input [*, *normalized_shape]) -> same type`; weight and bias
    have shape `normalized_shape`."""
    check = _Check("torch.layer_norm")
    shape = _shape(input)
    normalized = tuple(normalized_shape)
    if not normalized:
        check.fail("normalized_shape must not be empty")
    if any(s < 0 for s in normalized):
        check.fail(f"normalized_shape {list(normalized)} has a negative size")
    check.min_rank(shape, _operand(0, "input"), len(normalized))
    tail = shape[len(shape) - len(normalized) :]
    if not all(dims_compatible(x, y) for x, y in zip(tail, normalized)):
        check.fail(
            f"operand #0 (input) of shape {format_shape(shape)} does not end with "
            f"normalized_shape {list(normalized)}"
        )
    labelled = [(_operand(0, "input"), input)]
    for name, param in (("weight", weight), ("bias", bias)):
        if param is None:
            continue
        what = _operand(len(labelled), name)
        labelled.append((what, param))
        if len(_shape(param)) != len(normalized) or not all(
            dims_compatible(x, y) for x, y in zip(_shape(param), normalized)
        ):
            check.fail(
                f"{what} has shape {format_shape(_shape(param))}, expected "
                f"{format_shape(normalized)} (normalized_shape)"
            )
        mixed = param.element_type == _F32 and input.element_type in _HALF_TYPES
        if param.element_type != input.element_type and not mixed:
            check.same_element(param, what, input, "operand #0 (input)")
    return _make(shape, input.element_type, check.device(labelled))


def infer_split_types(input: TensorType, sections: Sequence[int], dim: int) -> list[TensorType]:
    """One piece type per section: the input type with `dim` resized.

    `sections` are explicit sizes (`split(x, 4)` on a dim of 10 is [4, 4, 2])."""
    check = _Check("torch.split")
    shape = _shape(input)
    check.dim(dim, len(shape))
    if not sections:
        check.fail("sections must not be empty")
    if any(s < 0 for s in sections):
        check.fail(f"sections {list(sections)} has a negative size")
    total = sum(sections)
    if not dims_compatible(total, shape[dim]):
        check.fail(
            f"sections {list(sections)} sum to {total} but dim {dim} of the input "
            f"has size {shape[dim]}"
        )
    device = device_of(input)
    return [
        _make((*shape[:dim], s, *shape[dim + 1 :]), input.element_type, device) for s in sections
    ]


def split_sections(size: int, split_size: int) -> list[int]:
    """The explicit sections of `split(x, split_size)` on a dim of `size`."""
    if split_size <= 0:
        raise ValueError("split_size must be positive")
    sections = [split_size] * (size // split_size)
    if size % split_size:
        sections.append(size % split_size)
    return sections or [0]


def infer_unbind_types(input: TensorType, dim: int, count: int | None = None) -> list[TensorType]:
    """One type per index of `dim` (the input type without `dim`). A dynamic
    `dim` needs `count`, the number of results."""
    check = _Check("torch.unbind")
    shape = _shape(input)
    check.min_rank(shape, _operand(0, "input"), 1)
    check.dim(dim, len(shape))
    size = shape[dim]
    if size == DYNAMIC:
        if count is None:
            check.fail(f"cannot infer the number of results: dim {dim} is dynamic")
        size = count
    piece = _make((*shape[:dim], *shape[dim + 1 :]), input.element_type, device_of(input))
    return [piece] * size


def _labelled_inputs(inputs: Sequence[TensorType]) -> list[tuple[str, TensorType]]:
    return [(_operand(i), ty) for i, ty in enumerate(inputs)]


def _promoted(check: _Check, labelled: Sequence[tuple[str, TensorType]]) -> Attribute:
    element = labelled[0][1].element_type
    for what, ty in labelled:
        _known_element(check, ty.element_type, what)
        element = _promote(element, ty.element_type)
    return element


def infer_cat_type(inputs: Sequence[TensorType], dim: int) -> TensorType:
    """`cat` along `dim`: other dims agree, dtypes promote. Legacy empty 1-D
    tensors (shape [0]) are skipped, as in torch."""
    check = _Check("torch.cat")
    if not inputs:
        check.fail("needs at least one operand")
    labelled = _labelled_inputs(inputs)
    ranked = [(w, t) for w, t in labelled if _shape(t) != (0,)] or labelled[:1]
    ref_what, ref = ranked[0]
    shape = list(_shape(ref))
    check.dim(dim, len(shape))
    for what, ty in ranked[1:]:
        other = _shape(ty)
        check.rank(other, what, len(shape))
        for d, (x, y) in enumerate(zip(other, shape)):
            if d != dim:
                check.size(x, y, f"{what} dim {d}")
                shape[d] = _refine(y, x)
    shape[dim] = _sum_dims(_shape(t)[dim] for _, t in ranked)
    return _make(shape, _promoted(check, labelled), check.device(labelled))


def infer_stack_type(inputs: Sequence[TensorType], dim: int) -> TensorType:
    """`stack` at new dim `dim` (0 <= dim <= rank): shapes agree, dtypes promote."""
    check = _Check("torch.stack")
    if not inputs:
        check.fail("needs at least one operand")
    labelled = _labelled_inputs(inputs)
    shape = list(_shape(inputs[0]))
    check.dim(dim, len(shape), inclusive=True)
    for what, ty in labelled[1:]:
        other = _shape(ty)
        if len(other) != len(shape) or not all(dims_compatible(x, y) for x, y in zip(other, shape)):
            check.fail(
                f"{what} has shape {format_shape(other)}, expected {format_shape(shape)} "
                f"(stacked tensors must have equal shapes)"
            )
        shape = [_refine(y, x) for x, y in zip(other, shape)]
    shape.insert(dim, len(inputs))
    return _make(shape, _promoted(check, labelled), check.device(labelled))


def infer_squeeze_type(input: TensorType, dims: Sequence[int]) -> TensorType:
    """Remove `dims` (each of size 1, or dynamic)."""
    check = _Check("torch.squeeze")
    shape = _shape(input)
    check.unique_dims(dims, len(shape))
    for d in dims:
        if shape[d] not in (1, DYNAMIC):
            check.fail(f"cannot squeeze dim {d} of size {shape[d]} (expected size 1)")
    removed = set(dims)
    return _make(
        (s for d, s in enumerate(shape) if d not in removed), input.element_type, device_of(input)
    )


def infer_unsqueeze_type(input: TensorType, dim: int) -> TensorType:
    """Insert a size-1 dim at `dim` (0 <= dim <= rank)."""
    check = _Check("torch.unsqueeze")
    shape = _shape(input)
    check.dim(dim, len(shape), inclusive=True)
    return _make((*shape[:dim], 1, *shape[dim:]), input.element_type, device_of(input))


def _resolve_sizes(
    check: _Check, sizes: Sequence[int], numel: int, what: str, target: str
) -> list[int]:
    """Sizes with their one -1 resolved against `numel` (DYNAMIC if unknown)."""
    sizes = list(sizes)
    if sizes.count(-1) > 1:
        check.fail(f"{what} {sizes} has more than one -1")
    if any(s < -1 for s in sizes):
        check.fail(f"{what} {sizes} has a negative size")
    known = _prod_dims(s for s in sizes if s != -1)
    if -1 in sizes:
        if numel == DYNAMIC:
            inferred = DYNAMIC
        elif known == 0 or numel % known:
            check.fail(f"cannot reshape {target} of {numel} elements into {what} {sizes}")
        else:
            inferred = numel // known
        sizes[sizes.index(-1)] = inferred
    elif numel != DYNAMIC and known != numel:
        check.fail(f"cannot reshape {target} of {numel} elements into {what} {sizes}")
    return sizes


def infer_reshape_type(
    input: TensorType, shape: Sequence[int], op_name: str = "torch.reshape"
) -> TensorType:
    """`reshape`/`view` to `shape` (may hold one -1)."""
    check = _Check(op_name)
    sizes = _resolve_sizes(check, shape, _prod_dims(_shape(input)), "shape", "a tensor")
    return _make(sizes, input.element_type, device_of(input))


def infer_flatten_type(input: TensorType, start_dim: int, end_dim: int) -> TensorType:
    """Merge dims `start_dim..end_dim` (inclusive); a 0-d input becomes [1]."""
    check = _Check("torch.flatten")
    shape = _shape(input)
    if not shape:
        if start_dim != 0 or end_dim != 0:
            check.fail("start_dim and end_dim must be 0 for a 0-d input")
        return _make((1,), input.element_type, device_of(input))
    check.dim(start_dim, len(shape), "start_dim")
    check.dim(end_dim, len(shape), "end_dim")
    if start_dim > end_dim:
        check.fail(f"start_dim {start_dim} is after end_dim {end_dim}")
    merged = _prod_dims(shape[start_dim : end_dim + 1])
    return _make(
        (*shape[:start_dim], merged, *shape[end_dim + 1 :]), input.element_type, device_of(input)
    )


def infer_unflatten_type(input: TensorType, dim: int, sizes: Sequence[int]) -> TensorType:
    """Split dim `dim` into `sizes` (may hold one -1)."""
    check = _Check("torch.unflatten")
    shape = _shape(input)
    check.dim(dim, len(shape))
    if not sizes:
        check.fail("sizes must not be empty")
    resolved = _resolve_sizes(check, sizes, shape[dim], "sizes", f"dim {dim}")
    return _make((*shape[:dim], *resolved, *shape[dim + 1 :]), input.element_type, device_of(input))


def _check_permutation(check: _Check, dims: Sequence[int], rank: int) -> None:
    if len(dims) != rank:
        check.fail(f"dims {list(dims)} has {len(dims)} entries, expected {rank} (the rank)")
    if sorted(dims) != list(range(rank)):
        check.fail(f"dims {list(dims)} is not a permutation of 0..{rank - 1}")


def infer_permute_type(input: TensorType, dims: Sequence[int]) -> TensorType:
    """`result.shape[i] = input.shape[dims[i]]`; dims is a permutation."""
    check = _Check("torch.permute")
    shape = _shape(input)
    _check_permutation(check, dims, len(shape))
    return _make((shape[d] for d in dims), input.element_type, device_of(input))


def infer_transpose_type(input: TensorType, dim0: int, dim1: int) -> TensorType:
    """Swap dims `dim0` and `dim1`."""
    check = _Check("torch.transpose")
    shape = list(_shape(input))
    check.dim(dim0, len(shape), "dim0")
    check.dim(dim1, len(shape), "dim1")
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    return _make(shape, input.element_type, device_of(input))


def movedim_permutation(rank: int, source: Sequence[int], destination: Sequence[int]) -> list[int]:
    """The permute dims equivalent to `movedim(source, destination)` (canonical dims)."""
    order: list[int | None] = [None] * rank
    for s, d in zip(source, destination):
        order[d] = s
    rest_src = (i for i in range(rank) if i not in set(source))
    for d in range(rank):
        if order[d] is None:
            order[d] = next(rest_src)
    return order  # type: ignore[return-value]


def infer_movedim_type(
    input: TensorType, source: Sequence[int], destination: Sequence[int]
) -> TensorType:
    """Move dims `source[i]` to `destination[i]`, others keep their order."""
    check = _Check("torch.movedim")
    shape = _shape(input)
    if len(source) != len(destination):
        check.fail(
            f"source {list(source)} and destination {list(destination)} have different lengths"
        )
    check.unique_dims(source, len(shape), "source")
    check.unique_dims(destination, len(shape), "destination")
    order = movedim_permutation(len(shape), source, destination)
    return _make((shape[d] for d in order), input.element_type, device_of(input))


def infer_slice_type(
    input: TensorType, dim: int, start: int, end: int, step: int = 1
) -> TensorType:
    """`input[..., start:end:step, ...]` on `dim`; on a static dim the bounds must
    be canonical (0 <= start <= end <= size)."""
    check = _Check("torch.slice")
    shape = list(_shape(input))
    check.dim(dim, len(shape))
    if step < 1:
        check.fail(f"step {step} must be positive")
    size = shape[dim]
    if size == DYNAMIC:
        shape[dim] = DYNAMIC
    else:
        if not 0 <= start <= end <= size:
            check.fail(
                f"start {start} and end {end} are not canonical for dim {dim} of size "
                f"{size} (expected 0 <= start <= end <= {size})"
            )
        shape[dim] = (end - start + step - 1) // step
    return _make(shape, input.element_type, device_of(input))


def infer_unfold_type(input: TensorType, dim: int, size: int, step: int) -> TensorType:
    """`input.unfold(dim, size, step)`: the windows of `size` every `step`
    along `dim` (that dim becomes the window count), the window as a new last
    dim."""
    check = _Check("torch.unfold")
    shape = list(_shape(input))
    check.dim(dim, len(shape))
    if size < 1 or step < 1:
        check.fail(f"size {size} and step {step} must be positive")
    length = shape[dim]
    if length != DYNAMIC:
        if size > length:
            check.fail(f"window size {size} exceeds dim {dim} of size {length}")
        shape[dim] = (length - size) // step + 1
    return _make([*shape, size], input.element_type, device_of(input))


def infer_select_type(input: TensorType, dim: int, index: int) -> TensorType:
    """`input.select(dim, index)`: drops `dim`; 0 <= index < size when static."""
    check = _Check("torch.select")
    shape = _shape(input)
    check.min_rank(shape, _operand(0, "input"), 1)
    check.dim(dim, len(shape))
    size = shape[dim]
    if size != DYNAMIC and not 0 <= index < size:
        check.fail(f"index {index} is out of range for dim {dim} of size {size}")
    return _make((*shape[:dim], *shape[dim + 1 :]), input.element_type, device_of(input))


def infer_unary_type(
    op_name: str,
    input: TensorType,
    min: NumberLike | None = None,
    max: NumberLike | None = None,
) -> TensorType:
    """A unary pointwise op: same shape and device; the dtype is kept, except
    that integral inputs of exp, log and the like become floating, as the op's
    declared reference function computes it in torch (`min`/`max` are
    clamp's bounds, which may promote too)."""
    check = _Check(op_name)
    _known_element(check, input.element_type, _operand(0, "input"))
    kinds = tuple(None if b is None else _scalar_kind(number_attr(b)) for b in (min, max))
    if op_name != "torch.clamp":
        kinds = ()
    element = _element_or_fail(check, _unary_element(op_name, input.element_type, kinds))
    return _make(_shape(input), element, device_of(input))


def infer_binary_type(
    op_name: str,
    lhs: TensorType,
    rhs: TensorType | NumberLike,
    alpha: NumberLike | None = None,
    rounding_mode: str = "none",
) -> TensorType:
    """A binary pointwise op: broadcast shape, torch's type promotion (a Python
    number `rhs` takes part as a scalar), common device (a 0-d CPU tensor may
    meet any device)."""
    check = _Check(op_name)
    lhs_what = _operand(0, "lhs")
    _known_element(check, lhs.element_type, lhs_what)
    lhs_shape = _shape(lhs)
    alpha_kind = None if alpha is None else _scalar_kind(number_attr(alpha))
    if isinstance(rhs, TensorType):
        rhs_what = _operand(1, "rhs")
        _known_element(check, rhs.element_type, rhs_what)
        rhs_shape = _shape(rhs)
        shape = broadcast_shapes(lhs_shape, rhs_shape, check)
        element = _binary_element(
            op_name,
            lhs.element_type,
            not lhs_shape,
            rhs.element_type,
            not rhs_shape,
            alpha_kind,
            rounding_mode,
        )
        device = _binary_device(check, (lhs_what, lhs), (rhs_what, rhs))
    else:
        scalar = number_attr(rhs)
        check.number(scalar, "scalar")
        shape = lhs_shape
        element = _binary_element(
            op_name,
            lhs.element_type,
            not lhs_shape,
            _scalar_kind(scalar),
            True,
            alpha_kind,
            rounding_mode,
        )
        device = device_of(lhs)
    return _make(shape, _element_or_fail(check, element), device)


def _binary_device(check: _Check, *labelled: tuple[str, TensorType]) -> str | None:
    """The common device; a 0-d CPU tensor is allowed beside any device."""
    devices = [device_of(ty) for _, ty in labelled]
    if len(set(d for d in devices if d is not None)) > 1:
        others = [
            (what, ty)
            for (what, ty), d in zip(labelled, devices)
            if not (_shape(ty) == () and d == "cpu")
        ]
        if others:
            return check.device(others)
    return check.device(labelled)


def infer_reduction_type(
    op_name: str,
    input: TensorType,
    dims: Sequence[int] = (),
    keepdim: bool = False,
    dtype: Attribute | None = None,
) -> TensorType:
    """`sum`/`mean` over `dims` (empty: all dims), optionally keeping them as 1;
    the result dtype follows torch (sum of ints is i64; `dtype` overrides)."""
    check = _Check(op_name)
    shape = _shape(input)
    check.unique_dims(dims, len(shape))
    _known_element(check, input.element_type, _operand(0, "input"))
    if dtype is not None:
        _known_element(check, dtype, "dtype")
    reduced = set(dims) if dims else set(range(len(shape)))
    if keepdim:
        out = [1 if d in reduced else s for d, s in enumerate(shape)]
    else:
        out = [s for d, s in enumerate(shape) if d not in reduced]
    element = _element_or_fail(check, _reduction_element(op_name, input.element_type, dtype))
    return _make(out, element, device_of(input))


# ---------------------------------------------------------------------------
# The shared op base: assembly format and verification
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# softmax / log_softmax, where, masked_fill
# ---------------------------------------------------------------------------


_SOFTMAX_PROBES = {"torch.softmax": "softmax", "torch.log_softmax": "log_softmax"}


@lru_cache(maxsize=None)
def _softmax_element(name: str, element: Attribute, dtype: Attribute | None) -> Attribute | str:
    """The result element type of softmax/log_softmax (the `dtype` when
    given: torch casts the input to it first), or an error message
    (integral inputs without a floating `dtype`)."""
    import torch

    fn = getattr(torch, _SOFTMAX_PROBES[name])
    try:
        out = fn(_sample(element, False), 0, dtype=None if dtype is None else dtype_of(dtype))
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        what = f"element type {element}" + ("" if dtype is None else f" with dtype {dtype}")
        return f"does not support {what}: {_torch_error(error)}"


def infer_softmax_type(
    op_name: str, input: TensorType, dim: int, dtype: Attribute | None = None
) -> TensorType:
    """`softmax`/`log_softmax(input, dim, dtype=)`: the input's shape and
    device; the element type is `dtype` when given, else the input's (which
    must then be floating, as torch requires). `dim` is canonical
    (0 <= dim < rank); rank-0 inputs are not represented."""
    check = _Check(op_name)
    shape = _shape(input)
    check.min_rank(shape, _operand(0, "input"), 1)
    check.dim(dim, len(shape))
    _known_element(check, input.element_type, _operand(0, "input"))
    if dtype is not None:
        _known_element(check, dtype, "dtype")
    element = _element_or_fail(check, _softmax_element(op_name, input.element_type, dtype))
    return _make(shape, element, device_of(input))


@lru_cache(maxsize=None)
def _where_element(
    input: Attribute, input_0d: bool, other: Attribute | str, other_0d: bool
) -> Attribute | str:
    """The element type of `torch.where(cond, input, other)` (torch's type
    promotion of `input` and `other`, a tensor element type or a scalar
    kind), or an error message."""
    import torch

    condition = torch.ones((1,), dtype=torch.bool)
    a = _sample(input, input_0d)
    b = _sample(other, other_0d) if isinstance(other, Attribute) else _SCALAR_SAMPLES[other]
    try:
        return element_type_of(torch.where(condition, a, b).dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        return (
            f"does not support operands of element types {input} and {other}: "
            f"{_torch_error(error)}"
        )


def _check_bool_mask(check: _Check, ty: TensorType, what: str) -> None:
    """torch.where and masked_fill take boolean conditions only (uint8 ones
    are deprecated in where and refused by masked_fill)."""
    element = ty.element_type
    if not (isinstance(element, IntegerType) and element.width.data == 1):
        check.fail(f"{what} must have element type i1 (bool), got {element}")


def infer_where_type(
    condition: TensorType, input: TensorType, other: TensorType | NumberLike
) -> TensorType:
    """`torch.where(condition, input, other)`: the broadcast shape of the
    three, `input` and `other` (a tensor, or a Python number as a scalar)
    promoted as torch promotes them, a common device (0-d CPU tensors may
    meet any device); `condition` must be boolean."""
    check = _Check("torch.where")
    cond_what, input_what = _operand(0, "condition"), _operand(1, "input")
    _check_bool_mask(check, condition, cond_what)
    _known_element(check, input.element_type, input_what)
    shape = broadcast_shapes(_shape(condition), _shape(input), check)
    labelled = [(cond_what, condition), (input_what, input)]
    if isinstance(other, TensorType):
        other_what = _operand(2, "other")
        _known_element(check, other.element_type, other_what)
        shape = broadcast_shapes(shape, _shape(other), check)
        labelled.append((other_what, other))
        element = _where_element(input.element_type, not _shape(input), other.element_type, not _shape(other))
    else:
        scalar = number_attr(other)
        check.number(scalar, "scalar")
        element = _where_element(input.element_type, not _shape(input), _scalar_kind(scalar), True)
    device = _common_device(check, labelled)
    return _make(shape, _element_or_fail(check, element), device)


def _common_device(check: _Check, labelled: Sequence[tuple[str, TensorType]]) -> str | None:
    """The common device of the operands; a 0-d CPU tensor may meet any."""
    devices = [device_of(ty) for _, ty in labelled]
    if len({d for d in devices if d is not None}) > 1:
        others = [
            (what, ty) for (what, ty), d in zip(labelled, devices)
            if not (_shape(ty) == () and d == "cpu")
        ]
        if others:
            return check.device(others)
    return check.device(labelled)


@lru_cache(maxsize=None)
def _masked_fill_element(element: Attribute, value: Attribute) -> Attribute | str:
    """The element type of `masked_fill(input, mask, value)` (the input's:
    the value is cast to it), or why torch refuses the value (a non-finite
    or out-of-range float into an integral tensor)."""
    import torch

    try:
        out = torch.masked_fill(
            _sample(element, False), torch.ones((1,), dtype=torch.bool), number_value(value)
        )
        return element_type_of(out.dtype)
    except (RuntimeError, TypeError, UnsupportedDTypeError, NotImplementedError) as error:
        return f"cannot fill element type {element} with {number_value(value)!r}: {_torch_error(error)}"


def infer_masked_fill_type(input: TensorType, mask: TensorType, value: NumberLike) -> TensorType:
    """`torch.masked_fill(input, mask, value)`: the broadcast shape of input
    and mask, the input's element type (the value is cast to it: a float
    into an integral tensor truncates, a non-finite one is refused);
    `mask` must be boolean and on the input's device."""
    check = _Check("torch.masked_fill")
    input_what, mask_what = _operand(0, "input"), _operand(1, "mask")
    _known_element(check, input.element_type, input_what)
    _check_bool_mask(check, mask, mask_what)
    scalar = number_attr(value)
    check.number(scalar, "value")
    shape = broadcast_shapes(_shape(input), _shape(mask), check)
    device = _common_device(check, [(input_what, input), (mask_what, mask)])
    element = _element_or_fail(check, _masked_fill_element(input.element_type, scalar))
    return _make(shape, element, device)
