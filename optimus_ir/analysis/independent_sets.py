"""The grouping search of horizontal batch fusion: independent sets of
same-key nodes in a DAG, found greedily, globally and in near-linear time.

`find_independent_groups(predecessors, keys, min_size=, max_size=)` works on
plain integers: node ``i`` (``0 <= i < n``, in topological order) has the
producers ``predecessors[i]`` (all ``< i``) and the grouping key ``keys[i]``
(``None``: not a candidate). It returns groups of candidates such that

1. the members of a group share one key, and a group has between
   ``min_size`` and ``max_size`` members;
2. no path (through any nodes) joins two members of one group;
3. contracting *all* the groups at once (each group one node, with the union
   of its members' edges) leaves the graph acyclic -- pairwise independence is
   not enough: ``{a1, a2}`` and ``{b1, b2}`` with ``a1 -> b2`` and
   ``b1 -> a2`` make the cycle ``A -> B -> A``;
4. the answer depends only on the input (keys are ordered by first
   appearance, no set of hashables is ever iterated);
5. the search is global: independent candidates are grouped however far
   apart they lie in the graph (PyTorch's Optimus looks a fixed number of
   levels upstream);
6. candidates are placed first-fit in topological order: a candidate joins
   the earliest-created open group of its key it is independent of (a group
   is open until it has ``max_size`` members), or else opens a new group.

`block_dag(ops)` builds ``predecessors`` for a list of xDSL ops of one block.

The greedy phase (properties 1, 2, 5, 6)
-----------------------------------------

Groups of one key get local indices ``0, 1, 2, ...`` in creation order. The
*taint* ``T(x)`` of a node is the set of groups that ``x`` or one of its
ancestors belongs to. A candidate ``c`` of key ``k`` is independent of group
``g`` iff ``g`` is not in ``T(c)`` computed over its strict ancestors (members
of ``g`` precede ``c``, so ``c`` cannot be their ancestor). Storing ``T(x)`` as
a bitset costs O(groups / word) per node: quadratic on a chain of same-key
candidates (each opens a group and inherits all earlier ones) and keys x nodes
on graphs with many keys. We store much less, thanks to this

**Invariant.** If a key-``k`` group ``g`` is in ``T(x)``, then every key-``k``
group ``g' < g`` that is still open is in ``T(x)`` too.

*Proof.* ``g`` in ``T(x)`` means ``x`` is, or descends from, a member ``m`` of
``g``, so ``T(x) ⊇ T(m)``. By first-fit, ``m`` joined (or opened) ``g`` only
because every key-``k`` group ``g' < g`` open at that moment was in
``T(m)``. All groups ``g' < g`` existed then (groups are created in index
order, before anyone joins them), and a group never reopens, so every
``g' < g`` open now was open then, hence is in ``T(m) ⊆ T(x)``. ∎

So for the query of ``c`` only ``h = max{g in T(c) of key k}`` matters: the
open groups ``<= h`` are all in ``T(c)``, those ``> h`` are not (``h`` is the
maximum), and the earliest open group ``c`` is independent of is the first
open group of key ``k`` with index ``> h``. A node's taint is therefore a dict
``key -> h`` (a per-key maximum over the ancestors, a plain DP), and "first
open group ``>= h + 1``" is a union-find over the key's group indices, where
closing group ``j`` links ``j`` to ``j + 1`` (path halving: near-constant).

The taint dicts are kept small and cheap:

* a node that adds nothing (not a candidate, one distinct predecessor taint)
  shares its predecessor's dict; sharing is counted (``holders``);
* a node whose predecessor is released at that node (its last user) takes the
  predecessor's dict over and updates it in place when nobody else holds it,
  so a chain costs O(1) per node; otherwise the largest predecessor dict is
  copied (at C speed) and the smaller ones are merged into it;
* a key whose last candidate has been placed is dead: its entries are not
  merged in, and a dict in which they make up most entries (more than twice
  the number of live keys) is rebuilt without them; the
  rebuild is paid for by the entries it drops;
* a node's dict is released once all its users are processed, so wide graphs
  do not keep one dict per node alive.

The cost is O(n + e) dict operations plus the merges; a merge costs the size
of the dicts merged into the largest one, plus one C-speed copy of the largest
one when it is still held elsewhere. A chain of same-key candidates has a
one-entry dict; many keys with few candidates each have small dicts because
dead keys are dropped. (A graph with many keys live at once, in which one node
with all of them in its dict feeds many merging nodes, copies that dict each
time; bitsets would pay the same per merge.)

The repair phase (property 3)
-----------------------------

The greedy groups are pairwise independent inside, but contracting them all
can make cycles (the example above: ``a2`` waits for ``b1``, ``b2`` for
``a1``). Groups below ``min_size`` are dropped first (contracting fewer
groups only removes cycles). If every group is level-uniform (see below: the
usual case of parallel towers of one shape) there is no cycle and nothing to
check. Otherwise acyclicity of the contracted graph is checked
with Kahn's algorithm on the reversed graph (out-degrees are user counts,
edges come from ``predecessors``: no successor lists are built). If nodes are
left over, their strongly connected components are found (iterative Tarjan on
the reversed contracted graph, which has the same components). Groups whose
members do not all have the same *level* (longest-path depth from the
sources) are *mixed*; in each non-trivial component the mixed groups are
split by level, and sub-groups below ``min_size`` are dropped (their members
are rejected, reason ``"cycle"``). The first round keeps the largest mixed
group of each component whole (in the two-group example above one group
survives); the second round, if cycles remain, splits every mixed group of
every non-trivial component, after which none is left:

**A full round leaves no cycle.** Every edge ``u -> v`` has
``level(u) < level(v)``, so an edge between two contracted nodes whose
members are each of one level goes strictly up in level, and no cycle passes
only through such level-uniform nodes. Splitting refines the contraction, so
a cycle after the split maps to a closed walk before it. A closed walk
through two or more contracted nodes stays within one non-trivial component,
all of whose nodes are level-uniform after the split (ungrouped nodes always
are): impossible. A closed walk on a single contracted node would need a
direct edge between two members of one group, which pairwise independence
excludes. (Every non-trivial component holds a mixed group, by the same
argument, so each round has something to split.)

The repair costs at most three linear checks plus two Tarjan runs, and only
when a cycle exists; an acyclic greedy result costs one Kahn pass, or none
when its groups are level-uniform.

Rejection reasons (`SearchResult.rejected`)
-------------------------------------------

* ``"dependent"`` -- the candidate's greedy group stayed below ``min_size``
  and a dependency is to blame: a later candidate of its key could not join
  that group because it descends from a member, or the group was opened
  although another open group of its key existed (its opener descends from a
  member of every such group).
* ``"too-small"`` -- its greedy group stayed below ``min_size`` with no
  dependency to blame (too few candidates of its key).
* ``"cycle"`` -- its group was split by the repair phase and its part stayed
  below ``min_size``: fusing it with the others would have made a cycle
  through other groups.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

__all__ = [
    "CYCLE",
    "DEPENDENT",
    "TOO_SMALL",
    "SearchResult",
    "block_dag",
    "find_independent_groups",
]

DEPENDENT = "dependent"
TOO_SMALL = "too-small"
CYCLE = "cycle"


@dataclass(frozen=True)
class SearchResult:
    """What `find_independent_groups` found.

    ``groups``: each group's node ids, increasing; groups ordered by their
    first member. ``rejected``: every candidate in no group, with the reason
    (`DEPENDENT`, `TOO_SMALL` or `CYCLE`, see the module docstring), in
    increasing node order.
    """

    groups: list[list[int]]
    rejected: dict[int, str]


class _Taint:
    """A node's taint: key index -> the highest group index of that key among
    the node and its ancestors; ``holders`` counts the live nodes sharing it."""

    __slots__ = ("holders", "maxes")

    def __init__(self, maxes: dict[int, int]) -> None:
        self.holders = 0
        self.maxes = maxes


def find_independent_groups(
    predecessors: Sequence[Sequence[int]],
    keys: Sequence[Hashable | None],
    *,
    min_size: int = 2,
    max_size: int | None = None,
) -> SearchResult:
    """Group the candidates (nodes with a key) into sets of pairwise
    independent same-key nodes whose simultaneous contraction keeps the graph
    acyclic, first-fit in topological order (see the module docstring).

    ``predecessors[i]`` are the producers of node ``i``'s operands, all
    ``< i`` (repeats allowed); ``keys[i]`` is its grouping key or ``None``.
    Raises `ValueError` on a predecessor out of order, on lengths that differ,
    on ``min_size < 1`` or on ``max_size < min_size``.
    """
    n = len(predecessors)
    if len(keys) != n:
        raise ValueError(f"{n} predecessor lists but {len(keys)} keys")
    if min_size < 1:
        raise ValueError(f"min_size must be at least 1, got {min_size}")
    if max_size is not None and max_size < min_size:
        raise ValueError(f"max_size {max_size} is below min_size {min_size}")
    cap = max_size if max_size is not None else n + 1

    # Keys numbered by first appearance; users counted per occurrence; the
    # level (longest-path depth from the sources) of every node.
    key_ids: dict[Hashable, int] = {}
    kid = [-1] * n
    first_candidate: list[int] = []
    last_candidate: list[int] = []
    users = [0] * n
    level = [0] * n
    for i in range(n):
        depth = 0
        for p in predecessors[i]:
            if not 0 <= p < i:
                raise ValueError(f"node {i} has predecessor {p}, which is not in 0..{i - 1}")
            users[p] += 1
            if level[p] >= depth:
                depth = level[p] + 1
        level[i] = depth
        key = keys[i]
        if key is not None:
            k = key_ids.setdefault(key, len(key_ids))
            kid[i] = k
            if k == len(last_candidate):
                first_candidate.append(i)
                last_candidate.append(i)
            else:
                last_candidate[k] = i
    num_keys = len(key_ids)
    out_degree = users[:]

    # Per key: global ids of its groups by local index, and the union-find
    # "first open local index >= x" (index len(groups) is the sentinel).
    key_groups: list[list[int]] = [[] for _ in range(num_keys)]
    next_open: list[list[int]] = [[0] for _ in range(num_keys)]
    highest_query = [-1] * num_keys  # max h any candidate of the key had
    members: list[list[int]] = []  # global group id -> node ids
    group_key: list[int] = []
    group_local: list[int] = []
    opened_blocked: list[bool] = []  # another open group existed at creation

    taint: list[_Taint | None] = [None] * n
    live = 0  # keys with a candidate placed and one still to come
    for i in range(n):
        preds = predecessors[i]
        k = kid[i]
        # The distinct taint objects of the predecessors, deduplicated by
        # identity (a wide node has many predecessors: no list scans).
        distinct: list[_Taint] = []
        if len(preds) == 1:
            t = taint[preds[0]]
            if t is not None:
                distinct.append(t)
        elif preds:
            seen: dict[int, _Taint] = {}
            for p in preds:
                t = taint[p]
                if t is not None and id(t) not in seen:
                    seen[id(t)] = t
                    distinct.append(t)
        # Release the predecessors this node is the last user of, so that
        # their dicts can be taken over in place below.
        for p in preds:
            users[p] -= 1
            if users[p] == 0:
                t = taint[p]
                if t is not None:
                    t.holders -= 1
                    taint[p] = None

        mine: _Taint | None
        if k < 0 and len(distinct) <= 1:
            mine = distinct[0] if distinct else None
        else:
            mine = None
            if distinct:
                largest = distinct[0]
                if len(distinct) > 1:
                    for t in distinct:
                        if len(t.maxes) > len(largest.maxes):
                            largest = t
                maxes = largest.maxes
                # Dead keys are dropped whenever they make up most of the
                # dict: each dropped entry pays for its share of the rebuild.
                if len(maxes) > 2 * live:
                    maxes = {kk: h for kk, h in maxes.items() if last_candidate[kk] >= i}
                elif largest.holders > 0:
                    maxes = maxes.copy()
                if maxes is largest.maxes:
                    mine = largest
                else:
                    mine = _Taint(maxes)
                if len(distinct) > 1:
                    for t in distinct:
                        if t is largest:
                            continue
                        for kk, h in t.maxes.items():
                            if h > maxes.get(kk, -1) and last_candidate[kk] >= i:
                                maxes[kk] = h
            if k >= 0:
                if i == first_candidate[k]:
                    live += 1
                h = mine.maxes.get(k, -1) if mine is not None else -1
                if h > highest_query[k]:
                    highest_query[k] = h
                parent = next_open[k]
                x = h + 1
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                local_groups = key_groups[k]
                if x == len(local_groups):
                    # No open group free: open one. Another open group exists
                    # iff the first open index overall is not the sentinel.
                    y = 0
                    while parent[y] != y:
                        parent[y] = parent[parent[y]]
                        y = parent[y]
                    opened_blocked.append(y != x)
                    g = len(members)
                    members.append([i])
                    group_key.append(k)
                    group_local.append(x)
                    local_groups.append(g)
                    parent.append(x + 1)
                    size = 1
                else:
                    g = local_groups[x]
                    group = members[g]
                    group.append(i)
                    size = len(group)
                if size >= cap:
                    parent[x] = x + 1
                if i == last_candidate[k]:
                    live -= 1
                else:
                    if mine is None:
                        mine = _Taint({})
                    mine.maxes[k] = x
            if mine is not None and not mine.maxes:
                mine = None
        if mine is not None and users[i] > 0:
            mine.holders += 1
            taint[i] = mine
    del taint

    reason: list[str | None] = [None] * n
    groups: list[list[int]] = []
    for g, group in enumerate(members):
        if len(group) >= min_size:
            groups.append(group)
            continue
        k = group_key[g]
        blamed = opened_blocked[g] or group_local[g] <= highest_query[k]
        why = DEPENDENT if blamed else TOO_SMALL
        for m in group:
            reason[m] = why

    # Level-uniform groups cannot close a cycle (see the module docstring):
    # the usual case, parallel towers of one shape, needs no check at all.
    if any(_mixed(group, level) for group in groups):
        for repair_round in range(3):
            components = _cyclic_components(predecessors, out_degree, groups)
            if not components:
                break
            assert repair_round < 2, "splitting every cyclic group by level leaves no cycle"
            to_split: set[int] = set()
            for component in components:
                mixed = [gi for gi in component if _mixed(groups[gi], level)]
                if repair_round == 0 and len(mixed) > 1:
                    # First try keeping the largest mixed group of the cycle.
                    keep = min(mixed, key=lambda gi: (-len(groups[gi]), groups[gi][0]))
                    mixed.remove(keep)
                to_split.update(mixed)
            groups = _split_by_level(groups, to_split, level, min_size, reason)
        groups.sort(key=lambda group: group[0])
    rejected = {i: why for i, why in enumerate(reason) if why is not None}
    return SearchResult(groups=groups, rejected=rejected)


def _mixed(group: list[int], level: list[int]) -> bool:
    """Whether the members of ``group`` lie on more than one level."""
    first = level[group[0]]
    return any(level[m] != first for m in group)


def _representatives(n: int, groups: list[list[int]]) -> list[int]:
    """Each node's contracted node: its group's first member, else itself."""
    rep = list(range(n))
    for group in groups:
        first = group[0]
        for m in group:
            rep[m] = first
    return rep


def _cyclic_components(
    predecessors: Sequence[Sequence[int]], out_degree: list[int], groups: list[list[int]]
) -> list[list[int]]:
    """The non-trivial strongly connected components of the graph with every
    group contracted, each as the indices (into ``groups``) of its groups;
    empty iff that graph is acyclic."""
    n = len(predecessors)
    if not groups:
        return []
    rep = _representatives(n, groups)
    group_of: dict[int, int] = {group[0]: gi for gi, group in enumerate(groups)}
    # Kahn's algorithm backwards: peel contracted nodes without users. Member
    # edges all leave the group (members are independent), so a group's
    # out-degree is the sum of its members' user counts.
    remaining = out_degree[:]
    for group in groups:
        first = group[0]
        remaining[first] = sum(out_degree[m] for m in group)
    stack = [r for r in range(n) if rep[r] == r and remaining[r] == 0]
    peeled = 0
    while stack:
        r = stack.pop()
        peeled += 1
        gi = group_of.get(r)
        for m in groups[gi] if gi is not None else (r,):
            for p in predecessors[m]:
                q = rep[p]
                remaining[q] -= 1
                if remaining[q] == 0:
                    stack.append(q)
    total = n - sum(len(group) - 1 for group in groups)
    if peeled == total:
        return []
    # Tarjan (iterative) on the reversed contracted graph restricted to the
    # nodes left over; reversal keeps the strongly connected components.
    left = [r for r in range(n) if rep[r] == r and remaining[r] > 0]
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    scc_stack: list[int] = []
    components: list[list[int]] = []

    def neighbours(r: int) -> list[int]:
        gi = group_of.get(r)
        found: list[int] = []
        for m in groups[gi] if gi is not None else (r,):
            for p in predecessors[m]:
                q = rep[p]
                if remaining[q] > 0:
                    found.append(q)
        return found

    counter = 0
    for root in left:
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        scc_stack.append(root)
        on_stack.add(root)
        work = [(root, iter(neighbours(root)))]
        while work:
            r, it = work[-1]
            advanced = False
            for q in it:
                if q not in index:
                    index[q] = low[q] = counter
                    counter += 1
                    scc_stack.append(q)
                    on_stack.add(q)
                    work.append((q, iter(neighbours(q))))
                    advanced = True
                    break
                if q in on_stack and index[q] < low[r]:
                    low[r] = index[q]
            if advanced:
                continue
            work.pop()
            if work and low[r] < low[work[-1][0]]:
                low[work[-1][0]] = low[r]
            if low[r] == index[r]:
                component: list[int] = []
                while True:
                    q = scc_stack.pop()
                    on_stack.discard(q)
                    component.append(q)
                    if q == r:
                        break
                if len(component) > 1:
                    found = [group_of[q] for q in component if q in group_of]
                    components.append(sorted(found))
    return components


def _split_by_level(
    groups: list[list[int]],
    to_split: set[int],
    level: list[int],
    min_size: int,
    reason: list[str | None],
) -> list[list[int]]:
    """Split the groups ``to_split`` into one group per level; parts below
    ``min_size`` are rejected as `CYCLE`."""
    result: list[list[int]] = []
    for gi, group in enumerate(groups):
        if gi not in to_split:
            result.append(group)
            continue
        parts: dict[int, list[int]] = {}
        for m in group:
            parts.setdefault(level[m], []).append(m)
        for part in parts.values():
            if len(part) >= min_size:
                result.append(part)
            else:
                for m in part:
                    reason[m] = CYCLE
    return result


def block_dag(ops: Sequence[Operation]) -> list[list[int]]:
    """``predecessors`` for `find_independent_groups` from ops in block order:
    for each op, the indices of the ops among ``ops`` that produce its
    operands, first occurrence first, without repeats. Operands defined
    elsewhere (block arguments, values from outside) are ignored; uses of
    outer values inside an op's regions count as operands of the op."""
    index: dict[Operation, int] = {op: i for i, op in enumerate(ops)}
    dag: list[list[int]] = []
    for i, op in enumerate(ops):
        preds: list[int] = []
        seen: set[int] = set()
        nested = op.walk() if op.regions else (op,)
        for inner in nested:
            for operand in inner.operands:
                owner = operand.owner
                if isinstance(owner, Operation):
                    j = index.get(owner)
                    if j is not None and j != i and j not in seen:
                        seen.add(j)
                        preds.append(j)
        dag.append(preds)
    return dag
