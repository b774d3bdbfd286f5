"""Named, recorded schema migrations for the SQLite store (applied in order, once)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

from cam_engine.names import names_in
from cam_engine.store.structure import text_hash

# A migration is a script of statements separated by ';', a tuple of statements (for
# statements that contain ';' themselves, such as triggers), or a function of the
# connection (for a change computed in Python, such as names extracted from text).
Migration = str | tuple[str, ...] | Callable[[sqlite3.Connection], None]


def _add_mentions(conn: sqlite3.Connection) -> None:
    """The names each chunk mentions (``cam_engine.names``), for the chunks already
    stored too: a memory built before names were kept has them from its first open."""
    conn.execute(
        "CREATE TABLE mentions (memory TEXT NOT NULL, name TEXT NOT NULL, "
        "chunk_id TEXT NOT NULL, PRIMARY KEY (memory, name, chunk_id)) WITHOUT ROWID"
    )
    conn.execute("CREATE INDEX mentions_by_chunk ON mentions (memory, chunk_id)")
    chunks = conn.execute("SELECT memory, id, text FROM nodes WHERE level = 0")
    conn.executemany(
        "INSERT OR IGNORE INTO mentions (memory, name, chunk_id) VALUES (?, ?, ?)",
        ((memory, name, chunk_id) for memory, chunk_id, text in chunks for name in names_in(text)),
    )


def _add_text_hashes(conn: sqlite3.Connection) -> None:
    """Each node's ``text_hash`` (``structure.text_hash``), filled in for the nodes
    already stored, and an index of them by memory: ``stats()``' count of repeated
    texts groups this index instead of reading every node's text (0.68 s at 10^5
    chunks, vectors' pages included)."""
    conn.execute("ALTER TABLE nodes ADD COLUMN text_hash BLOB")
    # A function of this connection only, for this one statement: the store computes
    # the hash in Python when it writes a node.
    conn.create_function("cam_text_hash", 1, text_hash, deterministic=True)
    try:
        conn.execute("UPDATE nodes SET text_hash = cam_text_hash(text)")
    finally:
        conn.create_function("cam_text_hash", 1, None)
    conn.execute("CREATE INDEX nodes_by_text_hash ON nodes (memory, text_hash, level)")


MIGRATIONS: list[tuple[str, Migration]] = [
    (
        "001_initial",
        """
        CREATE TABLE memories (
            name TEXT PRIMARY KEY, settings TEXT, created_at TEXT NOT NULL);
        CREATE TABLE counters (
            memory TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL,
            PRIMARY KEY (memory, name));
        CREATE TABLE documents (
            memory TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL, sha256 TEXT,
            chunks INTEGER NOT NULL, PRIMARY KEY (memory, id));
        CREATE TABLE nodes (
            memory TEXT NOT NULL, id TEXT NOT NULL, level INTEGER NOT NULL, kind TEXT NOT NULL,
            doc_id TEXT, position REAL, text TEXT NOT NULL, embedding BLOB, props TEXT,
            PRIMARY KEY (memory, id));
        CREATE INDEX nodes_by_level ON nodes (memory, level);
        CREATE INDEX nodes_by_position ON nodes (memory, doc_id, position);
        CREATE TABLE edges (
            memory TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, level INTEGER NOT NULL,
            score REAL NOT NULL, cosine REAL, proximity REAL, PRIMARY KEY (memory, src, dst));
        CREATE INDEX edges_by_dst ON edges (memory, dst);
        CREATE INDEX edges_by_level ON edges (memory, level);
        CREATE TABLE replicas (
            memory TEXT NOT NULL, id TEXT NOT NULL, node_id TEXT NOT NULL,
            level INTEGER NOT NULL, label TEXT NOT NULL, members TEXT NOT NULL,
            PRIMARY KEY (memory, id));
        CREATE INDEX replicas_by_node ON replicas (memory, node_id);
        CREATE INDEX replicas_by_label ON replicas (memory, label);
        CREATE INDEX replicas_by_level ON replicas (memory, level, label);
        CREATE TABLE members (
            memory TEXT NOT NULL, summary_id TEXT NOT NULL, member_id TEXT NOT NULL,
            level INTEGER NOT NULL, PRIMARY KEY (memory, summary_id, member_id));
        CREATE INDEX members_by_member ON members (memory, member_id);
        """,
    ),
    (
        "002_views",
        """
        CREATE TABLE view_nodes (
            memory TEXT NOT NULL, id TEXT NOT NULL, view TEXT NOT NULL, kind TEXT NOT NULL,
            grp TEXT NOT NULL, seq INTEGER NOT NULL, doc_id TEXT, text TEXT NOT NULL,
            props TEXT NOT NULL, embedding BLOB, PRIMARY KEY (memory, id));
        CREATE INDEX view_nodes_by_sequence ON view_nodes (memory, view, kind, grp, seq);
        CREATE TABLE view_links (
            memory TEXT NOT NULL, src TEXT NOT NULL, ord INTEGER NOT NULL,
            chunk_id TEXT NOT NULL, PRIMARY KEY (memory, src, ord));
        """,
    ),
    (
        "003_document_totals",
        """
        ALTER TABLE documents ADD COLUMN total INTEGER;
        """,
    ),
    (
        # Full-text search over node text (retrieval's lexical localization): an
        # external-content FTS5 table (the text is not stored twice) kept in step with
        # `nodes` by triggers, so no writer has to remember it. It is keyed by the
        # nodes' rowids, which only VACUUM renumbers; the store never runs VACUUM (after
        # one by hand, `INSERT INTO node_text (node_text) VALUES ('rebuild')` repairs it).
        "004_node_text_search",
        (
            "CREATE VIRTUAL TABLE node_text USING fts5("
            "text, content='nodes', content_rowid='rowid')",
            "CREATE TRIGGER node_text_insert AFTER INSERT ON nodes BEGIN "
            "INSERT INTO node_text (rowid, text) VALUES (new.rowid, new.text); END",
            "CREATE TRIGGER node_text_delete AFTER DELETE ON nodes BEGIN "
            "INSERT INTO node_text (node_text, rowid, text) "
            "VALUES ('delete', old.rowid, old.text); "
            "END",
            "CREATE TRIGGER node_text_update AFTER UPDATE OF text ON nodes BEGIN "
            "INSERT INTO node_text (node_text, rowid, text) "
            "VALUES ('delete', old.rowid, old.text); "
            "INSERT INTO node_text (rowid, text) VALUES (new.rowid, new.text); END",
            "INSERT INTO node_text (node_text) VALUES ('rebuild')",
        ),
    ),
    (
        # The hash of a document's text (sha256 is of the file's bytes): the same text in
        # two formats, or twice as PDF, is recognized as the same.
        "005_document_text_hash",
        """
        ALTER TABLE documents ADD COLUMN text_sha256 TEXT;
        """,
    ),
    (
        "006_document_versions",
        """
        ALTER TABLE documents ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE documents ADD COLUMN updated_at TEXT;
        """,
    ),
    ("007_mentions", _add_mentions),
    (
        # The changes to node vectors since a level's approximate index file was saved
        # (sqlite_vectors.py): a process opening the index replays them instead of
        # rebuilding it. `pruned` is the last change removed from the log per level: a
        # process whose index is older rebuilds or reloads instead of replaying.
        "008_vector_log",
        """
        CREATE TABLE vector_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, memory TEXT NOT NULL,
            level INTEGER NOT NULL, node_rowid INTEGER NOT NULL, op INTEGER NOT NULL);
        CREATE INDEX vector_log_by_level ON vector_log (memory, level, seq);
        CREATE TABLE vector_log_pruned (
            memory TEXT NOT NULL, level INTEGER NOT NULL, seq INTEGER NOT NULL,
            PRIMARY KEY (memory, level));
        """,
    ),
    ("009_node_text_hashes", _add_text_hashes),
    (
        # Replica indexes that hold what stats() counts (labels and node ids per level),
        # so that its cluster sizes and its nodes in two or more clusters read an index
        # in order instead of every replica row (0.34 and 0.27 s at 10^5 chunks).
        "010_replica_level_indexes",
        """
        DROP INDEX replicas_by_level;
        CREATE INDEX replicas_by_level ON replicas (memory, level, label, node_id);
        CREATE INDEX replicas_by_level_node ON replicas (memory, level, node_id, label);
        """,
    ),
]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply pending migrations; returns the names applied now."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    applied = []
    for name, script in MIGRATIONS:
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: several processes opening a new store at
            # once all saw it pending, and the one that waited must not apply it twice.
            if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                conn.execute("COMMIT")
                continue
            _run(conn, script)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat()),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed write may have rolled it back already
                conn.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied


def _run(conn: sqlite3.Connection, migration: Migration) -> None:
    if callable(migration):
        migration(conn)
        return
    statements = migration.split(";") if isinstance(migration, str) else migration
    for statement in statements:
        if statement.strip():
            conn.execute(statement)
