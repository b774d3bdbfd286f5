"""What a large memory does differently builds the same memory: each batch asks the
store's own vector search (SQLite's approximate index, Neo4j's vector index) for a new
chunk's neighbours instead of an exact search over vectors held in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.store import neo4j as neo4j_store
from cam_engine.store import sqlite_vectors
from tests.conftest import shared_file

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, chunk_tokens=60, theta=0.3)


def _documents() -> list[tuple[str, str]]:
    """Three documents of one book: the edges between them come from vector search only
    (the positional window stays inside a document)."""
    path = shared_file("haystacks/gutenberg/pg84.txt")
    if not path.exists():
        pytest.skip(f"shared data not found: {path}")
    paragraphs = [p for p in path.read_text(encoding="utf-8").split("\n\n") if len(p) > 200]
    return [(f"part{i}", "\n\n".join(paragraphs[30 * i : 30 * i + 30])) for i in range(3)]


def _across(memory: Memory) -> int:
    chunks = {n.id: n.doc_id for n in memory.store.nodes_at_level(0)}
    edges = memory.store.edges_of(chunks)
    return sum(1 for e in edges if e.level == 0 and chunks.get(e.src) != chunks.get(e.dst))


def _shape(memory: Memory) -> tuple[object, ...]:
    store = memory.store
    chunks = sorted(n.id for n in store.nodes_at_level(0))
    edges = sorted(
        (e.src, e.dst, round(e.score, 4)) for e in store.edges_of(chunks) if e.level == 0
    )
    return chunks, edges, [row["nodes"] for row in memory.stats()["levels"]]


def test_searching_the_store_builds_what_held_vectors_build(
    store_location: str, memory_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = _documents()
    with Memory.open(tmp_path / "held.db", "m", settings=SETTINGS, embedder=EMBEDDER) as held:
        # SQLite at its exact-search size: the reference every store must match.
        for doc_id, text in documents:
            held.ingest_text(text, doc_id, batch_size=16)
        expected = _shape(held)
        assert _across(held) > 10
    # The store's own search: SQLite through its approximate index from 40 vectors,
    # Neo4j through its vector index instead of vectors held by the batch.
    monkeypatch.setattr(sqlite_vectors, "ANN_MIN", 40)
    monkeypatch.setattr(neo4j_store, "HELD_VECTORS_MAX", -1)
    with Memory.open(store_location, memory_name, settings=SETTINGS, embedder=EMBEDDER) as m:
        for doc_id, text in documents:
            m.ingest_text(text, doc_id, batch_size=16)
        assert _shape(m) == expected
