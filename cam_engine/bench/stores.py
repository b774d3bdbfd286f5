"""Store benchmark: the same book into the embedded SQLite store and into Neo4j.

    cam bench stores [--book PATH] [--batch-size 64] [--neo4j URI]

Both memories get the same settings, the extractive summarizer, the same batches and
one shared caching embedder: the book's chunks are embedded once up front, summaries
the first time a store asks for them, so neither store pays for embedding and the
"embed" phase is left out of the timings anyway.

Figures (one JSON line):
- embedded_s, neo4j_s: seconds of ingest without embedding (per batch, the sum of all
  phases minus "embed"); ratio = neo4j_s / embedded_s.
- neo4j_nodes_per_s: nodes of all levels in the finished memory / neo4j_s.
- {embedded,neo4j}_query_p50_ms / _p95_ms: one top-10 vector query over all levels
  (``store.nearest(None, vector, 10)``), for chunk vectors of the book.
- neo4j_recall_at_10: share of SQLite's exact top-10 (same memory, same vectors) that
  Neo4j's approximate, shared vector index returns; neo4j_short_results: queries
  answered with fewer than 10 hits.
- identical_stats: ``stats()["levels"]`` and overlap are equal on both stores.
- neo4j_calls, neo4j_calls_per_batch, neo4j_calls_s: Cypher queries the Neo4j ingest
  sent, and the seconds spent in them (the rest of neo4j_s is the engine's own work);
  neo4j_top_queries: the eight that took longest in all, as
  {file: [calls, seconds]} (one round trip per call).

The Neo4j memory has a fresh name and is deleted afterwards. Timings on a shared
machine are noisy: compare runs, not single figures.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from cam_engine.chunking import chunk_document
from cam_engine.config import Settings
from cam_engine.embed import load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.engine.reports import BatchReport
from cam_engine.errors import CamError
from cam_engine.memory import Memory
from cam_engine.sources import read_text
from cam_engine.store.base import GraphStore, is_neo4j_uri, open_store
from cam_engine.store.neo4j import Neo4jStore

MODEL = "all-MiniLM-L6-v2"
QUERIES = 200
WARM_UP_QUERIES = 10
TOP_K = 10


def ingest_seconds(reports: Sequence[BatchReport]) -> float:
    """Seconds of all phases but "embed", summed over the batches."""
    return sum(sum(r.seconds.values()) - r.seconds.get("embed", 0.0) for r in reports)


def query_latencies_ms(store: GraphStore, vectors: np.ndarray) -> list[float]:
    for vector in vectors[:WARM_UP_QUERIES]:
        store.nearest(None, vector, TOP_K)
    latencies = []
    for vector in vectors:
        start = time.perf_counter()
        store.nearest(None, vector, TOP_K)
        latencies.append((time.perf_counter() - start) * 1000)
    return latencies


def percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


def ingest(memory: Memory, book: Path, batch_size: int) -> tuple[list[BatchReport], float]:
    reports: list[BatchReport] = []
    start = time.perf_counter()
    result = memory.ingest([book], batch_size=batch_size, on_batch=reports.append)
    wall = time.perf_counter() - start
    if result.errors:
        raise CamError(f"{book}: {result.errors[0].message}")
    return reports, wall


def remove(uri: str, memory: str) -> None:
    try:
        store = open_store(uri, memory)
        try:
            with store.transaction():
                store.clear(keep_chunks=False)
        finally:
            store.close()
    except CamError as exc:
        print(f"warning: memory {memory!r} left in {uri}: {exc}", file=sys.stderr)


def run(
    book: Path, *, batch_size: int = 64, neo4j_uri: str = "bolt://127.0.0.1:7687"
) -> dict[str, Any]:
    settings = Settings(embed_model=MODEL)
    # Connect first: an unreachable server fails before any work is done.
    if not is_neo4j_uri(neo4j_uri):
        raise CamError(f"--neo4j {neo4j_uri}: not a bolt:// or neo4j:// URI")
    name = f"bench{uuid.uuid4().hex[:12]}"
    neo4j_store = cast(Neo4jStore, open_store(neo4j_uri, name))
    try:
        text, _ = read_text(book)
        chunks = [c.text for c in chunk_document(book.name, text, settings.chunk_tokens)]
        embedder = CachingEmbedder(load_embedder(MODEL))
        start = time.perf_counter()
        chunk_vectors = embedder.embed(chunks)
        precompute_s = time.perf_counter() - start
        rng = np.random.default_rng(0)
        queries = chunk_vectors[np.sort(rng.choice(len(chunks), min(QUERIES, len(chunks)), False))]

        with tempfile.TemporaryDirectory(prefix="cam-bench-stores-") as folder:
            path = Path(folder) / "bench.db"
            with Memory.open(path, "bench", settings=settings, embedder=embedder) as embedded:
                embedded_reports, embedded_wall = ingest(embedded, book, batch_size)
                embedded_stats = embedded.stats()
                embedded_ms = query_latencies_ms(embedded.store, queries)
                exact = [[i for i, _ in embedded.store.nearest(None, q, TOP_K)[0]] for q in queries]
        with Memory.open(neo4j_store, name, settings=settings, embedder=embedder) as neo4j:
            before_calls = Counter(neo4j_store.query_calls)
            before_seconds = Counter(neo4j_store.query_seconds)
            neo4j_reports, neo4j_wall = ingest(neo4j, book, batch_size)
            calls = neo4j_store.query_calls - before_calls
            seconds = neo4j_store.query_seconds - before_seconds
            neo4j_stats = neo4j.stats()
            neo4j_ms = query_latencies_ms(neo4j.store, queries)
            approximate = [[i for i, _ in neo4j.store.nearest(None, q, TOP_K)[0]] for q in queries]
    finally:
        neo4j_store.close()
        remove(neo4j_uri, name)

    embedded_s = ingest_seconds(embedded_reports)
    neo4j_s = ingest_seconds(neo4j_reports)
    nodes = sum(row["nodes"] for row in neo4j_stats["levels"])
    recall = statistics.mean(
        len(set(a) & set(e)) / len(e) for a, e in zip(approximate, exact, strict=True) if e
    )
    return {
        "book": book.name,
        "batch_size": batch_size,
        "chunks": len(chunks),
        "batches": len(neo4j_reports),
        "neo4j": neo4j_uri,
        "precompute_embed_s": round(precompute_s, 3),
        "summary_texts_embedded": embedder.computed - len(set(chunks)),
        "embedded_s": round(embedded_s, 3),
        "neo4j_s": round(neo4j_s, 3),
        "ratio": round(neo4j_s / embedded_s, 3) if embedded_s else None,
        "embedded_wall_s": round(embedded_wall, 3),
        "neo4j_wall_s": round(neo4j_wall, 3),
        "neo4j_store_s": round(sum(r.seconds.get("store", 0.0) for r in neo4j_reports), 3),
        "neo4j_nodes": nodes,
        "neo4j_nodes_per_s": round(nodes / neo4j_s, 1) if neo4j_s else None,
        "neo4j_calls": sum(calls.values()),
        "neo4j_calls_per_batch": round(sum(calls.values()) / max(1, len(neo4j_reports)), 1),
        "neo4j_calls_s": round(sum(seconds.values()), 3),
        "neo4j_top_queries": {
            name: [calls[name], round(secs, 3)] for name, secs in seconds.most_common(8)
        },
        "queries": len(queries),
        "embedded_query_p50_ms": percentile(embedded_ms, 50),
        "embedded_query_p95_ms": percentile(embedded_ms, 95),
        "neo4j_query_p50_ms": percentile(neo4j_ms, 50),
        "neo4j_query_p95_ms": percentile(neo4j_ms, 95),
        "neo4j_recall_at_10": round(recall, 4),
        "neo4j_short_results": sum(len(a) < TOP_K for a in approximate),
        "identical_stats": (
            embedded_stats["levels"] == neo4j_stats["levels"]
            and embedded_stats["overlap"] == neo4j_stats["overlap"]
        ),
        "levels": [
            {k: row[k] for k in ("level", "nodes", "edges", "clusters")}
            for row in neo4j_stats["levels"]
        ],
    }
