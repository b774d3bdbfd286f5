"""The name graph on every store: the names each chunk mentions are written with it,
read both ways (``names_of``, ``chunks_naming``), and go with it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.names import names_in
from cam_engine.store.base import DocumentRecord, GraphStore, open_store
from cam_engine.store.migrations import migrate
from cam_engine.store.sqlite import SqliteStore
from cam_engine.types import CHUNK, Node
from tests.invariants import check_mentions

EMBEDDER = HashingEmbedder(32)
TEXTS = {
    "c0": "In 1851 Captain Ahab sailed from Nantucket on the Pequod.",
    "c1": "Then Starbuck, the mate, spoke to Captain Ahab about the whale.",
    "c2": "At the Spouter-Inn in New Bedford, Queequeg and Ishmael slept.",
    "c3": "He went back to Nantucket with Queequeg.",
}
DOCS = {"c0": "moby", "c1": "moby", "c2": "moby", "c3": "other"}


def chunk(node_id: str, text: str | None = None) -> Node:
    vector = np.random.default_rng(int(node_id[1:])).normal(size=32).astype(np.float32)
    return Node(
        node_id,
        0,
        CHUNK,
        text or TEXTS[node_id],
        DOCS[node_id],
        int(node_id[1:]),
        vector / np.linalg.norm(vector),
    )


@pytest.fixture()
def store(store_location: str, memory_name: str) -> Iterator[GraphStore]:
    s = open_store(store_location, memory_name)
    s.prepare(32)
    with s.transaction():
        for doc in ("moby", "other"):
            s.upsert_document(DocumentRecord(doc, f"{doc}.txt", None, 2))
        s.upsert_nodes([chunk(i) for i in TEXTS])
    yield s
    s.close()


def test_names_of_gives_each_chunk_the_names_of_its_text(store: GraphStore) -> None:
    got = store.names_of(["c0", "c1", "c3", "missing"])
    assert got == {i: sorted(names_in(TEXTS[i])) for i in ("c0", "c1", "c3")}
    assert got["c0"] == ["1851", "ahab", "nantucket", "pequod"]


def test_chunks_naming_lists_the_chunks_of_each_rare_enough_name(store: GraphStore) -> None:
    names = ["ahab", "nantucket", "queequeg", "starbuck", "nobody"]
    assert store.chunks_naming(names, max_chunks=2) == {
        "ahab": ["c0", "c1"],
        "nantucket": ["c0", "c3"],
        "queequeg": ["c2", "c3"],
        "starbuck": ["c1"],
    }
    # Names mentioned by more chunks than max_chunks bridge nothing and are left out.
    assert store.chunks_naming(names, max_chunks=1) == {"starbuck": ["c1"]}


def test_chunks_naming_counts_within_the_documents_given(store: GraphStore) -> None:
    names = ["nantucket", "queequeg", "ahab"]
    assert store.chunks_naming(names, max_chunks=1, documents=["moby"]) == {
        "nantucket": ["c0"],
        "queequeg": ["c2"],
    }
    assert store.chunks_naming(names, max_chunks=5, documents=["other"]) == {
        "nantucket": ["c3"],
        "queequeg": ["c3"],
    }
    assert store.chunks_naming(names, max_chunks=5, documents=[]) == {}


def test_deleting_chunks_takes_their_mentions_and_unmentioned_names(store: GraphStore) -> None:
    with store.transaction():
        store.delete_nodes(["c0", "c2"])
    assert store.names_of(["c0", "c2"]) == {}
    assert store.chunks_naming(["pequod", "nantucket", "ishmael"], max_chunks=9) == {
        "nantucket": ["c3"]
    }
    check_mentions(store)


def test_a_moved_chunk_with_a_new_paragraph_break_gets_its_names_again(
    store: GraphStore,
) -> None:
    # The same words; a paragraph break before "Stubb" makes him open a sentence, where
    # a capital alone (never inside a sentence in the chunk) is no name.
    inline, broken = "Whaling is hard work Stubb said.", "Whaling is hard work\n\nStubb said."
    assert (names_in(inline), names_in(broken)) == (["stubb"], [])
    with store.transaction():
        store.upsert_nodes([chunk("c1", inline)])
    assert store.names_of(["c1"]) == {"c1": ["stubb"]}
    with store.transaction():
        store.place_chunks([chunk("c1", broken)])
    assert store.names_of(["c1"]) == {}
    check_mentions(store)
    with store.transaction():
        store.place_chunks([chunk("c1", inline)])
    assert store.names_of(["c1"]) == {"c1": ["stubb"]}
    check_mentions(store)


def test_clear_removes_the_name_graph(store: GraphStore) -> None:
    with store.transaction():
        store.clear(keep_chunks=True)
    assert store.names_of(["c0"]) == {"c0": sorted(names_in(TEXTS["c0"]))}
    with store.transaction():
        store.clear(keep_chunks=False)
    assert store.names_of(list(TEXTS)) == {}
    assert store.stats()["names"] == 0


def test_stats_count_names_and_mentions(store: GraphStore) -> None:
    keys = [k for i in TEXTS for k in names_in(TEXTS[i])]
    stats = store.stats()
    assert (stats["names"], stats["mentions"]) == (len(set(keys)), len(keys))


def test_an_ingest_and_a_document_delete_keep_the_name_graph(
    store_location: str, memory_name: str
) -> None:
    settings = Settings(embed_model=EMBEDDER.name, theta=0.25, chunk_tokens=24)
    text = "\n\n".join(TEXTS.values())
    with Memory.open(store_location, memory_name, settings=settings, embedder=EMBEDDER) as m:
        m.ingest_text(text, document="book")
        m.ingest_text("Ahab met Queequeg at Nantucket. Ahab left.", document="note")
        chunks = {n.id: n.text for n in m.store.nodes_at_level(0)}
        assert m.store.names_of(chunks) == {
            i: sorted(names_in(t)) for i, t in chunks.items() if names_in(t)
        }
        check_mentions(m.store)
        m.delete_document("book")
        check_mentions(m.store)
        assert m.store.chunks_naming(["pequod", "nantucket"], max_chunks=9).keys() == {"nantucket"}


def test_the_migration_gives_stored_chunks_their_names(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = SqliteStore(path, "old")
    with store.transaction():
        store.save_settings({})
        store.upsert_document(DocumentRecord("moby", "moby.txt", None, 1))
        store.upsert_nodes([chunk("c0")])
    store.close()
    # The memory as a store before names were kept: no mentions table, no record of it.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE mentions")
    conn.execute("DELETE FROM _migrations WHERE name = '007_mentions'")
    assert migrate(conn) == ["007_mentions"]
    conn.close()
    store = SqliteStore(path, "old")
    assert store.names_of(["c0"]) == {"c0": sorted(names_in(TEXTS["c0"]))}
    store.close()
