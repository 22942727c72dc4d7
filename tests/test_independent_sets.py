"""The grouping search of batch fusion (`optimus_ir.analysis.independent_sets`):
hand-made DAGs with known answers, hypothesis DAGs against a brute-force
reachability oracle, and the xDSL adapter."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import test as xtest
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Block, Region

from optimus_ir.analysis.independent_sets import (
    CYCLE,
    DEPENDENT,
    TOO_SMALL,
    SearchResult,
    block_dag,
    find_independent_groups,
)
from optimus_ir.dialects import fx
from optimus_ir.translate.parsing import parse_module

# ---------------------------------------------------------------------------
# The oracle: transitive closure by DFS, first-fit by brute force.


def ancestors(preds: Sequence[Sequence[int]]) -> list[set[int]]:
    """Every node's strict ancestors, by a DFS up the predecessor lists."""
    result: list[set[int]] = []
    for i in range(len(preds)):
        seen: set[int] = set()
        stack = list(preds[i])
        while stack:
            p = stack.pop()
            if p not in seen:
                seen.add(p)
                stack.extend(preds[p])
        result.append(seen)
    return result


def comparable(anc: list[set[int]], a: int, b: int) -> bool:
    return a in anc[b] or b in anc[a]


def contracted_is_acyclic(preds: Sequence[Sequence[int]], groups: list[list[int]]) -> bool:
    """Contract every group into one node (union of edges) and try to order
    the result topologically (Kahn)."""
    rep = list(range(len(preds)))
    for group in groups:
        for m in group:
            rep[m] = group[0]
    succ: dict[int, set[int]] = {}
    for i, ps in enumerate(preds):
        for p in ps:
            if rep[p] == rep[i]:
                return False  # an edge inside a group is a self-loop
            succ.setdefault(rep[p], set()).add(rep[i])
    nodes = sorted(set(rep))
    indegree = dict.fromkeys(nodes, 0)
    for targets in succ.values():
        for q in targets:
            indegree[q] += 1
    ready = [r for r in nodes if indegree[r] == 0]
    done = 0
    while ready:
        r = ready.pop()
        done += 1
        for q in succ.get(r, ()):
            indegree[q] -= 1
            if indegree[q] == 0:
                ready.append(q)
    return done == len(nodes)


def greedy_phase(
    preds: Sequence[Sequence[int]], keys: Sequence[Hashable | None], max_size: int | None
) -> tuple[list[list[int]], list[bool]]:
    """First-fit by brute force: each candidate, in order, joins the first
    open group of its key none of whose members is comparable with it, or
    opens a group. Also says for each group whether another open group of
    its key existed when it was opened."""
    anc = ancestors(preds)
    cap = max_size if max_size is not None else len(preds) + 1
    groups: list[list[int]] = []
    blocked: list[bool] = []
    for i, key in enumerate(keys):
        if key is None:
            continue
        open_groups = [g for g in range(len(groups)) if keys[groups[g][0]] == key and len(groups[g]) < cap]
        for g in open_groups:
            if not any(comparable(anc, i, m) for m in groups[g]):
                groups[g].append(i)
                break
        else:
            blocked.append(bool(open_groups))
            groups.append([i])
    return groups, blocked


def greedy_oracle(
    preds: Sequence[Sequence[int]],
    keys: Sequence[Hashable | None],
    min_size: int,
    max_size: int | None,
) -> tuple[list[list[int]], dict[int, str]]:
    """`greedy_phase`, then the groups below ``min_size`` are rejected:
    ``dependent`` when a same-key candidate descends from a member, or the
    group was opened while another open group of its key existed."""
    anc = ancestors(preds)
    groups, blocked = greedy_phase(preds, keys, max_size)
    kept = [g for g in groups if len(g) >= min_size]
    rejected: dict[int, str] = {}
    for g, group in enumerate(groups):
        if len(group) >= min_size:
            continue
        key = keys[group[0]]
        depended_on = any(
            keys[c] == key and any(m in anc[c] for m in group) for c in range(len(keys))
        )
        reason = DEPENDENT if blocked[g] or depended_on else TOO_SMALL
        for m in group:
            rejected[m] = reason
    return kept, dict(sorted(rejected.items()))


def check_properties(
    preds: Sequence[Sequence[int]],
    keys: Sequence[Hashable | None],
    result: SearchResult,
    min_size: int,
    max_size: int | None,
) -> None:
    """Properties 1-3 of the module docstring, the shape of the result, and
    that every candidate is grouped or rejected exactly once."""
    anc = ancestors(preds)
    placed: list[int] = []
    for group in result.groups:
        assert group == sorted(group) and len(set(group)) == len(group)
        assert len({keys[m] for m in group}) == 1 and keys[group[0]] is not None
        assert len(group) >= min_size
        assert max_size is None or len(group) <= max_size
        for a in group:
            for b in group:
                assert a == b or not comparable(anc, a, b), (group, a, b)
        placed.extend(group)
    assert [g[0] for g in result.groups] == sorted(g[0] for g in result.groups)
    assert contracted_is_acyclic(preds, result.groups)
    assert len(placed) == len(set(placed))
    assert set(result.rejected.values()) <= {DEPENDENT, TOO_SMALL, CYCLE}
    assert list(result.rejected) == sorted(result.rejected)
    candidates = [i for i, k in enumerate(keys) if k is not None]
    assert sorted(placed + list(result.rejected)) == candidates


def search(preds, keys, **options) -> SearchResult:
    result = find_independent_groups(preds, keys, **options)
    check_properties(preds, keys, result, options.get("min_size", 2), options.get("max_size"))
    return result


# ---------------------------------------------------------------------------
# Hand-made DAGs.


def test_siblings_form_one_group() -> None:
    preds = [[], [0], [0], [0], [0]]
    result = search(preds, [None, "relu", "relu", "relu", "relu"])
    assert result.groups == [[1, 2, 3, 4]]
    assert result.rejected == {}


def test_chain_is_all_dependent() -> None:
    preds = [[]] + [[i] for i in range(5)]
    result = search(preds, ["t"] * 6)
    assert result.groups == []
    assert result.rejected == dict.fromkeys(range(6), DEPENDENT)


def test_diamond_joins_the_two_sides_only() -> None:
    # x -> a, b -> c: a and b are independent, c depends on both.
    result = search([[], [0], [0], [1, 2]], [None, "r", "r", "r"])
    assert result.groups == [[1, 2]]
    assert result.rejected == {3: DEPENDENT}


def test_path_through_a_non_candidate_counts() -> None:
    # a -> n -> b with n not a candidate: a and b are still dependent.
    result = search([[], [0], [1], []], ["r", None, "r", "r"])
    assert result.groups == [[0, 3]]
    assert result.rejected == {2: DEPENDENT}


def test_cross_dependency_of_two_groups_is_repaired() -> None:
    # a1 -> b2 and b1 -> a2: {a1, a2} and {b1, b2} are each independent, but
    # fusing both makes a cycle. The repair keeps one of them.
    preds = [[], [], [1], [0]]
    keys = ["A", "B", "A", "B"]
    assert not contracted_is_acyclic(preds, [[0, 2], [1, 3]])
    result = search(preds, keys)
    assert result.groups == [[0, 2]]
    assert result.rejected == {1: CYCLE, 3: CYCLE}


def test_second_repair_round_splits_the_kept_group() -> None:
    # A = {a1, a2}, B = {b1, b2} cross-tied (a1 -> b2, b1 -> a2) and
    # C = {c1, c2} (one level) tied to A (a1 -> c2, c1 -> a2). The first round
    # keeps A (largest mixed group, first) and splits B; A -> C -> A is still
    # a cycle, so the second round splits A too.
    preds = [[], [], [], [0], [1], [1], [2, 3]]
    keys = [None, "A", "B", "C", "C", "B", "A"]
    result = search(preds, keys)
    assert result.groups == [[3, 4]]
    assert result.rejected == dict.fromkeys([1, 2, 5, 6], CYCLE)


def test_many_cross_dependencies_stay_acyclic() -> None:
    # Pairs of groups tied crosswise, repeated: every pair loses one group.
    preds: list[list[int]] = []
    keys: list[str] = []
    for r in range(5):
        base = len(preds)
        preds += [[], [], [base + 1], [base]]
        keys += [f"A{r}", f"B{r}", f"A{r}", f"B{r}"]
    result = search(preds, keys)
    assert len(result.groups) == 5


def test_min_and_max_size() -> None:
    preds = [[]] + [[0]] * 7
    keys = [None] + ["s"] * 7
    assert search(preds, keys, max_size=3).groups == [[1, 2, 3], [4, 5, 6]]
    assert search(preds, keys, max_size=3).rejected == {7: TOO_SMALL}
    assert search(preds, keys, min_size=8).rejected == dict.fromkeys(range(1, 8), TOO_SMALL)
    assert search(preds, keys, min_size=1, max_size=3).groups == [[1, 2, 3], [4, 5, 6], [7]]
    assert search(preds, keys, min_size=7, max_size=7).groups == [list(range(1, 8))]


def test_first_fit_joins_the_earliest_open_group() -> None:
    # a0; a1 depends on a0 (opens group 1); a2 independent joins group 0;
    # a3 depends on a0 only joins group 1; a4 independent joins group 0.
    preds = [[], [0], [], [0], []]
    result = search(preds, ["a"] * 5)
    assert result.groups == [[0, 2, 4], [1, 3]]
    # with max_size 2, group 0 is full when a4 arrives: a4 joins group 1?
    # no, a4 is independent of group 1's members too, but group 1 is full.
    result = search(preds, ["a"] * 5, max_size=2)
    assert result.groups == [[0, 2], [1, 3]]
    assert result.rejected == {4: TOO_SMALL}


def test_none_keys_and_mixed_keys() -> None:
    preds = [[], [0], [0], [0], [0], [0], [1, 2, 3, 4, 5]]
    keys = [None, "relu", "tanh", "relu", None, "tanh", "cat"]
    result = search(preds, keys)
    assert result.groups == [[1, 3], [2, 5]]
    assert result.rejected == {6: TOO_SMALL}


def test_keys_compare_by_equality_not_identity() -> None:
    preds = [[], [], []]
    keys = [("linear", (4, 8)), ("linear", (4, 8)), ("linear", (4, 9))]
    result = search(preds, keys)
    assert result.groups == [[0, 1]]
    assert result.rejected == {2: TOO_SMALL}


def test_towers_of_very_different_depth_are_fused() -> None:
    # x -> a (short tower); x -> 1000 tanh -> b (long tower); b is 1001
    # nodes after a, far beyond any fixed upstream window.
    preds: list[list[int]] = [[], [0]]
    keys: list[str | None] = [None, "linear"]
    prev = 0
    for _ in range(1000):
        preds.append([prev])
        keys.append(None)
        prev = len(preds) - 1
    preds.append([prev])
    keys.append("linear")
    result = search(preds, keys)
    assert result.groups == [[1, len(preds) - 1]]


def test_wide_siblings_fill_groups_of_max_size() -> None:
    n = 5000
    preds = [[]] + [[0]] * n
    keys = [None] + ["relu"] * n
    result = find_independent_groups(preds, keys, max_size=64)
    assert len(result.groups) == math.ceil(n / 64)
    assert [len(g) for g in result.groups] == [64] * (n // 64) + [n % 64]
    assert result.rejected == {}


def test_deep_chain_and_many_keys_scale() -> None:
    # The classic traps; linear behaviour is measured in the benchmark, here
    # only the answers at a size where a quadratic search would still run.
    n = 10000
    chain = [[]] + [[i] for i in range(n - 1)]
    result = find_independent_groups(chain, ["t"] * n)
    assert result.groups == [] and len(result.rejected) == n
    pairs = [[] for _ in range(n)]
    keys = [f"k{i // 2}" for i in range(n)]
    result = find_independent_groups(pairs, keys)
    assert result.groups == [[i, i + 1] for i in range(0, n, 2)]


def test_backbone_with_many_short_lived_keys() -> None:
    # Each step hangs two candidates with a key of their own on a backbone;
    # the backbone's taint drops the dead keys as it goes.
    preds: list[list[int]] = [[]]
    keys: list[str | None] = [None]
    x = 0
    for step in range(40):
        preds += [[x], [x], [x, x + 1, x + 2]]
        keys += [f"k{step}", f"k{step}", None]
        x += 3
    result = search(preds, keys)
    assert result.groups == [[1 + 3 * s, 2 + 3 * s] for s in range(40)]
    assert (result.groups, result.rejected) == greedy_oracle(preds, keys, 2, None)


def test_repeated_predecessors_are_harmless() -> None:
    result = search([[], [0, 0], [0, 0, 0], [1, 1, 2]], [None, "r", "r", "r"])
    assert result.groups == [[1, 2]]


def test_invalid_input_is_refused() -> None:
    with pytest.raises(ValueError, match="predecessor"):
        find_independent_groups([[], [1]], [None, None])
    with pytest.raises(ValueError, match="keys"):
        find_independent_groups([[]], [])
    with pytest.raises(ValueError, match="min_size"):
        find_independent_groups([[]], [None], min_size=0)
    with pytest.raises(ValueError, match="max_size"):
        find_independent_groups([[]], [None], min_size=3, max_size=2)


class SaltedKey:
    """A key whose hash depends on a salt, equality only on the name: the
    search must not depend on hash values."""

    def __init__(self, name: str, salt: int) -> None:
        self.name = name
        self.salt = salt

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SaltedKey) and other.name == self.name

    def __hash__(self) -> int:
        return hash((self.name, self.salt))


def test_result_does_not_depend_on_hashes() -> None:
    preds = [[], [0], [0], [1], [2], [0], [3, 4], [5], []]
    names = ["a", "b", "c", "b", "c", "c", "a", "b", "a"]
    results = {
        repr(find_independent_groups(preds, [SaltedKey(nm, salt) for nm in names]))
        for salt in range(20)
    }
    assert len(results) == 1


# ---------------------------------------------------------------------------
# Hypothesis: random DAGs against the oracle.


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[list[int]], list[str | None], int, int | None]:
    n = draw(st.integers(0, 40))
    # Many keys make the taint dicts large enough to be rebuilt without
    # their dead keys.
    alphabet = draw(st.sampled_from([["a"], ["a", "b"], ["a", "b", "c"], [f"k{j}" for j in range(16)]]))
    preds: list[list[int]] = []
    keys: list[str | None] = []
    for i in range(n):
        k = draw(st.integers(0, min(i, 3)))
        preds.append(sorted(draw(st.lists(st.integers(0, i - 1), min_size=k, max_size=k))) if i else [])
        keys.append(draw(st.sampled_from([None, *alphabet])))
    min_size = draw(st.integers(1, 3))
    max_size = draw(st.one_of(st.none(), st.integers(min_size, 5)))
    return preds, keys, min_size, max_size


@settings(max_examples=200, deadline=None)
@given(dags())
def test_random_dags_against_the_oracle(case) -> None:
    preds, keys, min_size, max_size = case
    result = find_independent_groups(preds, keys, min_size=min_size, max_size=max_size)
    check_properties(preds, keys, result, min_size, max_size)
    assert find_independent_groups(preds, keys, min_size=min_size, max_size=max_size) == result
    groups, rejected = greedy_oracle(preds, keys, min_size, max_size)
    if contracted_is_acyclic(preds, groups):
        # No repair needed: exactly first-fit, hence maximal in its sense:
        # every rejected candidate was comparable with a member of every
        # earlier open group of its key.
        assert result.groups == groups
        assert result.rejected == rejected
        assert CYCLE not in result.rejected.values()
    else:
        # The repair only splits greedy groups: every group is part of one.
        greedy_of = {m: gi for gi, g in enumerate(groups) for m in g}
        for group in result.groups:
            assert len({greedy_of.get(m) for m in group}) == 1
    check_first_fit_maximality(preds, keys, result, max_size)


def check_first_fit_maximality(
    preds: list[list[int]], keys: list[str | None], result: SearchResult, max_size: int | None
) -> None:
    """The maximality first-fit guarantees, checked on the result. A
    candidate rejected by the greedy phase (not by the repair) is comparable
    with a member of every group of its key that was created before its own
    greedy group and was not full when it arrived (so it is `DEPENDENT`). One
    rejected as `TOO_SMALL` has no same-key candidate descending from its
    group, which was opened while no other group of its key was open."""
    anc = ancestors(preds)
    cap = max_size if max_size is not None else len(preds) + 1
    greedy, blocked = greedy_phase(preds, keys, max_size)
    own = {m: gi for gi, g in enumerate(greedy) for m in g}
    for c, reason in result.rejected.items():
        if reason == CYCLE:
            continue  # rejected by the repair, not by first-fit
        mine = greedy[own[c]]
        for group in greedy:
            if keys[group[0]] != keys[c] or group[0] >= mine[0]:
                continue
            before = [m for m in group if m < c]
            if len(before) < cap:
                assert any(comparable(anc, c, m) for m in before), (c, group)
                assert reason == DEPENDENT
        if reason == TOO_SMALL:
            assert not blocked[own[c]]
            assert not any(
                keys[d] == keys[c] and any(m in anc[d] for m in mine) for d in range(len(keys))
            )


# ---------------------------------------------------------------------------
# The xDSL adapter.

GRAPH = """
fx.graph @g {
  %x = fx.placeholder "x" : tensor<4x8xf32>
  %a = torch.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %b = torch.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %c = torch.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %k = torch.cat %a, %b, %a, %c dim 1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x32xf32>
  fx.output (%k, %b)
}
"""


def test_block_dag_of_a_parsed_graph() -> None:
    module = parse_module(GRAPH)
    graph = next(op for op in module.walk() if isinstance(op, fx.GraphOp))
    ops = list(graph.block.ops)
    preds = block_dag(ops)
    assert preds == [[], [0], [0], [1], [1, 2, 3], [4, 2]]
    keys = [op.name if op.name == "torch.relu" else None for op in ops]
    assert find_independent_groups(preds, keys).groups == [[2, 3]]
    # Values defined outside the list are ignored.
    assert block_dag(ops[3:]) == [[], [0], [1]]


def test_block_dag_counts_region_uses_as_operands() -> None:
    f32 = Float32Type()
    x = xtest.TestOp(result_types=[f32])
    y = xtest.TestOp(result_types=[f32])
    inner = xtest.TestOp([y.results[0]], result_types=[f32])
    inner_user = xtest.TestOp([inner.results[0]])  # an inner value: not an edge
    block = Block([inner, inner_user], arg_types=[f32])
    block_arg_user = xtest.TestOp([block.args[0]])
    block.add_op(block_arg_user)
    holder = xtest.TestOp([x.results[0]], result_types=[f32], regions=[Region(block)])
    user = xtest.TestOp([holder.results[0], x.results[0]])
    assert block_dag([x, y, holder, user]) == [[], [], [0, 1], [2, 0]]
