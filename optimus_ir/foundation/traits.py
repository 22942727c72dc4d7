"""Op properties as traits, and the queries passes ask them through.

Passes must not keep their own tuples of op classes ("the view ops", "the ops
with a contiguous result") or target-name lists: they ask the op, as MLIR
does with interfaces and xDSL with traits. The traits here are attached to
the op definitions in `dialects/torch/` and `dialects/fx.py`:

`ViewLike(relation)`
    A result may share storage with the (single tensor) input. `relation(op)`
    says how it relates to the input (`ViewRelation`): the same tensor
    (`Identity`), a piece along a dim (`Piece`: split, unbind, slice,
    select), size-1 dims removed or inserted (`UnitDims`: squeeze,
    unsqueeze), a permutation of the dims (`Permutation`: permute, transpose,
    movedim) or a reshape (`Reshape`: view, unflatten, reshape, flatten; the
    last two copy when no view exists). Every relation but `Reshape` knows
    the result strides from the input strides (`ViewRelation.strides`), so a
    layout analysis derives strides from the trait, not from isinstance
    chains; a `Reshape` needs torch's view-stride rule (`computeStride`),
    which the layout analysis owns.

`Elementwise(layout_exact)`
    The result is computed element by element from the operands at the same
    (broadcast) index. `layout_exact` says whether the values are
    bit-identical whatever the layout (strides) of the operands: measured on
    CPU (tests/test_traits.py) and declared on each op class
    (`dialects/torch/pointwise.py`). It is false where vectorized and
    scalar kernels round differently (a strided input gives other bits than
    a contiguous one), for add/sub with `alpha != 1` (the vectorized kernel
    fuses the multiply-add; `layout_exact` may be a function of the op), for
    random ops and, conservatively, for transcendentals with separate
    vectorized and scalar implementations even where they agree on torch
    2.13's CPU kernels, which nothing guarantees.

`ReturnsInput(when)`
    Where `when(op)` holds, torch returns the input tensor object itself
    (an eval-mode dropout, a flatten of nothing): the result may alias the
    input even though the op is no view.

`ContiguousResult()`
    The result is always a fresh contiguous tensor, whatever the operand
    layouts (linear, mm, addmm, bmm, baddbmm, matmul, layer_norm, sum, mean).

Memory effects
    xDSL's `MemoryEffect` traits: every torch op is `Pure` except a dropout
    in training (a write: it draws random numbers); `fx.get_attr` is `Pure`;
    the fx call ops carry `optimus_ir.foundation.effects.FxCallEffects`, which asks the
    classifier of `optimus_ir.foundation.effects`: no effect (pure), `ALLOC` only (a
    fresh tensor: removable when unused, never merged), or `WRITE`
    (in-place, random, unknown). `fx.placeholder`, `fx.output` and ops with
    regions have unknown effects and are never removed or merged.
    `is_removable(op)` (dce) and `is_mergeable(op)` (cse) are the queries.

Canonicalization
    Ops with local folds carry a `HasCanonicalizationPatternsTrait` whose
    patterns are registered by name in the pass registry
    (`optimus_ir.passes.registry.CANONICALIZATION_PATTERNS`) and imported at
    first use from `optimus_ir.passes.canonicalization_patterns` (see the
    `canonicalize` pass).

The queries cache per op class where the answer depends on the class only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from xdsl.ir import Operation
from xdsl.traits import HasCanonicalizationPatternsTrait, OpTrait

from optimus_ir.foundation.effects import FxCallEffects, effect_kind
from optimus_ir.passes.registry import load_canonicalization_patterns

if TYPE_CHECKING:
    from xdsl.pattern_rewriter import RewritePattern

# ---------------------------------------------------------------------------
# View relations
# ---------------------------------------------------------------------------

Strides = tuple[int, ...]


@dataclass(frozen=True)
class ViewRelation:
    """How a view-like op's result relates to its input (base of the kinds)."""

    def strides(
        self, sizes: Sequence[int], strides: Sequence[int], result_sizes: Sequence[int]
    ) -> Strides | None:
        """The result strides for an input of `sizes` and `strides` (static),
        or None when the relation alone does not say."""
        return None


@dataclass(frozen=True)
class Identity(ViewRelation):
    """The result is the input itself (same shape, strides and storage):
    `detach`."""

    def strides(
        self, sizes: Sequence[int], strides: Sequence[int], result_sizes: Sequence[int]
    ) -> Strides | None:
        return tuple(strides)


@dataclass(frozen=True)
class Piece(ViewRelation):
    """The result is a part of the input along `dim`, every `step`-th index
    (split, slice); with `keeps_dim=False` the dim is dropped (unbind,
    select)."""

    dim: int
    step: int = 1
    keeps_dim: bool = True

    def strides(
        self, sizes: Sequence[int], strides: Sequence[int], result_sizes: Sequence[int]
    ) -> Strides | None:
        out = list(strides)
        if not 0 <= self.dim < len(out):
            return None
        if not self.keeps_dim:
            del out[self.dim]
        else:
            out[self.dim] *= self.step
        return tuple(out)


@dataclass(frozen=True)
class UnitDims(ViewRelation):
    """Size-1 dims `removed` from the input (squeeze), or one size-1 dim
    `inserted` at that position of the result (unsqueeze)."""

    removed: tuple[int, ...] = ()
    inserted: tuple[int, ...] = ()

    def strides(
        self, sizes: Sequence[int], strides: Sequence[int], result_sizes: Sequence[int]
    ) -> Strides | None:
        out = [s for d, s in enumerate(strides) if d not in self.removed]
        for d in self.inserted:
            if not 0 <= d <= len(out):
                return None
            # torch's rule for the stride of a new size-1 dim
            new = out[d] * sizes[d] if d < len(out) and d < len(sizes) else 1
            out.insert(d, new)
        return tuple(out)


@dataclass(frozen=True)
class Permutation(ViewRelation):
    """Result dim i is input dim `order[i]` (permute, transpose, movedim)."""

    order: tuple[int, ...]

    def strides(
        self, sizes: Sequence[int], strides: Sequence[int], result_sizes: Sequence[int]
    ) -> Strides | None:
        if sorted(self.order) != list(range(len(strides))):
            return None
        return tuple(strides[d] for d in self.order)


@dataclass(frozen=True)
class Reshape(ViewRelation):
    """The same elements in row-major order, another shape (view, unflatten,
    reshape, flatten). `may_copy`: a contiguous copy when no view exists
    (reshape, flatten); otherwise always a view (`view` fails instead,
    `unflatten` always has one). The strides follow torch's `computeStride`
    (the layout analysis' rule), so `strides` says nothing here."""

    may_copy: bool = False


# ---------------------------------------------------------------------------
# Traits
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ViewLike(OpTrait):
    """A result of the op may share storage with its tensor input; `relation`
    computes how (a `ViewRelation`) from the op."""

    relation: Callable[[Operation], ViewRelation]


@dataclass(frozen=True)
class ReturnsInput(OpTrait):
    """Where `when(op)` holds, torch returns the op's (first) input tensor
    itself, the very object, not a new tensor: an eval-mode dropout, a
    flatten that flattens nothing. The op's result then shares storage,
    strides and identity with its input (measured against torch by
    tests/test_alias_facts.py)."""

    when: Callable[[Operation], bool]


@dataclass(frozen=True)
class Elementwise(OpTrait):
    """The op is pointwise. `layout_exact`: its values are bit-identical
    whatever the strides of its operands (a bool, or a function of the op
    for ops where it depends on a property)."""

    layout_exact: bool | Callable[[Operation], bool] = True

    def is_layout_exact(self, op: Operation) -> bool:
        """Whether `op`'s values do not depend on its operands' layout."""
        exact = self.layout_exact
        return exact if isinstance(exact, bool) else exact(op)


@dataclass(frozen=True)
class ContiguousResult(OpTrait):
    """The op always returns a fresh contiguous tensor, whatever the layout
    of its operands."""


@dataclass(frozen=True)
class LazyCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    """The op's canonicalization patterns are the set registered as
    `patterns` in the pass registry (`optimus_ir.passes.registry.
    CANONICALIZATION_PATTERNS`), imported at first use: pattern modules
    import the dialects, so a dialect neither imports them nor names their
    module; the registry is the one place that binds names to modules. The
    batch dialect attaches its own the same way."""

    patterns: str

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        return load_canonicalization_patterns(self.patterns)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        raise NotImplementedError("the patterns depend on the trait instance: use get_patterns")


def canonicalization_patterns(op: Operation | type[Operation]) -> tuple[RewritePattern, ...]:
    """The canonicalization patterns of `op` (or of an op class), in order:
    those of every `HasCanonicalizationPatternsTrait` it has."""
    cls = op if isinstance(op, type) else type(op)
    found: list[RewritePattern] = []
    for trait in cls.get_traits_of_type(HasCanonicalizationPatternsTrait):
        found.extend(trait.get_patterns(cls))
    return tuple(found)


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------

_Found = TypeVar("_Found")


def _per_class(look_up: Callable[[type[Operation]], _Found]) -> Callable[[Operation], _Found]:
    """`look_up` of an op's class, remembered per class: traits are
    declared on the class, and the queries below run on every op of every
    pass (a trait lookup walks the class's traits)."""
    known: dict[type[Operation], _Found] = {}

    def of(op: Operation) -> _Found:
        cls = type(op)
        try:
            return known[cls]
        except KeyError:
            found = known[cls] = look_up(cls)
            return found

    return of


_view_trait = _per_class(lambda cls: cls.get_trait(ViewLike))
_returns_input_trait = _per_class(lambda cls: cls.get_trait(ReturnsInput))
_elementwise_trait = _per_class(lambda cls: cls.get_trait(Elementwise))
_has_contiguous_result = _per_class(lambda cls: cls.has_trait(ContiguousResult))


def is_view_like(op: Operation) -> bool:
    """A result of `op` may be a view of its input (the `ViewLike` trait)."""
    return _view_trait(op) is not None


def view_relation(op: Operation) -> ViewRelation | None:
    """How `op`'s result relates to its input, or None when `op` is not
    view-like."""
    trait = _view_trait(op)
    return None if trait is None else trait.relation(op)


def returns_input(op: Operation) -> bool:
    """torch may return `op`'s input tensor itself (`ReturnsInput`)."""
    trait = _returns_input_trait(op)
    return trait is not None and trait.when(op)


def elementwise(op: Operation) -> Elementwise | None:
    """The `Elementwise` trait of `op`, or None when it is not pointwise."""
    return _elementwise_trait(op)


def is_elementwise(op: Operation) -> bool:
    """`op` is pointwise (the `Elementwise` trait)."""
    return elementwise(op) is not None


def is_layout_exact(op: Operation) -> bool:
    """`op` is pointwise and its values are bit-identical whatever the
    strides of its operands: a strided view may feed it instead of a
    contiguous copy."""
    trait = elementwise(op)
    return trait is not None and trait.is_layout_exact(op)


def has_contiguous_result(op: Operation) -> bool:
    """`op` always returns a fresh contiguous tensor (`ContiguousResult`)."""
    return _has_contiguous_result(op)


def is_removable(op: Operation) -> bool:
    """May `op` be erased when none of its results is used? (No memory
    effect, or only the allocation of its result.)"""
    return effect_kind(op) != "impure"


def is_mergeable(op: Operation) -> bool:
    """May `op` be merged with an identical op that dominates it (cse)? No
    memory effect at all (an allocation is a distinct tensor), no regions."""
    return effect_kind(op) == "pure"


__all__ = [
    "ContiguousResult",
    "Elementwise",
    "FxCallEffects",
    "Identity",
    "LazyCanonicalizationPatterns",
    "Permutation",
    "Piece",
    "Reshape",
    "ReturnsInput",
    "UnitDims",
    "ViewLike",
    "ViewRelation",
    "canonicalization_patterns",
    "elementwise",
    "has_contiguous_result",
    "is_elementwise",
    "is_layout_exact",
    "is_mergeable",
    "is_removable",
    "is_view_like",
    "returns_input",
    "view_relation",
]
