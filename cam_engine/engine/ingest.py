"""The ingest pipeline behind ``Memory.ingest``: sources to chunks, chunks to batches,
each batch embedded (one ahead, engine/prefetch.py) and written in one transaction with
the documents' bookkeeping, the hierarchy updated by ``MemoryBuilder``.

``Memory`` is the public facade; this module is the work it hands ingest to, so that
reading, asking and ingesting stay in modules of a size one can read.
"""

from __future__ import annotations

import hashlib
import io
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from cam_engine.chunking import chunk_document, chunk_stream
from cam_engine.config import Settings, check_batch_size
from cam_engine.embed import Embedder
from cam_engine.engine.builder import MemoryBuilder
from cam_engine.engine.prefetch import PreparedBatch, prefetched
from cam_engine.engine.reports import BatchReport, IngestError, IngestReport
from cam_engine.engine.timing import PhaseClock
from cam_engine.errors import InputError
from cam_engine.formats import pages_of
from cam_engine.llm import Summarizer
from cam_engine.sources import (
    API_OPTIONS,
    UTF8,
    DocumentText,
    OptionNames,
    Source,
    check_encoding,
    clean_text,
    encoding_hint,
    expand_paths,
    load_document,
    text_hash,
)
from cam_engine.store.base import DocumentRecord, GraphStore
from cam_engine.store.batch import BatchStore, BatchWriter
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
        # Holds the memory's structure between batches (store/batch.py).
        self.writer = BatchWriter(store)

    def ingest(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        batch_size: int = 64,
        document: str | None = None,
        stdin: IO[str] | None = None,
        on_batch: BatchCallback | None = None,
        on_error: Callable[[IngestError], None] | None = None,
        encoding: str = UTF8,
    ) -> IngestReport:
        """Ingest files, folders or ``"-"`` (stdin), each document in batches.

        A document that cannot be read is reported in ``errors`` and skipped; the
        memory is not touched for it. ``encoding``: of the text files and stdin.
        """
        check_batch_size(batch_size)
        encoding = check_encoding(encoding, self.options)
        if isinstance(paths, str | Path):  # one path, not a sequence of its characters
            paths = [paths]
        self._prepare_store()
        report = IngestReport()
        for item in expand_paths([str(p) for p in paths], document=document, options=self.options):
            try:
                if isinstance(item, InputError):
                    raise item
                self._ingest_source(item, batch_size, stdin, report, on_batch, encoding)
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
        text = clean_text(text)
        if not text.strip():
            raise InputError(f"document {document!r} is empty")
        self._prepare_store()
        report = IngestReport()
        chunks = chunk_document(document, text, self.settings.chunk_tokens)
        record = _text_record(document, text, len(chunks))
        self._warn_of_twins(record, "the text given")
        self._ingest_chunks(
            record, iter(chunks), len(chunks), batch_size, report, on_batch, known=chunks
        )
        return report

    def ingest_documents(
        self,
        documents: Iterable[tuple[str, str]],
        *,
        batch_size: int = 64,
        on_batch: BatchCallback | None = None,
    ) -> IngestReport:
        """Ingest many (document id, text) pairs, their chunks packed into shared batches.

        For collections of short documents (pooled QA paragraphs, notes): one batch per
        document would run the whole hierarchy update once per paragraph. Documents
        already in the memory are skipped chunk by chunk, as in ``ingest``.
        """
        check_batch_size(batch_size)
        self._prepare_store()
        records: dict[str, DocumentRecord] = {}
        pieces: list[Chunk] = []
        # Chunked up front: an empty document is refused before anything is written,
        # and the chunks already stored are known before any is embedded.
        for doc_id, raw in documents:
            text = clean_text(raw)
            if not text.strip():
                raise InputError(f"document {doc_id!r} is empty")
            chunks = chunk_document(doc_id, text, self.settings.chunk_tokens)
            records[doc_id] = _text_record(doc_id, text, len(chunks))
            pieces.extend(chunks)
        report = IngestReport()
        for number, batch in enumerate(self._prepared(iter(pieces), batch_size, pieces)):
            result = self._add_batch(records, batch, number)
            report.batches.append(result)
            if on_batch is not None:
                on_batch(result)
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
    ) -> None:
        budget = self.settings.chunk_tokens
        if source.path is None:
            lines = _non_empty_stream(stdin or _stdin(encoding), encoding, self.options)
            record = DocumentRecord(source.doc_id, "<stdin>", None, 0)
            chunks = chunk_stream(source.doc_id, lines, budget)
            self._ingest_chunks(record, chunks, None, batch_size, report, on_batch)
            return
        document = load_document(source.path, encoding=encoding, options=self.options)
        text, sha = document.text, document.sha256
        known = self.store.get_document(source.doc_id)
        if known is not None and known.sha256 not in (None, sha):
            raise InputError(
                f"{source.label}: memory {self.store.memory!r} already holds a different "
                f"document named {source.doc_id!r}; pass {self.options.name('document')} "
                "to give this one another name"
            )
        pieces = _placed(chunk_document(source.doc_id, text, budget), document)
        record = DocumentRecord(
            source.doc_id, str(source.path), sha, 0, len(pieces), text_sha256=text_hash(text)
        )
        if known is None:
            self._warn_of_twins(record, source.label)
        self._ingest_chunks(
            record, iter(pieces), len(pieces), batch_size, report, on_batch, known=pieces
        )

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

    def _ingest_chunks(
        self,
        record: DocumentRecord,
        chunks: Iterator[Chunk],
        total: int | None,
        batch_size: int,
        report: IngestReport,
        on_batch: BatchCallback | None,
        known: Sequence[Chunk] | None = None,
    ) -> None:
        done = 0
        for number, batch in enumerate(self._prepared(chunks, batch_size, known)):
            done += len(batch.chunks)
            result = self._add_batch({record.id: record}, batch, number)
            result.chunks_done, result.chunks_total = done, total
            report.batches.append(result)
            if on_batch is not None:
                on_batch(result)
        if done == 0:
            raise InputError(f"{record.source}: no text to ingest")

    def _prepared(
        self, chunks: Iterator[Chunk], batch_size: int, known: Sequence[Chunk] | None
    ) -> Iterator[PreparedBatch]:
        """Batches of ``chunks``, each chunked and embedded while the one before it is
        being written (engine/prefetch.py). With the chunks ``known`` up front, those
        already stored are not embedded (re-ingesting a document costs no embedding)."""
        stored = self.store.existing_ids(c.id for c in known) if known is not None else set()
        return prefetched(
            _batches(chunks, batch_size), self.embedder.embed, skip=lambda c: c.id in stored
        )

    def _add_batch(
        self, records: dict[str, DocumentRecord], prepared: PreparedBatch, number: int
    ) -> BatchReport:
        """One batch (chunks of one document, or of several short ones) in one transaction."""
        batch = prepared.chunks
        clock = PhaseClock()
        clock.seconds["chunk"] = prepared.chunk_seconds
        clock.seconds["embed"] = prepared.embed_seconds  # in the prefetch worker
        docs = list(dict.fromkeys(c.doc_id for c in batch))
        label = docs[0] if len(docs) == 1 else None
        report = BatchReport(label, number, summarizer=self.summarizer.backend)
        self.store.prepare(self.embedder.dim)  # the schema: outside the transaction
        with self.writer.batch(clock) as store:
            present = store.existing_ids(c.id for c in batch)
            new = [c for c in batch if c.id not in present]
            report.chunks_skipped = len(batch) - len(new)
            if new:
                self._refuse_rewritten_positions(store, records, new)
                nodes = self._chunk_nodes(new, prepared, clock)
                self._save_settings_once(store)
                for doc_id in docs:
                    record = records[doc_id]
                    known = store.get_document(doc_id)
                    last = max(c.position for c in batch if c.doc_id == doc_id)
                    stored_chunks = max(known.chunks if known else 0, last + 1)
                    store.upsert_document(replace(record, chunks=stored_chunks))
                self._builder(store, clock).assimilate(nodes, report)
            report.chunks_added = len(new)
        report.seconds = dict(clock.seconds)
        report.store_calls = clock.store_calls
        return report

    def _chunk_nodes(
        self, new: list[Chunk], prepared: PreparedBatch, clock: PhaseClock
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
            )
            for c in new
        ]

    def _refuse_rewritten_positions(
        self, store: BatchStore, records: dict[str, DocumentRecord], new: list[Chunk]
    ) -> None:
        """A new chunk where the document already has one means different text under a
        known name (stdin piped again, a grown log): storing it would leave two chunks
        at one position, so the batch is refused before anything is written."""
        by_doc: dict[str, dict[int, Chunk]] = {}
        for c in new:
            by_doc.setdefault(c.doc_id, {})[c.position] = c
        for doc_id, at in by_doc.items():
            known = store.get_document(doc_id)
            # Only positions the document already has can clash (not those appended now).
            taken = [p for p in at if known is not None and p < known.chunks]
            if not taken:
                continue
            for old in store.infos_at_positions(doc_id, taken):
                position = int(old.position or 0)
                if old.id != at[position].id:
                    raise InputError(
                        f"{records[doc_id].source}: memory {self.store.memory!r} already holds "
                        f"different text at chunk {position} of document {doc_id!r}; pass "
                        f"{self.options.name('document')} to store this text under another name"
                    )

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


def _stdin(encoding: str) -> IO[str]:
    """sys.stdin decoded strictly: under a POSIX locale Python reads it with
    surrogateescape, which turns bad bytes into text that fails much later."""
    return io.TextIOWrapper(sys.stdin.buffer, encoding=encoding, errors="strict")


def _non_empty_stream(
    stream: IO[str], encoding: str = UTF8, options: OptionNames = API_OPTIONS
) -> Iterable[str]:
    """stdin's lines, checked as they stream; a byte order mark is dropped (the
    Gutenberg cut needs the whole text, and stdin is chunked as it arrives)."""
    first = True
    try:
        for line in stream:
            if first:
                line, first = line.removeprefix("\ufeff"), False
            if "\x00" in line:
                raise InputError("<stdin>: looks binary (NUL bytes), not a text document")
            line.encode("utf-8")  # a stream opened with surrogateescape hides bad bytes
            yield line
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
    evidence), and for a PDF its first and last page."""
    props: dict[str, Any] = {"start_char": chunk.start_char, "end_char": chunk.end_char}
    if chunk.pages is not None:
        props["pages"] = list(chunk.pages)
    return props


def _text_record(doc_id: str, text: str, chunks: int) -> DocumentRecord:
    """The record of a document given as text (its text is its only hash)."""
    sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return DocumentRecord(doc_id, "<text>", sha, 0, chunks, text_sha256=text_hash(text))
