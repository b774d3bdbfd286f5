"""The cluster fill: past the first tokens, a large budget follows the evidence's clusters."""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.retrieval import RelevanceSelector, prune_and_grow
from cam_engine.retrieval.fill import FillSettings, cluster_fill
from cam_engine.retrieval.prune_grow import GrowSettings
from cam_engine.store.base import GraphStore
from cam_engine.store.sqlite import SqliteStore
from cam_engine.types import CHUNK, SUMMARY, Node
from tests.conftest import shared_file
from tests.unit.tiny_memory import axis

WORDS = 30  # every chunk's length in words: the lead is counted in them


def words(name: str) -> str:
    return " ".join([name] * WORDS)


@pytest.fixture()
def clustered(tmp_path: Path) -> SqliteStore:
    """Evidence ``e`` shares a pair cluster with ``mate`` and a large cluster with
    ``far0``-``far8``; ``flat``, ``near`` and ``lone`` are in no cluster with it."""
    store = SqliteStore(tmp_path / "f.db", "f")
    ids = ["e", "mate", "flat", "near", "lone", *(f"far{i}" for i in range(9))]
    chunks = [Node(i, 0, CHUNK, words(i), "d", n, axis(n % 16)) for n, i in enumerate(ids)]
    with store.transaction():
        store.upsert_nodes(chunks)
        store.upsert_nodes(
            [
                Node("pair", 1, SUMMARY, "pair", "d", 0.5, axis(0)),
                Node("big", 1, SUMMARY, "big", "d", 5.0, axis(1)),
                Node("other", 1, SUMMARY, "other", "d", 3.0, axis(2)),
            ]
        )
        store.replace_members(
            {
                "pair": (1, ["e", "mate"]),
                "big": (1, ["e", *(f"far{i}" for i in range(9))]),
                "other": (1, ["flat", "near", "lone"]),
            }
        )
    return store


# Flat relevance: ``near`` and ``flat`` above ``mate``, which is above nothing else.
RELEVANCE = {"e": 1.0, "near": 0.6, "flat": 0.3, "mate": 0.05, "lone": 0.04}
FLAT = ["near", "flat", "mate", "lone"]  # the backfill by relevance
EVIDENCE = [Node("e", 0, CHUNK, words("e"), "d")]


def fill_of(store: SqliteStore, **settings: float) -> list[str]:
    return cluster_fill(store, EVIDENCE, FLAT, RELEVANCE, FillSettings(**settings))  # type: ignore[arg-type]


def test_past_the_lead_a_cluster_mate_comes_before_a_stronger_unrelated_chunk(
    clustered: SqliteStore,
) -> None:
    # The lead holds the evidence and ``near``: both stay first, as a small budget sees them.
    order = fill_of(clustered, lead_tokens=2 * WORDS)
    assert order[0] == "near"
    assert order.index("mate") < order.index("flat")  # 0.05 + 0.7 x 1.0 x (1/2)^0.25 > 0.3
    # Without the fill (no decay) the flat ranking stands.
    assert fill_of(clustered, decay=0.0) == FLAT


def test_the_lead_is_never_reordered(clustered: SqliteStore) -> None:
    order = fill_of(clustered, lead_tokens=3 * WORDS)  # evidence, near, flat
    assert order[:2] == ["near", "flat"] and order.index("mate") == 2


def test_members_the_question_never_reached_join_the_fill(clustered: SqliteStore) -> None:
    order = fill_of(clustered, lead_tokens=0)
    assert {f"far{i}" for i in range(9)} <= set(order)
    assert "e" not in order  # the evidence is not filled in twice


def test_a_question_kept_to_a_document_fills_from_that_document_only(
    clustered: SqliteStore,
) -> None:
    far = [Node(f"far{i}", 0, CHUNK, words(f"far{i}"), "other", i, axis(i)) for i in range(9)]
    with clustered.transaction():
        clustered.upsert_nodes(far)
    order = cluster_fill(clustered, EVIDENCE, FLAT, RELEVANCE, FillSettings(lead_tokens=0), ["d"])
    assert order.index("mate") < order.index("near") and not any(i.startswith("far") for i in order)


def test_a_dense_cluster_lends_more_than_a_sparse_one(clustered: SqliteStore) -> None:
    # The pair is half evidence; the big cluster a tenth: its members come after
    # ``flat`` (0.3 > 0.9 x 1/10), the pair's mate before it (0.05 + 0.9 x 1/2).
    order = fill_of(clustered, lead_tokens=0, decay=0.9, density=1.0)
    assert order.index("mate") < order.index("flat") < order.index("far0")
    # Counting clusters by their evidence alone (no density), both lend alike.
    flat_density = fill_of(clustered, lead_tokens=0, decay=0.9, density=0.0)
    assert flat_density.index("far0") < flat_density.index("flat")


def test_clusters_too_large_to_say_anything_lend_nothing(clustered: SqliteStore) -> None:
    order = fill_of(clustered, lead_tokens=0, decay=0.9, max_members=5)
    assert "far0" not in order and order.index("mate") < order.index("near")


def test_through_a_built_memory_only_the_hierarchy_fills_from_clusters(tmp_path: Path) -> None:
    """A real essay, built with its hierarchy: prune-and-grow reaches a few chunks by
    relevance (``pool_depth=3``); the fill adds the other members of the evidence's
    level-1 clusters. Without the hierarchy (level 0) nothing is added."""
    embedder = HashingEmbedder(64)
    settings = Settings(embed_model=embedder.name, alpha=0.6, theta=0.3, chunk_tokens=60)
    essay = shared_file("haystacks/paul_graham/gap.txt").read_text()[:12000]
    question = "Why do the rich get richer, and is inequality of wealth bad?"
    with Memory.open(tmp_path / "m.db", "m", settings=settings, embedder=embedder) as memory:
        memory.ingest_text(essay, "gap", batch_size=8)
        store, vector = memory.store, embedder.embed([question])[0]

        def ask(level: int | None, fill: FillSettings) -> tuple[list[str], list[str]]:
            grow = GrowSettings(pool_depth=3, fill=fill)
            found = prune_and_grow(
                store,
                question,
                vector,
                RelevanceSelector(),
                top_k=4,
                max_turns=3,
                level=level,
                grow=grow,
            )
            return [n.id for n in found.ranked if n.level == 0], found.backfill

        evidence, filled = ask(None, FillSettings(lead_tokens=0))
        mates = cluster_mates(store, evidence)
        assert mates and mates <= set(filled)
        _, unfilled = ask(None, FillSettings(decay=0.0))
        assert not mates <= set(unfilled)  # the question alone did not reach them
        flat_evidence, flat = ask(0, FillSettings(lead_tokens=0))
        assert not cluster_mates(store, flat_evidence) <= set(flat)


def cluster_mates(store: GraphStore, chunks: list[str]) -> set[str]:
    """The other chunks of the level-1 clusters holding ``chunks`` (small ones)."""
    clusters = {p for ps in store.parents_of(chunks).values() for p in ps}
    small = [ids for ids in store.members_of(clusters).values() if len(ids) <= 50]
    found = store.get_nodes({m for ids in small for m in ids})
    return {i for i, n in found.items() if n.level == 0} - set(chunks)
