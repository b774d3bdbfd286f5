"""Foundational network expansion: composite score, threshold, top-k, edge shape."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cam_engine.graph.similarity import (
    PROXIMITY_FLOOR,
    Located,
    composite,
    expand,
    proximity,
    window_radius,
)


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _node(id_: str, position: int, vector: np.ndarray, doc: str = "d") -> Located:
    return Located(id_, doc, position, vector)


def _score(alpha: float, sigma: float, cos: float, delta: float, same_doc: bool = True) -> float:
    prox = math.exp(-(delta**2) / (2 * sigma**2)) if same_doc else 0.0
    return alpha * max(0.0, cos) + (1 - alpha) * prox


E1 = _unit(1, 0)
E2 = _unit(0.6, 0.8)  # cos(E1, E2) = 0.6
NEG = _unit(-0.6, 0.8)  # cos(E1, NEG) = -0.6


# --- the formula --------------------------------------------------------------------------


def test_proximity_is_a_gaussian_of_the_distance() -> None:
    assert proximity(0, 1.0) == pytest.approx(1.0)
    assert proximity(1, 1.0) == pytest.approx(math.exp(-0.5))
    assert proximity(-3, 1.5) == pytest.approx(math.exp(-9 / 4.5))
    assert proximity(np.array([2.0, -2.0]), 2.0).tolist() == pytest.approx([math.exp(-0.5)] * 2)


@pytest.mark.parametrize(
    ("alpha", "sigma", "cos", "delta"),
    [
        (0.6, 1.0, 0.6, 1),
        (0.6, 1.0, 0.6, 2),
        (0.5, 2.0, 0.3, 3),
        (0.9, 1.5, 0.8, 0),
        (1.0, 1.0, 0.4, 1),
        (0.0, 1.0, 0.9, 1),
    ],
)
def test_composite_matches_the_formula(alpha: float, sigma: float, cos: float, delta: int) -> None:
    score, prox = composite(
        np.array([cos]), np.array([float(delta)]), np.array([True]), alpha, sigma
    )
    expected_prox = math.exp(-(delta**2) / (2 * sigma**2))
    assert prox[0] == pytest.approx(expected_prox)
    assert score[0] == pytest.approx(alpha * cos + (1 - alpha) * expected_prox)


def test_composite_has_no_proximity_across_documents() -> None:
    score, prox = composite(np.array([0.5]), np.array([0.0]), np.array([False]), 0.6, 1.0)
    assert prox[0] == 0.0
    assert score[0] == pytest.approx(0.6 * 0.5)


def test_composite_clips_negative_cosine() -> None:
    score, _ = composite(np.array([-0.8]), np.array([1.0]), np.array([True]), 0.6, 1.0)
    assert score[0] == pytest.approx(0.4 * math.exp(-0.5))


def test_expand_scores_a_hand_computed_pair() -> None:
    # alpha 0.6, sigma 1: 0.6 * 0.6 + 0.4 * exp(-1/2) = 0.36 + 0.2426 = 0.6026
    edges = expand([_node("b", 1, E2)], [_node("a", 0, E1)], alpha=0.6, sigma=1.0, theta=0.6, k=10)
    assert len(edges) == 1
    edge = edges[0]
    assert (edge.src, edge.dst, edge.level) == ("a", "b", 0)
    assert edge.score == pytest.approx(0.36 + 0.4 * math.exp(-0.5), abs=1e-6)
    assert edge.cosine == pytest.approx(0.6, abs=1e-6)
    assert edge.proximity == pytest.approx(math.exp(-0.5))


def test_two_chunks_apart_fall_below_the_default_threshold() -> None:
    # 0.6 * 0.6 + 0.4 * exp(-2) = 0.414 < 0.6
    assert _score(0.6, 1.0, 0.6, 2) < 0.6
    assert (
        expand([_node("b", 2, E2)], [_node("a", 0, E1)], alpha=0.6, sigma=1, theta=0.6, k=10) == []
    )


def test_no_proximity_across_documents_in_expand() -> None:
    new = [_node("b", 1, E2, doc="d2")]
    pool = [_node("a", 1, E1, doc="d1")]
    edges = expand(new, pool, alpha=0.5, sigma=1.0, theta=0.0, k=10)
    assert len(edges) == 1
    assert edges[0].proximity == 0.0
    assert edges[0].score == pytest.approx(0.5 * 0.6, abs=1e-6)
    # same positions in one document would add the full (1 - alpha) * 1
    same = expand([_node("b", 1, E2)], [_node("a", 1, E1)], alpha=0.5, sigma=1, theta=0, k=10)
    assert same[0].score == pytest.approx(0.5 * 0.6 + 0.5, abs=1e-6)


def test_negative_cosine_is_clipped_in_expand() -> None:
    edges = expand([_node("b", 1, NEG)], [_node("a", 0, E1)], alpha=0.6, sigma=1, theta=0, k=10)
    assert len(edges) == 1
    assert edges[0].cosine == pytest.approx(-0.6, abs=1e-6)  # the raw part is kept
    assert edges[0].score == pytest.approx(0.4 * math.exp(-0.5), abs=1e-6)


def test_theta_is_inclusive() -> None:
    half = _unit(0.5, math.sqrt(0.75))  # cos with E1 is 0.5; alpha 1 makes the score 0.5
    new, pool = [_node("b", 1, half)], [_node("a", 0, E1)]
    assert len(expand(new, pool, alpha=1.0, sigma=1.0, theta=0.5, k=10)) == 1
    assert expand(new, pool, alpha=1.0, sigma=1.0, theta=0.5001, k=10) == []


# --- top-k, shape of the edges ------------------------------------------------------------


def test_at_most_k_edges_per_new_chunk_and_the_best_ones() -> None:
    # one new chunk at position 0 of "d"; pool at distances 1..5 with the same vector:
    # the score falls with the distance, so the top 2 are the two nearest.
    new = [_node("n", 0, E1)]
    pool = [_node(f"p{d}", d, E1) for d in (4, 1, 5, 3, 2)]
    edges = expand(new, pool, alpha=0.5, sigma=2.0, theta=0.0, k=2)
    assert {e.key for e in edges} == {("n", "p1"), ("n", "p2")}
    assert all(e.score >= _score(0.5, 2.0, 1.0, 3) for e in edges)


def test_top_k_ties_go_to_the_smaller_id() -> None:
    # other documents: all five candidates score exactly alpha * 1
    new = [_node("m", 0, E1, doc="x")]
    pool = [_node(i, 0, E1, doc="y") for i in ("q", "c", "z", "a", "k")]
    edges = expand(new, pool, alpha=0.8, sigma=1.0, theta=0.5, k=3)
    assert {e.key for e in edges} == {("a", "m"), ("c", "m"), ("k", "m")}


def test_a_node_can_get_more_than_k_edges_in_total() -> None:
    # four new chunks in their own documents; each is closer to the hub (cos 0.89) than to
    # the others (cos 0.8), so with k = 1 every one picks the hub
    hub = Located("hub", "h", 0, np.eye(5, dtype=np.float32)[0])
    new = [
        _node(f"n{i}", 0, _unit(*np.eye(5)[0] + 0.5 * np.eye(5)[i + 1]), doc=f"d{i}")
        for i in range(4)
    ]
    edges = expand(new, [hub], alpha=1.0, sigma=1.0, theta=0.0, k=1)
    assert sorted(e.key for e in edges) == [("hub", f"n{i}") for i in range(4)]


def test_no_self_loops_even_if_the_pool_holds_the_new_chunk() -> None:
    a = _node("a", 0, E1)
    edges = expand([a], [a, _node("b", 5, E2)], alpha=0.6, sigma=1.0, theta=0.0, k=10)
    assert all(e.src != e.dst for e in edges)
    assert [e.key for e in edges] == [("a", "b")]


def test_mutual_choices_give_one_canonical_edge() -> None:
    new = [_node("z", 0, E1), _node("a", 1, E1)]
    edges = expand(new, [], alpha=0.6, sigma=1.0, theta=0.5, k=10)
    assert [(e.src, e.dst) for e in edges] == [("a", "z")]


def test_no_new_chunks_no_edges() -> None:
    assert expand([], [_node("a", 0, E1)], alpha=0.6, sigma=1.0, theta=0.0, k=10) == []


# --- window radius ------------------------------------------------------------------------


def test_window_radius_known_values() -> None:
    # sigma 1: exp(-9/2) = 0.011 >= 0.01 > exp(-16/2); sigma 2: exp(-36/8) >= 0.01 > exp(-49/8)
    assert window_radius(1.0) == 3
    assert window_radius(2.0) == 6


@given(sigma=st.floats(min_value=0.35, max_value=50.0))
def test_window_radius_is_the_largest_delta_above_the_floor(sigma: float) -> None:
    r = window_radius(sigma)
    assert proximity(r, sigma) >= PROXIMITY_FLOOR * (1 - 1e-9)
    assert proximity(r + 1, sigma) < PROXIMITY_FLOOR * (1 + 1e-9)


@given(sigma=st.floats(min_value=1e-3, max_value=50.0))
def test_window_radius_covers_every_delta_above_the_floor(sigma: float) -> None:
    r = window_radius(sigma)
    assert r >= 1
    assert proximity(r + 1, sigma) < PROXIMITY_FLOOR * (1 + 1e-9)


# --- brute force --------------------------------------------------------------------------

# Unit vectors whose dot products are exact in float32: (+-1/2, ..) and +-basis vectors.
PALETTE = [np.array(v, dtype=np.float32) / 2 for v in itertools.product((1, -1), repeat=4)] + [
    s * np.eye(4, dtype=np.float32)[i] for i in range(4) for s in (1, -1)
]


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[Located], list[Located], float, float, float, int]:
    n_new = draw(st.integers(1, 5))
    n_old = draw(st.integers(0, 7))
    ids = draw(st.permutations([f"c{i:02d}" for i in range(n_new + n_old)]))

    def located(i: str) -> Located:
        return Located(
            i,
            draw(st.sampled_from(["d1", "d2"])),
            draw(st.integers(0, 8)),
            PALETTE[draw(st.integers(0, len(PALETTE) - 1))],
        )

    nodes = [located(i) for i in ids]
    alpha = draw(st.sampled_from([0.0, 0.5, 0.6, 0.7, 0.9, 1.0]))
    sigma = draw(st.sampled_from([0.5, 1.0, 1.5, 2.0]))
    theta = draw(st.sampled_from([0.13, 0.31, 0.47, 0.52, 0.63, 0.77]))
    k = draw(st.integers(1, 4))
    return nodes[:n_new], nodes[n_new:], alpha, sigma, theta, k


def _brute_force(
    new: list[Located], old: list[Located], alpha: float, sigma: float, theta: float, k: int
) -> dict[tuple[str, str], float]:
    everyone = new + old
    edges: dict[tuple[str, str], float] = {}
    for a in new:
        scored = []
        for b in everyone:
            if b.id == a.id:
                continue
            cos = float(np.dot(a.vector.astype(np.float64), b.vector.astype(np.float64)))
            s = _score(alpha, sigma, cos, a.position - b.position, a.doc_id == b.doc_id)
            if s >= theta:
                scored.append((-s, b.id, s))
        for _, b_id, s in sorted(scored)[:k]:
            edges[(min(a.id, b_id), max(a.id, b_id))] = s
    return edges


def _well_separated(nodes: list[Located], alpha: float, sigma: float, theta: float) -> bool:
    """No score near theta and no near-tie between pairs with different parts (float32 noise)."""
    parts: dict[tuple[float, float], float] = {}
    for a, b in itertools.combinations(nodes, 2):
        cos = float(np.dot(a.vector.astype(np.float64), b.vector.astype(np.float64)))
        same = a.doc_id == b.doc_id
        key = (max(cos, 0.0), abs(a.position - b.position) if same else -1.0)
        parts[key] = _score(alpha, sigma, cos, a.position - b.position, same)
    scores = sorted(parts.values())
    if any(abs(s - theta) < 1e-6 for s in scores):
        return False
    return all(b - a > 1e-6 or a == b for a, b in itertools.pairwise(scores))


@settings(max_examples=300, deadline=None)
@given(instance=instances())
def test_expand_over_all_nodes_equals_brute_force(
    instance: tuple[list[Located], list[Located], float, float, float, int],
) -> None:
    new, old, alpha, sigma, theta, k = instance
    assume(_well_separated(new + old, alpha, sigma, theta))
    expected = _brute_force(new, old, alpha, sigma, theta, k)
    edges = expand(new, old, alpha=alpha, sigma=sigma, theta=theta, k=k)
    assert [e.key for e in edges] == sorted(expected)
    for e in edges:
        assert e.src < e.dst
        assert e.level == 0
        assert e.score == pytest.approx(expected[e.key], abs=1e-6)
    new_ids = {n.id for n in new}
    assert all(e.src in new_ids or e.dst in new_ids for e in edges)  # pool pairs are not scored
