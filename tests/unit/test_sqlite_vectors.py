"""The SQLite store's approximate index of large levels: it answers as exact search
does, survives a close, a crash, a rollback and another process's writes, and is
rebuilt when its file no longer matches the rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.store import sqlite_vectors
from cam_engine.store.sqlite import SqliteStore
from cam_engine.store.vectors import VectorMatrix
from tests.conftest import shared_file

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, chunk_tokens=60)


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Levels of 40 vectors are indexed, and every close saves: small memories then
    take the paths a million-chunk memory takes."""
    monkeypatch.setattr(sqlite_vectors, "ANN_MIN", 40)
    monkeypatch.setattr(sqlite_vectors, "SAVE_ON_CLOSE", 1)


@pytest.fixture(scope="module")
def paragraphs() -> list[str]:
    path = shared_file("haystacks/gutenberg/pg84.txt")
    if not path.exists():
        pytest.skip(f"shared data not found: {path}")
    text = path.read_text(encoding="utf-8")
    return [p for p in text.split("\n\n") if len(p.split()) > 20][:120]


def _exact(store: SqliteStore, level: int, queries: np.ndarray, k: int) -> list[dict[str, float]]:
    """Every node's exact cosine with each question."""
    vectors = {n.id: n.embedding for n in store.nodes_at_level(level, embeddings=True)}
    matrix = VectorMatrix({i: v for i, v in vectors.items() if v is not None})
    return [dict(hits) for hits in matrix.top_k(queries, len(matrix))]


def _agreement(store: SqliteStore, level: int, k: int = 10) -> float:
    """How much of the exact top ``k`` the store's search finds (a hit tied with the
    exact k-th counts: the hashing embedder's vectors tie often), once the index is
    checked to hold exactly the level's rows."""
    rows = sqlite3.connect(store.location).execute(
        "SELECT rowid FROM nodes WHERE memory = ? AND level = ? AND embedding IS NOT NULL",
        (store.memory, level),
    )
    assert store._vectors.indexed_keys(level) == {r[0] for r in rows}
    queries = EMBEDDER.embed(["the creature in the mountains", "letters to my sister", "fire"])
    found = store.nearest(level, queries, k)
    shares = []
    for hits, scores in zip(found, _exact(store, level, queries, k), strict=True):
        kth = sorted(scores.values(), reverse=True)[k - 1]
        shares.append(sum(scores[i] >= kth - 1e-5 for i, _ in hits) / k)
    return float(np.mean(shares))


def _ingest(memory: Memory, paragraphs: list[str], name: str) -> None:
    memory.ingest_text("\n\n".join(paragraphs), name, batch_size=16)


def test_a_large_level_is_indexed_and_answers_as_exact_search(
    tmp_path: Path, paragraphs: list[str]
) -> None:
    with Memory.open(tmp_path / "m.db", "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs, "book")
        store = memory.store
        assert isinstance(store, SqliteStore)
        assert store.count_nodes(0) >= 40
        assert store._vectors.is_approximate(0)
        assert _agreement(store, 0) >= 0.95
        # the scores are exact cosines (from the rows), as exact search gives them
        query = EMBEDDER.embed(["the creature"])
        hits = store.nearest(0, query, 3)[0]
        nodes = store.get_nodes([i for i, _ in hits], embeddings=True)
        for node_id, score in hits:
            vector = nodes[node_id].embedding
            assert vector is not None
            assert score == pytest.approx(float(query[0] @ vector), abs=1e-5)


def test_the_index_file_is_saved_and_the_log_replayed_on_open(
    tmp_path: Path, paragraphs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs[:60], "first")
    files = list(Path(f"{db}.vectors").rglob("L0-*.usearch"))
    assert len(files) == 1
    # A second ingest whose changes stay in the log only (nothing saved on close).
    monkeypatch.setattr(sqlite_vectors, "SAVE_ON_CLOSE", 10**9)
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs[60:], "second")
    assert list(Path(f"{db}.vectors").rglob("L0-*.usearch")) == files
    logged = sqlite3.connect(db).execute("SELECT COUNT(*) FROM vector_log").fetchone()[0]
    assert logged > 0
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        store = memory.store
        assert isinstance(store, SqliteStore)
        assert _agreement(store, 0) >= 0.95
        second = {c.id for c in memory.document_chunks("second")}
        found = {i for i, _ in store.nearest(0, EMBEDDER.embed([paragraphs[100]]), 3)[0]}
        assert found & second  # a chunk only the log held is found


def test_a_new_process_loads_the_graph_the_writing_process_holds(
    tmp_path: Path, paragraphs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An HNSW graph depends on the order of its inserts and on its random level
    generator: the chunk level's index a reader builds from the file and the log is,
    byte for byte, the one the writer holds (what makes a resumed ingest find the
    neighbours the uninterrupted one found)."""
    monkeypatch.setattr(sqlite_vectors, "SAVE_ON_CLOSE", 10**9)  # the reader replays
    db = tmp_path / "m.db"
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs[:60], "first")  # indexed at 40 chunks, and saved
        _ingest(memory, paragraphs[60:], "second")  # in the log only
        writer = memory.store
        assert isinstance(writer, SqliteStore) and writer._vectors.is_approximate(0)
        with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as other:
            reader = other.store
            assert isinstance(reader, SqliteStore) and reader._vectors.is_approximate(0)
            graphs: list[bytes] = []
            for store in (writer, reader):
                path = tmp_path / f"{len(graphs)}.usearch"
                store._vectors._approximate[0].index.save(path)
                graphs.append(path.read_bytes())
    logged = sqlite3.connect(db).execute("SELECT COUNT(*) FROM vector_log").fetchone()[0]
    assert logged > 0
    assert graphs[0] == graphs[1]


def test_a_rolled_back_batch_leaves_the_index_as_it_was(
    tmp_path: Path, paragraphs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory.open(tmp_path / "m.db", "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs[:80], "first")
        store = memory.store
        assert isinstance(store, SqliteStore) and store._vectors.is_approximate(0)
        before = store.nearest(0, EMBEDDER.embed([paragraphs[100]]), 10)

        def fail(*_: object) -> None:  # the last write of a batch, after its nodes
            raise RuntimeError("disk gone")

        with monkeypatch.context() as patch:
            patch.setattr(SqliteStore, "set_counters", fail)
            with pytest.raises(RuntimeError, match="disk gone"):
                _ingest(memory, paragraphs[80:], "second")
        assert store.nearest(0, EMBEDDER.embed([paragraphs[100]]), 10) == before
        _ingest(memory, paragraphs[80:], "second")  # and the retry lands whole
        assert _agreement(store, 0) >= 0.95


def test_another_connection_sees_committed_vectors(tmp_path: Path, paragraphs: list[str]) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as writer:
        _ingest(writer, paragraphs[:60], "first")
        reader = SqliteStore(db, "m")
        try:
            assert reader.nearest(0, EMBEDDER.embed(["x"]), 1)  # its index is loaded now
            _ingest(writer, paragraphs[60:], "second")
            second = {c.id for c in writer.document_chunks("second")}
            found = {i for i, _ in reader.nearest(0, EMBEDDER.embed([paragraphs[100]]), 3)[0]}
            assert found & second
            assert _agreement(reader, 0) >= 0.95
        finally:
            reader.close()


def test_a_deleted_document_leaves_the_index(tmp_path: Path, paragraphs: list[str]) -> None:
    with Memory.open(tmp_path / "m.db", "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs[:60], "first")
        _ingest(memory, paragraphs[60:], "second")
        memory.delete_document("second")
        store = memory.store
        assert isinstance(store, SqliteStore)
        found = store.nearest(0, EMBEDDER.embed(paragraphs[60:70]), 20)
        ids = {i for hits in found for i, _ in hits}
        assert ids <= {n.id for n in store.nodes_at_level(0)}
        assert _agreement(store, 0) >= 0.95


def test_a_file_that_no_longer_matches_its_rows_is_rebuilt(
    tmp_path: Path, paragraphs: list[str]
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs[:60], "first")
        _ingest(memory, paragraphs[60:], "second")
        memory.delete_document("first")
    conn = sqlite3.connect(db)
    with conn:  # what a VACUUM may do to a table without an INTEGER PRIMARY KEY
        conn.execute("UPDATE nodes SET rowid = rowid + 100000")
    conn.close()
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        store = memory.store
        assert isinstance(store, SqliteStore)
        assert _agreement(store, 0) >= 0.95


def test_a_file_that_matches_its_rows_is_loaded_not_rebuilt(
    tmp_path: Path, paragraphs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check that a file still matches its rows compares the index's quantized
    vectors with the rows' by angle: a check that failed every file would rebuild the
    index on every open (seconds at 10^6 vectors), silently."""
    db = tmp_path / "m.db"
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs, "book")
    assert list(Path(f"{db}.vectors").rglob("*.usearch"))  # its chunk level has a file
    built: list[int] = []
    build = sqlite_vectors.SqliteVectors._build

    def counted(self: sqlite_vectors.SqliteVectors, level: int, threads: int = 0) -> object:
        built.append(level)
        return build(self, level, threads)

    monkeypatch.setattr(sqlite_vectors.SqliteVectors, "_build", counted)
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        store = memory.store
        assert isinstance(store, SqliteStore)
        assert _agreement(store, 0) >= 0.95
    assert built == []


def test_deleting_the_memory_removes_its_index_files(tmp_path: Path, paragraphs: list[str]) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        _ingest(memory, paragraphs, "book")
    assert list(Path(f"{db}.vectors").rglob("*.usearch"))
    with Memory.open(db, "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        memory.delete()
    assert not list(Path(f"{db}.vectors").rglob("*.usearch"))
