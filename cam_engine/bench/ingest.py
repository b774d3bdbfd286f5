"""Ingest benchmark: a book in batches, then a rebuild of the same memory.

Figures (one JSON object):
- total_s, embed_s: wall seconds of the incremental ingest and the part spent embedding
  (chunks and summaries); the model is loaded before timing starts (model_load_s).
- engine_overhead_ratio = (total - embed) / embed.
- locality_ratio: median non-embedding seconds of the last 5 batches / first 5.
- summaries_per_batch_ratio: median summaries written, last 5 batches / first 5.
- affected_nodes_ratio and seconds_per_affected_node_ratio: the two factors of
  locality_ratio. A batch's affected nodes are those it re-split, summed over levels;
  the first ratio says how much the touched part of the hierarchy grew, the second how
  much more each touched node cost (hubs have more edges to read).
- the same figures for ``rebuild`` (one pass over all stored chunks).
- engine_ms_per_chunk: non-embedding milliseconds per chunk over the whole book (the
  engine and its store), with a per-phase breakdown in phases_s; finding the names
  chunks mention (before each batch's transaction) is not in it but in
  names_ms_per_chunk.
- store_calls_per_batch: median calls from a batch to its store (store/batch.py: the
  transaction with its generation check, vector search, reads of texts and vectors the
  batch does not hold, the one write, the commit).
- store: "sqlite", or "neo4j" with ``--store bolt://...``; then also
  round_trips_per_batch (median Cypher statements sent per batch) and queries, the
  calls and seconds of each Cypher file over the ingest.
- device, embed_chunks_per_s: where the model ran, and its throughput on the book's
  first 512 chunks, timed apart (uncached).
- cross_memory_locality (with ``--cross-memory``): median non-embedding seconds per
  batch of Frankenstein ingested into a memory already holding the other four shared
  books and the essays, over the same for Frankenstein into an empty memory: whether a
  batch's cost grows with the size of the memory (the target: <= 1.3).
- summary_calls_per_100_chunks: ``Summarizer.summarize`` calls per 100 chunks of the
  incremental ingest (cluster summaries, covering summaries, and summaries written
  again because they repeated a node's text; ``summary_calls`` splits them). With a
  chat summarizer each is one LLM call, so this is its llm_calls_per_100_chunks;
  llm_calls_per_100_chunks itself counts the calls the summarizer reported (0 with
  the offline extractive one). ``cluster_summaries``: new (a cluster without a
  summary), rewritten (an existing summary written again) and kept (its members
  changed, its text stayed: ``Settings.resummarize_drift``).
- cached_vectors: with ``--cached-vectors FILE`` the chunk and summary vectors are read
  from and saved to FILE; "used" when the timed run embedded nothing (the figures are
  then the engine alone), "filled" when it had to embed (run again).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from cam_engine.chunking import chunk_document
from cam_engine.config import Settings
from cam_engine.embed import Embedder, embedding_device, load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.engine.reports import BatchReport
from cam_engine.errors import InputError
from cam_engine.memory import Memory
from cam_engine.sources import read_text
from cam_engine.store.base import backend_name, is_neo4j_uri


def _phase_totals(reports: list[BatchReport]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for r in reports:
        for phase, seconds in r.seconds.items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    return {k: round(v, 3) for k, v in totals.items()}


def _engine_seconds(report: BatchReport) -> float:
    """A batch's seconds less embedding's and finding names' (reported apart)."""
    worker = report.seconds["embed"] + report.seconds.get("names", 0.0)
    return sum(report.seconds.values()) - worker


def _ratio(values: list[float]) -> float | None:
    if len(values) < 10:
        return None
    first = statistics.median(values[:5])
    return round(statistics.median(values[-5:]) / first, 3) if first else None


def _query_counter(memory: Memory) -> Counter[str]:
    """Statements sent so far, per Cypher file (Neo4j); empty for SQLite."""
    calls = getattr(memory.store, "query_calls", None)
    return calls if isinstance(calls, Counter) else Counter()


def _query_breakdown(memory: Memory) -> dict[str, list[float]] | None:
    """{query: [calls, seconds]} over the ingest, slowest first (Neo4j only)."""
    calls = _query_counter(memory)
    seconds = getattr(memory.store, "query_seconds", Counter())
    if not calls:
        return None
    ranked = sorted(calls, key=lambda q: -seconds[q])
    return {q: [calls[q], round(seconds[q], 3)] for q in ranked}


def run(
    book: str,
    *,
    batch_size: int = 64,
    store_dir: str | None = None,
    embed_model: str | None = None,
    device: str | None = None,
    cached_vectors: Path | None = None,
    cross_memory_data: Path | None = None,
    resummarize_drift: float | None = None,
) -> dict[str, Any]:
    """The figures of the module docstring; with ``cross_memory_data`` (the shared data
    folder) also cross_memory_locality, with the same embedder and vector cache."""
    settings = Settings(embed_model=embed_model) if embed_model else Settings()
    if resummarize_drift is not None:
        settings = replace(settings, resummarize_drift=resummarize_drift)
    start = time.perf_counter()
    model = load_embedder(settings.embed_model, device=device)
    model.embed(["warm-up"])  # import torch and load the weights outside the timings
    model_load_s = time.perf_counter() - start
    sample = [
        c.text for c in chunk_document("sample", read_text(Path(book))[0], settings.chunk_tokens)
    ][:512]
    start = time.perf_counter()
    model.embed(sample)
    embed_chunks_per_s = len(sample) / (time.perf_counter() - start)
    embedder = CachingEmbedder(model, cached_vectors)
    location: str | Path
    if store_dir is not None and is_neo4j_uri(store_dir):
        location, name = store_dir, f"bench-{os.getpid()}"
    else:
        folder = Path(store_dir or tempfile.mkdtemp(prefix="cam-bench-"))
        folder.mkdir(parents=True, exist_ok=True)
        location, name = folder / "bench.db", "bench"
        for stale in folder.glob("bench.db*"):
            stale.unlink()
    reports: list[BatchReport] = []
    round_trips: list[int] = []
    with Memory.open(location, name, settings=settings, embedder=embedder) as memory:
        queries = _query_counter(memory)

        def on_batch(report: BatchReport) -> None:
            reports.append(report)
            round_trips.append(sum(queries.values()) - sum(round_trips))

        start = time.perf_counter()
        try:
            result = memory.ingest([book], batch_size=batch_size, on_batch=on_batch)
        except BaseException:
            memory.delete()  # a benchmark memory left behind in a shared Neo4j is litter
            raise
        total = time.perf_counter() - start
        if result.errors:
            raise InputError(result.errors[0].message)
        embed = sum(r.seconds["embed"] for r in reports)
        incremental_stats = memory.stats()
        by_query = _query_breakdown(memory)
        start = time.perf_counter()
        rebuilt = memory.rebuild()
        rebuild_total = time.perf_counter() - start
        rebuild_stats = memory.stats()
        if is_neo4j_uri(location):
            memory.delete()
    non_embed = [_engine_seconds(r) for r in reports]
    chunks = sum(r.chunks_added for r in reports)
    affected = [sum(level.affected_nodes for level in r.levels) for r in reports]
    per_affected = [s / n if n else 0.0 for s, n in zip(non_embed, affected, strict=True)]
    figures: dict[str, Any] = {
        "book": Path(book).name,
        "batch_size": batch_size,
        "batches": len(reports),
        "chunks": chunks,
        "summarizer": reports[0].summarizer if reports else None,
        "device": embedding_device(model),
        "embed_chunks_per_s": round(embed_chunks_per_s, 1),
        "cached_vectors": None
        if cached_vectors is None
        else ("used" if embedder.computed == 0 else "filled"),
        "engine_ms_per_chunk": round(1000 * sum(non_embed) / max(1, chunks), 3),
        "names_ms_per_chunk": round(
            1000 * sum(r.seconds.get("names", 0.0) for r in reports) / max(1, chunks), 3
        ),
        "store": backend_name(location),
        "store_calls_per_batch": statistics.median(r.store_calls for r in reports)
        if reports
        else None,
        # Neo4j: Cypher statements sent per batch (median), and per query over the run.
        "round_trips_per_batch": statistics.median(round_trips) if queries else None,
        "queries": by_query,
        "model_load_s": round(model_load_s, 3),
        "total_s": round(total, 3),
        "embed_s": round(embed, 3),
        "engine_overhead_ratio": round((total - embed) / embed, 3) if embed else None,
        "locality_ratio": _ratio(non_embed),
        "summaries_per_batch_ratio": _ratio([float(r.summaries_written) for r in reports]),
        "affected_nodes_ratio": _ratio([float(n) for n in affected]),
        "seconds_per_affected_node_ratio": _ratio(per_affected),
        "resummarize_drift": settings.resummarize_drift,
        **summary_call_figures(reports, chunks),
        "summaries_per_batch": [r.summaries_written for r in reports],
        "affected_nodes_per_batch": affected,
        "non_embed_s_per_batch": [round(x, 3) for x in non_embed],
        "phases_s": _phase_totals(reports),
        "levels": [
            {k: row[k] for k in ("level", "nodes", "edges", "clusters")}
            for row in incremental_stats["levels"]
        ],
        "overlap": round(incremental_stats["overlap"], 3),
        "rebuild": {
            "total_s": round(rebuild_total, 3),
            "embed_s": round(rebuilt.seconds["embed"], 3),
            "engine_overhead_ratio": round(
                (rebuild_total - rebuilt.seconds["embed"]) / rebuilt.seconds["embed"], 3
            )
            if rebuilt.seconds["embed"]
            else None,
            "summaries_written": rebuilt.summaries_written,
            "phases_s": _phase_totals([rebuilt]),
            "levels": [
                {k: row[k] for k in ("level", "nodes", "edges", "clusters")}
                for row in rebuild_stats["levels"]
            ],
            "overlap": round(rebuild_stats["overlap"], 3),
        },
    }
    if cross_memory_data is not None:
        figures.update(
            cross_memory_locality(
                cross_memory_data, embedder, batch_size=batch_size, settings=settings
            )
        )
    embedder.save()
    return figures


def summary_call_figures(reports: list[BatchReport], chunks: int) -> dict[str, Any]:
    """Summarize calls over batches and what they wrote (see the module docstring)."""
    levels = [level for r in reports for level in r.levels]
    written = sum(level.summaries_written for level in levels)
    new = sum(level.summaries_new for level in levels)
    calls = sum(r.summary_calls for r in reports)
    per_100 = 100 / max(1, chunks)
    return {
        "summary_calls_per_100_chunks": round(calls * per_100, 2),
        "llm_calls_per_100_chunks": round(sum(r.usage.calls for r in reports) * per_100, 2),
        "summary_calls": {
            "total": calls,
            "cluster": written,
            "cover": sum(r.top_summaries_written for r in reports),
            "repeat_rewrites": sum(r.summaries_rewritten for r in reports),
        },
        "cluster_summaries": {
            "new": new,
            "rewritten": written - new,
            "kept": sum(level.summaries_kept for level in levels),
        },
    }


def cross_memory_locality(
    data: Path, embedder: Embedder, *, batch_size: int = 64, settings: Settings | None = None
) -> dict[str, Any]:
    """Frankenstein's median engine seconds per batch into a full memory over the same
    into an empty one (see the module docstring); ``embedder`` should cache vectors."""
    books = data / "haystacks" / "gutenberg"
    frankenstein = books / "pg84.txt"
    others = [p for p in sorted(books.glob("*.txt")) if p != frankenstein]
    essays = sorted((data / "haystacks" / "paul_graham").glob("*.txt"))
    chosen = settings or Settings(embed_model=embedder.name)

    def median_engine_s(path: Path, before: list[Path]) -> tuple[float, int]:
        with tempfile.TemporaryDirectory(prefix="cam-bench-") as folder:
            db = Path(folder) / "cross.db"
            with Memory.open(db, "m", settings=chosen, embedder=embedder) as memory:
                if before:
                    memory.ingest(before, batch_size=batch_size)
                reports: list[BatchReport] = []
                memory.ingest([path], batch_size=batch_size, on_batch=reports.append)
                chunks_before = sum(row["nodes"] for row in memory.stats()["levels"][:1])
        engine = [_engine_seconds(r) for r in reports]
        return statistics.median(engine), chunks_before

    empty, _ = median_engine_s(frankenstein, [])
    full, chunks = median_engine_s(frankenstein, others + essays)
    return {
        "cross_memory_locality": round(full / empty, 3) if empty else None,
        "cross_memory_median_batch_s": {"empty": round(empty, 4), "full": round(full, 4)},
        "cross_memory_chunks": chunks,
    }
