"""Lifecycle benchmark: update one paragraph of a book, delete a book, in a full memory.

The memory holds the five shared Gutenberg books and the Paul Graham essays (in the
order of ``BUILD``; Frankenstein last, so its ingest ran in a memory as full as the one
it is later deleted from). Vectors come from ``--cached-vectors`` when given, so the
figures are the engine's, not the model's. Then:

- update: one paragraph in the middle of Moby Dick is replaced by a paragraph of Pride
  and Prejudice with the closest token count (then length), and the file re-ingested.
  update_seconds is that ingest's wall time (reading and chunking the book, planning
  the revision, its batches); summaries_rewritten, the summaries its batches wrote, in
  total and per level ("top": the covering top level); chunks kept, moved (kept at a
  new offset: written again, not re-embedded), removed and added.
  update_ratio = update_seconds / alone_seconds, where alone_seconds is the wall time
  of ingesting the chunks the update added, as one document, into an empty memory.
- delete: Frankenstein deleted; delete_ratio = delete_seconds / the wall seconds its
  ingest took in the build.

Targets: update_ratio <= 2, at most 2 summaries rewritten per level, delete_ratio <= 1
(``targets_met`` says which hold). ``phases_s`` gives each operation's seconds per
phase (engine/timing.py), store time apart, to say where the time went.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cam_engine.chunking import count_tokens
from cam_engine.config import Settings
from cam_engine.embed import Embedder, load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.engine.reports import BatchReport, IngestReport
from cam_engine.errors import InputError
from cam_engine.memory import Memory
from cam_engine.sources import read_text
from cam_engine.store.base import backend_name, is_neo4j_uri

UPDATED, DELETED, DONOR = "pg2701.txt", "pg84.txt", "pg1342.txt"  # Moby Dick, Frankenstein
PARAGRAPH_DOCUMENT = "moby-paragraph"  # the update's added chunks as a document of their own
BUILD = ("pg1342.txt", "pg2701.txt", "pg1513.txt", "pg26184.txt", "paul_graham", DELETED)
_PARAGRAPH = re.compile(r"(?:\r?\n[ \t]*){2,}")
# The replaced paragraph fits one chunk, so the edit is one paragraph's worth of text.
PARAGRAPH_TOKENS = (80, 180)
TARGET_UPDATE_RATIO, TARGET_SUMMARIES_PER_LEVEL, TARGET_DELETE_RATIO = 2.0, 2, 1.0


@dataclass(frozen=True)
class Edit:
    """One paragraph of a text replaced by another."""

    start: int
    end: int
    old: str
    new: str

    def apply(self, text: str) -> str:
        return text[: self.start] + self.new + text[self.end :]


def paragraphs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each blank-line paragraph of ``text``, white space trimmed."""
    cursor = 0
    for match in [*_PARAGRAPH.finditer(text), None]:
        stop = len(text) if match is None else match.start()
        piece = text[cursor:stop]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            yield cursor + lead, cursor + len(piece.rstrip())
        if match is not None:
            cursor = match.end()


def middle_edit(book: str, donor: str) -> Edit:
    """The first paragraph of ``book`` past its middle within PARAGRAPH_TOKENS, and the
    paragraph of ``donor`` (past its first tenth: no front matter) closest to it in
    tokens, then in characters."""
    low, high = PARAGRAPH_TOKENS
    start, end = next(
        (a, b)
        for a, b in paragraphs(book)
        if a >= len(book) // 2 and low <= count_tokens(book[a:b]) <= high
    )
    old = book[start:end]
    tokens = count_tokens(old)
    candidates = [donor[a:b] for a, b in paragraphs(donor) if a >= len(donor) // 10]
    new = min(candidates, key=lambda p: (abs(count_tokens(p) - tokens), abs(len(p) - len(old))))
    newline = "\r\n" if "\r\n" in old else "\n"
    new = newline.join(new.replace("\r\n", "\n").split("\n"))
    return Edit(start, end, old, new)


def _phases(reports: Sequence[BatchReport]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for r in reports:
        for phase, seconds in r.seconds.items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    return {k: round(v, 4) for k, v in totals.items() if v}


def _query_totals(
    memory: Memory, since: dict[str, list[float]] | None = None
) -> dict[str, list[float]]:
    """{Cypher file: [statements, seconds]} sent so far (Neo4j; empty on SQLite), or
    since the totals ``since``, costliest first."""
    calls = getattr(memory.store, "query_calls", None)
    seconds = getattr(memory.store, "query_seconds", None)
    if not isinstance(calls, Counter) or not isinstance(seconds, Counter):
        return {}
    earlier = since or {}
    totals = {
        q: [calls[q] - earlier.get(q, [0, 0.0])[0], seconds[q] - earlier.get(q, [0, 0.0])[1]]
        for q in calls
    }
    if since is None:
        return totals
    ranked = sorted((q for q in totals if totals[q][0]), key=lambda q: -totals[q][1])
    return {q: [totals[q][0], round(totals[q][1], 4)] for q in ranked}


def _levels(reports: Sequence[BatchReport]) -> list[dict[str, int]]:
    """Each batch's level reports, as numbers (what was re-split, propagated, split,
    written): where the work of an operation went."""
    return [{k: int(v) for k, v in asdict(level).items()} for r in reports for level in r.levels]


def _engine_seconds(reports: Sequence[BatchReport]) -> float:
    """Seconds inside the batches (their transactions), embedding left out."""
    return sum(sum(r.seconds.values()) - r.seconds.get("embed", 0.0) for r in reports)


def summaries_by_level(reports: Sequence[BatchReport]) -> dict[str, int]:
    """Summaries written per level (level of the summaries: L+1 for clusters of L) and
    "top" for the covering top level, over ``reports``."""
    written: dict[str, int] = {}
    for r in reports:
        for level in r.levels:
            if level.summaries_written:
                key = str(level.level + 1)
                written[key] = written.get(key, 0) + level.summaries_written
        if r.top_summaries_written:
            written["top"] = written.get("top", 0) + r.top_summaries_written
    return written


def _removed_by_level(reports: Sequence[BatchReport]) -> dict[str, int]:
    removed: dict[str, int] = {}
    for r in reports:
        for level in r.levels:
            if level.summaries_removed:
                key = str(level.level + 1)
                removed[key] = removed.get(key, 0) + level.summaries_removed
    return removed


@contextmanager
def _memory(
    location: str | Path, name: str, settings: Settings, embedder: Embedder
) -> Iterator[Memory]:
    """A fresh memory; on Neo4j deleted afterwards (a benchmark memory left in a
    shared server is litter)."""
    with Memory.open(location, name, settings=settings, embedder=embedder) as memory:
        try:
            yield memory
        finally:
            if is_neo4j_uri(str(location)):
                memory.delete()


def _timed_ingest(memory: Memory, paths: list[Path], batch_size: int) -> tuple[float, IngestReport]:
    start = time.perf_counter()
    report = memory.ingest(paths, batch_size=batch_size)
    seconds = time.perf_counter() - start
    if report.errors:
        raise InputError(report.errors[0].message)
    return seconds, report


def _locations(store: str | None, folder: Path) -> tuple[str | Path, str | Path, str]:
    """Where the full memory and the empty one live, and the memories' name prefix."""
    if store is not None and is_neo4j_uri(store):
        return store, store, f"bench-lifecycle-{os.getpid()}"
    target = Path(store) if store else folder
    target.mkdir(parents=True, exist_ok=True)
    for stale in [*target.glob("lifecycle.db*"), *target.glob("alone.db*")]:
        stale.unlink()
    return target / "lifecycle.db", target / "alone.db", "bench"


def run(
    data: Path,
    *,
    batch_size: int = 64,
    store: str | None = None,
    embed_model: str | None = None,
    device: str | None = None,
    cached_vectors: Path | None = None,
) -> dict[str, Any]:
    """The figures of the module docstring, over the shared data folder ``data``."""
    settings = Settings(embed_model=embed_model) if embed_model else Settings()
    embedder = CachingEmbedder(load_embedder(settings.embed_model, device=device), cached_vectors)
    books = data / "haystacks" / "gutenberg"
    sources = {name: books / name for name in BUILD if name.endswith(".txt")}
    sources["paul_graham"] = data / "haystacks" / "paul_graham"
    missing = [str(p) for p in sources.values() if not p.exists()]
    if missing:
        raise InputError(f"benchmark data not found: {', '.join(missing)}")
    book_text, _ = read_text(sources[UPDATED])
    edit = middle_edit(book_text, read_text(sources[DONOR])[0])
    try:
        runs = _operations(sources, edit.apply(book_text), store, settings, embedder, batch_size)
    finally:
        embedder.save()  # the vectors embedded so far serve the next run even after a failure
    figures = _figures(runs, edit, batch_size)
    figures["cached_vectors"] = (
        None if cached_vectors is None else ("used" if embedder.computed == 0 else "filled")
    )
    return figures


@dataclass
class _Runs:
    """What the benchmark timed: the build per source, the update, the delete, and the
    update's added chunks alone."""

    store: str
    shape: dict[str, Any]
    build: dict[str, float]
    update_s: float
    update: IngestReport
    delete_s: float
    deleted: BatchReport
    alone_s: float
    alone: IngestReport
    in_full_s: float
    in_full: IngestReport
    update_queries: dict[str, list[float]] = field(default_factory=dict)  # Neo4j only


def _operations(
    sources: dict[str, Path],
    edited_text: str,
    store: str | None,
    settings: Settings,
    embedder: Embedder,
    batch_size: int,
) -> _Runs:
    with tempfile.TemporaryDirectory(prefix="cam-lifecycle-") as tmp:
        folder = Path(tmp)
        edited = folder / "edited" / UPDATED
        edited.parent.mkdir()
        edited.write_bytes(edited_text.encode("utf-8"))
        full_at, alone_at, name = _locations(store, folder)
        with _memory(full_at, name, settings, embedder) as memory:
            build: dict[str, float] = {}
            for key in BUILD:
                build[key], _ = _timed_ingest(memory, [sources[key]], batch_size)
            shape = _shape(memory)
            before = {n.id for n in memory.document_chunks(UPDATED)}
            queries = _query_totals(memory)
            update_s, update = _timed_ingest(memory, [edited], batch_size)
            update_queries = _query_totals(memory, since=queries)
            new_texts = [n.text for n in memory.document_chunks(UPDATED) if n.id not in before]
            start = time.perf_counter()
            deleted = memory.delete_document(DELETED)
            delete_s = time.perf_counter() - start
            # For comparison: the same chunks as a new document of the full memory.
            start = time.perf_counter()
            in_full = memory.ingest_text("\n\n".join(new_texts), PARAGRAPH_DOCUMENT)
            in_full_s = time.perf_counter() - start
        alone_s, alone = _alone(
            alone_at, f"{name}-alone", settings, embedder, new_texts, batch_size
        )
    kind = backend_name(str(full_at))
    runs = _Runs(
        kind, shape, build, update_s, update, delete_s, deleted, alone_s, alone, in_full_s, in_full
    )
    runs.update_queries = update_queries
    return runs


def _figures(runs: _Runs, edit: Edit, batch_size: int) -> dict[str, Any]:
    update, deleted, build = runs.update, runs.deleted, runs.build
    update_s, delete_s, alone_s = runs.update_s, runs.delete_s, runs.alone_s
    by_level = summaries_by_level(update.batches)
    figures: dict[str, Any] = {
        "store": runs.store,
        "memory": runs.shape,
        "batch_size": batch_size,
        "summarizer": deleted.summarizer,
        "build_s": {k: round(v, 3) for k, v in build.items()},
        "edit": {
            "old_tokens": count_tokens(edit.old),
            "new_tokens": count_tokens(edit.new),
            "old_chars": len(edit.old),
            "new_chars": len(edit.new),
            "at_char": edit.start,
        },
        "update_seconds": round(update_s, 4),
        "update_batches": len(update.batches),
        "chunks_kept": update.chunks_kept,
        "chunks_moved": sum(b.chunks_moved for b in update.batches),
        "chunks_removed": update.chunks_removed,
        "chunks_added": update.chunks_added,
        "summaries_rewritten": sum(by_level.values()),
        "summaries_rewritten_by_level": by_level,
        "summaries_removed_by_level": _removed_by_level(update.batches),
        "update_levels": _levels(update.batches),
        "update_queries": runs.update_queries or None,
        "update_phases_s": _phases(update.batches),
        "update_added_batches": sum(1 for b in update.batches if b.chunks_added),
        "alone_seconds": round(alone_s, 4),
        "alone_chunks": runs.alone.chunks_added,
        "alone_phases_s": _phases(runs.alone.batches),
        "update_ratio": round(update_s / alone_s, 3) if alone_s else None,
        # The update's batches alone (its transactions: no reading or chunking of the
        # book, no planning), and the same chunks as a new document of the full memory.
        "update_batches_seconds": round(_engine_seconds(update.batches), 4),
        "in_full_seconds": round(runs.in_full_s, 4),
        "in_full_batches_seconds": round(_engine_seconds(runs.in_full.batches), 4),
        "in_full_summaries_by_level": summaries_by_level(runs.in_full.batches),
        "in_full_levels": _levels(runs.in_full.batches),
        "in_full_phases_s": _phases(runs.in_full.batches),
        "delete_seconds": round(delete_s, 4),
        "delete_chunks_removed": deleted.chunks_removed,
        "delete_summaries_written_by_level": summaries_by_level([deleted]),
        "delete_summaries_removed_by_level": _removed_by_level([deleted]),
        "delete_phases_s": _phases([deleted]),
        "ingest_seconds_deleted_book": round(build[DELETED], 4),
        "delete_ratio": round(delete_s / build[DELETED], 3) if build[DELETED] else None,
    }
    figures["targets_met"] = {
        "update_ratio": figures["update_ratio"] is not None
        and figures["update_ratio"] <= TARGET_UPDATE_RATIO,
        "summaries_per_level": all(n <= TARGET_SUMMARIES_PER_LEVEL for n in by_level.values()),
        "delete_ratio": figures["delete_ratio"] is not None
        and figures["delete_ratio"] <= TARGET_DELETE_RATIO,
    }
    return figures


def _alone(
    location: str | Path,
    name: str,
    settings: Settings,
    embedder: Embedder,
    texts: list[str],
    batch_size: int,
) -> tuple[float, IngestReport]:
    """Wall seconds of ingesting ``texts`` as one document into an empty memory."""
    with _memory(location, name, settings, embedder) as memory:
        start = time.perf_counter()
        report = memory.ingest_text("\n\n".join(texts), UPDATED, batch_size=batch_size)
        return time.perf_counter() - start, report


def _shape(memory: Memory) -> dict[str, Any]:
    stats = memory.stats()
    return {
        "documents": stats["documents"],
        "nodes_by_level": [row["nodes"] for row in stats["levels"]],
    }
