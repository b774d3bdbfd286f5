"""The SQLite store's vector search: each level searched exactly while it is small, and
through an approximate index (``ann.py``) saved beside the database file once it is not.

**Where the vectors are.** The node rows hold every vector (float32); they are the
truth. A level of fewer than ``ANN_MIN`` vectors is read into a ``VectorMatrix`` and
searched exactly, as before. A larger level gets an HNSW index keyed by the node rows'
rowids, saved as ``<db>.vectors/<memory key>/L<level>-<seq>.usearch``: a cache of the
rows, which the store can always rebuild from them.

**How the file keeps up.** Every change to a vector is logged in the same transaction
as the change (``vector_log``: the row's rowid and level, under an increasing ``seq``).
A file is named by the last ``seq`` it holds; a process loading it replays the log
after that ``seq``, reading each logged row as it is now (a row that is gone or has no
vector is dropped), so replaying is idempotent and a crash at any point leaves
nothing to repair: the next process loads the newest file and replays. The index is
saved again after ``SAVE_AFTER`` changes and when the store closes with more than
``SAVE_ON_CLOSE`` unsaved changes, and the log up to a saved file is pruned in the next
write transaction (``vector_log_pruned`` records how far, so a process whose index is
older than the pruning reloads instead of missing changes).

**Transactions.** Inside a write transaction the index takes the batch's changes as
they are written (reads in the transaction see them, as SQLite's own reads do). A
rollback drops the level's index from memory: it is loaded again (file and log) when
next searched.

**One graph for one history.** An HNSW graph depends on the order its vectors came in
and on the state of its random level generator, so the index held in memory is
always the one a new process would load: the newest file, then the log replayed one
change at a time in the order it was made (``_replay``), each change applied singly
as it happens, the file loaded again after each save, the index loaded again after a
rollback. An ingest resumed after a crash therefore searches the graph the
uninterrupted ingest searched, finds the same neighbours, and builds the same memory
(the crash harness's check, on a base whose chunk level is indexed). The exception: a
logged row deleted since cannot have its insertion replayed.

The rowids are the ones the full-text index relies on already: only VACUUM renumbers
them, and the store never runs it. A file whose rowids no longer match the rows (a
VACUUM by hand) is noticed on load by sampling and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine.store.ann import ApproximateIndex
from cam_engine.store.vectors import VectorMatrix
from cam_engine.types import Node

logger = logging.getLogger(__name__)

# A level with this many vectors is searched through an approximate index: exact search
# costs about 0.12 ms per 1,000 vectors per question here, so 20,000 take 2-3 ms, about
# what the index costs at 10^6 (docs/benchmarks.md, "Scale").
ANN_MIN = 20_000
# Changes after which a level's index is saved. A process opening the memory meanwhile
# replays the unsaved ones one insert at a time (0.6-1.1 ms each at 10^5 vectors here):
# with 30,000 unsaved, a reader's first search at 10^5 chunks took 19 s. A save costs
# writing the file and loading it again (about 3 s each at 10^6 vectors).
SAVE_AFTER = 5_000
SAVE_ON_CLOSE = 2_000  # unsaved changes a closing store saves, so an open replays few
RERANK_EXTRA = 16  # more candidates asked of the index, ranked again exactly
_FILE = re.compile(r"L(\d+)-(\d+)\.usearch")
_IDS = "(SELECT value FROM json_each(?))"
_PUT, _DROP = 1, 0

Query = Callable[..., list[sqlite3.Row]]


@dataclass
class _Approximate:
    index: ApproximateIndex
    applied: int  # the last log seq it holds
    unsaved: int = 0  # changes since its file was written


class SqliteVectors:
    """Per-level vector search for one memory of one SQLite file (module docstring)."""

    def __init__(
        self, db_path: Path, memory: str, query: Query, conn: Callable[[], sqlite3.Connection]
    ) -> None:
        key = hashlib.blake2b(memory.encode(), digest_size=8).hexdigest()
        self.folder = Path(f"{db_path}.vectors") / key
        self._memory = memory
        self._q = query
        self._conn = conn
        self._exact: dict[int, VectorMatrix] = {}
        self._approximate: dict[int, _Approximate] = {}
        self._doomed: set[int] = set()  # levels whose files go after the commit
        self._prune: dict[int, int] = {}  # level -> seq the log may be pruned to
        self._in_transaction = False

    # --- search -------------------------------------------------------------------------
    def search(
        self, level: int, queries: np.ndarray, k: int, among: set[str] | None
    ) -> list[list[tuple[str, float]]]:
        found = self._level(level)
        if isinstance(found, VectorMatrix):
            return found.top_k(queries, k, among)
        if among is not None:  # a scope: its vectors, searched exactly
            return self._scope(sorted(among)).top_k(queries, k)
        keys = found.index.search(queries, k + RERANK_EXTRA)
        rows = self._rows_by_rowid({key for hits in keys for key, _ in hits})
        if not rows:
            return [[] for _ in range(len(queries))]
        # Scored again in single precision from the rows (the index keeps halves): one
        # product of the questions with every candidate, then each question's own.
        order = list(rows)
        column = {key: i for i, key in enumerate(order)}
        exact = queries @ np.stack([rows[key][1] for key in order]).T
        results = []
        for row, hits in enumerate(keys):
            mine = [column[key] for key, _ in hits if key in column]
            scored = [(rows[order[c]][0], float(exact[row, c])) for c in mine]
            scored.sort(key=lambda h: (-h[1], h[0]))
            results.append(scored[:k])
        return results

    def _scope(self, ids: Sequence[str]) -> VectorMatrix:
        rows = self._q(
            f"SELECT id, embedding FROM nodes WHERE memory = ? AND id IN {_IDS} "
            "AND embedding IS NOT NULL",
            self._memory,
            json.dumps(list(ids)),
        )
        return VectorMatrix({r[0]: _vector(r[1]) for r in rows})

    def _rows_by_rowid(self, keys: Iterable[int]) -> dict[int, tuple[str, np.ndarray]]:
        # "+memory": without it SQLite walks the memory's whole position index and tests
        # each rowid against the list (0.5 s per batch at 53,000 chunks) instead of
        # looking the rowids up.
        rows = self._q(
            f"SELECT rowid, id, embedding FROM nodes WHERE rowid IN {_IDS} AND +memory = ? "
            "AND embedding IS NOT NULL",
            json.dumps(sorted(keys)),
            self._memory,
        )
        return {r[0]: (r[1], _vector(r[2])) for r in rows}

    def is_approximate(self, level: int) -> bool:
        return isinstance(self._level(level), _Approximate)

    def indexed_keys(self, level: int) -> set[int] | None:
        """The rowids the level's approximate index holds (None: searched exactly)."""
        found = self._level(level)
        return found.index.keys() if isinstance(found, _Approximate) else None

    # --- loading ------------------------------------------------------------------------
    def _level(self, level: int) -> VectorMatrix | _Approximate:
        if level in self._exact:
            return self._exact[level]
        if level in self._approximate:
            return self._approximate[level]
        count = self._q(
            "SELECT COUNT(*) FROM nodes WHERE memory = ? AND level = ? AND embedding IS NOT NULL",
            self._memory,
            level,
        )[0][0]
        if count < ANN_MIN and self._newest_file(level) is None:
            rows = self._q(
                "SELECT id, embedding FROM nodes WHERE memory = ? AND level = ? "
                "AND embedding IS NOT NULL",
                self._memory,
                level,
            )
            self._exact[level] = VectorMatrix({r[0]: _vector(r[1]) for r in rows})
            return self._exact[level]
        self._approximate[level] = self._open(level)
        return self._approximate[level]

    def _open(self, level: int) -> _Approximate:
        """The level's newest file with the log replayed, or a new index of its rows."""
        newest = self._newest_file(level)
        if newest is not None and newest[0] >= self._pruned(level):
            seq, path = newest
            try:
                index = ApproximateIndex.load(path, self._dims(level))
                if self._matches_rows(index, level, seq):
                    found = _Approximate(index, seq)
                    self._replay(level, found)
                    return found
                logger.warning("vector index %s does not match its rows: rebuilding it", path)
            except (OSError, RuntimeError, ValueError) as exc:
                logger.warning("vector index %s unreadable (%s): rebuilding it", path, exc)
        return self._build(level)

    def _build(self, level: int, threads: int = 0) -> _Approximate:
        # The log's end first: a change committed while the rows are read is replayed.
        applied = self._last_seq()
        index = ApproximateIndex(self._dims(level))
        cursor = self._conn().execute(
            "SELECT rowid, embedding FROM nodes WHERE memory = ? AND level = ? "
            "AND embedding IS NOT NULL",
            (self._memory, level),
        )
        while rows := cursor.fetchmany(20_000):
            keys = np.array([r[0] for r in rows])
            index.put(keys, np.stack([_vector(r[1]) for r in rows]), threads=threads)
        built = _Approximate(index, applied)
        self._replay(level, built)
        if not self._in_transaction:  # a file never holds what may be rolled back
            self._save(level, built)
        return built

    def _dims(self, level: int) -> int:
        rows = self._q(
            "SELECT embedding FROM nodes WHERE memory = ? AND level = ? "
            "AND embedding IS NOT NULL LIMIT 1",
            self._memory,
            level,
        )
        return len(_vector(rows[0][0])) if rows else 0

    def _matches_rows(
        self, index: ApproximateIndex, level: int, seq: int, samples: int = 8
    ) -> bool:
        """Whether a few of the level's rows have the index's vectors under their rowids:
        a VACUUM renumbers rowids, and a file from before one would answer with wrong
        nodes. Rows the log changed after the file (``seq``) are not asked: the replay
        brings those up to date."""
        rows = self._q(
            "SELECT rowid, embedding FROM nodes WHERE memory = ? AND level = ? "
            "AND embedding IS NOT NULL AND rowid NOT IN (SELECT node_rowid FROM vector_log "
            "WHERE memory = ? AND level = ? AND seq > ?) ORDER BY rowid DESC LIMIT ?",
            self._memory,
            level,
            self._memory,
            level,
            seq,
            samples * 50,
        )
        checked = [r for r in rows if r[0] in index][:samples]
        for rowid, blob in checked:
            stored, row = index.vector(rowid), _vector(blob)
            if stored is None:
                return False
            # The index's vector may be quantized (ann.PRECISION): compared by angle.
            cosine = float(stored @ row) / max(
                1e-12, float(np.linalg.norm(stored) * np.linalg.norm(row))
            )
            if cosine < 0.99:
                return False
        return bool(checked) or not len(index)

    def _replay(self, level: int, found: _Approximate) -> None:
        """Apply the logged changes after ``found.applied`` one by one in log order, as
        the process that made them applied them, each row's vector as it is now.

        In order and one at a time because an HNSW graph depends on the order its
        vectors came in: a process that replays the log ends with the graph the writing
        process had, so an ingest resumed after a crash finds the neighbours the
        uninterrupted one would have. (Not quite where a logged row has since been
        deleted: its vector is gone, so its insertion cannot be replayed.)"""
        logged = self._q(
            "SELECT seq, node_rowid, op FROM vector_log WHERE memory = ? AND level = ? "
            "AND seq > ? ORDER BY seq",
            self._memory,
            level,
            found.applied,
        )
        if not logged:
            return
        rowids = sorted({r[1] for r in logged})
        now = {
            r[0]: _vector(r[1])
            for start in range(0, len(rowids), 10_000)
            for r in self._q(
                f"SELECT rowid, embedding FROM nodes WHERE rowid IN {_IDS} AND +memory = ? "
                "AND +level = ? AND embedding IS NOT NULL",  # rowid lookups (see above)
                json.dumps(rowids[start : start + 10_000]),
                self._memory,
                level,
            )
        }
        for _, rowid, op in logged:
            vector = now.get(rowid) if op == _PUT else None
            if vector is None:
                found.index.drop(np.array([rowid]))
            else:
                found.index.put(np.array([rowid]), vector[None, :])
        found.applied = logged[-1][0]
        found.unsaved += len(logged)

    def _newest_file(self, level: int) -> tuple[int, Path] | None:
        files = [(seq, path) for lv, seq, path in self._files() if lv == level]
        return max(files) if files else None

    def _files(self) -> list[tuple[int, int, Path]]:
        if not self.folder.is_dir():
            return []
        found = []
        for path in self.folder.iterdir():
            match = _FILE.fullmatch(path.name)
            if match:
                found.append((int(match[1]), int(match[2]), path))
        return found

    def _pruned(self, level: int) -> int:
        rows = self._q(
            "SELECT seq FROM vector_log_pruned WHERE memory = ? AND level = ?",
            self._memory,
            level,
        )
        return int(rows[0][0]) if rows else 0

    def _last_seq(self) -> int:
        rows = self._q("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'")
        return int(rows[0][0]) if rows else 0

    # --- keeping up with other processes ----------------------------------------------
    def see_commits_elsewhere(self) -> None:
        """Another connection committed: exact levels are read again when next searched,
        approximate ones replay the log (or reload, if it was pruned past them)."""
        self._exact.clear()
        for level, found in list(self._approximate.items()):
            if self._pruned(level) > found.applied:
                del self._approximate[level]  # reloaded from its newest file when used
            else:
                self._replay(level, found)

    # --- changes, inside a write transaction ------------------------------------------
    def begin(self) -> None:
        self._in_transaction = True
        self._prune_saved()

    def commit(self) -> None:
        self._in_transaction = False
        self._prune.clear()  # pruned by the transaction just committed
        for level, found in self._approximate.items():
            if found.unsaved >= SAVE_AFTER:
                self._save(level, found)
        for level, exact in list(self._exact.items()):
            if len(exact) >= ANN_MIN:  # grown past exact search: indexed from now on
                del self._exact[level]
                # On one thread: a resumed ingest that crosses the threshold at the same
                # commit builds the same graph (module docstring).
                self._approximate[level] = self._build(level, threads=1)
        for level in sorted(self._doomed):
            for lv, _, path in self._files():
                if lv == level:
                    with contextlib.suppress(OSError):
                        path.unlink()
        self._doomed.clear()

    def rollback(self) -> None:
        self._in_transaction = False
        # Every level is read again when next searched: exact ones may hold rolled-back
        # rows, and an index undone change by change would not be the graph a new
        # process loads (module docstring).
        self._exact.clear()
        self._approximate.clear()
        self._doomed.clear()  # the pruning the transaction did is done again by the next

    def upserted(self, nodes: Sequence[Node]) -> None:
        """Log and apply the vectors of nodes just written (or removed from them)."""
        if not nodes:
            return
        rows = self._q(
            f"SELECT rowid, id, level FROM nodes WHERE memory = ? AND id IN {_IDS}",
            self._memory,
            json.dumps(sorted({n.id for n in nodes})),
        )
        rowid_of = {r[1]: (r[0], r[2]) for r in rows}
        by_id = {n.id: n for n in nodes}
        self._log([(level, rowid, _PUT) for rowid, level in rowid_of.values()])
        for node_id, (rowid, level) in rowid_of.items():
            vector = by_id[node_id].embedding
            self._apply(
                level,
                node_id,
                rowid,
                None if vector is None else np.asarray(vector, dtype=np.float32),
            )

    def deleted(self, rows: Sequence[tuple[str, int, int]]) -> None:
        """Log and apply the removal of nodes (id, level, rowid) just deleted."""
        self._log([(level, rowid, _DROP) for _, level, rowid in rows])
        for node_id, level, rowid in rows:
            self._apply(level, node_id, rowid, None)

    def cleared(self, levels: Iterable[int]) -> None:
        """Every node of these levels was deleted: their indexes and log go, and any
        process holding one reloads (the pruned mark is past everything logged)."""
        last = self._last_seq()
        for level in set(levels):
            self._conn().execute(
                "DELETE FROM vector_log WHERE memory = ? AND level = ?", (self._memory, level)
            )
            self._mark_pruned(level, last)
            self._exact.pop(level, None)
            self._approximate.pop(level, None)
            self._doomed.add(level)

    def file_levels(self) -> list[int]:
        return sorted({lv for lv, _, _ in self._files()})

    def _apply(self, level: int, node_id: str, rowid: int, vector: np.ndarray | None) -> None:
        exact = self._exact.get(level)
        if exact is not None:
            if vector is None:
                exact.drop(node_id)
            else:
                exact.put(node_id, vector)
        found = self._approximate.get(level)
        if found is not None:
            if vector is None:
                found.index.drop(np.array([rowid]))
            else:
                found.index.put(np.array([rowid]), vector[None, :])
            found.unsaved += 1

    def _log(self, changes: list[tuple[int, int, int]]) -> None:
        if not changes:
            return
        self._conn().executemany(
            "INSERT INTO vector_log (memory, level, node_rowid, op) VALUES (?, ?, ?, ?)",
            [(self._memory, level, rowid, op) for level, rowid, op in changes],
        )
        last = self._last_seq()  # the write lock is held: the log's end is ours
        for level in {level for level, _, _ in changes}:
            if level in self._approximate:
                self._approximate[level].applied = last

    # --- saving -------------------------------------------------------------------------
    def _save(self, level: int, found: _Approximate) -> None:
        """Write the level's index as of ``found.applied`` and remove older files; the
        log up to it is pruned in the next write transaction."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = self.folder / f"L{level}-{found.applied}.usearch"
            found.index.save(path)
        except OSError as exc:  # a read-only or full disk: searched from memory still
            logger.warning("vector index of level %s not saved: %s", level, exc)
            return
        found.unsaved = 0
        # The graph as a new process has it (module docstring): loading resets the
        # random level generator that the inserts since the last load advanced.
        found.index = ApproximateIndex.load(path, found.index.dims)
        for lv, seq, old in self._files():
            if lv == level and seq < found.applied:
                with contextlib.suppress(OSError):
                    old.unlink()
        self._prune[level] = max(self._prune.get(level, 0), found.applied)

    def _prune_saved(self) -> None:
        for level, seq in sorted(self._prune.items()):
            self._conn().execute(
                "DELETE FROM vector_log WHERE memory = ? AND level = ? AND seq <= ?",
                (self._memory, level, seq),
            )
            self._mark_pruned(level, seq)

    def _mark_pruned(self, level: int, seq: int) -> None:
        self._conn().execute(
            "INSERT INTO vector_log_pruned (memory, level, seq) VALUES (?, ?, ?) "
            "ON CONFLICT (memory, level) DO UPDATE SET seq = MAX(seq, excluded.seq)",
            (self._memory, level, seq),
        )

    def close(self) -> None:
        """Save what a later open would otherwise replay at length."""
        for level, found in self._approximate.items():
            if found.unsaved >= SAVE_ON_CLOSE:
                self._save(level, found)

    def remove_files(self) -> None:
        """The memory is gone: its index files too."""
        for _, _, path in self._files():
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()
            self.folder.parent.rmdir()  # only when no other memory has files there

    def describe(self) -> dict[str, Any]:
        return {
            str(level): {"vectors": len(found.index), "unsaved": found.unsaved}
            for level, found in sorted(self._approximate.items())
        }


def _vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)
