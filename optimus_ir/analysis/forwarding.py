"""When may a fresh tensor be replaced by (a view of) another value?

The one precondition every plumbing rewrite that turns a copy into a view
shares; it combines the aliasing facts (`aliasing`) with the layout facts
(`layout`).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from optimus_ir.analysis.aliasing import (
    AliasAnalysis,
    alias_class,
    class_is_mutated,
    is_graph_input,
    is_view_result,
    reaches_output,
    view_closure,
)
from optimus_ir.analysis.layout import known_contiguous, layout_insensitive, same_layout


def can_forward_as_alias(
    fresh: SSAValue,
    source: SSAValue,
    *,
    whole: bool = False,
    contiguous: bool = False,
    aliases: AliasAnalysis | None = None,
) -> bool:
    """May the fresh tensor `fresh` (a cat/stack result, a copy) be replaced
    by a view of `source` (or, with `whole=True`, by `source` itself or a
    view of all of it that only adds size-1 dims, like `unsqueeze`)?

    `contiguous` says the caller proved the replacement is laid out like
    `fresh` (e.g. `contiguous_part` for a slice of a contiguous tensor); for
    `whole` it is also true when `same_layout(fresh, source)`. Callers that
    build another view chain can build it first and pass
    `contiguous=same_layout(fresh, new_value)`.

    The replacement makes `fresh`'s users alias `source`. That is unobservable
    only when

    * nothing in either alias class may be written to (a write through one
      would now show through the other);
    * the layout is the same, or no user of `fresh` depends on it
      (`layout_insensitive`: a strided view where there was a contiguous copy
      changes how a sum rounds, and `view` could fail);
    * `fresh` does not reach the graph output, except when it becomes
      `source` itself (`whole`), `source` is a fresh result of a compute op
      (not a view, not a graph input or parameter) and nothing else aliasing
      `source` is returned (two outputs would share storage).

    With `aliases` (an `AliasAnalysis` kept up to date by the running pass)
    the class questions are near O(1); its classes are supersets of the
    walked ones, so the answer is the same or more cautious."""
    if aliases is not None:
        if aliases.same_class(fresh, source):
            return False
        if aliases.is_mutated(fresh) or aliases.is_mutated(source):
            return False
    else:
        fresh_class = view_closure(fresh)
        source_class = alias_class(source)
        if fresh_class & source_class:
            return False  # fresh already aliased with source? be safe
        if class_is_mutated(fresh_class) or class_is_mutated(source_class):
            return False
    if whole:
        contiguous = contiguous or same_layout(fresh, source)
    if not contiguous and not layout_insensitive(fresh):
        return False
    if fresh_reaches_output(fresh, aliases):
        if not whole or not contiguous:
            return False
        if is_view_result(source) or is_graph_input(source):
            return False
        if aliases is not None:
            if aliases.reaches_output(source):
                return False
        elif reaches_output(alias_class(source)):
            return False
    return True


def fresh_reaches_output(fresh: SSAValue, aliases: AliasAnalysis | None = None) -> bool:
    """`fresh` or one of its views is returned by the graph (with `aliases`,
    the walk is skipped when nothing in its class is returned)."""
    if aliases is not None and not aliases.reaches_output(fresh):
        return False
    return reaches_output(view_closure(fresh))


def can_replace_by_copy(fresh: SSAValue, source: SSAValue) -> bool:
    """May the fresh tensor `fresh` be replaced by a new copy of all of
    `source` (`cat([source], d)`, made where `fresh` was made)?

    A copy made at the same point reads the same storage as the plumbing it
    replaces did, and is a fresh tensor like `fresh`, so aliasing is
    unchanged; the values are equal when the types are. What must also
    match is the layout (a returned value keeps its strides, a sum rounds by
    them): both must be provably contiguous (a cat's result is contiguous
    below rank 4, or when its input is)."""
    if fresh.type != source.type or not known_contiguous(fresh):
        return False
    return len(source.type.get_shape()) < 4 or known_contiguous(source)  # type: ignore[attr-defined]


__all__ = ["can_forward_as_alias", "can_replace_by_copy", "fresh_reaches_output"]
