"""Personalized PageRank over shared names, on small chunk-name graphs with known answers."""

from __future__ import annotations

import pytest

from cam_engine.retrieval.name_graph import _personalized_pagerank, name_ppr
from cam_engine.retrieval.names_prototype import ChunkNames, names_in
from cam_engine.types import CHUNK, Node


def index(texts: dict[str, str]) -> ChunkNames:
    return ChunkNames(Node(i, 0, CHUNK, t, f"doc-{i}", 0) for i, t in texts.items())


def test_names_are_capitalized_runs_acronyms_and_numbers_casefolded() -> None:
    text = "In 2015 the Diamond Head Classic award went to Buddy Hield of the NBA, for 1,200 days."
    assert names_in(text) == ["diamond head classic", "buddy hield", "nba", "2015", "1200"]


def test_the_second_hop_of_a_bridge_outranks_an_unrelated_chunk() -> None:
    names = index(
        {
            "a": "The stadium of the Falcons is in Ardmore Park.",  # the question finds it
            "b": "Ardmore Park lies in the city of Brandvale.",  # shares Ardmore Park
            "c": "Corvin Hall hosts a chess club.",  # shares nothing with a
            "d": "The chess club of Corvin Hall meets on Sundays.",
        }
    )
    mass = name_ppr(names, {"a": 1.0}, max_chunks=10, damping=0.5)
    assert mass["b"] > mass.get("c", 0.0) and "c" not in mass
    assert mass["a"] > mass["b"]  # the walk restarts at its seed


def test_a_rare_name_carries_more_than_a_common_one() -> None:
    common = {f"x{i}": f"Lake Orma has fish number {i + 10}." for i in range(5)}
    names = index(
        {
            "a": "Tessa Quill was born at Lake Orma.",
            "b": "Tessa Quill wrote three novels.",  # shares the rare name
            **common,  # each shares the common name
        }
    )
    mass = name_ppr(names, {"a": 1.0}, max_chunks=10, damping=0.5)
    assert mass["b"] > max(mass[i] for i in common)


def test_a_name_too_many_chunks_mention_does_not_bridge() -> None:
    many = {f"x{i}": f"England had rain on day {i + 10}." for i in range(6)}
    names = index({"a": "Tessa Quill lived in England.", **many})
    assert name_ppr(names, {"a": 1.0}, max_chunks=7, damping=0.5)["x0"] > 0
    assert name_ppr(names, {"a": 1.0}, max_chunks=6, damping=0.5) == {}


def test_the_walk_stays_in_the_documents_asked_about() -> None:
    names = index({"a": "Tessa Quill sang.", "b": "Tessa Quill danced.", "c": "Tessa Quill ran."})
    mass = name_ppr(names, {"a": 1.0}, max_chunks=10, damping=0.5, documents=["doc-a", "doc-b"])
    assert set(mass) == {"a", "b"}


def test_the_walk_has_the_known_stationary_distribution() -> None:
    # One edge, restarting at vertex 0 half the time: p0 = 1/2 + p1/2, p1 = p0/2.
    mass = _personalized_pagerank(2, [(0, 1)], [1.0], [1.0, 0.0], 0.5)
    assert mass == pytest.approx([2 / 3, 1 / 3])
