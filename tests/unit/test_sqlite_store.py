"""The SQLite store on its own: upgrades of older files, and two writers at once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cam_engine.store import migrations
from cam_engine.store.base import DocumentRecord
from cam_engine.store.sqlite import SqliteStore


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
