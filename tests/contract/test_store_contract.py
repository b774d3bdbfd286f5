"""The store contract, run against every store, and the engine on top of each."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import NotFoundError
from cam_engine.retrieval.localize import hybrid
from cam_engine.store.base import DocumentRecord, GraphStore, open_store
from cam_engine.types import CHUNK, SUMMARY, Edge, Node, Replica
from tests.conftest import shared_file
from tests.invariants import check_memory, check_structure_is_stored

EMBEDDER = HashingEmbedder(32)


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=32).astype(np.float32)
    return vector / np.linalg.norm(vector)


def chunk(i: int, doc: str = "d") -> Node:
    return Node(f"c{i}", 0, CHUNK, f"text {i}", doc, i, unit(i), {"start_char": i})


@pytest.fixture()
def store(store_location: str, memory_name: str) -> GraphStore:
    s = open_store(store_location, memory_name)
    s.prepare(32)
    yield s
    s.close()


def seed_graph(store: GraphStore) -> None:
    with store.transaction():
        store.upsert_document(DocumentRecord("d", "d.txt", "abc", 4))
        store.upsert_nodes([chunk(i) for i in range(4)])
        store.upsert_edges(
            [
                Edge.make("c0", "c1", 0, 0.9, cosine=0.8, proximity=1.0),
                Edge.make("c2", "c1", 0, 0.7, cosine=0.6, proximity=0.9),
            ]
        )


def test_repeated_texts_are_texts_equal_to_the_character(store: GraphStore) -> None:
    """Texts differing only in whitespace are two texts for ``stats()`` (it compares
    the texts as stored, by their hash), on every write path: new nodes, a summary, and
    a kept chunk whose whitespace moved (``place_chunks``)."""
    seed_graph(store)  # c0..c3: "text 0" .. "text 3"
    with store.transaction():
        store.upsert_nodes(
            [
                Node("c4", 0, CHUNK, "text  0", "d", 4, unit(4), {}),
                Node("c5", 0, CHUNK, "text 0\n", "d", 5, unit(5), {}),
                Node("c6", 0, CHUNK, "\ttext 1", "d", 6, unit(6), {}),
            ]
        )
    stats = store.stats()
    assert (stats["repeated_texts"], stats["repeated_summary_texts"]) == (0, 0)
    with store.transaction():  # c4 and c5 now repeat c0 as written; s1 repeats c1
        store.place_chunks(
            [
                Node("c4", 0, CHUNK, "text 0", "d", 4, unit(4), {}),
                Node("c5", 0, CHUNK, "text 0", "d", 5, unit(5), {}),
            ]
        )
        store.upsert_nodes([Node("s1-0", 1, SUMMARY, "text 1", None, 0.5, unit(9), {})])
    stats = store.stats()
    assert (stats["repeated_texts"], stats["repeated_summary_texts"]) == (3, 1)
    with store.transaction():  # the summary rewritten with a space more: no longer equal
        store.upsert_nodes([Node("s1-0", 1, SUMMARY, "text  1", None, 0.5, unit(9), {})])
    stats = store.stats()
    assert (stats["repeated_texts"], stats["repeated_summary_texts"]) == (2, 0)


def test_documents_and_settings_round_trip(store: GraphStore) -> None:
    assert store.load_settings() is None and store.get_document("d") is None
    with store.transaction():
        store.save_settings({"theta": 0.5})
        store.upsert_document(DocumentRecord("d", "d.txt", "abc", 3, 7))
        store.upsert_document(DocumentRecord("s", "<stdin>", None, 2))
    assert store.load_settings() == {"theta": 0.5}
    assert store.get_document("d") == DocumentRecord("d", "d.txt", "abc", 3, 7)
    assert store.documents() == [
        DocumentRecord("d", "d.txt", "abc", 3, 7),
        DocumentRecord("s", "<stdin>", None, 2, None),
    ]


def test_a_document_keeps_the_hash_of_its_text(store: GraphStore) -> None:
    # Two files with other bytes and the same text: one text_sha256, two sha256.
    with store.transaction():
        store.upsert_document(DocumentRecord("a.pdf", "a.pdf", "f1", 3, 3, text_sha256="t"))
        store.upsert_document(DocumentRecord("a.txt", "a.txt", "f2", 3, 3, text_sha256="t"))
    assert store.get_document("a.pdf") == DocumentRecord("a.pdf", "a.pdf", "f1", 3, 3, "t")
    assert [(d.sha256, d.text_sha256) for d in store.documents()] == [("f1", "t"), ("f2", "t")]


def test_memories_lists_those_with_settings_and_reading_creates_none(
    store: GraphStore, store_location: str, memory_name: str
) -> None:
    assert memory_name not in store.memories()
    with store.transaction():
        store.save_settings({"theta": 0.5})
    assert memory_name in store.memories()
    assert store.memories() == sorted(store.memories())
    other = memory_name + "other"
    with pytest.raises(NotFoundError, match=f"no memory '{other}'.*{memory_name}"):
        Memory.open(store_location, other, embedder=EMBEDDER, create=False)
    assert other not in store.memories()


def test_chunk_positions_come_back_as_integers(store: GraphStore) -> None:
    seed_graph(store)
    positions = [n.position for n in store.get_nodes(["c0", "c3"]).values()]
    assert sorted(positions) == [0, 3] and all(type(p) is int for p in positions)


def test_nodes_edges_and_neighbours(store: GraphStore) -> None:
    seed_graph(store)
    assert store.existing_ids(["c0", "c3", "zz"]) == {"c0", "c3"}
    nodes = store.get_nodes(["c1", "c3"], embeddings=True)
    assert nodes["c1"].text == "text 1" and nodes["c1"].position == 1
    assert nodes["c1"].props == {"start_char": 1}
    np.testing.assert_allclose(nodes["c1"].embedding, unit(1), rtol=1e-6)
    assert store.get_nodes(["c1"])["c1"].embedding is None
    assert store.neighbours(["c1", "c3"]) == {"c1": {"c0": 0.9, "c2": 0.7}, "c3": {}}
    assert {e.key for e in store.edges_of(["c0"])} == {("c0", "c1")}
    assert [n.id for n in store.nodes_at_level(0)] == ["c0", "c1", "c2", "c3"]
    assert {n.id for n in store.chunks_near("d", [2, 3, 9])} == {"c2", "c3"}
    assert store.count_nodes(0) == 4 and store.count_nodes(1) == 0
    with store.transaction():
        store.delete_edges([("c1", "c0")])
    assert store.neighbours(["c0"]) == {"c0": {}}


def test_nearest_finds_exact_neighbours(store: GraphStore) -> None:
    seed_graph(store)
    hits = store.nearest(0, np.stack([unit(2), unit(0)]), 2)
    assert [h[0][0] for h in hits] == ["c2", "c0"]
    assert hits[0][0][1] == pytest.approx(1.0, abs=1e-3)  # Neo4j scores in float32
    assert all(len(h) == 2 for h in hits)


def test_nearest_keeps_to_its_memory_when_another_crowds_the_index(
    store: GraphStore, store_location: str, memory_name: str
) -> None:
    """Neo4j's vector index is shared by every memory: a search must look past another
    memory's closer nodes (asking again with a wider pool) and return only its own."""
    seed_graph(store)  # c0..c3, vectors unit(0)..unit(3)
    rng = np.random.default_rng(7)
    crowd = open_store(store_location, memory_name + "crowd")
    try:
        crowd.prepare(32)
        with crowd.transaction():
            near = [
                unit(0) + rng.normal(scale=0.05, size=32).astype(np.float32) for _ in range(150)
            ]
            crowd.upsert_nodes(
                [
                    Node(f"x{i}", 0, CHUNK, f"crowd {i}", "x", i, v / np.linalg.norm(v))
                    for i, v in enumerate(near)
                ]
            )
        hits = store.nearest(0, unit(0)[None, :], 3)[0]
        assert hits[0][0] == "c0"
        assert {node_id for node_id, _ in hits} <= {"c0", "c1", "c2", "c3"}
        assert len(hits) == 3
    finally:
        with crowd.transaction():
            crowd.clear(keep_chunks=False)
        crowd.close()


def test_replicas_labels_and_membership(store: GraphStore) -> None:
    seed_graph(store)
    labels = ["0.0", "0.1"]
    with store.transaction():
        store.upsert_replicas(
            [
                Replica("c1/r0", "c1", 0, labels[0], frozenset({"c0"})),
                Replica("c1/r1", "c1", 0, labels[1], frozenset({"c2"})),
                Replica("c0/r0", "c0", 0, labels[0], frozenset({"c1"})),
            ]
        )
        summary = Node("s1-0", 1, SUMMARY, "summary", None, 0.5, unit(9), {"backend": "extractive"})
        store.upsert_nodes([summary])
        store.replace_members({"s1-0": (1, ["c0", "c1"])})
    assert [r.id for r in store.replicas_of(["c1"])["c1"]] == ["c1/r0", "c1/r1"]
    # The structure a batch starts from holds every replica with its label and members.
    held = {r.id: (r.label, r.members) for r in store.read_structure().replicas}
    assert held == {
        "c1/r0": (labels[0], frozenset({"c0"})),
        "c1/r1": (labels[1], frozenset({"c2"})),
        "c0/r0": (labels[0], frozenset({"c1"})),
    }
    assert store.members_of(["s1-0"]) == {"s1-0": {"c0", "c1"}}
    assert store.parents_of(["c1", "c3"]) == {"c1": {"s1-0"}}
    stats = store.stats()
    assert stats["overlap"] == pytest.approx(1 / 4)
    assert stats["summaries_by_backend"] == {"extractive": 1}
    # Label 0 holds c0 and c1, label 1 only c1: one of the two clusters has one member.
    level0 = stats["levels"][0]
    assert level0["cluster_sizes"] == {"1": 1, "2": 1}
    assert level0["single_member_share"] == pytest.approx(0.5)
    assert stats["levels"][1]["cluster_sizes"] == {}
    assert stats["roots"] == 3 and stats["repeated_texts"] == 0
    assert stats["repeated_summary_texts"] == 0
    with store.transaction():  # a summary copying a chunk, and two chunks of one text
        store.upsert_nodes(
            [
                Node("s1-1", 1, SUMMARY, "text 0", None, 0.0, unit(8), {}),
                Node("c9", 0, CHUNK, "text 2", "d", 9, unit(7), {}),
            ]
        )
    stats = store.stats()
    assert stats["repeated_texts"] == 2 and stats["repeated_summary_texts"] == 1
    assert stats["roots"] == 5
    with store.transaction():
        store.delete_nodes(["s1-1", "c9"])
    with store.transaction():
        store.delete_nodes(["c1"])
    assert store.replicas_of(["c1"]) == {} and store.members_of(["s1-0"]) == {"s1-0": {"c0"}}
    assert store.neighbours(["c0"]) == {"c0": {}}


def test_a_failed_transaction_leaves_nothing(store: GraphStore) -> None:
    seed_graph(store)
    before = store.stats()
    with pytest.raises(RuntimeError), store.transaction():
        store.upsert_nodes([chunk(7)])
        store.delete_nodes(["c0"])
        raise RuntimeError("crash in the middle of a batch")
    assert store.stats() == before
    assert store.existing_ids(["c0", "c7"]) == {"c0"}


GAP_SETTINGS = Settings(embed_model=EMBEDDER.name, theta=0.3, chunk_tokens=60)


def ingest_gap_essay(memory: Memory) -> None:
    text = shared_file("haystacks/paul_graham/gap.txt").read_text()[:9000]
    memory.ingest_text(text[:5000], "gap", batch_size=6)
    memory.ingest_text(text[5000:], "gap2", batch_size=6)


def test_the_engine_builds_a_consistent_memory_on_every_store(
    store_location: str, memory_name: str
) -> None:
    with Memory.open(store_location, memory_name, settings=GAP_SETTINGS, embedder=EMBEDDER) as m:
        ingest_gap_essay(m)
        check_memory(m.store, max_cluster_size=GAP_SETTINGS.max_cluster_size)
        # What the ingest kept in memory between batches is what the store holds.
        check_structure_is_stored(m._pipeline().writer.structure, m.store)
        assert m.stats()["documents"] == 2


def test_neo4j_builds_the_same_memory_as_sqlite(neo4j_location: str, memory_name: str) -> None:
    """Neo4j only: the reference is the same ingest on SQLite, which compared with
    itself would test nothing."""
    with Memory.open(neo4j_location, memory_name, settings=GAP_SETTINGS, embedder=EMBEDDER) as m:
        ingest_gap_essay(m)
        stats = m.stats()
    with (
        tempfile.TemporaryDirectory() as folder,
        Memory.open(
            Path(folder) / "ref.db", "ref", settings=GAP_SETTINGS, embedder=EMBEDDER
        ) as ref,
    ):
        ingest_gap_essay(ref)
        reference = ref.stats()
    for key in ("documents", "levels", "overlap", "summaries_by_backend"):
        assert stats[key] == reference[key], key


def test_neo4j_fills_in_the_text_hashes_of_a_memory_written_without_them(
    neo4j_location: str, memory_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neo4j only (SQLite's migration is tests/unit/test_sqlite_store.py): nodes written
    before they had a text_hash get it when the memory's stats are first asked for, a
    batch at a time, and the figures are those the texts themselves give."""
    from cam_engine.store import neo4j as neo4j_store
    from cam_engine.store.structure import text_hash

    monkeypatch.setattr(neo4j_store, "TEXT_HASH_BATCH", 2)  # several batches of 5 nodes
    store = neo4j_store.Neo4jStore.connect(neo4j_location, memory_name)
    store.prepare(32)
    seed_graph(store)
    with store.transaction():
        store.save_settings({})
        store.upsert_nodes(
            [
                Node("c4", 0, CHUNK, "text 0", "d", 4, unit(4), {}),
                Node("c5", 0, CHUNK, "text  1", "d", 5, unit(5), {}),
                Node("s1-0", 1, SUMMARY, "text 2", None, 0.5, unit(9), {}),
            ]
        )
    figures = store.stats()
    assert (figures["repeated_texts"], figures["repeated_summary_texts"]) == (2, 1)
    # The memory as an older version left it: no hash on its nodes, none recorded.
    store._driver.execute_query(
        "MATCH (n:MemoryNode {memory: $memory}) REMOVE n.text_hash "
        "WITH count(*) AS nodes MATCH (m:Memory {name: $memory}) REMOVE m.text_hashes",
        memory=memory_name,
    )
    store.close()
    store = neo4j_store.Neo4jStore.connect(neo4j_location, memory_name)
    try:
        assert store.stats() == figures
        assert store.query_calls["fill_text_hashes"] == 4  # 7 nodes, 2 a batch
        rows = store._driver.execute_query(
            "MATCH (n:MemoryNode {memory: $memory}) RETURN n.text AS text, n.text_hash AS hash",
            memory=memory_name,
        ).records
        assert len(rows) == 7
        assert all(r["hash"] == text_hash(r["text"]).hex() for r in rows)
        store.stats()
        assert store.query_calls["nodes_without_text_hash"] == 5  # once, not per call
    finally:
        store.close()
    again = neo4j_store.Neo4jStore.connect(neo4j_location, memory_name)
    try:
        assert again.stats() == figures
        assert again.query_calls["nodes_without_text_hash"] == 0  # recorded as filled
    finally:
        again.close()


VECTOR_ONLY = {"global", "traverse", "dense"}


@pytest.mark.parametrize("strategy", ["prune-grow", "global", "traverse", "dense", "hybrid"])
def test_asking_gives_the_same_evidence_on_neo4j_as_on_sqlite(
    neo4j_location: str, memory_name: str, strategy: str
) -> None:
    """Neo4j only: the reference is the same question asked of a SQLite memory, which
    compared with itself would test nothing."""
    text = shared_file("haystacks/paul_graham/gap.txt").read_text()[:9000]
    question = "Why did the gap between rich and poor grow?"
    with Memory.open(neo4j_location, memory_name, settings=GAP_SETTINGS, embedder=EMBEDDER) as m:
        m.ingest_text(text, "gap", batch_size=8)
        result = m.ask(question, strategy=strategy)
    with (
        tempfile.TemporaryDirectory() as folder,
        Memory.open(
            Path(folder) / "ref.db", "ref", settings=GAP_SETTINGS, embedder=EMBEDDER
        ) as reference,
    ):
        reference.ingest_text(text, "gap", batch_size=8)
        expected = reference.ask(question, strategy=strategy)
    got = [e.node_id for e in result.evidence]
    wanted = [e.node_id for e in expected.evidence]
    if strategy in VECTOR_ONLY:
        assert got == wanted
        assert result.answer == expected.answer and result.evidence
    else:
        # Full-text scores differ by store (FTS5's BM25 against Lucene's, whose length
        # norms are quantized), so hybrid ranks may swap near-ties: the same best
        # evidence and nearly the same set, not the same order.
        assert got[0] == wanted[0]
        assert len(set(got) & set(wanted)) >= 0.8 * max(len(got), len(wanted))


def test_hybrid_localization_follows_whichever_ranking_tells_its_hits_apart(
    store: GraphStore,
) -> None:
    """FTS5 and Lucene score the same words on different scales, and the vector
    indexes report cosines differently; fusion calibrates each ranking by its own
    scores, so on every store a ranking that cannot tell its hits apart leaves the
    order to the other."""
    texts = [
        "Ahab paces the quarterdeck of the Pequod at night.",
        "Starbuck drinks coffee with Stubb before the watch.",
        "The whale rises beside the Pequod at dawn.",
        "Queequeg carves his coffin from ship timber.",
        "Ishmael signs on to the Pequod in Nantucket.",
    ]
    same = unit(0)  # every chunk one vector: the dense ranking is flat
    with store.transaction():
        store.upsert_nodes([Node(f"c{i}", 0, CHUNK, t, "d", i, same) for i, t in enumerate(texts)])
    words = [i for i, _ in store.search_text(0, "Who drinks coffee on the Pequod at dawn?", 5)]
    fused = hybrid(store, "Who drinks coffee on the Pequod at dawn?", unit(0), 0).order
    assert len(words) >= 3 and fused[: len(words)] == words
    # No word of the question in any chunk: the (equal) cosines alone, ties by id.
    assert hybrid(store, "zeppelin", unit(0), 0).order == [f"c{i}" for i in range(5)]


def test_an_unknown_neo4j_database_is_named_in_one_line() -> None:
    from tests.contract.conftest import NEO4J_URI, neo4j_or_skip

    neo4j_or_skip("probe").close()
    from cam_engine.errors import StoreError
    from cam_engine.store.neo4j import Neo4jStore

    with pytest.raises(StoreError, match="has no database 'nosuchdb'") as caught:
        Neo4jStore.connect(NEO4J_URI, "probe", database="nosuchdb")
    assert NEO4J_URI in str(caught.value) and "\n" not in str(caught.value)


def test_deleting_a_memory_leaves_no_trace_and_spares_the_others(
    store_location: str, memory_name: str
) -> None:
    from cam_engine.memory import memories_in

    settings = Settings(embed_model=EMBEDDER.name, theta=0.3, chunk_tokens=60)
    text = shared_file("haystacks/paul_graham/gap.txt").read_text()[:2500]
    other = memory_name + "kept"
    for name in (memory_name, other):
        with Memory.open(store_location, name, settings=settings, embedder=EMBEDDER) as memory:
            memory.ingest_text(text, "gap", batch_size=8)
    kept = Memory.open(store_location, other, embedder=EMBEDDER)
    before = kept.stats()
    Memory.open(store_location, memory_name, embedder=EMBEDDER).delete()
    names = memories_in(store_location)
    assert memory_name not in names and other in names
    with pytest.raises(NotFoundError):
        Memory.open(store_location, memory_name, embedder=EMBEDDER, create=False)
    fresh = open_store(store_location, memory_name)
    assert fresh.count_nodes(0) == 0 and fresh.documents() == [] and fresh.levels() == []
    fresh.close()
    assert kept.stats() == before
    kept.delete()


def test_search_text_finds_words_follows_updates_and_keeps_to_memory_and_level(
    store: GraphStore, store_location: str, memory_name: str
) -> None:
    texts = {
        "c0": "The whaling ship Pequod sailed from Nantucket.",
        "c1": "Captain Ahab hunted the white whale across the sea.",
        "c2": "Victor Frankenstein met his creature on the glacier.",
    }
    summary = Node("s1-0", 1, SUMMARY, "Ahab and the Pequod chase the whale.", None, None, unit(9))
    with store.transaction():
        store.upsert_nodes(
            [Node(i, 0, CHUNK, t, "d", n, unit(n)) for n, (i, t) in enumerate(texts.items())]
        )
        store.upsert_nodes([summary])
    assert store.search_text(0, "Where did the Pequod sail from?", 5)[0][0] == "c0"
    assert {i for i, _ in store.search_text(None, "Ahab", 5)} == {"c1", "s1-0"}
    assert [i for i, _ in store.search_text(1, "Ahab", 5)] == ["s1-0"]
    assert store.search_text(0, "the of and", 5) == []  # stopwords only: nothing to search
    assert store.search_text(0, 'glacier" OR "*', 5)[0][0] == "c2"  # syntax is not read
    # Rewritten and deleted text is searched as it is now.
    with store.transaction():
        store.upsert_nodes([Node("c1", 0, CHUNK, "A quiet harbour at dawn.", "d", 1, unit(1))])
        store.delete_nodes(["c2"])
    assert [i for i, _ in store.search_text(None, "Ahab", 5)] == ["s1-0"]
    assert store.search_text(None, "glacier", 5) == []
    # Another memory in the same store does not see these nodes.
    other = open_store(store_location, memory_name + "x")
    try:
        other.prepare(32)
        assert other.search_text(None, "Pequod", 5) == []
    finally:
        other.close()


def many_words(count: int) -> str:
    """``count`` distinct made-up words (none a stopword), then "glacier"."""
    letters = "bcdfghjklmnpqrstvwxz"
    words = [
        letters[i % 20] + letters[i // 20 % 20] + letters[i // 400 % 20] + "o" for i in range(count)
    ]
    return " ".join(words)


def test_a_question_of_thousands_of_words_is_searched_alike_on_every_store(
    store: GraphStore,
) -> None:
    with store.transaction():
        store.upsert_nodes(
            [
                Node("c0", 0, CHUNK, "Victor met his creature on the glacier.", "d", 0, unit(0)),
                Node("c1", 0, CHUNK, "The Pequod sailed from Nantucket.", "d", 1, unit(1)),
            ]
        )
    # Lucene refuses more than 1,024 clauses: the search takes the first terms only.
    assert [i for i, _ in store.search_text(0, f"glacier {many_words(3000)}", 5)] == ["c0"]
    assert store.search_text(0, f"{many_words(3000)} glacier", 5) == []  # past the first
    assert [i for i, _ in store.search_text(0, "Pequod " * 3000, 5)] == ["c1"]
