"""Personalized PageRank over shared names, on small chunk-name graphs with known answers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from cam_engine.names import names_in
from cam_engine.retrieval.name_graph import _personalized_pagerank, name_ppr


class ChunkNames:
    """The stores' name index (``names_of``, ``chunks_naming``) over a few texts, each
    its own document: what the walk reads, without a store."""

    def __init__(self, texts: dict[str, str]) -> None:
        self._names = {i: names_in(t) for i, t in texts.items()}

    def names_of(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        return {i: self._names[i] for i in chunk_ids if i in self._names}

    def chunks_naming(
        self, names: Iterable[str], *, max_chunks: int, documents: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        found = {}
        for name in names:
            ids = [
                i
                for i, mine in self._names.items()
                if name in mine and (documents is None or f"doc-{i}" in documents)
            ]
            if 0 < len(ids) <= max_chunks:
                found[name] = ids
        return found


def index(texts: dict[str, str]) -> ChunkNames:
    return ChunkNames(texts)


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
    many = {f"x{i}": f"It rained in England on day {i + 10}." for i in range(6)}
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
