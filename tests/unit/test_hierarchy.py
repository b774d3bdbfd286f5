"""Shape of the hierarchy: lone replicas join a neighbouring cluster with room, and the
roots are grouped into a few covering nodes of two or more members."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.graph.hierarchy import (
    KeptGroups,
    _ranks,
    absorb_singletons,
    group_roots,
    merged_groups,
)


def test_a_lone_replica_joins_its_strongest_neighbour_with_room() -> None:
    edges = {"x": {"a1": 0.9, "b1": 0.5, "b2": 0.5}}
    labels = {"x": "L.x", "a1": "L.a", "b1": "L.b", "b2": "L.b"}
    # b ties x by 1.0 in all, a by 0.9: b wins while it has room ...
    assert absorb_singletons(["x"], edges, labels, {"L.x": 1, "L.a": 3, "L.b": 2}, max_size=3) == {
        "x": "L.b"
    }
    # ... and a full b leaves a.
    assert absorb_singletons(["x"], edges, labels, {"L.x": 1, "L.a": 2, "L.b": 3}, max_size=3) == {
        "x": "L.a"
    }
    # Every neighbouring cluster full, or no neighbour: x stays alone.
    assert absorb_singletons(["x"], edges, labels, {"L.x": 1, "L.a": 3, "L.b": 3}, max_size=3) == {}
    assert absorb_singletons(["y"], {}, {"y": "L.y"}, {"L.y": 1}, max_size=3) == {}


def test_two_lone_neighbours_pair_up_and_the_receiver_stays() -> None:
    edges = {"x": {"y": 1.0}, "y": {"x": 1.0}}
    labels = {"x": "L.x", "y": "L.y"}
    moved = absorb_singletons(["x", "y"], edges, labels, {"L.x": 1, "L.y": 1}, max_size=5)
    assert moved == {"x": "L.y"}  # y received x, so it is no longer alone


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 12),
    cap=st.integers(2, 4),
    data=st.data(),
)
def test_absorption_respects_the_cap_and_only_follows_edges(
    n: int, cap: int, data: st.DataObject
) -> None:
    ids = [f"r{i}" for i in range(n)]
    pairs = data.draw(st.sets(st.tuples(st.sampled_from(ids), st.sampled_from(ids))))
    edges: dict[str, dict[str, float]] = {}
    for a, b in pairs:
        if a != b:
            edges.setdefault(a, {})[b] = 1.0
            edges.setdefault(b, {})[a] = 1.0
    labels = {r: f"L.{data.draw(st.integers(0, n - 1))}" for r in ids}
    sizes: dict[str, int] = {}
    for label in labels.values():
        sizes[label] = sizes.get(label, 0) + 1
    if max(sizes.values()) > cap:
        return
    singles = [r for r in ids if sizes[labels[r]] == 1]
    moved = absorb_singletons(singles, edges, labels, sizes, max_size=cap)
    after = {r: moved.get(r, labels[r]) for r in ids}
    counts: dict[str, int] = {}
    for label in after.values():
        counts[label] = counts.get(label, 0) + 1
    assert max(counts.values()) <= cap
    for r, label in moved.items():
        assert r in singles
        assert any(after[o] == label for o in edges[r]), "joined a cluster it has no edge to"


def _unit(rows: list[list[float]]) -> np.ndarray:
    m = np.array(rows, dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_roots_group_by_similarity() -> None:
    # Two topics, three roots each, in different documents: grouped by topic.
    vectors = _unit([[1, 0.1], [0, 1], [1, 0], [0.1, 1], [1, 0.05], [0.05, 1]])
    docs = ["a", "b", "c", "d", "e", "f"]
    groups = group_roots(vectors, docs, [0.0] * 6, groups=2, max_size=3, alpha=0.7)
    assert groups == [[0, 2, 4], [1, 3, 5]]


def test_neighbouring_roots_of_a_document_group_together() -> None:
    # Equal vectors: only the reading order within the document decides.
    vectors = _unit([[1, 1]] * 4)
    groups = group_roots(
        vectors, ["d"] * 4, [30.0, 0.0, 90.0, 55.0], groups=2, max_size=2, alpha=0.5
    )
    assert groups == [[0, 1], [2, 3]]  # ranks 1,0 and 3,2


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 40),
    cap=st.integers(2, 6),
    target=st.integers(1, 12),
    seed=st.integers(0, 1000),
)
def test_groups_partition_the_roots_with_two_or_more_members(
    n: int, cap: int, target: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.normal(size=(n, 4)).tolist())
    docs = [f"d{i % 3}" if i % 4 else None for i in range(n)]
    positions = [float(i) for i in range(n)]
    groups = group_roots(vectors, docs, positions, groups=target, max_size=cap, alpha=0.7)
    flat = sorted(i for g in groups for i in g)
    assert flat == list(range(n)), "a partition of the roots"
    assert all(len(g) >= 2 for g in groups), "no group of one (it would be a copy)"
    assert len(groups) <= n // 2
    # Only lone roots placed last may push a group past the cap, by one each at most.
    assert all(len(g) <= 2 * cap for g in groups)
    if target * cap >= 2 * n:  # plenty of room: the target is reached
        assert len(groups) <= max(target, 1)
    again = group_roots(vectors, docs, positions, groups=target, max_size=cap, alpha=0.7)
    assert again == groups, "deterministic"


def test_a_new_root_is_placed_and_the_groups_before_it_stay() -> None:
    # Roots 0-5 were grouped in pairs before (not as a regrouping would now); root 6 is
    # new and close to roots 0, 2 and 4.
    vectors = _unit([[1, 0.1], [0, 1], [1, 0], [0.1, 1], [1, 0.05], [0.05, 1], [1, 0.2]])
    docs = ["a", "b", "c", "d", "e", "f", "g"]
    before = [[0, 1], [2, 3], [4, 5]]
    kept = group_roots(vectors, docs, [0.0] * 7, groups=3, max_size=3, alpha=0.7, start=before)
    fresh = group_roots(vectors, docs, [0.0] * 7, groups=3, max_size=3, alpha=0.7)
    assert fresh != kept
    unchanged = [g for g in kept if 6 not in g]
    assert len(unchanged) == 2 and all(g in before for g in unchanged)
    (grown,) = [g for g in kept if 6 in g]
    assert sorted(set(grown) - {6}) in before
    assert sorted(i for g in kept for i in g) == list(range(7))


def test_starting_groups_that_cannot_reach_the_target_are_regrouped_from_scratch() -> None:
    vectors = _unit([[1, 0.1], [0, 1], [1, 0], [0.1, 1], [1, 0.05], [0.05, 1]])
    docs = ["a", "b", "c", "d", "e", "f"]
    # Three pairs cannot merge into two groups under a cap of 3 (two pairs make four).
    pairs = [[0, 1], [2, 3], [4, 5]]
    fresh = group_roots(vectors, docs, [0.0] * 6, groups=2, max_size=3, alpha=0.7)
    assert fresh == [[0, 2, 4], [1, 3, 5]]
    assert (
        group_roots(vectors, docs, [0.0] * 6, groups=2, max_size=3, alpha=0.7, start=pairs) == fresh
    )


def test_without_regroup_the_groups_before_stay_even_above_the_target() -> None:
    # As above, where the caller cannot afford a regrouping (summaries.REGROUP_ROOTS):
    # the pairs stay, one group over the target, instead of every group changing.
    vectors = _unit([[1, 0.1], [0, 1], [1, 0], [0.1, 1], [1, 0.05], [0.05, 1]])
    docs = ["a", "b", "c", "d", "e", "f"]
    pairs = [[0, 1], [2, 3], [4, 5]]
    kept = group_roots(
        vectors, docs, [0.0] * 6, groups=2, max_size=3, alpha=0.7, start=pairs, regroup=False
    )
    assert kept == pairs


@settings(max_examples=60, deadline=None)
@given(n=st.integers(4, 40), cap=st.integers(2, 6), seed=st.integers(0, 1000))
def test_regrouping_from_the_last_groups_keeps_a_partition(n: int, cap: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.normal(size=(n, 4)).tolist())
    docs = [f"d{i % 3}" for i in range(n)]
    positions = [float(i) for i in range(n)]
    target = max(1, n // cap)
    first = group_roots(
        vectors[:-2], docs[:-2], positions[:-2], groups=target, max_size=cap, alpha=0.7
    )
    groups = group_roots(
        vectors, docs, positions, groups=target, max_size=cap, alpha=0.7, start=first
    )
    assert sorted(i for g in groups for i in g) == list(range(n))
    assert all(len(g) >= 2 for g in groups)
    kept = group_roots(
        vectors, docs, positions, groups=target, max_size=cap, alpha=0.7, start=first, regroup=False
    )
    assert sorted(i for g in kept for i in g) == list(range(n))
    assert all(len(g) >= 2 for g in kept)
    # Without a regrouping, a group before only ever gains roots: the new roots are
    # placed, the groups before kept whole.
    assert all(any(set(g) <= set(h) for h in kept) for g in first)
    assert len(kept) <= len(first) + 1  # two new roots: at most one new group


def test_without_regroup_a_new_root_joins_the_most_similar_group_with_room() -> None:
    # Groups {0, 1} (east) and {2, 3} (north); root 4 points north-east but nearer
    # north: it joins {2, 3}. Root 5 points north too, but {2, 3, 4} is full (cap 3):
    # it joins the east group, the best with room.
    vectors = _unit([[1, 0], [1, 0.1], [0, 1], [0.1, 1], [0.4, 1], [0.05, 1]])
    docs = ["a", "b", "c", "d", "e", "f"]
    placed = group_roots(
        vectors,
        docs,
        [0.0] * 6,
        groups=2,
        max_size=3,
        alpha=0.7,
        start=[[0, 1], [2, 3]],
        regroup=False,
    )
    assert placed == [[0, 1, 5], [2, 3, 4]]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 60),
    cap=st.integers(2, 12),
    target=st.integers(1, 12),
    seed=st.integers(0, 1000),
    kept=st.integers(0, 6),
)
def test_the_same_groups_as_merging_roots_one_by_one(
    n: int, cap: int, target: int, seed: int, kept: int
) -> None:
    """``group_roots`` keeps a row per starting group; ``_one_by_one`` is the function as
    it was, a row per root, merging the start groups root by root and refreshing every
    centroid at each merge. They agree, with and without start groups."""
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.normal(size=(n, 4)).tolist())
    docs = [f"d{i % 3}" if i % 5 else None for i in range(n)]
    positions = [float(rng.integers(0, 50)) for _ in range(n)]
    order = rng.permutation(n).tolist()
    start = [order[i : i + 3] for i in range(0, min(3 * kept, n - 1), 3)]
    args = {"groups": target, "max_size": cap, "alpha": 0.7}
    rank = _ranks(docs, positions)
    assert merged_groups(vectors, rank, docs, start, **args) == (
        _one_by_one(vectors, docs, positions, **args, start=start)
    )
    assert group_roots(vectors, docs, positions, **args) == _one_by_one(
        vectors, docs, positions, **args, start=[]
    )


def _one_by_one(
    vectors: np.ndarray,
    docs: list[str | None],
    positions: list[float],
    *,
    groups: int,
    max_size: int,
    alpha: float,
    start: list[list[int]],
) -> list[list[int]]:
    """group_roots before it worked on groups: (roots x roots) matrices, no regrouping."""
    n = len(vectors)
    by_order = sorted(range(n), key=lambda i: (docs[i] or "", positions[i], i))
    rank = np.zeros(n)
    seen: dict[str | None, int] = {}
    for i in by_order:
        rank[i] = seen.get(docs[i], 0)
        seen[docs[i]] = int(rank[i]) + 1
    codes = {d: c for c, d in enumerate(sorted({d for d in docs if d is not None}))}
    doc = np.array([codes[d] if d is not None else -1 - i for i, d in enumerate(docs)])
    prox = np.where(doc[:, None] == doc[None, :], np.exp(-((rank[:, None] - rank) ** 2) / 2), 0.0)
    np.fill_diagonal(prox, 0.0)
    sums = np.asarray(vectors, dtype=np.float64).copy()
    sizes = np.ones(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    members = [[i] for i in range(n)]

    def unit(m: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(m, axis=-1, keepdims=True)
        return np.asarray(m / np.where(norms == 0, 1.0, norms))

    score = alpha * (unit(sums) @ unit(sums).T) + (1 - alpha) * prox

    def merge(i: int, j: int) -> None:
        members[i].extend(members[j])
        sums[i] += sums[j]
        sizes[i] += sizes[j]
        alive[j] = False
        prox[i] = prox[:, i] = np.maximum(prox[i], prox[j])
        score[i] = score[:, i] = alpha * (unit(sums) @ unit(sums[i])) + (1 - alpha) * prox[i]

    for first, *rest in start:
        for other in rest:
            merge(first, other)
    while alive.sum() > max(groups, 1):
        ok = alive[:, None] & alive[None, :] & (sizes[:, None] + sizes[None, :] <= max_size)
        np.fill_diagonal(ok, False)
        if not ok.any():
            break
        masked = np.where(ok, score, -np.inf)
        best = masked.argmax(axis=1)
        pairs = sorted(
            (-masked[i, best[i]], i, int(best[i]))
            for i in range(n)
            if ok[i].any() and i < best[i] and best[best[i]] == i
        )
        for _, i, j in pairs:
            if alive.sum() <= groups:
                break
            merge(i, j)
    for i in range(n):
        if alive[i] and sizes[i] == 1 and alive.sum() > 1:
            others = [j for j in range(n) if alive[j] and j != i]
            room = [j for j in others if sizes[j] < max_size] or others
            merge(max(room, key=lambda j: (score[i, j], -j)), i)
    return sorted((sorted(members[i]) for i in range(n) if alive[i]), key=lambda g: g[0])


# --- KeptGroups: one covering level kept between batches --------------------------------
def _kept(cap: int = 3, alpha: float = 0.7) -> KeptGroups:
    groups = KeptGroups(3, alpha=alpha, max_size=cap)
    groups.set_group("x", np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0]]))
    groups.set_group("y", np.array([[0.0, 1.0, 0.0], [0.1, 0.9, 0.0]]))
    return groups


def _nowhere(node: str) -> str | None:
    return None


def test_a_node_goes_to_the_most_similar_group_with_room() -> None:
    groups = _kept()
    near_y = np.array([[0.2, 1.0, 0.0]])
    nowhere = [(None, ())]
    assert groups.place(["n1"], near_y, nowhere, _nowhere) == ["y"]
    assert groups.size("y") == 3, "y grew by it and is full (cap 3)"
    assert groups.place(["n2"], near_y, nowhere, _nowhere) == ["x"]
    assert groups.place(["n3"], near_y, nowhere, _nowhere) == [None], "every group is full"


def test_nodes_placed_in_one_call_see_the_groups_grow() -> None:
    # The first two fill y; the third, as close to y, goes to x: the same as one call
    # per node.
    near_y = np.array([[0.2, 1.0, 0.0], [0.1, 1.0, 0.0], [0.15, 1.0, 0.0]])
    together = _kept(cap=4).place(["a", "b", "c"], near_y, [(None, ())] * 3, _nowhere)
    one_by_one = _kept(cap=4)
    single = [
        one_by_one.place([node], near_y[i : i + 1], [(None, ())], _nowhere)[0]
        for i, node in enumerate(["a", "b", "c"])
    ]
    assert together == single == ["y", "y", "x"]


def test_a_neighbour_in_the_reading_order_decides_between_equal_groups() -> None:
    across = np.array([[0.0, 0.0, 1.0]])  # as far from x as from y
    here = [("doc", (2.0, 0, True, "n"))]
    for where, expected in (({"a": "y", "b": "x"}, "y"), ({"a": "x", "b": "y"}, "x")):
        groups = _kept(alpha=0.5)
        # In reading order a, n, c, b: a is next to n, b two places away (c has no group).
        for node, position in (("a", 1.0), ("n", 2.0), ("c", 3.0), ("b", 9.0)):
            groups.add_node(node, "doc", (position, 0, True, node))
        assert groups.place(["n"], across, here, where.get) == [expected]
    groups = _kept(alpha=0.5)
    for node, position in (("a", 1.0), ("n", 2.0), ("c", 3.0), ("b", 9.0)):
        groups.add_node(node, "doc", (position, 0, True, node))
    groups.drop_node("a")  # gone from the level below: b is the nearest now
    assert groups.place(["n"], across, here, {"a": "x", "b": "y"}.get) == ["y"]


def test_a_dropped_group_is_never_chosen_and_its_row_is_reused() -> None:
    groups = _kept(cap=9)
    groups.drop_group("y")
    assert len(groups) == 1
    assert groups.place(["n"], np.array([[0.0, 1.0, 0.0]]), [(None, ())], _nowhere) == ["x"]
    groups.set_group("z", np.array([[0.0, 1.0, 0.0], [0.0, 0.9, 0.1]]))
    assert groups.place(["m"], np.array([[0.0, 1.0, 0.0]]), [(None, ())], _nowhere) == ["z"]
    assert len(groups.sizes) == 16, "the free row was taken, the table did not grow"


def test_a_lone_member_joins_the_most_similar_group_of_two_or_more() -> None:
    groups = _kept()
    groups.set_group("one", np.array([[0.0, 0.0, 1.0]]))
    target, score = groups.most_similar(np.array([0.0, 0.1, 1.0]))
    assert target == "y" and 0.0 < score < 1.0, "a group of one is no home"
    groups.drop_group("x")
    groups.drop_group("y")
    assert groups.most_similar(np.array([0.0, 0.0, 1.0])) == (None, -np.inf)


def test_of_equal_groups_the_smallest_id_wins_whatever_its_row() -> None:
    # Groups of identical texts have equal centroids; a process that reads the groups
    # gives them rows in another order than the one that kept them.
    same = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    for order in (["b", "a"], ["a", "b"]):
        groups = KeptGroups(3, alpha=0.7, max_size=5)
        for group in order:
            groups.set_group(group, same)
        assert groups.place(["n"], same[:1], [(None, ())], _nowhere) == ["a"]
        assert groups.most_similar(same[0])[0] == "a"
