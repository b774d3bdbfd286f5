"""The ingest pipeline behind ``Memory.ingest``: sources to chunks, chunks to batches,
each batch embedded (one ahead, engine/prefetch.py) and written in one transaction with
the documents' bookkeeping, the hierarchy updated by ``MemoryBuilder``.

``Memory`` is the public facade; this module is the work it hands ingest to, so that
reading, asking and ingesting stay in modules of a size one can read.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import itertools
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast

from cam_engine.chunking import chunk_document, chunk_stream
from cam_engine.config import Settings, check_batch_size
from cam_engine.conversation import Conversation
from cam_engine.embed import Embedder
from cam_engine.engine.builder import MemoryBuilder
from cam_engine.engine.prefetch import PreparedBatch, prefetched
from cam_engine.engine.reports import BatchReport, IngestError, IngestReport
from cam_engine.engine.revision import Revision, fresh_id, placed_differently, plan_revision
from cam_engine.engine.timing import PhaseClock
from cam_engine.errors import InputError, NotFoundError, StoreError
from cam_engine.formats import format_named, pages_of
from cam_engine.limits import Limits
from cam_engine.llm import Summarizer
from cam_engine.names import names_in
from cam_engine.sources import (
    API_OPTIONS,
    UTF8,
    AllowedRoots,
    DocumentText,
    OptionNames,
    Source,
    check_document_id,
    check_encoding,
    clean_text,
    encoding_hint,
    expand_paths,
    load_document,
    text_hash,
    unique_sources,
)
from cam_engine.store.base import DocumentRecord, GraphStore
from cam_engine.store.batch import BatchStore, BatchWriter
from cam_engine.store.structure import NodeInfo, text_key
from cam_engine.turn_chunking import chunk_conversation
from cam_engine.types import CHUNK, Chunk, Node

logger = logging.getLogger(__name__)

BatchCallback = Callable[[BatchReport], None]


class IngestPipeline:
    """Ingest into one memory's store with its settings, embedder and summarizer."""

    def __init__(
        self,
        store: GraphStore,
        *,
        settings: Settings,
        embedder: Embedder,
        summarizer: Summarizer,
        llm_concurrency: int = 4,
    ) -> None:
        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.summarizer = summarizer
        self.llm_concurrency = llm_concurrency
        self.options: OptionNames = API_OPTIONS  # how errors name an option (sources.py)
        self.limits = Limits()  # what one input may cost (the memory's, set by Memory)
        # Holds the memory's structure between batches (store/batch.py).
        self.writer = BatchWriter(store)

    def ingest(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        batch_size: int = 64,
        document: str | None = None,
        document_prefix: str | None = None,
        stdin: IO[str] | None = None,
        on_batch: BatchCallback | None = None,
        on_error: Callable[[IngestError], None] | None = None,
        encoding: str = UTF8,
        allow: AllowedRoots | None = None,
        file_format: str | None = None,
    ) -> IngestReport:
        """Ingest files, folders or ``"-"`` (stdin), each document in batches.

        A document that cannot be read is reported in ``errors`` and skipped; the
        memory is not touched for it. ``encoding``: of the text files and stdin.
        Two paths that would be the same document are an ``InputError`` before any
        is read (``sources.unique_sources``). With ``allow``, each file is read only if
        the file opened lies under its roots (``sources.open_document``), and stdin
        not at all. ``file_format``: read every file as that format (a registered
        one; stdin, read as text, cannot be one whose ``reads_stdin`` is False).
        """
        check_batch_size(batch_size)
        encoding = check_encoding(encoding, self.options)
        forced = format_named(file_format) if file_format else None
        if isinstance(paths, str | Path):  # one path, not a sequence of its characters
            paths = [paths]
        sources = unique_sources(
            expand_paths(
                [str(p) for p in paths],
                document=document,
                document_prefix=document_prefix,
                options=self.options,
                max_files=self.limits.folder_files,
            ),
            self.options,
        )
        self._prepare_store()
        report = IngestReport()
        for item in sources:
            try:
                if isinstance(item, InputError):
                    raise item
                if allow is not None and item.path is None:
                    raise InputError(f"stdin is not a file under the allowed folders ({allow})")
                if forced is not None and not forced.reads_stdin and item.path is None:
                    raise InputError(f"stdin cannot be read as a {forced.name}; give its file")
                self._ingest_source(
                    item, batch_size, stdin, report, on_batch, encoding, allow, file_format
                )
            except InputError as exc:
                error = IngestError(
                    item.label if isinstance(item, Source) else exc.source, str(exc)
                )
                report.errors.append(error)
                if on_error is not None:
                    on_error(error)
        return report

    def ingest_text(
        self,
        text: str,
        document: str,
        *,
        batch_size: int = 64,
        on_batch: BatchCallback | None = None,
    ) -> IngestReport:
        check_batch_size(batch_size)
        check_document_id(document)
        text = clean_text(text)
        if not text.strip():
            raise InputError(f"document {document!r} is empty")
        self._prepare_store()
        report = IngestReport()
        chunks = chunk_document(document, text, self.settings.chunk_tokens)
        record = _text_record(document, text, len(chunks))
        self._warn_of_twins(record, "the text given")
        self._revise({document: (record, chunks)}, batch_size, report, on_batch)
        return report

    def ingest_documents(
        self,
        documents: Iterable[tuple[str, str | Conversation]],
        *,
        batch_size: int = 64,
        on_batch: BatchCallback | None = None,
    ) -> IngestReport:
        """Ingest many (document id, text or conversation) pairs, their chunks packed into
        shared batches; a conversation is chunked by its turns (``chunk_conversation``).

        For collections of short documents (pooled QA paragraphs, notes): one batch per
        document would run the whole hierarchy update once per paragraph. Documents
        already in the memory are skipped chunk by chunk, as in ``ingest``.
        """
        check_batch_size(batch_size)
        self._prepare_store()
        new: dict[str, tuple[DocumentRecord, list[Chunk]]] = {}
        # Chunked up front: an empty document is refused before anything is written,
        # and the chunks already stored are known before any is embedded.
        for doc_id, raw in documents:
            check_document_id(doc_id)
            if isinstance(raw, Conversation):
                text, chunks = chunk_conversation(doc_id, raw, self.settings.chunk_tokens)
                new[doc_id] = (_text_record(doc_id, text, len(chunks)), chunks)
                continue
            text = clean_text(raw)
            if not text.strip():
                raise InputError(f"document {doc_id!r} is empty")
            chunks = chunk_document(doc_id, text, self.settings.chunk_tokens)
            new[doc_id] = (_text_record(doc_id, text, len(chunks)), chunks)
        report = IngestReport()
        self._revise(new, batch_size, report, on_batch)
        return report

    def _prepare_store(self) -> None:
        """Before any document is read: the store's schema for these vectors, and a
        store that cannot be written (a read-only file) refused, naming it."""
        self.store.prepare(self.embedder.dim)

    def _ingest_source(
        self,
        source: Source,
        batch_size: int,
        stdin: IO[str] | None,
        report: IngestReport,
        on_batch: BatchCallback | None,
        encoding: str = UTF8,
        allow: AllowedRoots | None = None,
        file_format: str | None = None,
    ) -> None:
        check_document_id(source.doc_id)
        budget = self.settings.chunk_tokens
        if source.path is None:
            blocks = _stdin(encoding) if stdin is None else _blocks(stdin)
            hashed = _HashedText(_checked_stdin(blocks, encoding, self.options))
            record = DocumentRecord(source.doc_id, "<stdin>", None, 0)
            chunks = chunk_stream(source.doc_id, hashed, budget)
            self._ingest_stream(record, chunks, hashed, batch_size, report, on_batch)
            return
        document = load_document(
            source.path,
            encoding=encoding,
            options=self.options,
            allow=allow,
            limits=self.limits,
            file_format=file_format,
        )
        text, sha = document.text, document.sha256
        if document.conversation is not None:
            # Its chunks are whole turns under their session's header; the memory's
            # text of it is those chunks (what citations count in).
            text, pieces = chunk_conversation(source.doc_id, document.conversation, budget)
        else:
            pieces = _placed(chunk_document(source.doc_id, text, budget), document)
        known = self.store.get_document(source.doc_id)
        if known is not None and known.sha256 != sha and known.source != str(source.path):
            logger.warning(
                "%s replaces document %r of memory %r, which was read from %s",
                source.label,
                source.doc_id,
                self.store.memory,
                known.source,
            )
        record = DocumentRecord(
            source.doc_id, str(source.path), sha, 0, len(pieces), text_sha256=text_hash(text)
        )
        if known is None:
            self._warn_of_twins(record, source.label)
        self._revise({source.doc_id: (record, pieces)}, batch_size, report, on_batch)

    def _warn_of_twins(self, record: DocumentRecord, label: str) -> None:
        """Log a warning when another document of the memory has the same text (the
        same file under another name, or the same text in another format)."""
        twins = [
            d.id
            for d in self.store.documents()
            if d.text_sha256 == record.text_sha256 and d.id != record.id
        ]
        if twins:
            logger.warning(
                "%s has the same text as document %r, already in memory %r; it is "
                "ingested again as document %r",
                label,
                twins[0],
                self.store.memory,
                record.id,
            )

    # --- documents whose chunks are known up front ------------------------------------
    def _revise(
        self,
        new: dict[str, tuple[DocumentRecord, list[Chunk]]],
        batch_size: int,
        report: IngestReport,
        on_batch: BatchCallback | None,
    ) -> None:
        """Bring each document of ``new`` to its new chunks (``engine.revision``).

        The first batch removes what went and moves what stayed, with the first of
        the added chunks; the rest of them follow in batches, each embedded while the
        one before it is written. A document already as stored costs no batch.
        """
        plans, known = self._plan(new)
        records = {
            doc_id: replace(record, version=_version(known.get(doc_id), record, plans[doc_id]))
            for doc_id, (record, _) in new.items()
        }
        kept = sum(len(p.kept) for p in plans.values())
        if not any(p.changed for p in plans.values()):
            nothing = BatchReport(_one(list(new)), 0, summarizer=self.summarizer.backend)
            nothing.chunks_skipped = nothing.chunks_kept = kept
            nothing.chunks_done = nothing.chunks_total = kept
            report.batches.append(nothing)
            if on_batch is not None:
                on_batch(nothing)
            self._refresh_records(records, plans, known)
            return
        added = [c for p in plans.values() for c in p.added]
        total = sum(len(chunks) for _, chunks in new.values())
        done = kept
        with closing(prefetched(_batches(iter(added), batch_size), self.embedder.embed)) as ready:
            # The first batch carries the removals and moves, added chunks or none.
            first = next(ready, None) or PreparedBatch([], 0.0)
            for number, batch in enumerate(itertools.chain([first], ready)):
                result = self._add_batch(records, batch, number, plans=None if number else plans)
                if number == 0:
                    result.chunks_kept = kept
                done += len(batch.chunks)
                result.chunks_done, result.chunks_total = done, total
                report.batches.append(result)
                if on_batch is not None:
                    on_batch(result)

    def _plan(
        self, new: dict[str, tuple[DocumentRecord, list[Chunk]]]
    ) -> tuple[dict[str, Revision], dict[str, DocumentRecord]]:
        """The revision of each document against what the memory holds now, and the
        records it holds of them."""
        with self.writer.batch(PhaseClock(), writes=False) as store:
            plans = _plans(store, {doc_id: chunks for doc_id, (_, chunks) in new.items()})
            known = {d: r for d in new if (r := store.get_document(d)) is not None}
        return plans, known

    def _refresh_records(
        self,
        records: dict[str, DocumentRecord],
        plans: dict[str, Revision],
        known: dict[str, DocumentRecord],
    ) -> None:
        """Write the record of a document whose chunks are as stored but whose record
        differs (the same text from another file, or a record older than its fields)."""
        fresh = {
            doc_id: _next_record(known.get(doc_id), record, len(plans[doc_id].kept), changed=False)
            for doc_id, record in records.items()
        }
        stale = [r for doc_id, r in fresh.items() if known.get(doc_id) != r]
        if stale:
            with self.writer.batch(PhaseClock()) as store:
                for record in stale:
                    store.upsert_document(record)

    # --- a stream (stdin): chunks arrive one batch at a time --------------------------
    def _ingest_stream(
        self,
        record: DocumentRecord,
        chunks: Iterator[Chunk],
        hashed: _HashedText,
        batch_size: int,
        report: IngestReport,
        on_batch: BatchCallback | None,
    ) -> None:
        """Ingest a document that arrives as a stream, position by position: a chunk
        whose text is the one stored at its position stays; any other replaces it; the
        stored chunks past the stream's end go at the end. A log that only grew costs
        its new chunks (and the last old one, when the new text joined it)."""
        with self.writer.batch(PhaseClock(), writes=False) as store:
            before = store.get_document(record.id)
            stored = store.chunks_of(record.id)
        same = {(int(i.position), i.text_key) for i in stored if i.position is not None}
        # Its batches keep the version; the end compares the whole text's hash.
        record = replace(record, version=before.version if before else 1)
        prepared = prefetched(
            _batches(chunks, batch_size),
            self.embedder.embed,
            skip=lambda c: (c.position, text_key(c.text)) in same,
        )
        records = {record.id: record}
        done = 0
        for number, batch in enumerate(prepared):
            done += len(batch.chunks)
            result = self._add_batch(records, batch, number, stream=True)
            result.chunks_done = done
            report.batches.append(result)
            if on_batch is not None:
                on_batch(result)
        if done == 0:
            raise InputError(f"{record.source}: no text to ingest")
        final = replace(record, sha256=hashed.sha256(), total=done)
        if before is not None and before.sha256 not in (None, final.sha256):
            final = replace(final, version=before.version + 1)
        self._end_stream(final, done, report, on_batch, before)

    def _end_stream(
        self,
        record: DocumentRecord,
        count: int,
        report: IngestReport,
        on_batch: BatchCallback | None,
        before: DocumentRecord | None,
    ) -> None:
        """The stream's last transaction: stored chunks past its end go, and the record
        gets the whole text's hash, and its version compared with the record ``before``
        the stream (the batches wrote it without a hash: the text was not known yet)."""
        clock = PhaseClock()
        result = BatchReport(record.id, len(report.batches), summarizer=self.summarizer.backend)
        with self.writer.batch(clock) as store:
            beyond = [i.id for i in store.chunks_of(record.id) if (i.position or 0) >= count]
            known = store.get_document(record.id)
            changed = bool(beyond) or any(
                b.chunks_added or b.chunks_removed or b.chunks_moved for b in report.batches
            )
            fresh = _next_record(before, record, count, changed=changed)
            if beyond:
                self._builder(store, clock).revise([], result, removed=beyond)
                result.chunks_removed = len(beyond)
            if known != fresh:
                store.upsert_document(fresh)
        if beyond:
            result.seconds, result.store_calls = dict(clock.seconds), clock.store_calls
            result.chunks_done = result.chunks_total = count
            report.batches.append(result)
            if on_batch is not None:
                on_batch(result)

    # --- one batch ---------------------------------------------------------------------
    def _add_batch(
        self,
        records: dict[str, DocumentRecord],
        prepared: PreparedBatch,
        number: int,
        *,
        plans: dict[str, Revision] | None = None,
        stream: bool = False,
    ) -> BatchReport:
        """One batch in one transaction: chunks of one document or of several short
        ones, and with ``plans`` (the first batch of a revision) the removals and moves
        of every document revised. ``stream``: each chunk replaces the one stored at
        its position unless it is that very chunk."""
        batch = prepared.chunks
        clock = PhaseClock()
        clock.seconds["chunk"] = prepared.chunk_seconds
        clock.seconds["embed"] = prepared.embed_seconds  # in the prefetch worker
        # The names the chunks it embedded mention (the new ones), found before the
        # transaction, so no write lock is held meanwhile. Not in the worker: pure
        # Python there would only contend for the GIL with the engine's work.
        with clock.phase("names"):
            names = {c.id: tuple(names_in(c.text)) for c in batch if c.id in prepared.vectors}
        docs = list(dict.fromkeys([c.doc_id for c in batch] + list(plans or ())))
        report = BatchReport(_one(docs), number, summarizer=self.summarizer.backend)
        self.store.prepare(self.embedder.dim)  # the schema: outside the transaction
        with self.writer.batch(clock) as store:
            removed: list[str] = []
            moved: list[Node] = []
            if plans is not None:
                _check_plans(store, plans, self.store.memory)
                removed = [i for p in plans.values() for i in p.removed]
                moved = _moved_nodes(
                    store, {i: c for p in plans.values() for i, c in p.moved.items()}
                )
            present = store.existing_ids(c.id for c in batch)
            new = [c for c in batch if c.id not in present]
            if stream:
                gone, moved, new = _streamed(store, records[docs[0]].id, batch)
                removed += gone
            report.chunks_skipped = len(batch) - len(new)
            if stream:
                report.chunks_kept = report.chunks_skipped  # as stored at their positions
            if new or removed or moved:
                nodes = self._chunk_nodes(new, prepared, names, clock)
                self._save_settings_once(store)
                self._builder(store, clock).revise(nodes, report, removed=removed, moved=moved)
                changed = {c.doc_id for c in new} | {c.doc_id for c in moved if c.doc_id}
                changed |= {d for d, p in (plans or {}).items() if p.changed}
                changed |= {records[docs[0]].id} if stream and removed else set()
                # Pages and memos that covered a removed or moved chunk describe the
                # old text: they go (an append leaves them true).
                revised = {d for d, p in (plans or {}).items() if p.removed or p.moved}
                revised |= {records[docs[0]].id} if stream and removed else set()
                for doc_id in docs:
                    known = store.get_document(doc_id)
                    if known is not None and doc_id in revised:
                        store.drop_views_of(doc_id)
                    count = len(store.chunks_of(doc_id))
                    fresh = _next_record(known, records[doc_id], count, changed=doc_id in changed)
                    store.upsert_document(fresh)
            report.chunks_added = len(new)
            report.chunks_removed = len(removed)
            report.chunks_moved = len(moved)
        report.seconds = dict(clock.seconds)
        report.store_calls = clock.store_calls
        return report

    def _chunk_nodes(
        self,
        new: list[Chunk],
        prepared: PreparedBatch,
        names: dict[str, tuple[str, ...]],
        clock: PhaseClock,
    ) -> list[Node]:
        missing = [c for c in new if c.id not in prepared.vectors]
        if missing:  # stored when prefetched, gone since: embed them now
            with clock.phase("embed"):
                late = self.embedder.embed([c.text for c in missing])
            prepared.vectors.update(zip((c.id for c in missing), late, strict=True))
        return [
            Node(
                id=c.id,
                level=0,
                kind=CHUNK,
                text=c.text,
                doc_id=c.doc_id,
                position=c.position,
                embedding=prepared.vectors[c.id],
                props=_chunk_props(c),
                names=names.get(c.id),  # None: the store finds them as it writes
            )
            for c in new
        ]

    def _builder(self, store: BatchStore, clock: PhaseClock) -> MemoryBuilder:
        """A builder for one batch, on the batch's store."""
        return MemoryBuilder(
            store,
            self.embedder,
            self.summarizer,
            self.settings,
            clock,
            llm_concurrency=self.llm_concurrency,
        )

    def _save_settings_once(self, store: BatchStore) -> None:
        if store.load_settings() is None:
            store.save_settings(self.settings.to_dict())

    def delete_document(self, doc_id: str) -> BatchReport:
        """Delete a document in one transaction: its chunks with their edges, replicas
        and memberships, its record and the adapter views of it. The clusters that lose
        members are re-clustered and summarized again, level by level; nothing else is.
        """
        clock = PhaseClock()
        report = BatchReport(doc_id, 0, summarizer=self.summarizer.backend)
        with self.writer.batch(clock) as store:
            chunks = [info.id for info in store.chunks_of(doc_id)]
            if store.get_document(doc_id) is None and not chunks:
                raise NotFoundError(f"memory {self.store.memory!r} holds no document {doc_id!r}")
            if chunks:
                self._builder(store, clock).revise([], report, removed=chunks)
            store.delete_document(doc_id)
        report.chunks_removed = len(chunks)
        report.seconds = dict(clock.seconds)
        report.store_calls = clock.store_calls
        return report

    def rebuild(self, on_batch: BatchCallback | None = None) -> BatchReport:
        """Rebuild every level from the stored chunks in one pass (the offline mode).

        Same code as ingest, with all chunks as one batch: useful to compare an
        incrementally grown memory with one built at once.
        """
        clock = PhaseClock()
        report = BatchReport(None, 0, summarizer=self.summarizer.backend)
        self.store.prepare(self.embedder.dim)
        with self.writer.batch(clock) as store:
            store.clear(keep_chunks=True)
            chunks = store.nodes_at_level(0, embeddings=True)
            if chunks:
                self._builder(store, clock).assimilate(chunks, report, stored=True)
        report.chunks_added = len(chunks)
        report.seconds = dict(clock.seconds)
        report.store_calls = clock.store_calls
        if on_batch is not None:
            on_batch(report)
        return report


def _batches(chunks: Iterator[Chunk], size: int) -> Iterator[tuple[list[Chunk], float]]:
    """Batches of ``size`` chunks, with the seconds spent producing (chunking) each."""
    while True:
        start = time.perf_counter()
        batch = [c for _, c in zip(range(size), chunks, strict=False)]
        if not batch:
            return
        yield batch, time.perf_counter() - start


def _one(docs: Sequence[str]) -> str | None:
    """A batch's document label: its one document, or None for several."""
    return docs[0] if len(docs) == 1 else None


def _plans(store: BatchStore, new: dict[str, list[Chunk]]) -> dict[str, Revision]:
    return {doc_id: plan_revision(doc_id, store.chunks_of(doc_id), c) for doc_id, c in new.items()}


def _check_plans(store: BatchStore, plans: dict[str, Revision], memory: str) -> None:
    """The plans made before the batch still hold (no other process changed these
    documents in between); otherwise the ingest stops before writing anything."""
    for doc_id, plan in plans.items():
        now = plan_revision(doc_id, store.chunks_of(doc_id), _new_chunks(plan))
        if (now.removed, now.moved.keys(), [c.id for c in now.added]) != (
            plan.removed,
            plan.moved.keys(),
            [c.id for c in plan.added],
        ):
            raise StoreError(
                f"document {doc_id!r} of memory {memory!r} was changed by another writer "
                "during this ingest; run the ingest again"
            )


def _new_chunks(plan: Revision) -> list[Chunk]:
    """The new text's chunks a plan was made for, in order."""
    chunks = list(plan.kept.values()) + plan.added
    return sorted(chunks, key=lambda c: c.position)


def _streamed(
    store: BatchStore, doc_id: str, batch: Sequence[Chunk]
) -> tuple[list[str], list[Node], list[Chunk]]:
    """What a batch of a stream does to its document: (ids removed, nodes moved, chunks
    added). A chunk whose text is the one stored at its position keeps that node (an
    update by text may have left it under the id of another position); one stored under
    its own id at another position moves there. Each is written again when its offsets
    changed. Any other chunk is new and replaces the one at its position."""
    at = {c.position: store.chunk_ids_near(doc_id, [c.position]) for c in batch}
    here = {p: next(iter(ids)) for p, ids in at.items() if ids}
    keys = store.text_keys(here.values())
    elsewhere = store.infos(c.id for c in batch)
    kept: dict[str, Chunk] = {}
    new: list[Chunk] = []
    for c in batch:
        stored = here.get(c.position)
        if stored is not None and stored not in kept and keys[stored] == text_key(c.text):
            kept[stored] = c
        elif c.id in elsewhere and c.id not in kept and _ahead(elsewhere[c.id], c):
            kept[c.id] = c
        elif c.id in elsewhere or c.id in {n.id for n in new}:
            # Its id is another chunk's, kept at a position before (a repeated text).
            taken = {i.id for i in store.chunks_of(doc_id)} | {n.id for n in new}
            new.append(fresh_id(c, taken))
        else:
            new.append(c)
    infos = store.infos(kept)
    moves = {i: c for i, c in kept.items() if placed_differently(infos[i], c)}
    taken = store.chunk_ids_near(doc_id, (c.position for c in [*new, *moves.values()]))
    return sorted(taken - kept.keys()), _moved_nodes(store, moves), new


def _ahead(stored: NodeInfo, chunk: Chunk) -> bool:
    """Whether a stored chunk lies past the stream's ``chunk`` (not streamed yet): one
    before it was kept where it is by an earlier chunk of the stream."""
    return stored.position is not None and stored.position > chunk.position


def _moved_nodes(store: BatchStore, moves: dict[str, Chunk]) -> list[Node]:
    """The kept chunks that move (stored id -> chunk at its new place), as nodes: same
    id and vector, the new text's position, offsets (and white space)."""
    stored = store.get_nodes(sorted(moves), embeddings=True)
    placement = ("start_char", "end_char", "pages")
    return [
        replace(
            stored[i],
            text=c.text,
            position=c.position,
            props={k: v for k, v in stored[i].props.items() if k not in placement}
            | _chunk_props(c),
        )
        for i, c in moves.items()
        if i in stored
    ]


def _next_record(
    known: DocumentRecord | None, record: DocumentRecord, count: int, *, changed: bool = True
) -> DocumentRecord:
    """The document's record after a batch: ``count`` chunks stored, the version the
    run decided (``_version``; a stream's at its end), the time of the last change to
    its chunks."""
    updated = _now() if changed or known is None else known.updated_at
    return replace(record, chunks=count, updated_at=updated)


def _version(known: DocumentRecord | None, record: DocumentRecord, plan: Revision) -> int:
    """A document's version after this run: 1 for a new one, one more when its text
    changed (not when a run of the same text resumes, or nothing changed)."""
    if known is None:
        return 1
    if plan.changed and known.sha256 not in (None, record.sha256):
        return known.version + 1
    return known.version


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class _HashedText:
    """The pieces of a stream, hashed as they pass (the record of a stream gets the
    hash of its whole text, known only at its end)."""

    def __init__(self, pieces: Iterable[str]) -> None:
        self._pieces = pieces
        self._hash = hashlib.sha256()

    def __iter__(self) -> Iterator[str]:
        for piece in self._pieces:
            self._hash.update(piece.encode("utf-8", "surrogatepass"))
            yield piece

    def sha256(self) -> str:
        return self._hash.hexdigest()


# Characters (or bytes) read from stdin at a time: stdin is read in blocks, not lines,
# so one endless line is never held whole, and the chunker sees each block once.
STDIN_BLOCK = 1 << 16


def _stdin(encoding: str) -> Iterator[str]:
    """sys.stdin's text, each piece as soon as it arrives (up to ``STDIN_BLOCK`` bytes:
    a live log's batch is committed when it fills, not when a block of it has come),
    decoded strictly (under a POSIX locale Python reads stdin with surrogateescape,
    which turns bad bytes into text that fails much later), with universal newlines
    as a text stream has them."""
    raw = cast(io.BufferedReader, sys.stdin.buffer)  # a BytesIO under CliRunner: read1 too
    decoder = io.IncrementalNewlineDecoder(
        codecs.getincrementaldecoder(encoding)(errors="strict"), translate=True
    )
    while data := raw.read1(STDIN_BLOCK):
        if text := decoder.decode(data):
            yield text
    if text := decoder.decode(b"", final=True):
        yield text


def _blocks(stream: IO[str]) -> Iterator[str]:
    """A text stream's text in blocks of at most ``STDIN_BLOCK`` characters."""
    while block := stream.read(STDIN_BLOCK):
        yield block


def _checked_stdin(
    pieces: Iterable[str], encoding: str = UTF8, options: OptionNames = API_OPTIONS
) -> Iterator[str]:
    """stdin's text, checked as it streams; a byte order mark is dropped (the
    Gutenberg cut needs the whole text, and stdin is chunked as it arrives)."""
    first = True
    try:
        for piece in pieces:
            if first:
                piece, first = piece.removeprefix("\ufeff"), False
            if "\x00" in piece:
                raise InputError("<stdin>: looks binary (NUL bytes), not a text document")
            piece.encode("utf-8")  # a stream opened with surrogateescape hides bad bytes
            yield piece
    except (UnicodeDecodeError, UnicodeEncodeError) as exc:
        utf8 = encoding == UTF8
        hint = encoding_hint(options) if utf8 else "check its encoding"
        raise InputError(
            f"<stdin>: not valid {'UTF-8' if utf8 else encoding} ({exc.reason}); {hint}"
        ) from exc


def _placed(chunks: list[Chunk], document: DocumentText) -> list[Chunk]:
    """The chunks with offsets into the file's whole text (before the Gutenberg cut) and,
    for a PDF, the pages they are on: what a citation points at."""
    starts = list(document.page_starts)
    placed = []
    for c in chunks:
        start, end = c.start_char + document.offset, c.end_char + document.offset
        pages = pages_of(starts, start, end) if starts else None
        placed.append(replace(c, start_char=start, end_char=end, pages=pages))
    return placed


def _chunk_props(chunk: Chunk) -> dict[str, Any]:
    """Where a chunk's text is in its document: character offsets (the citation of
    evidence), and for a PDF its first and last page; and what its format says of it
    (a conversation's chunk: turns, speakers, session, date)."""
    props: dict[str, Any] = dict(chunk.props or {})
    props |= {"start_char": chunk.start_char, "end_char": chunk.end_char}
    if chunk.pages is not None:
        props["pages"] = list(chunk.pages)
    return props


def _text_record(doc_id: str, text: str, chunks: int) -> DocumentRecord:
    """The record of a document given as text (its text is its only hash)."""
    sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return DocumentRecord(doc_id, "<text>", sha, 0, chunks, text_sha256=text_hash(text))
