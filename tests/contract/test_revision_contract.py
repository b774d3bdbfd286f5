"""The store verbs that updating and deleting documents use, on every store."""

from __future__ import annotations

import itertools

import pytest

from cam_engine import Memory, Settings
from cam_engine.chunking import chunk_document
from cam_engine.embed import HashingEmbedder
from cam_engine.store.base import DocumentRecord, GraphStore, open_store
from cam_engine.types import CHUNK, MEMORY_STATE, PAGE, Node, ViewNode
from tests.contract.conftest import neo4j_or_skip
from tests.contract.test_store_contract import chunk, unit


@pytest.fixture()
def store(store_location: str, memory_name: str) -> GraphStore:
    s = open_store(store_location, memory_name)
    s.prepare(32)
    yield s
    s.close()


def page(doc: str, seq: int, chunks: tuple[str, ...]) -> ViewNode:
    return ViewNode(
        f"readagent/{doc}/p{seq}", "readagent", PAGE, doc, seq, f"page {seq} of {doc}", doc,
        embedding=unit(200 + seq), chunk_ids=chunks,
    )  # fmt: skip


def state(group: str, seq: int, chunks: tuple[str, ...], doc: str | None = None) -> ViewNode:
    return ViewNode(
        f"memagent/{group}/{seq}", "memagent", MEMORY_STATE, group, seq, f"memory {seq}", doc,
        chunk_ids=chunks,
    )  # fmt: skip


def two_documents(store: GraphStore) -> None:
    """Documents d (chunks c0-c3) and e (c10-c11), each with pages, and memory states
    grouped by a document id, keyed to a document, and of a question."""
    with store.transaction():
        store.upsert_document(DocumentRecord("d", "d.txt", "abc", 4))
        store.upsert_document(DocumentRecord("e", "e.txt", "def", 2))
        store.upsert_nodes([chunk(i, "d") for i in range(4)])
        store.upsert_nodes([chunk(i, "e") for i in (10, 11)])
        store.upsert_view_nodes(
            [
                page("d", 0, ("c0", "c1")),
                page("d", 1, ("c2", "c3")),
                page("e", 0, ("c10", "c11")),
                state("d", 0, ("c0",)),  # grouped by the document
                state("q1", 0, ("c2",), doc="d"),  # a question's state, about d
                state("q2", 0, ("c1", "c10")),  # a question's state that read both
            ]
        )


def test_deleting_documents_takes_their_records_and_views_and_spares_the_others(
    store: GraphStore,
) -> None:
    two_documents(store)
    with store.transaction():
        store.delete_documents(["d", "never-stored"])
    assert [d.id for d in store.documents()] == ["e"] and store.get_document("d") is None
    assert [n.id for n in store.view_nodes("readagent", PAGE)] == ["readagent/e/p0"]
    assert store.view_nodes("readagent", PAGE)[0].chunk_ids == ("c10", "c11")
    assert [n.id for n in store.view_nodes("memagent", MEMORY_STATE)] == ["memagent/q2/0"]
    assert store.stats()["views"] == {"readagent": {PAGE: 1}, "memagent": {MEMORY_STATE: 1}}
    # The chunks are not the records' to delete: delete_nodes takes them.
    assert store.existing_ids(["c0", "c10"]) == {"c0", "c10"}
    assert [i for i, _ in store.keyword_search("readagent", PAGE, "page", 5)] == ["readagent/e/p0"]


def test_deleting_a_chunk_drops_it_from_the_views_that_read_it(store: GraphStore) -> None:
    two_documents(store)
    with store.transaction():
        store.delete_nodes(["c1", "c2"])
    pages = {n.id: n.chunk_ids for n in store.view_nodes("readagent", PAGE)}
    assert pages == {
        "readagent/d/p0": ("c0",),
        "readagent/d/p1": ("c3",),
        "readagent/e/p0": ("c10", "c11"),
    }
    states = {n.id: n.chunk_ids for n in store.view_nodes("memagent", MEMORY_STATE)}
    assert states == {"memagent/d/0": ("c0",), "memagent/q1/0": (), "memagent/q2/0": ("c10",)}
    # Then deleting the document leaves no view of it and no link to its chunks.
    with store.transaction():
        store.delete_nodes(["c0", "c3"])
        store.delete_documents(["d"])
    assert {n.id for n in store.view_nodes("readagent", PAGE)} == {"readagent/e/p0"}
    assert {n.id: n.chunk_ids for n in store.view_nodes("memagent", MEMORY_STATE)} == {
        "memagent/q2/0": ("c10",)
    }


def test_a_document_keeps_its_version_and_time_of_change(store: GraphStore) -> None:
    first = DocumentRecord("d", "d.txt", "abc", 3, 3, "t", 1, "2026-11-26T10:00:00+00:00")
    second = DocumentRecord("d", "d.txt", "abd", 4, 4, "u", 2, "2026-11-26T11:30:00+00:00")
    with store.transaction():
        store.upsert_document(first)
        store.upsert_document(DocumentRecord("s", "<stdin>", None, 2))
    assert store.get_document("d") == first
    assert store.get_document("s") == DocumentRecord("s", "<stdin>", None, 2, None, None, 1, None)
    with store.transaction():
        store.upsert_document(second)
    assert store.get_document("d") == second
    assert store.documents()[0] == second and store.documents()[0].version == 2


def test_a_deleted_document_can_come_back(store: GraphStore) -> None:
    two_documents(store)
    with store.transaction():
        store.delete_nodes(["c0", "c1", "c2", "c3"])
        store.delete_documents(["d"])
    with store.transaction():
        store.upsert_document(DocumentRecord("d", "d.txt", "xyz", 1))
        store.upsert_nodes([chunk(0, "d")])
    assert store.get_document("d") == DocumentRecord("d", "d.txt", "xyz", 1)
    assert [n.id for n in store.chunks_near("d", [0, 1])] == ["c0"]
    assert store.view_nodes("readagent", PAGE, "d") == []


# --- Neo4j's reading-order links -----------------------------------------------------------
def reading_order(store: GraphStore, doc_id: str) -> list[tuple[str, str]]:
    """The (chunk, next chunk) links of a document in Neo4j, in reading order."""
    rows = store._run("reading_order", doc_id=doc_id)  # type: ignore[attr-defined]
    return [(row["chunk"], row["next"]) for row in rows]


def has_chunk(store: GraphStore, doc_id: str) -> set[str]:
    """The chunks a document's node links to (HAS_CHUNK)."""
    rows = store._run("document_chunks", doc_id=doc_id)  # type: ignore[attr-defined]
    return {row["chunk"] for row in rows}


def at(node_id: str, position: int, doc: str = "d") -> Node:
    return Node(node_id, 0, CHUNK, f"text of {node_id}", doc, position, unit(position), {})


def test_neo4j_next_links_follow_positions_when_chunks_move(memory_name: str) -> None:
    store = neo4j_or_skip(memory_name)
    try:
        store.prepare(32)
        with store.transaction():  # chunks without a document record: linked all the same
            store.upsert_nodes([at(f"c{i}", i) for i in range(3)])
        assert reading_order(store, "d") == [("c0", "c1"), ("c1", "c2")]
        with store.transaction():
            store.upsert_document(DocumentRecord("d", "d.txt", "abc", 4))
            store.upsert_nodes([at("c3", 3)])
        assert reading_order(store, "d") == [("c0", "c1"), ("c1", "c2"), ("c2", "c3")]
        # c1 goes; a new chunk x comes in after c2; c2 and c3 move.
        with store.transaction():
            store.delete_nodes(["c1"])
            store.upsert_nodes([at("c2", 1), at("x", 2), at("c3", 3)])
        assert reading_order(store, "d") == [("c0", "c2"), ("c2", "x"), ("x", "c3")]
        # Two chunks trade places (a paragraph moved down), written in either order.
        with store.transaction():
            store.upsert_nodes([at("c3", 1), at("c2", 3)])
        assert reading_order(store, "d") == [("c0", "c3"), ("c3", "x"), ("x", "c2")]
        assert has_chunk(store, "d") == {"c2", "c3", "x"}  # those written with the record
    finally:
        with store.transaction():
            store.clear(keep_chunks=False)
        store.close()


def test_neo4j_next_links_follow_an_updated_document(memory_name: str) -> None:
    from tests.contract.conftest import NEO4J_URI

    neo4j_or_skip(memory_name).close()
    embedder = HashingEmbedder(32)
    settings = Settings(embed_model=embedder.name, theta=0.3, chunk_tokens=20)
    paragraphs = [f"Paragraph {i} is about topic {i % 3}, words {i} and more." for i in range(9)]
    with Memory.open(NEO4J_URI, memory_name, settings=settings, embedder=embedder) as memory:
        memory.ingest_text("\n\n".join(paragraphs), "doc", batch_size=3)
        first = [c.id for c in memory.document_chunks("doc")]
        assert len(first) > 3
        assert reading_order(memory.store, "doc") == list(itertools.pairwise(first))
        edited = [*paragraphs[:2], "A new paragraph, inserted.", *paragraphs[2:5], *paragraphs[6:]]
        memory.ingest_text("\n\n".join(edited), "doc", batch_size=3)
        now = [c.id for c in memory.document_chunks("doc")]
        expected = chunk_document("doc", "\n\n".join(edited), settings.chunk_tokens)
        assert [c.text for c in memory.document_chunks("doc")] == [c.text for c in expected]
        assert reading_order(memory.store, "doc") == list(itertools.pairwise(now))
        assert has_chunk(memory.store, "doc") == set(now)


def test_placing_chunks_moves_them_and_keeps_their_vectors(store: GraphStore) -> None:
    """``place_chunks`` writes position, offsets and a changed text; the vector and
    the full-text index follow, nothing else of the node changes."""
    with store.transaction():
        store.upsert_document(DocumentRecord("d", "d.txt", "abc", 3))
        store.upsert_nodes([at(f"c{i}", i) for i in range(3)])
    moved = [
        Node("c1", 0, CHUNK, "text of c1", "d", 2, None, {"start_char": 40, "end_char": 50}),
        Node("c2", 0, CHUNK, "text  of\nc2 plainly", "d", 1, None, {"start_char": 20}),
    ]
    with store.transaction():
        store.place_chunks(moved)
    nodes = store.get_nodes(["c0", "c1", "c2"], embeddings=True)
    assert [(i, n.position) for i, n in sorted(nodes.items())] == [
        ("c0", 0),
        ("c1", 2),
        ("c2", 1),
    ]
    assert nodes["c1"].props == {"start_char": 40, "end_char": 50}
    assert nodes["c1"].text == "text of c1" and nodes["c2"].text == "text  of\nc2 plainly"
    for i, position in (("c1", 1), ("c2", 2)):  # the vectors they were written with
        assert nodes[i].embedding is not None
        assert float(nodes[i].embedding @ unit(position)) == pytest.approx(1.0)
    assert [i for i, _ in store.search_text(0, "plainly", 5)] == ["c2"]
    if hasattr(store, "_run"):  # Neo4j: reading order follows the new positions
        assert reading_order(store, "d") == [("c0", "c2"), ("c2", "c1")]
