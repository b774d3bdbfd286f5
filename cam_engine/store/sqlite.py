"""The embedded default store: one SQLite file (WAL), several memories per file.

Sets of ids are passed as one JSON parameter (``json_each``), so no query is ever
built from values. Vector search is exact: the store keeps each level's embeddings
as a matrix in memory (loaded on first use) and answers top-k with one matrix product.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np

from cam_engine.config import Environment, validate_memory_name
from cam_engine.errors import NotFoundError, StoreError, StoreWriteError
from cam_engine.names import chunk_names
from cam_engine.store.base import DocumentRecord, T, cluster_shape
from cam_engine.store.change import AppliesChanges
from cam_engine.store.keywords import bm25_top_k, search_terms
from cam_engine.store.migrations import migrate
from cam_engine.store.sqlite_errors import describe, error_name, is_busy, is_write_failure
from cam_engine.store.sqlite_vectors import SqliteVectors
from cam_engine.store.structure import GENERATION, StructureRows, text_hash
from cam_engine.types import CHUNK, Edge, Node, Replica, ViewNode

logger = logging.getLogger(__name__)

_IDS = "(SELECT value FROM json_each(?))"
# Rows a full-text query may match before its commonest terms are left out
# (``_affordable_terms``): about 30 ms of FTS5 scoring on this project's machine.
TEXT_POSTINGS_MAX = 10_000


def _ids(values: Iterable[str]) -> str:
    return json.dumps(sorted(set(values)))


# How long a writer waits for another's batch to commit. A batch keeps the write lock
# while its summaries are written, which with an LLM can take a while.
BUSY_TIMEOUT_S = 30.0


class _Closed:
    """Stands in for the connection of a closed store."""

    def __init__(self, message: str) -> None:
        self._message = message

    def __getattr__(self, name: str) -> Any:
        raise StoreError(self._message)


class SqliteStore(AppliesChanges):
    # A read transaction in WAL mode sees the last commit before it began, whatever a
    # writer on another connection does meanwhile.
    isolated_snapshots = True

    @classmethod
    def open_location(
        cls, location: str, memory: str, environment: Environment | None, *, create: bool
    ) -> SqliteStore:
        """The store at a file path (``~`` expanded); with ``create=False`` a file that
        does not exist is a ``NotFoundError`` (commands that only read)."""
        path = Path(location).expanduser()
        if not create and not path.exists():
            raise NotFoundError(f"no store at {path}: nothing has been ingested there yet")
        return cls(path, memory)

    def __init__(self, path: Path, memory: str, *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self._memory = validate_memory_name(memory)
        self._path = path
        self._busy_timeout = busy_timeout
        # Made here: a command that fails before writing a memory removes it on close.
        self._created = not path.exists()
        _make_folder(path)
        conn: sqlite3.Connection | None = None
        try:
            # Absolute: SQLite takes the name ":memory:" for its in-memory database,
            # which this store's location would then name as a file that never exists.
            conn = sqlite3.connect(
                path.absolute(), isolation_level=None, check_same_thread=False, timeout=busy_timeout
            )
            _set_up(conn, path, busy_timeout)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            # A damaged file is said so, as when a read finds it (the schema can span
            # pages past the first); a refused write is explained (size limit, full
            # disk, read-only); anything else (such as a file that is not a database at
            # all) is SQLite's own words.
            if error_name(exc).startswith("SQLITE_CORRUPT"):
                raise _damaged(path, exc) from exc
            detail = describe(path, exc) if is_write_failure(exc) else str(exc)
            raise StoreError(f"cannot open SQLite store {path}: {detail}") from exc
        self._conn = conn
        self._in_transaction = False
        self._checked_writable = False
        self._vectors = SqliteVectors(path, self._memory, self._q, lambda: self._conn)
        self._data_version = self._read_data_version()

    # --- lifecycle ------------------------------------------------------------------
    @property
    def location(self) -> str:
        return str(self._path.resolve())

    @property
    def memory(self) -> str:
        return self._memory

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    def close(self) -> None:
        if isinstance(self._conn, _Closed):
            return  # closing twice is harmless, as for files
        unused = self._created and not self._holds_anything()
        try:
            self._vectors.close()
        except Exception as exc:  # a cache: never a reason for close to fail
            logger.warning("SQLite store %s: vector index not saved: %s", self._path, exc)
        self._conn.close()
        # Any later use says what happened instead of sqlite3's ProgrammingError.
        self._conn = cast(sqlite3.Connection, _Closed(f"SQLite store {self._path} is closed"))
        if unused:
            self._remove_unused_file()

    def _holds_anything(self) -> bool:
        try:
            return bool(self.memories())
        except sqlite3.Error:
            return True  # cannot tell: keep the file

    def _remove_unused_file(self) -> None:
        """Remove the file this store created when no memory was ever written to it (an
        ingest of a missing file, Ctrl-C before the first batch): a failed command leaves
        no empty store behind. SQLite deletes the WAL when its last connection closes,
        so a WAL still there means another connection has the file open: keep it."""
        if Path(f"{self._path}-wal").exists():
            return
        with contextlib.suppress(OSError):
            self._path.unlink()

    def prepare(self, dimensions: int) -> None:
        """The schema is made by migrations on open; what is left is to check, once,
        that this process can write the file. A store opened from a read-only file (or
        one SQLite opened read-only) fails here, naming the file, instead of at the
        first batch's write, after its document was read and embedded."""
        if self._checked_writable:
            return
        conn = self._conn
        # BEGIN IMMEDIATE alone proves nothing: on a read-only file SQLite makes it a
        # read transaction. A DELETE that matches no row needs the write lock and writes
        # nothing. Not waiting for the lock: a store another process is writing to is
        # writable, and the batch waits its turn as usual.
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM _migrations WHERE 0")
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            if not is_busy(exc):
                raise StoreError(
                    f"cannot write to SQLite store {self._path}: {describe(self._path, exc)}"
                ) from exc
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        self._checked_writable = True

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._in_transaction:
            raise StoreError("nested transactions are not supported")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise self._failure(exc) from exc
            raise StoreError(
                f"SQLite store {self._path} is busy: another process is writing to it (an "
                f"ingest holds the lock for a whole batch); waited {self._busy_timeout:g} s, try "
                "again when it is done"
            ) from exc
        self._in_transaction = True
        try:
            self._see_other_writers()  # the write lock is ours: what is committed is final
            self._vectors.begin()
            yield
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, sqlite3.Error):
                raise self._failure(exc) from exc
            raise
        else:
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise self._failure(exc) from exc
            self._vectors.commit()
        finally:
            self._in_transaction = False

    def _rollback(self) -> None:
        """Roll back what is open. After a failed write (disk full, I/O error) SQLite
        may have rolled the transaction back itself, and a second ROLLBACK would hide
        the first error under "no transaction is active"."""
        self._vectors.rollback()  # the indexes may hold rolled-back rows
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error as exc:  # SQLite undoes it when the connection closes
                logger.warning("SQLite store %s: rollback failed: %s", self._path, exc)

    def _failure(self, exc: sqlite3.Error) -> StoreError:
        """A StoreError for what SQLite raised in a transaction (rolled back by now)."""
        if is_write_failure(exc):
            return StoreWriteError(
                f"cannot write to SQLite store {self._path}: {describe(self._path, exc)}"
            )
        return StoreError(f"SQLite store {self._path}: {exc}")

    def read_snapshot(self, read: Callable[[], T]) -> T:
        """``read()`` in one read transaction (WAL): every read sees the state of one
        commit, not a batch's nodes with the documents of the batch before it."""
        if self._in_transaction:
            return read()  # inside a transaction already: it is the snapshot
        try:
            self._conn.execute("BEGIN DEFERRED")
        except sqlite3.DatabaseError as exc:
            raise self._read_failure(exc) from exc
        self._in_transaction = True
        try:
            self._see_other_writers()
            return read()
        finally:
            self._in_transaction = False
            if self._conn.in_transaction:
                try:
                    self._conn.execute("COMMIT")  # a read transaction: ends it, writes nothing
                except sqlite3.DatabaseError:  # SQLite ends it when the connection closes
                    logger.debug("SQLite store %s: ending a read failed", self._path)

    def _q(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._read_failure(exc) from exc

    def _read_failure(self, exc: sqlite3.DatabaseError) -> StoreError:
        """A failed read in one line. "database disk image is malformed" and "file is
        not a database" come from a damaged file, which no retry mends."""
        if _is_damage(exc):
            return _damaged(self._path, exc)
        return StoreError(f"SQLite store {self._path}: cannot read: {exc}")

    # --- memory-wide state ------------------------------------------------------------
    def load_settings(self) -> dict[str, Any] | None:
        rows = self._q("SELECT settings FROM memories WHERE name = ?", self._memory)
        return json.loads(rows[0][0]) if rows else None

    def save_settings(self, settings: Mapping[str, Any]) -> None:
        self._conn.execute(
            "INSERT INTO memories (name, settings, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET settings = excluded.settings",
            (self._memory, json.dumps(dict(settings), sort_keys=True), _now()),
        )

    def memories(self) -> list[str]:
        return [r[0] for r in self._q("SELECT name FROM memories ORDER BY name")]

    def clear(self, keep_chunks: bool) -> None:
        m = self._memory
        levels = {r[0] for r in self._q("SELECT DISTINCT level FROM nodes WHERE memory = ?", m)}
        self._vectors.cleared(
            lv for lv in levels | set(self._vectors.file_levels()) if lv > 0 or not keep_chunks
        )
        for table in ("edges", "replicas", "members", "counters"):
            self._conn.execute(f"DELETE FROM {table} WHERE memory = ?", (m,))
        if keep_chunks:
            self._conn.execute("DELETE FROM nodes WHERE memory = ? AND level > 0", (m,))
        else:
            self._conn.execute("DELETE FROM nodes WHERE memory = ?", (m,))
            self._conn.execute("DELETE FROM mentions WHERE memory = ?", (m,))
            self._conn.execute("DELETE FROM view_nodes WHERE memory = ?", (m,))
            self._conn.execute("DELETE FROM view_links WHERE memory = ?", (m,))
            self._conn.execute("DELETE FROM documents WHERE memory = ?", (m,))
            self._conn.execute("DELETE FROM memories WHERE name = ?", (m,))

    # --- batches -------------------------------------------------------------------------
    def lock_generation(self) -> int:
        if not self._in_transaction:
            raise StoreError("lock_generation() needs an open transaction")
        # BEGIN IMMEDIATE took the write lock: no other writer until the commit.
        return self._counters().get(GENERATION, 0)

    def _counters(self) -> dict[str, int]:
        rows = self._q("SELECT name, value FROM counters WHERE memory = ?", self._memory)
        return {name: int(value) for name, value in rows}

    def read_structure(self) -> StructureRows:
        m = self._memory
        edges = self._q("SELECT src, dst, score FROM edges WHERE memory = ?", m)
        replicas = self._q(
            "SELECT id, node_id, level, label, members FROM replicas WHERE memory = ?", m
        )
        members = self._q("SELECT summary_id, member_id FROM members WHERE memory = ?", m)
        return StructureRows(
            nodes=self._streamed_nodes(),
            edges=[(a, b, float(score)) for a, b, score in edges],
            replicas=[self._replica(r) for r in replicas],
            members=[(summary, member) for summary, member in members],
            counters=self._counters(),
            documents=self.documents(),
            settings=self.load_settings(),
            chunk_vectors=None,  # a batch's neighbours are searched by nearest()
        )

    def _streamed_nodes(self) -> Iterator[Node]:
        """The memory's nodes, texts included, one row at a time: the structure keeps a
        key of each text, not the text, and a list of every row held every text of the
        memory at once (about 150 MB at 10^5 chunks, most of it never given back)."""
        cursor = self._conn.execute(
            f"SELECT {self._node_columns(False)} FROM nodes WHERE memory = ?", (self._memory,)
        )
        try:
            for row in cursor:
                yield self._node(row, False)
        except sqlite3.DatabaseError as exc:
            raise self._read_failure(exc) from exc

    def set_counters(self, counters: Mapping[str, int]) -> None:
        self._conn.executemany(
            "INSERT INTO counters (memory, name, value) VALUES (?, ?, ?) "
            "ON CONFLICT (memory, name) DO UPDATE SET value = excluded.value",
            [(self._memory, name, value) for name, value in sorted(counters.items())],
        )

    # --- documents ------------------------------------------------------------------------
    def get_document(self, doc_id: str) -> DocumentRecord | None:
        rows = self._q(
            "SELECT id, source, sha256, chunks, total, text_sha256, version, updated_at "
            "FROM documents WHERE memory = ? AND id = ?",
            self._memory,
            doc_id,
        )
        return DocumentRecord(*rows[0]) if rows else None

    def upsert_document(self, document: DocumentRecord) -> None:
        self._conn.execute(
            "INSERT INTO documents (memory, id, source, sha256, chunks, total, text_sha256, "
            "version, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (memory, id) DO UPDATE SET source = excluded.source, "
            "sha256 = excluded.sha256, chunks = excluded.chunks, total = excluded.total, "
            "text_sha256 = excluded.text_sha256, version = excluded.version, "
            "updated_at = excluded.updated_at",
            (
                self._memory,
                document.id,
                document.source,
                document.sha256,
                document.chunks,
                document.total,
                document.text_sha256,
                document.version,
                document.updated_at,
            ),
        )

    def delete_documents(self, ids: Iterable[str]) -> None:
        ids = sorted(set(ids))
        self.delete_document_views(ids)
        self._conn.execute(
            f"DELETE FROM documents WHERE memory = ? AND id IN {_IDS}", (self._memory, _ids(ids))
        )

    def delete_document_views(self, ids: Iterable[str]) -> None:
        ids_json, m = _ids(ids), self._memory
        of_them = f"memory = ? AND (doc_id IN {_IDS} OR grp IN {_IDS})"
        self._conn.execute(
            f"DELETE FROM view_links WHERE memory = ? AND src IN "
            f"(SELECT id FROM view_nodes WHERE {of_them})",
            (m, m, ids_json, ids_json),
        )
        self._conn.execute(f"DELETE FROM view_nodes WHERE {of_them}", (m, ids_json, ids_json))

    def documents(self) -> list[DocumentRecord]:
        rows = self._q(
            "SELECT id, source, sha256, chunks, total, text_sha256, version, updated_at "
            "FROM documents WHERE memory = ? ORDER BY id",
            self._memory,
        )
        return [DocumentRecord(*r) for r in rows]

    # --- nodes ---------------------------------------------------------------------------
    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        rows = self._q(
            f"SELECT id FROM nodes WHERE memory = ? AND id IN {_IDS}", self._memory, _ids(ids)
        )
        return {r[0] for r in rows}

    def upsert_nodes(self, nodes: Sequence[Node]) -> None:
        self._conn.executemany(
            "INSERT INTO nodes (memory, id, level, kind, doc_id, position, text, text_hash, "
            "embedding, props) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (memory, id) DO UPDATE SET "
            "level = excluded.level, kind = excluded.kind, doc_id = excluded.doc_id, "
            "position = excluded.position, text = excluded.text, "
            "text_hash = excluded.text_hash, embedding = excluded.embedding, "
            "props = excluded.props",
            [
                (
                    self._memory,
                    n.id,
                    n.level,
                    n.kind,
                    n.doc_id,
                    n.position,
                    n.text,
                    text_hash(n.text),
                    None if n.embedding is None else _blob(n.embedding),
                    json.dumps(n.props, sort_keys=True),
                )
                for n in nodes
            ],
        )
        self._vectors.upserted(nodes)
        self._write_mentions([n for n in nodes if n.kind == CHUNK])

    def _write_mentions(self, chunks: Sequence[Node]) -> None:
        """Replace the names these chunks mention with those of their text."""
        if not chunks:
            return
        m = self._memory
        self._conn.execute(
            f"DELETE FROM mentions WHERE memory = ? AND chunk_id IN {_IDS}",
            (m, _ids(c.id for c in chunks)),
        )
        self._conn.executemany(
            "INSERT OR IGNORE INTO mentions (memory, name, chunk_id) VALUES (?, ?, ?)",
            [(m, name, c.id) for c in chunks for name in chunk_names(c)],
        )

    def place_chunks(self, chunks: Sequence[Node]) -> None:
        m = self._memory
        stored = self._q(
            f"SELECT id, text FROM nodes WHERE memory = ? AND id IN {_IDS}",
            m,
            _ids(c.id for c in chunks),
        )
        texts: dict[str, str] = {chunk_id: text for chunk_id, text in stored}
        # A paragraph break in a new place may change a name (a sentence opens there).
        self._write_mentions([c for c in chunks if texts.get(c.id, c.text) != c.text])
        self._conn.executemany(
            "UPDATE nodes SET position = ?, props = ? WHERE memory = ? AND id = ?",
            [(c.position, json.dumps(c.props, sort_keys=True), m, c.id) for c in chunks],
        )
        # The text only where it differs (white space): writing it re-indexes the row
        # in the full-text table (the update trigger), which is most of a move's cost.
        self._conn.executemany(
            "UPDATE nodes SET text = ?, text_hash = ? WHERE memory = ? AND id = ? AND text != ?",
            [(c.text, text_hash(c.text), m, c.id, c.text) for c in chunks],
        )

    def delete_nodes(self, ids: Iterable[str]) -> None:
        ids_json = _ids(ids)
        m = self._memory
        found = self._q(
            f"SELECT id, level, rowid FROM nodes WHERE memory = ? AND id IN {_IDS}", m, ids_json
        )
        for sql in (
            f"DELETE FROM edges WHERE memory = ? AND src IN {_IDS}",
            f"DELETE FROM edges WHERE memory = ? AND dst IN {_IDS}",
            f"DELETE FROM members WHERE memory = ? AND summary_id IN {_IDS}",
            f"DELETE FROM members WHERE memory = ? AND member_id IN {_IDS}",
            f"DELETE FROM replicas WHERE memory = ? AND node_id IN {_IDS}",
            # a view's link to a chunk that is gone (a memory state that read it)
            f"DELETE FROM view_links WHERE memory = ? AND chunk_id IN {_IDS}",
            f"DELETE FROM mentions WHERE memory = ? AND chunk_id IN {_IDS}",
            f"DELETE FROM nodes WHERE memory = ? AND id IN {_IDS}",
        ):
            self._conn.execute(sql, (m, ids_json))
        self._vectors.deleted([(r[0], r[1], r[2]) for r in found])

    def _node(self, row: sqlite3.Row, embeddings: bool) -> Node:
        node_id, level, kind, doc_id, position, text, blob, props = row
        if kind == CHUNK and position is not None:
            position = int(position)  # the REAL column gives 3.0; Neo4j keeps 3, as stored
        return Node(
            id=node_id,
            level=level,
            kind=kind,
            text=text,
            doc_id=doc_id,
            position=position,
            embedding=_vector(blob) if embeddings and blob is not None else None,
            props=json.loads(props) if props else {},
        )

    def _node_columns(self, embeddings: bool) -> str:
        blob = "embedding" if embeddings else "NULL"
        return f"id, level, kind, doc_id, position, text, {blob}, props"

    def get_nodes(self, ids: Iterable[str], *, embeddings: bool = False) -> dict[str, Node]:
        rows = self._q(
            f"SELECT {self._node_columns(embeddings)} FROM nodes WHERE memory = ? AND id IN {_IDS}",
            self._memory,
            _ids(ids),
        )
        return {r[0]: self._node(r, embeddings) for r in rows}

    def nodes_at_level(self, level: int, *, embeddings: bool = False) -> Iterator[Node]:
        cursor = self._conn.execute(
            f"SELECT {self._node_columns(embeddings)} FROM nodes WHERE memory = ? AND level = ? "
            "ORDER BY doc_id, position, id",
            (self._memory, level),
        )
        for row in cursor:
            yield self._node(row, embeddings)

    def roots_within(self, documents: Sequence[str], *, embeddings: bool = False) -> list[Node]:
        # The members of the scope's summaries are found once (not per node, as a
        # correlated NOT EXISTS was: 5 s on a book of 1,600 chunks).
        rows = self._q(
            f"SELECT {self._node_columns(embeddings)} FROM nodes n WHERE memory = ? "
            f"AND doc_id IN {_IDS} AND id NOT IN (SELECT m.member_id FROM members m "
            "JOIN nodes p ON p.memory = m.memory AND p.id = m.summary_id WHERE m.memory = ? "
            f"AND p.doc_id IN {_IDS}) "
            "ORDER BY level, doc_id, position, id",
            self._memory,
            _ids(documents),
            self._memory,
            _ids(documents),
        )
        return [self._node(r, embeddings) for r in rows]

    def chunks_near(self, doc_id: str, positions: Iterable[int]) -> list[Node]:
        rows = self._q(
            f"SELECT {self._node_columns(True)} FROM nodes WHERE memory = ? AND level = 0 "
            f"AND doc_id = ? AND position IN {_IDS}",
            self._memory,
            doc_id,
            json.dumps(sorted(set(positions))),
        )
        return [self._node(r, True) for r in rows]

    def _read_data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _see_other_writers(self) -> None:
        """Forget the cached vectors when another connection (another ``cam ingest``
        process, say) has committed since this one last looked: SQLite's
        ``data_version`` changes only for commits made elsewhere. Without this, two
        ingests into one file each kept their own stale copy of the vectors and never
        linked the other's chunks."""
        version = self._read_data_version()
        if version != self._data_version:
            self._vectors.see_commits_elsewhere()
            self._data_version = version

    def nearest(
        self,
        level: int | None,
        vectors: np.ndarray,
        k: int,
        *,
        documents: Sequence[str] | None = None,
    ) -> list[list[tuple[str, float]]]:
        if not self._in_transaction:  # a transaction looked when it began
            self._see_other_writers()
        levels = [level] if level is not None else self.levels()
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        among = None if documents is None else self._ids_of_documents(documents, level)
        # Best k of each level, merged: no copy of every level's vectors into one
        # matrix per call (that copy grew with the memory and dominated large ones).
        found: list[list[tuple[str, float]]] = [[] for _ in range(len(queries))]
        for lv in levels:
            best_of_level = self._vectors.search(lv, queries, k, among)
            for hits, best in zip(found, best_of_level, strict=True):
                hits.extend(best)
        return [sorted(hits, key=lambda h: (-h[1], h[0]))[:k] for hits in found]

    def _ids_of_documents(self, documents: Sequence[str], level: int | None) -> set[str]:
        """The ids of the nodes of ``documents`` (of one level, or of all): chunks of
        them and summaries whose every chunk is theirs (a summary's ``doc_id``)."""
        rows = self._q(
            f"SELECT id FROM nodes WHERE memory = ? AND doc_id IN {_IDS} "
            "AND (? IS NULL OR level = ?)",
            self._memory,
            _ids(documents),
            level,
            level,
        )
        return {r[0] for r in rows}

    def search_text(
        self, level: int | None, query: str, k: int, *, documents: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        terms = self._affordable_terms(search_terms(query))
        if not terms or k < 1:
            return []
        # Each term quoted (they are word characters only) and OR-ed: any word may match.
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self._q(
            "SELECT n.id, -bm25(node_text) AS score FROM node_text "
            "JOIN nodes n ON n.rowid = node_text.rowid "
            "WHERE node_text MATCH ? AND n.memory = ? AND (? IS NULL OR n.level = ?) "
            f"AND (? IS NULL OR n.doc_id IN {_IDS}) "
            "ORDER BY score DESC, n.id LIMIT ?",
            match,
            self._memory,
            level,
            level,
            None if documents is None else 1,
            _ids(documents or ()),
            k,
        )
        return [(r[0], float(r[1])) for r in rows]

    def _affordable_terms(self, terms: list[str]) -> list[str]:
        """The question's terms, less its commonest ones where together they match more
        than ``TEXT_POSTINGS_MAX`` rows. FTS5 scores every row a query matches before it
        sorts them (about 3 us a row), so in a memory of a million nodes a question's
        common words alone cost a second. The rarest terms are kept, as many as fit
        (always one): they decide BM25's best hits, common words weigh little in them.
        Row counts per term come from FTS5's own vocabulary (fts5vocab, per file)."""
        if len(terms) < 2:
            return terms
        try:
            self._conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.node_text_vocab "
                "USING fts5vocab('main', 'node_text', 'row')"
            )
            counts = dict(
                self._conn.execute(
                    f"SELECT term, doc FROM temp.node_text_vocab WHERE term IN {_IDS}",
                    (json.dumps(terms),),
                ).fetchall()
            )
        except sqlite3.Error as exc:  # no vocabulary: every term, as before
            logger.debug("SQLite store %s: no term counts (%s)", self._path, exc)
            return terms
        if sum(counts.values()) <= TEXT_POSTINGS_MAX:
            return terms
        kept: list[str] = []
        total = 0
        for term in sorted(terms, key=lambda t: (counts.get(t, 0), t)):
            if kept and total + counts.get(term, 0) > TEXT_POSTINGS_MAX:
                break
            kept.append(term)
            total += counts.get(term, 0)
        return [t for t in terms if t in kept]

    def levels(self) -> list[int]:
        # One index seek per level (a loose index scan): DISTINCT read every node's
        # index entry, 0.17 s per call in a memory of a million nodes.
        rows = self._q(
            "WITH RECURSIVE lv(level) AS (SELECT MIN(level) FROM nodes WHERE memory = ?1 "
            "UNION ALL SELECT (SELECT MIN(level) FROM nodes WHERE memory = ?1 "
            "AND level > lv.level) FROM lv WHERE lv.level IS NOT NULL) "
            "SELECT level FROM lv WHERE level IS NOT NULL ORDER BY level",
            self._memory,
        )
        return [r[0] for r in rows]

    def count_nodes(self, level: int) -> int:
        return int(
            self._q(
                "SELECT COUNT(*) FROM nodes WHERE memory = ? AND level = ?", self._memory, level
            )[0][0]
        )

    # --- edges ------------------------------------------------------------------------------
    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        self._conn.executemany(
            "INSERT INTO edges (memory, src, dst, level, score, cosine, proximity) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (memory, src, dst) DO UPDATE SET "
            "level = excluded.level, score = excluded.score, cosine = excluded.cosine, "
            "proximity = excluded.proximity",
            [(self._memory, e.src, e.dst, e.level, e.score, e.cosine, e.proximity) for e in edges],
        )

    def delete_edges(self, keys: Iterable[tuple[str, str]]) -> None:
        self._conn.executemany(
            "DELETE FROM edges WHERE memory = ? AND src = ? AND dst = ?",
            [(self._memory, a, b) if a < b else (self._memory, b, a) for a, b in keys],
        )

    def edges_of(self, ids: Iterable[str]) -> list[Edge]:
        ids_json = _ids(ids)
        rows = self._q(
            "SELECT src, dst, level, score, cosine, proximity FROM edges WHERE memory = ? AND "
            f"(src IN {_IDS} OR dst IN {_IDS})",
            self._memory,
            ids_json,
            ids_json,
        )
        return [Edge(*r) for r in rows]

    def neighbours(self, ids: Iterable[str]) -> dict[str, dict[str, float]]:
        ids_json = _ids(ids)
        result: dict[str, dict[str, float]] = {i: {} for i in json.loads(ids_json)}
        rows = self._q(
            f"SELECT src, dst, score FROM edges WHERE memory = ? AND src IN {_IDS} "
            f"UNION ALL SELECT dst, src, score FROM edges WHERE memory = ? AND dst IN {_IDS}",
            self._memory,
            ids_json,
            self._memory,
            ids_json,
        )
        for node, other, score in rows:
            result[node][other] = score
        return result

    # --- replicas ---------------------------------------------------------------------------
    @staticmethod
    def _replica(row: sqlite3.Row) -> Replica:
        rid, node_id, level, label, members = row
        return Replica(rid, node_id, level, label, frozenset(json.loads(members)))

    def replicas_of(self, node_ids: Iterable[str]) -> dict[str, list[Replica]]:
        rows = self._q(
            "SELECT id, node_id, level, label, members FROM replicas "
            # +id: sorted after the look-up. A plain ORDER BY id has SQLite walk the
            # primary key over every replica of the memory to skip the sort: 150-190 ms
            # at 10^5 replicas, against 0.3 ms through replicas_by_node.
            f"WHERE memory = ? AND node_id IN {_IDS} ORDER BY +id",
            self._memory,
            _ids(node_ids),
        )
        result: dict[str, list[Replica]] = {}
        for row in rows:
            result.setdefault(row[1], []).append(self._replica(row))
        return result

    def upsert_replicas(self, replicas: Sequence[Replica]) -> None:
        self._conn.executemany(
            "INSERT INTO replicas (memory, id, node_id, level, label, members) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (memory, id) DO UPDATE SET "
            "label = excluded.label, members = excluded.members",
            [
                (self._memory, r.id, r.node_id, r.level, r.label, json.dumps(sorted(r.members)))
                for r in replicas
            ],
        )

    def delete_replicas(self, ids: Iterable[str]) -> None:
        self._conn.execute(
            f"DELETE FROM replicas WHERE memory = ? AND id IN {_IDS}", (self._memory, _ids(ids))
        )

    # --- hierarchy -------------------------------------------------------------------------
    def replace_members(self, members: Mapping[str, tuple[int, Iterable[str]]]) -> None:
        self._conn.executemany(
            "DELETE FROM members WHERE memory = ? AND summary_id = ?",
            [(self._memory, sid) for sid in members],
        )
        self._conn.executemany(
            "INSERT INTO members (memory, summary_id, member_id, level) VALUES (?, ?, ?, ?)",
            [
                (self._memory, sid, m, level)
                for sid, (level, ms) in members.items()
                for m in sorted(set(ms))
            ],
        )

    def members_of(self, summary_ids: Iterable[str]) -> dict[str, set[str]]:
        rows = self._q(
            f"SELECT summary_id, member_id FROM members WHERE memory = ? AND summary_id IN {_IDS}",
            self._memory,
            _ids(summary_ids),
        )
        result: dict[str, set[str]] = {}
        for summary_id, member_id in rows:
            result.setdefault(summary_id, set()).add(member_id)
        return result

    def parents_of(self, node_ids: Iterable[str]) -> dict[str, set[str]]:
        rows = self._q(
            f"SELECT member_id, summary_id FROM members WHERE memory = ? AND member_id IN {_IDS}",
            self._memory,
            _ids(node_ids),
        )
        result: dict[str, set[str]] = {}
        for member_id, summary_id in rows:
            result.setdefault(member_id, set()).add(summary_id)
        return result

    # --- names (the name graph) -------------------------------------------------------
    def names_of(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        rows = self._q(
            f"SELECT chunk_id, name FROM mentions WHERE memory = ? AND chunk_id IN {_IDS} "
            "ORDER BY chunk_id, name",
            self._memory,
            _ids(chunk_ids),
        )
        names: dict[str, list[str]] = {}
        for chunk_id, name in rows:
            names.setdefault(chunk_id, []).append(name)
        return names

    def chunks_naming(
        self, names: Iterable[str], *, max_chunks: int, documents: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        # The chunks in scope that mention each name, then only the names few enough
        # of them mention: a common name's rows are counted, not returned.
        in_scope = (
            "mentions"
            if documents is None
            else f"(SELECT x.* FROM mentions x JOIN nodes n ON n.memory = x.memory "
            f"AND n.id = x.chunk_id WHERE n.doc_id IN {_IDS})"
        )
        scope = () if documents is None else (_ids(documents),)
        rows = self._q(
            f"WITH scoped AS (SELECT name, chunk_id FROM {in_scope} WHERE memory = ? "
            f"AND name IN {_IDS}), bridging AS (SELECT name FROM scoped GROUP BY name "
            "HAVING COUNT(*) <= ?) SELECT name, chunk_id FROM scoped "
            "WHERE name IN bridging ORDER BY name, chunk_id",
            *scope,
            self._memory,
            _ids(names),
            max_chunks,
        )
        chunks: dict[str, list[str]] = {}
        for name, chunk_id in rows:
            chunks.setdefault(name, []).append(chunk_id)
        return chunks

    # --- adapter views ----------------------------------------------------------------------
    def upsert_view_nodes(self, nodes: Sequence[ViewNode]) -> None:
        m = self._memory
        self._conn.executemany(
            "INSERT INTO view_nodes (memory, id, view, kind, grp, seq, doc_id, text, props, "
            "embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (memory, id) DO UPDATE "
            "SET view = excluded.view, kind = excluded.kind, grp = excluded.grp, "
            "seq = excluded.seq, doc_id = excluded.doc_id, text = excluded.text, "
            "props = excluded.props, embedding = excluded.embedding",
            [
                (
                    m,
                    n.id,
                    n.view,
                    n.kind,
                    n.group,
                    n.seq,
                    n.doc_id,
                    n.text,
                    json.dumps(n.props, sort_keys=True),
                    None if n.embedding is None else _blob(n.embedding),
                )
                for n in nodes
            ],
        )
        self._conn.executemany(
            "DELETE FROM view_links WHERE memory = ? AND src = ?", [(m, n.id) for n in nodes]
        )
        self._conn.executemany(
            "INSERT INTO view_links (memory, src, ord, chunk_id) VALUES (?, ?, ?, ?)",
            [(m, n.id, i, c) for n in nodes for i, c in enumerate(n.chunk_ids)],
        )

    def view_nodes(
        self, view: str, kind: str, group: str | None = None, *, embeddings: bool = False
    ) -> list[ViewNode]:
        rows = self._q(
            "SELECT id, view, kind, grp, seq, doc_id, text, props, embedding FROM view_nodes "
            "WHERE memory = ? AND view = ? AND kind = ? AND (? IS NULL OR grp = ?) "
            "ORDER BY grp, seq",
            self._memory,
            view,
            kind,
            group,
            group,
        )
        links: dict[str, list[str]] = {}
        for src, chunk_id in self._q(
            "SELECT l.src, l.chunk_id FROM view_links l JOIN view_nodes v "
            "ON v.memory = l.memory AND v.id = l.src WHERE l.memory = ? AND v.view = ? "
            "AND v.kind = ? AND (? IS NULL OR v.grp = ?) ORDER BY l.src, l.ord",
            self._memory,
            view,
            kind,
            group,
            group,
        ):
            links.setdefault(src, []).append(chunk_id)
        return [_view_node(r, links, embeddings) for r in rows]

    def delete_view_nodes(
        self, view: str, kind: str | None = None, group: str | None = None
    ) -> int:
        where = "memory = ? AND view = ? AND (? IS NULL OR kind = ?) AND (? IS NULL OR grp = ?)"
        params = (self._memory, view, kind, kind, group, group)
        self._conn.execute(
            f"DELETE FROM view_links WHERE memory = ? AND src IN "
            f"(SELECT id FROM view_nodes WHERE {where})",
            (self._memory, *params),
        )
        return self._conn.execute(f"DELETE FROM view_nodes WHERE {where}", params).rowcount

    def _view_counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for view, kind, n in self._q(
            "SELECT view, kind, COUNT(*) FROM view_nodes WHERE memory = ? "
            "GROUP BY view, kind ORDER BY view, kind",
            self._memory,
        ):
            counts.setdefault(view, {})[kind] = n
        return counts

    def keyword_search(
        self, view: str, kind: str, query: str, k: int, groups: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 (rank-bm25's Okapi) over the view's nodes (of ``groups`` only, when given);
        the index is rebuilt per call, which is cheap next to an LLM call for the few
        hundred pages of a page-store."""
        wanted = None if groups is None else set(groups)
        nodes = [n for n in self.view_nodes(view, kind) if wanted is None or n.group in wanted]
        return bm25_top_k([(n.id, n.text) for n in nodes], query, k)

    # --- moving a memory (cam export / import) --------------------------------------------
    def nodes_page(self, after: str, limit: int, *, embeddings: bool = False) -> list[Node]:
        rows = self._q(
            f"SELECT {self._node_columns(embeddings)} FROM nodes WHERE memory = ? AND id > ? "
            "ORDER BY id LIMIT ?",
            self._memory,
            after,
            limit,
        )
        return [self._node(r, embeddings) for r in rows]

    def view_nodes_page(self, after: str, limit: int) -> list[ViewNode]:
        rows = self._q(
            "SELECT id, view, kind, grp, seq, doc_id, text, props, embedding FROM view_nodes "
            "WHERE memory = ? AND id > ? ORDER BY id LIMIT ?",
            self._memory,
            after,
            limit,
        )
        links: dict[str, list[str]] = {}
        for src, chunk_id in self._q(
            f"SELECT src, chunk_id FROM view_links WHERE memory = ? AND src IN {_IDS} "
            "ORDER BY src, ord",
            self._memory,
            _ids(r[0] for r in rows),
        ):
            links.setdefault(src, []).append(chunk_id)
        return [_view_node(r, links, embeddings=True) for r in rows]

    def counters(self) -> dict[str, int]:
        return self._counters()

    def drop_memory(self) -> None:
        # One transaction: SQLite's journal is on disk, so its size does not grow the
        # process's memory, and a crash leaves the memory whole or gone.
        with self.transaction():
            self.clear(keep_chunks=False)

    # --- reporting -----------------------------------------------------------------------
    def _counts(self, sql: str) -> dict[Any, int]:
        """{key: count} from a query of (key, count) rows over this memory (fixed SQL)."""
        return {row[0]: row[1] for row in self._q(sql, self._memory)}

    def stats(self) -> dict[str, Any]:
        m = self._memory
        nodes = self._counts("SELECT level, COUNT(*) FROM nodes WHERE memory = ? GROUP BY level")
        edges = self._counts("SELECT level, COUNT(*) FROM edges WHERE memory = ? GROUP BY level")
        replicas = self._counts(
            "SELECT level, COUNT(*) FROM replicas WHERE memory = ? GROUP BY level"
        )
        # Both read an index of (level, label, node_id) in its order, without the
        # replica rows (migration 010): 84 and 35 ms at 10^5 chunks, against 341 and 272.
        sizes = self._q(
            "SELECT level, size, COUNT(*) FROM (SELECT level, label, COUNT(DISTINCT node_id) "
            "AS size FROM replicas WHERE memory = ? GROUP BY level, label) "
            "GROUP BY level, size ORDER BY level, size",
            m,
        )
        in_two = self._q(
            "SELECT COUNT(*) FROM (SELECT node_id FROM replicas WHERE memory = ? AND level = 0 "
            "GROUP BY node_id HAVING COUNT(DISTINCT label) >= 2)",
            m,
        )[0][0]
        # A level's clusters are its distinct labels: one row each in the sizes above.
        clusters: dict[int, int] = {}
        for level, _size, count in sizes:
            clusters[level] = clusters.get(level, 0) + count
        documents = self._q("SELECT COUNT(*) FROM documents WHERE memory = ?", m)[0][0]
        roots = self._q(
            "SELECT COUNT(*) FROM nodes n WHERE memory = ? AND NOT EXISTS (SELECT 1 FROM "
            "members p WHERE p.memory = n.memory AND p.member_id = n.id)",
            m,
        )[0][0]
        # Copies of a text beyond its first, overall and in groups that hold a summary;
        # texts compared by their hash, through its index (nodes_by_text_hash), not
        # read: 59 ms at 10^5 chunks, against 680 ms grouping the texts themselves.
        repeated, repeated_summaries = self._q(
            "SELECT COALESCE(SUM(copies - 1), 0), COALESCE(SUM(CASE WHEN top > 0 "
            "THEN copies - 1 ELSE 0 END), 0) FROM (SELECT COUNT(*) AS copies, MAX(level) "
            "AS top FROM nodes WHERE memory = ? GROUP BY text_hash HAVING COUNT(*) > 1)",
            m,
        )[0]
        # The backend is NULL for a summary node whose props have no "backend".
        backends = self._counts(
            "SELECT json_extract(props, '$.backend'), COUNT(*) FROM nodes "
            "WHERE memory = ? AND level > 0 GROUP BY 1"
        )
        # Names and mentions in one walk of the primary key, in name order: grouped, it
        # gives both (74 ms at 810,501 mentions, against 101 + 61 ms for two walks; a
        # COUNT(DISTINCT name) would sort).
        names, mentions = self._q(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT COUNT(*) AS n FROM mentions "
            "WHERE memory = ? GROUP BY name)",
            m,
        )[0]
        levels = sorted(set(nodes) | set(edges))
        return {
            "documents": documents,
            "levels": [
                {
                    "level": lv,
                    "nodes": nodes.get(lv, 0),
                    "edges": edges.get(lv, 0),
                    "replicas": replicas.get(lv, 0),
                    "clusters": clusters.get(lv, 0),
                    **cluster_shape([(size, n) for level, size, n in sizes if level == lv]),
                }
                for lv in levels
            ],
            "overlap": (in_two / nodes[0]) if nodes.get(0) else 0.0,
            "summaries_by_backend": backends,
            "nodes_in_two_or_more_clusters": in_two,
            "roots": roots,
            "repeated_texts": repeated,
            "repeated_summary_texts": repeated_summaries,
            "names": names,
            "mentions": mentions,
            "views": self._view_counts(),
        }


def _is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite found the file damaged ("database disk image is malformed", "file
    is not a database"), which no retry mends."""
    return error_name(exc).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


def _damaged(path: Path, exc: sqlite3.Error) -> StoreError:
    return StoreError(
        f"SQLite store {path} is damaged ({exc}); `sqlite3 {path} 'PRAGMA integrity_check'` "
        "says where"
    )


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _view_node(row: sqlite3.Row, links: Mapping[str, list[str]], embeddings: bool) -> ViewNode:
    """A view node from its row (id, view, kind, grp, seq, doc_id, text, props,
    embedding) and the chunks each view node links to, in order."""
    return ViewNode(
        id=row[0],
        view=row[1],
        kind=row[2],
        group=row[3],
        seq=row[4],
        doc_id=row[5],
        text=row[6],
        props=json.loads(row[7]),
        embedding=_vector(row[8]) if embeddings and row[8] is not None else None,
        chunk_ids=tuple(links.get(row[0], ())),
    )


def _vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def _now() -> str:
    return datetime.now(UTC).isoformat()


PRIVATE_FOLDER = 0o700
# The first wait between two tries to set up a store another connection is setting up,
# and the longest: doubled from the first to the last, until the busy timeout is spent.
SET_UP_WAIT_S = (0.005, 0.25)


def _set_up(conn: sqlite3.Connection, path: Path, busy_timeout: float) -> None:
    """WAL mode, the connection's pragmas and the pending migrations, tried again while
    another connection holds the file, until ``busy_timeout`` is spent. SQLite's busy
    timeout does not cover all of it: switching a new file to WAL while another
    connection is writing it in the rollback journal (two processes creating one store
    at the same moment) fails at once with "database is locked", as waiting could
    deadlock. Each step can run again: the pragmas set what is already set, and each
    migration is checked again under the write lock."""
    deadline = time.monotonic() + busy_timeout
    wait, longest = SET_UP_WAIT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            migrate(conn)
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() + wait > deadline:
                raise
            logger.debug("SQLite store %s is busy being set up (%s): trying again", path, exc)
        time.sleep(wait)
        wait = min(wait * 2, longest)


def _make_folder(path: Path) -> None:
    """The folder of a store file, created when missing, readable by its owner only
    (0700, as the XDG base directory spec asks of data folders: a memory holds the
    texts of its documents); one line naming the path and what is wrong when it cannot
    be: the path is a folder, a part of it is a file, or the folder cannot be made."""
    if path.is_dir():
        raise StoreError(
            f"cannot open SQLite store {path}: it is a folder; give a file path such as "
            f"{path / 'cam.db'}"
        )
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StoreError(
                    f"cannot open SQLite store {path}: {parent} is a file, not a folder"
                )
            break
    try:
        # mkdir(parents=True) makes the parents with the default mode: each in turn.
        for folder in reversed([path.parent, *path.parent.parents]):
            if not folder.is_dir():
                folder.mkdir(mode=PRIVATE_FOLDER, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StoreError(
            f"cannot open SQLite store {path}: cannot create its folder {path.parent} ({reason})"
        ) from exc
