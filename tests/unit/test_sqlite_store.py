"""The SQLite store on its own: upgrades of older files, two writers at once, and writes
the disk refuses."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cam_engine.errors import StoreWriteError
from cam_engine.store import migrations
from cam_engine.store.base import DocumentRecord
from cam_engine.store.sqlite import SqliteStore
from cam_engine.store.sqlite_errors import cause, is_write_failure
from cam_engine.store.structure import text_hash
from cam_engine.types import CHUNK, SUMMARY, Node


def test_a_store_from_before_document_totals_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    older = [m for m in migrations.MIGRATIONS if m[0] < "003"]
    original, migrations.MIGRATIONS = migrations.MIGRATIONS, older
    try:
        assert migrations.migrate(conn) == ["001_initial", "002_views"]
    finally:
        migrations.MIGRATIONS = original
    conn.execute(
        "INSERT INTO documents (memory, id, source, sha256, chunks) VALUES (?, ?, ?, ?, ?)",
        ("default", "book", "book.txt", "abc", 12),
    )
    conn.close()

    store = SqliteStore(path, "default")
    try:
        assert store.get_document("book") == DocumentRecord("book", "book.txt", "abc", 12, None)
        with store.transaction():
            store.upsert_document(DocumentRecord("book", "book.txt", "abc", 12, 20))
        assert store.documents() == [DocumentRecord("book", "book.txt", "abc", 12, 20)]
    finally:
        store.close()
    # Opening again applies nothing twice.
    assert migrations.migrate(sqlite3.connect(path, isolation_level=None)) == []


def test_a_store_from_before_text_hashes_gets_them_on_open(tmp_path: Path) -> None:
    """Nodes written before migration 009 get their text_hash in place, once, and
    stats() counts repeated texts by it as it counted them by the texts before."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    older = [m for m in migrations.MIGRATIONS if m[0] < "009"]
    original, migrations.MIGRATIONS = migrations.MIGRATIONS, older
    try:
        assert migrations.migrate(conn)[-1] == "008_vector_log"
    finally:
        migrations.MIGRATIONS = original
    texts = {  # two exact copies of c0 (one a summary), one of c1 with a space more
        "c0": (0, "Call me Ishmael."),
        "c1": (0, "Some years ago, never mind how long."),
        "c2": (0, "Call me Ishmael."),
        "c3": (0, "Some years ago,  never mind how long."),
        "s1-0": (1, "Call me Ishmael."),
    }
    conn.executemany(
        "INSERT INTO nodes (memory, id, level, kind, doc_id, position, text, embedding, props) "
        "VALUES ('old', ?, ?, ?, 'd', 0, ?, NULL, '{}')",
        [(i, level, CHUNK if level == 0 else SUMMARY, t) for i, (level, t) in texts.items()],
    )
    conn.execute(
        "INSERT INTO replicas (memory, id, node_id, level, label, members) VALUES "
        "('old', 'c0/r0', 'c0', 0, '0.0', '[]'), ('old', 'c0/r1', 'c0', 0, '0.1', '[]'), "
        "('old', 'c2/r0', 'c2', 0, '0.0', '[]')"
    )
    conn.close()

    store = SqliteStore(path, "old")
    try:
        stored = dict(store._q("SELECT id, text_hash FROM nodes WHERE memory = 'old'"))
        assert stored == {i: text_hash(t) for i, (_, t) in texts.items()}
        stats = store.stats()
        assert (stats["repeated_texts"], stats["repeated_summary_texts"]) == (2, 2)
        assert stats["nodes_in_two_or_more_clusters"] == 1
        level0 = stats["levels"][0]
        assert (level0["replicas"], level0["clusters"], level0["cluster_sizes"]) == (
            3,
            2,
            {"1": 1, "2": 1},
        )
        plans = _plans(store, lambda s: s.stats())
        assert any("COVERING INDEX nodes_by_text_hash (memory=?)" in p for p in plans), plans
    finally:
        store.close()
    assert migrations.migrate(sqlite3.connect(path, isolation_level=None)) == []


def test_a_busy_store_is_one_clear_error_and_the_writer_keeps_going(tmp_path: Path) -> None:
    from cam_engine.errors import StoreError

    writer = SqliteStore(tmp_path / "m.db", "a")
    waiting = SqliteStore(tmp_path / "m.db", "b", busy_timeout=0.2)
    try:
        with writer.transaction():
            writer.upsert_document(DocumentRecord("d", "d.txt", None, 1))
            try:
                with waiting.transaction():
                    raise AssertionError("a second writer got the lock")
            except StoreError as exc:
                assert "is busy" in str(exc) and "\n" not in str(exc)
            assert waiting.documents() == []  # readers are not blocked (WAL)
        with waiting.transaction():  # once the batch commits, the other writer goes on
            waiting.upsert_document(DocumentRecord("e", "e.txt", None, 1))
        assert [d.id for d in writer.documents()] == ["d"]
    finally:
        writer.close()
        waiting.close()


def test_a_new_store_another_connection_is_writing_is_waited_for(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two processes creating one store at the same moment: one writes the new file
    while the other switches it to WAL, which SQLite refuses at once ("database is
    locked") rather than waiting the busy timeout. Opening tries again until then."""
    path = tmp_path / "new.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE first_writer (x)")  # the new file, in the rollback journal
    caplog.set_level(logging.DEBUG, logger="cam_engine.store.sqlite")
    opened: list[SqliteStore | Exception] = []

    def open_store() -> None:
        try:
            opened.append(SqliteStore(path, "m"))
        except Exception as exc:
            opened.append(exc)

    opener = threading.Thread(target=open_store)
    opener.start()
    # The write lock is held until the store found the file busy and waits to try
    # again, or gave up.
    while opener.is_alive() and not any("busy" in r.getMessage() for r in caplog.records):
        time.sleep(0.01)
    other.execute("COMMIT")
    other.close()
    opener.join(60)
    (store,) = opened
    assert isinstance(store, SqliteStore), store
    try:
        assert store.memories() == []
        assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        store.close()


def _full(path: Path) -> sqlite3.OperationalError:
    """A real SQLITE_FULL: a database capped at its current size (max_page_count)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("CREATE TABLE t (x BLOB)")
        conn.execute("PRAGMA max_page_count = 2")
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("the capped database took the row")


def _read_only(path: Path) -> sqlite3.OperationalError:
    """A real SQLITE_READONLY: a write on a connection opened read-only."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("CREATE TABLE u (x)")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("a read-only connection wrote")


def _io_error(name: str, message: str) -> sqlite3.OperationalError:
    # What SQLite raises for EFBIG or a read-only folder, which a test process cannot
    # provoke without changing its own limits or permissions (tests/integration does).
    exc = sqlite3.OperationalError(message)
    exc.sqlite_errorname = name  # type: ignore[attr-defined]
    return exc


def test_a_failed_write_is_blamed_on_what_refused_it(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    full, read_only = _full(db), _read_only(db)
    efbig = _io_error("SQLITE_IOERR_WRITE", "disk I/O error")
    size = db.stat().st_size

    def why(exc: sqlite3.Error, limit: int | None = None, free: int | None = 10**12) -> str:
        return cause(db, exc, file_limit=limit, free_bytes=free)

    assert full.sqlite_errorname == "SQLITE_FULL" and is_write_failure(full)
    assert read_only.sqlite_errorname == "SQLITE_READONLY" and is_write_failure(read_only)
    assert why(efbig, limit=size) == f"the file size limit (ulimit -f) of {size} bytes is reached"
    assert why(full, limit=size) == f"the file size limit (ulimit -f) of {size} bytes is reached"
    # A limit far above every store file is not the cause.
    assert why(efbig, limit=size + (64 << 20)) == "the disk or file system failed"
    assert why(full, free=4096) == why(efbig, free=4096) == "the disk is full (4096 bytes left)"
    assert why(full) == "no room to write"
    assert why(read_only).startswith("the file is read-only for this process")
    folder = _io_error("SQLITE_READONLY_DIRECTORY", "attempt to write a readonly database")
    assert why(folder) == (
        f"its folder {tmp_path} is not writable, and SQLite must create m.db-wal and "
        "m.db-shm there (WAL mode), even to read"
    )
    assert not is_write_failure(_io_error("SQLITE_CONSTRAINT_PRIMARYKEY", "UNIQUE failed"))


def test_a_write_the_disk_refuses_rolls_the_batch_back_and_the_store_goes_on(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "m.db", "m")
    try:
        with store.transaction():
            store.upsert_document(DocumentRecord("kept", "kept.txt", None, 1))
        # No room for another page: SQLITE_FULL, as a full disk gives (white-box: the
        # page cap is set on the store's own connection).
        pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count = {pages}")
        big = Node("n", 0, "chunk", "x" * 200_000, doc_id="lost", position=0)
        with pytest.raises(StoreWriteError) as failed, store.transaction():
            store.upsert_document(DocumentRecord("lost", "lost.txt", None, 1))
            store.upsert_nodes([big])
        message = str(failed.value)
        assert message.startswith(f"cannot write to SQLite store {tmp_path / 'm.db'}: ")
        assert message.endswith("(database or disk is full)") and "\n" not in message
        assert [d.id for d in store.documents()] == ["kept"]  # the whole batch rolled back
        store._conn.execute(f"PRAGMA max_page_count = {pages * 100}")
        with store.transaction():
            store.upsert_nodes([big])
        assert store.count_nodes(0) == 1
    finally:
        store.close()


def test_a_store_closed_before_any_memory_was_written_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SqliteStore(path, "default").close()
    assert not path.exists()  # a command that failed before writing leaves nothing


def test_a_store_that_holds_a_memory_or_was_there_before_is_kept(tmp_path: Path) -> None:
    written = tmp_path / "written.db"
    store = SqliteStore(written, "default")
    with store.transaction():
        store.save_settings({"alpha": 0.7})
    store.close()
    assert written.exists()

    existing = tmp_path / "existing.db"
    SqliteStore(existing, "default").close()
    existing.touch()  # a file the user made, empty or not, is never removed
    SqliteStore(existing, "default").close()
    assert existing.exists()


def test_a_new_store_another_connection_has_open_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    first = SqliteStore(path, "default")
    second = SqliteStore(path, "default")  # e.g. a second ingest starting beside it
    first.close()
    assert path.exists()  # the other connection's WAL is still there
    with second.transaction():
        second.save_settings({"alpha": 0.7})
    second.close()
    assert path.exists()


def test_a_migration_another_process_applied_meanwhile_is_not_applied_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new.db"

    class Racing(sqlite3.Connection):
        """Lets another connection migrate the store between this one's reading of the
        applied migrations and its taking the write lock (two ingests into a new store)."""

        raced = False

        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            if sql == "BEGIN IMMEDIATE" and not Racing.raced:
                Racing.raced = True
                other = sqlite3.connect(path, isolation_level=None)
                migrations.migrate(other)
                other.close()
            return super().execute(sql, *args)

    conn = sqlite3.connect(path, isolation_level=None, factory=Racing)
    assert migrations.migrate(conn) == []  # the other applied them all
    assert Racing.raced
    conn.close()


def _plans(store: SqliteStore, read: Any) -> list[str]:
    """SQLite's query plan of each statement ``read(store)`` runs."""
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        read(store)
    finally:
        store._conn.set_trace_callback(None)
    plans = []
    for sql in statements:
        rows = sqlite3.connect(store.location).execute("EXPLAIN QUERY PLAN " + sql).fetchall()
        plans.append(" | ".join(row[3] for row in rows))
    return plans


@pytest.mark.parametrize(
    ("read", "index"),
    [
        (lambda s: s.replicas_of(["c1"]), "replicas_by_node"),
        (lambda s: s.stats(), "COVERING INDEX replicas_by_level_node (memory=? AND level=?)"),
    ],
    ids=["replicas_of", "stats"],
)
def test_replica_reads_go_through_their_index(tmp_path: Path, read: Any, index: str) -> None:
    """Not a walk over every replica of the memory (what an ORDER BY or GROUP BY on
    another column made SQLite choose: 0.3 ms against 150-290 ms at 10^5 replicas)."""
    store = SqliteStore(tmp_path / "m.db", "m")
    plans = _plans(store, read)
    assert any(index in plan for plan in plans), plans
    assert not any("USING INDEX sqlite_autoindex_replicas_1 (memory=?)" in p for p in plans)


def test_stats_counts_distinct_labels_and_nodes_from_indexes_in_their_order(
    tmp_path: Path,
) -> None:
    """Cluster sizes and nodes in two or more clusters read replicas_by_level and
    replicas_by_level_node, covering, in order: no replica row, and no temporary
    b-tree per COUNT(DISTINCT ...) (0.34 and 0.27 s at 10^5 chunks before them)."""
    store = SqliteStore(tmp_path / "m.db", "m")
    plans = _plans(store, lambda s: s.stats())
    store.close()
    assert any("COVERING INDEX replicas_by_level (memory=?)" in p for p in plans), plans
    assert not any("TEMP B-TREE FOR count(DISTINCT)" in p for p in plans), plans
