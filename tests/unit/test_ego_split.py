"""Ego-splitting: replicas per ego-network component, incremental re-split, replica edges."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import igraph as ig
from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.graph.ego_split import ego_components, replica_edges, resplit
from cam_engine.types import Replica

Graph = dict[str, dict[str, float]]


def _graph(edges: Iterable[tuple[str, str]], nodes: Iterable[str] = ()) -> Graph:
    adjacency: Graph = {n: {} for n in nodes}
    for i, (u, v) in enumerate(edges):
        weight = 1.0 + i / 10
        adjacency.setdefault(u, {})[v] = weight
        adjacency.setdefault(v, {})[u] = weight
    return adjacency


def _clique(names: list[str]) -> list[tuple[str, str]]:
    return list(itertools.combinations(names, 2))


def _split(adjacency: Graph, nodes: Iterable[str] | None = None) -> list[Replica]:
    diff = resplit(adjacency if nodes is None else nodes, adjacency, {}, 0)
    assert diff.changed == diff.removed == diff.unchanged == []
    return diff.added


def _labelled(replicas: list[Replica], prefix: str = "L") -> list[Replica]:
    return [
        Replica(r.id, r.node_id, r.level, f"{prefix}{i}", r.members) for i, r in enumerate(replicas)
    ]


A = ["a1", "a2", "a3"]
C = ["c1", "c2", "c3"]


# --- known answers ------------------------------------------------------------------------


def test_bridge_between_two_cliques_gets_one_replica_per_clique() -> None:
    adjacency = _graph(_clique(A) + _clique(C) + [("b", x) for x in A + C])
    replicas = _split(adjacency, ["b"])
    assert len(replicas) == 2
    assert {r.members for r in replicas} == {frozenset(A), frozenset(C)}
    assert all(r.node_id == "b" and r.level == 0 and r.label == "" for r in replicas)
    assert len({r.id for r in replicas}) == 2


def test_node_inside_one_clique_gets_one_replica() -> None:
    adjacency = _graph(_clique([*A, "b"]) + _clique(C) + [("b", x) for x in C])
    (replica,) = _split(adjacency, ["a1"])
    assert replica.members == frozenset({"a2", "a3", "b"})


def test_isolated_node_gets_one_replica_without_members() -> None:
    adjacency = _graph([("p", "q")], nodes=["x"])
    (replica,) = _split(adjacency, ["x"])
    assert replica.node_id == "x" and replica.members == frozenset()
    assert ego_components("x", adjacency) == []
    # a node the adjacency does not even mention is isolated too
    (missing,) = _split(adjacency, ["nowhere"])
    assert missing.members == frozenset()


def test_star_centre_gets_one_replica_per_leaf() -> None:
    leaves = [f"l{i}" for i in range(5)]
    adjacency = _graph([("hub", leaf) for leaf in leaves])
    replicas = _split(adjacency, ["hub"])
    assert len(replicas) == 5
    assert {r.members for r in replicas} == {frozenset({leaf}) for leaf in leaves}
    assert len({r.id for r in replicas}) == 5


def test_ego_components_are_sorted_by_smallest_member() -> None:
    adjacency = _graph([("v", "z"), ("v", "b"), ("v", "y"), ("v", "a"), ("z", "a"), ("b", "y")])
    assert ego_components("v", adjacency) == [frozenset({"a", "z"}), frozenset({"b", "y"})]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 9), st.integers(0, 9)).filter(lambda e: e[0] != e[1]),
        max_size=30,
    )
)
def test_ego_components_match_igraphs_components(pairs: list[tuple[int, int]]) -> None:
    adjacency = _graph([(f"n{a}", f"n{b}") for a, b in pairs], nodes=["n0"])
    neighbours = sorted(adjacency["n0"])
    index = {n: i for i, n in enumerate(neighbours)}
    ego = ig.Graph(
        n=len(neighbours),
        edges=[(index[a], index[b]) for a in neighbours for b in adjacency[a] if b in index],
    )
    expected = sorted(
        (frozenset(neighbours[i] for i in c) for c in ego.connected_components()), key=min
    )
    assert ego_components("n0", adjacency) == expected


# --- incremental re-split -----------------------------------------------------------------


def test_resplit_with_unchanged_neighbourhood_keeps_ids_and_labels() -> None:
    adjacency = _graph(_clique(A) + _clique(C) + [("b", x) for x in A + C])
    old = _labelled(_split(adjacency, ["b"]))
    diff = resplit(["b"], adjacency, {"b": old}, 0)
    assert sorted(diff.unchanged, key=lambda r: r.id) == sorted(old, key=lambda r: r.id)
    assert diff.added == diff.changed == diff.removed == []


def test_grown_component_keeps_id_and_label() -> None:
    before = _graph([("v", "a"), ("v", "b")])  # components {a}, {b}
    old = _labelled(_split(before, ["v"]))
    holder_a = next(r for r in old if r.members == {"a"})
    after = _graph([("v", "a"), ("v", "b"), ("v", "c"), ("a", "c")])  # {a, c}, {b}
    diff = resplit(["v"], after, {"v": old}, 0)
    assert diff.added == diff.removed == []
    (grown,) = diff.changed
    assert (grown.id, grown.label, grown.members) == (holder_a.id, holder_a.label, {"a", "c"})
    assert [r.id for r in diff.unchanged] == [next(r.id for r in old if r.members == {"b"})]


def test_vanished_component_removes_its_replica() -> None:
    before = _graph([("v", "a"), ("v", "b")])
    old = _labelled(_split(before, ["v"]))
    after = _graph([("v", "a")], nodes=["b"])
    diff = resplit(["v"], after, {"v": old}, 0)
    assert [r.members for r in diff.removed] == [frozenset({"b"})]
    assert [r.members for r in diff.unchanged] == [frozenset({"a"})]
    assert diff.added == diff.changed == []


def test_new_component_gets_a_fresh_id() -> None:
    # r1 was removed earlier: the fresh id must clash with neither r0 nor r2
    old = [
        Replica("v/r0", "v", 0, "x", frozenset({"a"})),
        Replica("v/r2", "v", 0, "y", frozenset({"b"})),
    ]
    after = _graph([("v", "a"), ("v", "b"), ("v", "c")])
    diff = resplit(["v"], after, {"v": old}, 0)
    assert sorted(diff.unchanged, key=lambda r: r.id) == old
    (added,) = diff.added
    assert added.members == {"c"} and added.label == "" and added.node_id == "v"
    assert added.id not in {"v/r0", "v/r1", "v/r2"}
    assert added.id.startswith("v/")


def test_merged_components_keep_the_smaller_replica_id() -> None:
    old = [
        Replica("v/r0", "v", 0, "x", frozenset({"a"})),
        Replica("v/r1", "v", 0, "y", frozenset({"b"})),
    ]
    after = _graph([("v", "a"), ("v", "b"), ("a", "b")])
    diff = resplit(["v"], after, {"v": old}, 0)
    assert [(r.id, r.label, r.members) for r in diff.changed] == [("v/r0", "x", {"a", "b"})]
    assert [r.id for r in diff.removed] == ["v/r1"]
    assert diff.added == diff.unchanged == []


def test_isolated_node_keeps_its_replica_when_it_gains_a_neighbour() -> None:
    old = [Replica("v/r0", "v", 0, "lbl", frozenset())]
    diff = resplit(["v"], _graph([("v", "a")]), {"v": old}, 0)
    assert [(r.id, r.label, r.members) for r in diff.changed] == [("v/r0", "lbl", {"a"})]
    assert diff.added == diff.removed == diff.unchanged == []


# --- replica edges ------------------------------------------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    n = draw(st.integers(1, 9))
    nodes = [f"n{i}" for i in range(n)]
    pairs = list(itertools.combinations(nodes, 2))
    kind = draw(st.sampled_from(["random", "random", "clique", "path", "star"]))
    if kind == "clique":
        chosen = pairs
    elif kind == "path":
        chosen = list(itertools.pairwise(nodes))
    elif kind == "star":
        chosen = [(nodes[0], x) for x in nodes[1:]]
    else:
        chosen = [p for p in pairs if draw(st.booleans())]
    return _graph(chosen, nodes=nodes)


def _components(adjacency: Graph) -> list[set[str]]:
    seen: set[str] = set()
    result = []
    for start in sorted(adjacency):
        if start in seen:
            continue
        stack, part = [start], {start}
        while stack:
            for nxt in adjacency[stack.pop()]:
                if nxt not in part:
                    part.add(nxt)
                    stack.append(nxt)
        seen |= part
        result.append(part)
    return result


@settings(max_examples=200, deadline=None)
@given(adjacency=graphs())
def test_replicas_split_each_neighbourhood_into_its_components(adjacency: Graph) -> None:
    replicas = _split(adjacency)
    for node, nbrs in adjacency.items():
        own = [r.members for r in replicas if r.node_id == node]
        if not nbrs:
            assert own == [frozenset()]
            continue
        assert sorted(itertools.chain.from_iterable(own)) == sorted(nbrs)  # a partition
        ego = {u: {v: w for v, w in adjacency[u].items() if v in nbrs} for u in nbrs}
        assert sorted(map(sorted, own)) == sorted(map(sorted, _components(ego)))
    assert len({r.id for r in replicas}) == len(replicas)


@settings(max_examples=200, deadline=None)
@given(adjacency=graphs())
def test_each_edge_becomes_exactly_one_replica_edge(adjacency: Graph) -> None:
    replicas = _split(adjacency)
    by_id = {r.id: r for r in replicas}
    rgraph = replica_edges(replicas, replicas, adjacency)
    assert set(rgraph) == set(by_id)
    replica_pairs = {frozenset((r, s)) for r, nbrs in rgraph.items() for s in nbrs}
    original = {frozenset((u, v)) for u, nbrs in adjacency.items() for v in nbrs}
    assert len(replica_pairs) == len(original)
    assert {frozenset(by_id[x].node_id for x in pair) for pair in replica_pairs} == original
    for r, nbrs in rgraph.items():
        for s, weight in nbrs.items():
            u, v = by_id[r].node_id, by_id[s].node_id
            assert v in by_id[r].members and u in by_id[s].members
            assert weight == adjacency[u][v]
            assert rgraph[s][r] == weight  # undirected


def test_two_cliques_sharing_a_node_give_overlapping_clusters() -> None:
    left = ["a1", "a2", "a3", "s"]
    right = ["b1", "b2", "b3", "s"]
    adjacency = _graph(_clique(left) + _clique(right))
    replicas = _split(adjacency)
    assert sum(r.node_id == "s" for r in replicas) == 2
    assert len(replicas) == 8  # every other node has a connected neighbourhood
    rgraph = replica_edges(replicas, replicas, adjacency)
    # label every replica by its connected component in the replica graph
    by_id = {r.id: r for r in replicas}
    clusters = sorted(sorted(by_id[x].node_id for x in part) for part in _components(rgraph))
    assert clusters == [sorted(left), sorted(right)]
    assert sum(c.count("s") for c in clusters) == 2
