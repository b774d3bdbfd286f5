"""Cluster splitting: connected pieces no larger than max_size that partition the members."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.graph.split import split_cluster

Graph = dict[str, dict[str, float]]


def _graph(edges: Iterable[tuple[str, str]], weight: float = 1.0) -> Graph:
    adjacency: Graph = {}
    for u, v in edges:
        adjacency.setdefault(u, {})[v] = weight
        adjacency.setdefault(v, {})[u] = weight
    return adjacency


def _connected(piece: list[str], adjacency: Graph) -> bool:
    inside = set(piece)
    seen, stack = {piece[0]}, [piece[0]]
    while stack:
        for nxt in adjacency.get(stack.pop(), {}):
            if nxt in inside and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen == inside


def _components(members: list[str], adjacency: Graph) -> list[set[str]]:
    left, parts = set(members), []
    while left:
        start = min(left)
        part = {start}
        stack = [start]
        while stack:
            for nxt in adjacency.get(stack.pop(), {}):
                if nxt in left and nxt not in part:
                    part.add(nxt)
                    stack.append(nxt)
        parts.append(part)
        left -= part
    return parts


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[str], Graph, int]:
    n = draw(st.integers(1, 40))
    nodes = [f"n{i:02d}" for i in range(n)]
    kind = draw(st.sampled_from(["random", "random", "clique", "path", "star", "cliques"]))
    pairs = list(itertools.combinations(nodes, 2))
    if kind == "clique":
        edges = pairs
    elif kind == "path":
        edges = list(itertools.pairwise(nodes))
    elif kind == "star":
        edges = [(nodes[0], x) for x in nodes[1:]]
    elif kind == "cliques":  # dense groups chained by single edges
        size = draw(st.integers(2, 9))
        groups = [nodes[i : i + size] for i in range(0, n, size)]
        edges = [p for g in groups for p in itertools.combinations(g, 2)]
        edges += [(a[-1], b[0]) for a, b in itertools.pairwise(groups)]
    else:
        p = draw(st.sampled_from([0.05, 0.1, 0.2, 0.5]))
        mask = draw(st.lists(st.floats(0, 1), min_size=len(pairs), max_size=len(pairs)))
        edges = [pair for pair, x in zip(pairs, mask, strict=True) if x < p]
    adjacency: Graph = {}
    for u, v in edges:
        w = draw(st.sampled_from([0.3, 0.6, 1.0]))
        adjacency.setdefault(u, {})[v] = w
        adjacency.setdefault(v, {})[u] = w
    # the cluster may be part of a larger graph: edges to non-members must be ignored
    if draw(st.booleans()):
        adjacency.setdefault(nodes[0], {})["outsider"] = 1.0
        adjacency["outsider"] = {nodes[0]: 1.0}
    order = draw(st.permutations(nodes))
    return list(order), adjacency, draw(st.integers(2, 15))


@settings(max_examples=200, deadline=None)
@given(cluster=clusters())
def test_pieces_partition_the_members_within_the_size(
    cluster: tuple[list[str], Graph, int],
) -> None:
    members, adjacency, max_size = cluster
    pieces = split_cluster(members, adjacency, max_size=max_size, seed=0)
    flat = [m for piece in pieces for m in piece]
    assert sorted(flat) == sorted(members)  # each member exactly once, nobody else
    assert all(1 <= len(piece) <= max_size for piece in pieces)
    assert all(piece == sorted(piece) for piece in pieces)
    assert pieces == sorted(pieces, key=lambda p: (-len(p), p[0]))
    # pieces are connected and never join two components of the cluster
    components = _components(members, adjacency)
    for piece in pieces:
        assert _connected(piece, adjacency)
        assert sum(bool(set(piece) & c) for c in components) == 1
    # a component that fits is never cut
    for component in components:
        if len(component) <= max_size:
            assert sorted(component) in pieces


def test_connected_cluster_within_the_size_is_returned_whole() -> None:
    path = ["e", "b", "d", "a", "c"]
    adjacency = _graph(itertools.pairwise(path))
    assert split_cluster(path, adjacency, max_size=5, seed=0) == [sorted(path)]


def test_disconnected_cluster_is_split_into_its_components() -> None:
    adjacency = _graph([("a", "b"), ("b", "c"), ("x", "y"), ("y", "z"), ("x", "z")])
    members = ["z", "a", "y", "c", "b", "x", "lonely"]
    pieces = split_cluster(members, adjacency, max_size=12, seed=0)
    # largest first, equal sizes by their first member
    assert pieces == [["a", "b", "c"], ["x", "y", "z"], ["lonely"]]


def test_two_dense_groups_joined_by_one_edge_are_cut_apart() -> None:
    left = [f"l{i}" for i in range(8)]
    right = [f"r{i}" for i in range(8)]
    edges = [*itertools.combinations(left, 2), *itertools.combinations(right, 2), ("l7", "r0")]
    adjacency = _graph(edges)
    pieces = split_cluster(left + right, adjacency, max_size=12, seed=0)
    assert pieces == [left, right]


def test_empty_cluster_has_no_pieces() -> None:
    assert split_cluster([], {}, max_size=5, seed=0) == []


def test_split_is_deterministic() -> None:
    nodes = [f"n{i:02d}" for i in range(30)]
    adjacency = _graph(
        [(u, v) for u, v in itertools.combinations(nodes, 2) if (int(u[1:]) * int(v[1:])) % 7 == 1]
        + list(itertools.pairwise(nodes))
    )
    first = split_cluster(nodes, adjacency, max_size=6, seed=3)
    assert all(len(p) <= 6 for p in first)
    assert split_cluster(nodes, adjacency, max_size=6, seed=3) == first
    assert split_cluster(list(reversed(nodes)), adjacency, max_size=6, seed=3) == first
