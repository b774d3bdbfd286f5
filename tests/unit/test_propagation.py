"""Incremental label propagation: weighted majority, ties, the ripple cap, lazy reads."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

from cam_engine.graph.propagation import PropagationResult, majority_label, propagate

Graph = dict[str, dict[str, float]]


def _graph(edges: Iterable[tuple[str, str, float]]) -> Graph:
    adjacency: Graph = {}
    for u, v, w in edges:
        adjacency.setdefault(u, {})[v] = w
        adjacency.setdefault(v, {})[u] = w
    return adjacency


def _clique(names: list[str], weight: float = 1.0) -> list[tuple[str, str, float]]:
    return [(u, v, weight) for u, v in itertools.combinations(names, 2)]


class Store:
    """Serves a graph and its labels on request, recording every id asked for."""

    def __init__(self, adjacency: Graph, labels: Mapping[str, str]) -> None:
        self.adjacency = adjacency
        self.labels = dict(labels)
        self.neighbour_requests: list[str] = []
        self.label_requests: list[str] = []

    def neighbours(self, ids: list[str]) -> dict[str, dict[str, float]]:
        self.neighbour_requests.extend(ids)
        return {i: dict(self.adjacency.get(i, {})) for i in ids}

    def read_labels(self, ids: list[str]) -> dict[str, str]:
        self.label_requests.extend(ids)
        return {i: self.labels[i] for i in ids}


def _run(
    adjacency: Graph,
    labels: dict[str, str],
    seeds: Iterable[str],
    max_rounds: int = 100,
) -> tuple[PropagationResult, dict[str, str]]:
    store = Store(adjacency, labels)
    current = dict(labels)
    result = propagate(seeds, current, store.neighbours, store.read_labels, max_rounds=max_rounds)
    return result, current


LEFT = [f"a{i}" for i in range(5)]
RIGHT = [f"b{i}" for i in range(5)]
# Two 5-cliques joined by one weaker edge: for every node its own clique carries more weight
# than the single bridge edge, so no label can cross it.
TWO_CLIQUES = _graph([*_clique(LEFT), *_clique(RIGHT), ("a4", "b0", 0.5)])


# --- majority_label -----------------------------------------------------------------------


def test_majority_label_takes_the_heaviest_label() -> None:
    assert majority_label("x", {"b": 2.0, "m": 3.0}) == "m"


def test_majority_label_keeps_the_current_label_when_it_ties() -> None:
    assert majority_label("c", {"a": 1.0, "c": 1.0}) == "c"


def test_majority_label_takes_the_smallest_tied_label_otherwise() -> None:
    assert majority_label("z", {"q": 1.0, "b": 1.0, "p": 1.0, "a": 0.5}) == "b"


def test_majority_label_treats_rounding_noise_as_a_tie() -> None:
    assert 0.1 + 0.2 != 0.3
    assert majority_label("c", {"b": 0.1 + 0.2, "a": 0.3}) == "a"


def test_majority_label_without_neighbours_keeps_the_label() -> None:
    assert majority_label("me", {}) == "me"


# --- propagate ----------------------------------------------------------------------------


def test_two_cliques_end_with_one_label_each() -> None:
    labels = {n: f"L{n}" for n in TWO_CLIQUES}
    result, final = _run(TWO_CLIQUES, labels, TWO_CLIQUES)
    assert not result.capped
    left = {final[n] for n in LEFT}
    right = {final[n] for n in RIGHT}
    assert len(left) == 1 and len(right) == 1 and left != right
    assert set(final.values()) <= set(labels.values())
    assert result.changed == {
        n: (labels[n], final[n]) for n in TWO_CLIQUES if labels[n] != final[n]
    }


def test_weight_beats_count() -> None:
    # "m" has one neighbour of weight 3; "b" has three neighbours of total weight 2
    adjacency = _graph([("x", "m1", 3.0), ("x", "b1", 0.5), ("x", "b2", 0.5), ("x", "b3", 1.0)])
    labels = {"x": "x", "m1": "m", "b1": "b", "b2": "b", "b3": "b"}
    result, final = _run(adjacency, labels, ["x"], max_rounds=1)
    assert final["x"] == "m"
    assert result.changed == {"x": ("x", "m")}


def test_ties_keep_the_current_label_or_take_the_smallest() -> None:
    adjacency = _graph([("x", "p1", 1.0), ("x", "q1", 1.0)])
    kept, final = _run(adjacency, {"x": "q", "p1": "p", "q1": "q"}, ["x"], max_rounds=1)
    assert final["x"] == "q" and kept.changed == {}
    moved, final = _run(adjacency, {"x": "z", "p1": "p", "q1": "q"}, ["x"], max_rounds=1)
    assert final["x"] == "p" and moved.changed == {"x": ("z", "p")}


def test_runs_are_reproducible() -> None:
    labels = {n: f"L{n}" for n in TWO_CLIQUES}
    first = _run(TWO_CLIQUES, labels, TWO_CLIQUES)
    second = _run(TWO_CLIQUES, labels, reversed(sorted(TWO_CLIQUES)))
    assert first == second


# A path p00 - p01 - ... - p09 whose weights fall along it (w(i, i+1) = 10 - i): each node
# prefers its left neighbour's label. Seeded at p01, the label l00 walks one step right per
# round: round 1 p01 takes it, round 2 p02 (p00 is also queued and already has it), ...
PATH_NODES = [f"p{i:02d}" for i in range(10)]
PATH = _graph((u, v, 10.0 - i) for i, (u, v) in enumerate(itertools.pairwise(PATH_NODES)))
PATH_LABELS = {n: f"l{n[1:]}" for n in PATH_NODES}


def test_the_ripple_stops_at_the_cap() -> None:
    rounds = 3
    result, final = _run(PATH, PATH_LABELS, ["p01"], max_rounds=rounds)
    assert result.rounds == rounds
    assert result.capped is True
    reached = PATH_NODES[1 : rounds + 1]  # p01..p03: distance < rounds from the seed
    assert result.changed == {n: (PATH_LABELS[n], "l00") for n in reached}
    for n in [*PATH_NODES[rounds + 1 :], "p00"]:
        assert final[n] == PATH_LABELS[n]


def test_the_ripple_runs_to_the_end_without_the_cap() -> None:
    result, final = _run(PATH, PATH_LABELS, ["p01"], max_rounds=100)
    assert result.capped is False
    assert set(final.values()) == {"l00"}
    # p01..p09 change in rounds 1..9; round 10 visits p08 again and changes nothing
    assert result.rounds == 10
    assert set(result.changed) == set(PATH_NODES[1:])


def test_nothing_to_change_converges_in_one_round() -> None:
    labels = dict.fromkeys(TWO_CLIQUES, "same")
    result, final = _run(TWO_CLIQUES, labels, TWO_CLIQUES)
    assert final == labels
    assert result.changed == {}
    assert result.rounds == 1
    assert result.capped is False
    assert result.updates == len(TWO_CLIQUES)


def test_no_seeds_no_rounds() -> None:
    result, final = _run(TWO_CLIQUES, {n: n for n in TWO_CLIQUES}, [])
    assert result == PropagationResult()
    assert final == {n: n for n in TWO_CLIQUES}


def test_readers_are_only_asked_for_what_the_ripple_reached() -> None:
    other = [f"z{i}" for i in range(4)]
    adjacency = {**TWO_CLIQUES, **_graph(_clique(other))}
    labels = {n: f"L{n}" for n in adjacency}
    store = Store(adjacency, labels)
    current: dict[str, str] = {}  # nothing known up front: everything is read lazily
    seeds = ["a0", "a1"]
    result = propagate(seeds, current, store.neighbours, store.read_labels, max_rounds=50)
    assert result.changed  # the ripple did move
    assert not set(store.neighbour_requests) & set(other)
    assert not set(store.label_requests) & set(other)
    # neighbours are only read for replicas that were queued: seeds and neighbours of changes
    queued = set(seeds) | {n for r in result.changed for n in adjacency[r]}
    assert set(store.neighbour_requests) <= queued
    assert set(store.label_requests) <= queued | {n for r in queued for n in adjacency[r]}
    assert {n: current[n] for n in result.changed} == {n: b for n, (_, b) in result.changed.items()}
