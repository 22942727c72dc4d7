"""One depth-first walk for every "what can I reach from here" question
about the IR (alias classes, view closures, the ops a pattern's root
depends on): the question is the `successors` function."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

Node = TypeVar("Node", bound=Hashable)


def reachable(
    start: Node, successors: Callable[[Node], Iterable[Node]], limit: int | None = None
) -> set[Node]:
    """`start` and every node reachable from it through `successors`,
    each visited once. With `limit`, the walk stops once it has found more
    than `limit` nodes (a conservative answer for huge graphs)."""
    seen: set[Node] = {start}
    stack = [start]
    while stack:
        for successor in successors(stack.pop()):
            if successor not in seen:
                seen.add(successor)
                stack.append(successor)
        if limit is not None and len(seen) > limit:
            break
    return seen


__all__ = ["reachable"]
