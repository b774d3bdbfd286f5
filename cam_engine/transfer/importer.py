"""``cam import``: an export file written into a store, in transactions of bounded size,
and removed again when anything fails."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from cam_engine.errors import CamError, ConfigError, InputError
from cam_engine.progress import Progress, ProgressCallback
from cam_engine.store.base import DocumentRecord, GraphStore
from cam_engine.store.change import GraphChange
from cam_engine.transfer.export import memory_counts
from cam_engine.transfer.reader import ExportFile, Record
from cam_engine.transfer.records import KINDS, Header, TransferReport
from cam_engine.types import Edge, Node, Replica

logger = logging.getLogger(__name__)

BATCH_RECORDS = 1000  # records written per transaction
BATCH_CHARS = 16 * 1024 * 1024  # ... or fewer, when their lines hold this many characters
MAX_COUNTERS = 100_000
# What an import writes goes in through ``apply``, as an ingest's batch does, in
# changes that build on no generation: the file's counters (its generation among them)
# are written last.
IMPORTED = 0


def import_memory(
    source: ExportFile,
    store: GraphStore,
    *,
    on_progress: ProgressCallback | None = None,
    batch_records: int = BATCH_RECORDS,
) -> TransferReport:
    """Write the memory ``source`` holds into ``store`` (opened for the memory's new
    name), which must not hold a memory of that name. On any failure what was written
    is removed and the error raised."""
    start = time.perf_counter()
    header = source.header
    if store.load_settings() is not None:
        raise ConfigError(
            f"memory {store.memory!r} already exists in {store.location}: import under "
            "another name (--as NAME), or delete it first (cam delete)"
        )
    _remove_unfinished(store)
    if header.dimensions is not None:
        store.prepare(header.dimensions)
    try:
        counts, counters = _write_records(source, store, on_progress, batch_records)
        _check_written(store, header)
        # The settings last, with the counters: until this commits, no command sees the
        # memory, and a memory that is seen is whole.
        with store.transaction():
            store.apply(GraphChange(IMPORTED, settings=dict(header.settings), counters=counters))
    except BaseException:
        _remove(store)
        raise
    return TransferReport(
        store.memory, str(source.path), store.location, counts, time.perf_counter() - start
    )


def _remove_unfinished(store: GraphStore) -> None:
    """A memory with no settings but with nodes or documents is what an import killed
    before its end (kill -9, a power cut) leaves: it was never a memory; remove it."""
    if store.nodes_page("", 1) or store.documents() or store.counters():
        logger.warning(
            "memory %r in %s has records but no settings (an unfinished import): removing them",
            store.memory,
            store.location,
        )
        store.drop_memory()


def _remove(store: GraphStore) -> None:
    try:
        store.drop_memory()
    except CamError as exc:  # the first error is the one to report
        logger.error(
            "could not remove the partly imported memory %r from %s: %s (cam delete removes it)",
            store.memory,
            store.location,
            exc,
        )


def _write_records(
    source: ExportFile,
    store: GraphStore,
    on_progress: ProgressCallback | None,
    batch_records: int,
) -> tuple[dict[str, int], dict[str, int]]:
    """Every record but the counters written, a transaction per batch of one kind; the
    records written of each kind, and the counters, to be written last."""
    total = sum(source.header.counts.values())
    written = {kind: 0 for kind in KINDS}
    counters: dict[str, int] = {}
    batch: list[Record] = []
    chars = 0
    for record in source.records():
        written[record.kind] += 1
        if record.kind == "counter":
            if len(counters) >= MAX_COUNTERS:
                raise source.error_at(record.line, f"more than {MAX_COUNTERS:,} counters")
            name, value = record.value
            counters[name] = value
            continue
        full = len(batch) >= batch_records or chars + record.size > BATCH_CHARS
        if batch and (record.kind != batch[0].kind or full):
            _write_batch(source, store, batch)
            batch, chars = [], 0
            _report(on_progress, sum(written.values()) - 1, total)
        batch.append(record)
        chars += record.size
    if batch:
        _write_batch(source, store, batch)
    _report(on_progress, sum(written.values()), total)
    return written, counters


def _report(on_progress: ProgressCallback | None, done: int, total: int) -> None:
    if on_progress is not None:
        on_progress(Progress("import", "record", done, total))


def _write_batch(source: ExportFile, store: GraphStore, batch: list[Record]) -> None:
    """One transaction: the batch's records, all of one kind, after checking that the
    nodes they name were written (Neo4j's MATCH would drop a link to a missing node
    without a word, SQLite would keep it dangling)."""
    kind = batch[0].kind
    _check_repeats(source, batch)
    with store.transaction():
        named = _NAMED_NODES.get(kind)
        if named is not None:
            _check_named(source, store, batch, named)
        _WRITERS[kind](store, [r.value for r in batch])


def _check_repeats(source: ExportFile, batch: list[Record]) -> None:
    """Two records of one thing in a batch would be written over each other (or, for
    view nodes on SQLite, fail on its links): a repeat in two batches is caught by the
    counts at the end."""
    seen: dict[Any, int] = {}
    for record in batch:
        key = _KEYS[record.kind](record.value)
        if key in seen:
            raise source.error_at(
                record.line,
                f"a second {record.kind} record for {key!r} (the first is on line {seen[key]})",
            )
        seen[key] = record.line


def _check_named(
    source: ExportFile,
    store: GraphStore,
    batch: list[Record],
    named: Callable[[Any], Iterable[str]],
) -> None:
    ids = {node_id for r in batch for node_id in named(r.value)}
    missing = ids - store.existing_ids(ids)
    if not missing:
        return
    for record in batch:
        absent = sorted(set(named(record.value)) & missing)
        if absent:
            raise source.error_at(
                record.line,
                f"{record.kind} record names node {absent[0]!r}, which the file does not hold",
            )


def _write_documents(store: GraphStore, documents: list[DocumentRecord]) -> None:
    store.apply(GraphChange(IMPORTED, documents={d.id: d for d in documents}))


def _write_nodes(store: GraphStore, nodes: list[Node]) -> None:
    # A chunk's names are the record's (Node.names), not found again.
    store.apply(GraphChange(IMPORTED, nodes={n.id: n for n in nodes}))


def _write_edges(store: GraphStore, edges: list[Edge]) -> None:
    store.apply(GraphChange(IMPORTED, edges={e.key: e for e in edges}))


def _write_replicas(store: GraphStore, replicas: list[Replica]) -> None:
    store.apply(GraphChange(IMPORTED, replicas={r.id: r for r in replicas}))


def _write_members(store: GraphStore, rows: list[tuple[str, int, list[str]]]) -> None:
    members = {summary: (level, set(ids)) for summary, level, ids in rows}
    store.apply(GraphChange(IMPORTED, members=members))


_WRITERS: dict[str, Callable[[GraphStore, list[Any]], None]] = {
    "document": _write_documents,
    "node": _write_nodes,
    "edge": _write_edges,
    "replica": _write_replicas,
    "members": _write_members,
    "view_node": lambda store, views: store.upsert_view_nodes(views),
}

# What identifies a record of each kind in a store.
_KEYS: dict[str, Callable[[Any], Any]] = {
    "document": lambda d: d.id,
    "node": lambda n: n.id,
    "edge": lambda e: (e.src, e.dst),
    "replica": lambda r: r.id,
    "members": lambda row: row[0],
    "view_node": lambda v: v.id,
}

# The nodes each kind of record names, which the nodes written before it must hold.
_NAMED_NODES: dict[str, Callable[[Any], Iterable[str]]] = {
    "edge": lambda e: (e.src, e.dst),
    # not a replica's members: a node's deletion leaves them in its neighbours' replicas
    "replica": lambda r: (r.node_id,),
    "members": lambda row: (row[0], *row[2]),
    "view_node": lambda v: v.chunk_ids,
}


def _check_written(store: GraphStore, header: Header) -> None:
    """The store's figures against the file's: a record naming a node the file does not
    hold (an edge, a member, a replica) is dropped by Neo4j's MATCH, silently."""
    held = memory_counts(store)
    differ = [
        f"{kind} {header.counts[kind]} in the file, {held[kind]} written"
        for kind in KINDS
        if kind != "counter" and held[kind] != header.counts[kind]
    ]
    if differ:
        raise InputError(
            f"the imported memory does not match the file ({'; '.join(differ)}): some record "
            "names a node or document the file does not hold",
        )
