"""``cam bench scale``: one memory grown to a million chunks, measured at each decade.

It ingests copies of the shared data's real text (``scale_data.py``: a seeded shuffle
of its chunks per copy, vectors of real MiniLM structure) in batches of 64 with the
extractive summarizer, and at 10^4, 10^5, 10^6 chunks (and at ``--chunks`` when it is
not a decade) prints one JSON line:

- ``engine_ms_per_chunk_last10``: the engine's milliseconds per chunk over the last 10
  batches (embedding and finding names left out, as in ``cam bench ingest``);
  ``store_calls_per_batch``: their median store calls;
- ``rss_mb`` and ``peak_rss_mb`` of this process, ``store_mb`` on disk (the SQLite file
  with its WAL and vector indexes);
- ``localize_p50_ms`` / ``localize_p95_ms``: hybrid localization over every level (the
  first step of prune-and-grow: vector and full-text search, fused) for 100 questions
  whose vectors are given; ``ann_recall_at_10``: how many of the exact top 10 by cosine
  over every level the store's vector search returns (1.0 where it searches exactly);
- ``ask_p95_ms``: ``Memory.ask`` (prune-and-grow, extractive answer) for 50 questions;
- ``open_s``: a new process opening the memory at rest (this run's writer closed, as a
  finished ingest leaves it), reading its stats and localizing one question (the
  import of the package and the model's load are left out and given as
  ``open_import_s``); ``stats_s`` and ``show_s``: ``cam stats``' and ``cam show``'s work
  in that process; ``open_live_s``: the same while the writer is still open, so that
  the new process replays the vector index changes the writer has not saved yet
  (``sqlite_vectors.py``);
- ``levels`` (nodes per level, bottom up) and ``top_size``.

With ``resume`` a run goes on growing the memory a run before left in the same folder
(or, on Neo4j, the memory named ``scale``) from the next document of the same seeded
sequence, so a run to 10^6 can be taken in parts; its lines say ``resumed_at``.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine.bench import process_mb
from cam_engine.bench.ingest import _engine_seconds, _phase_totals
from cam_engine.bench.scale_data import (
    UNITS_PER_DOCUMENT,
    PerturbedEmbedder,
    Pool,
    copy_documents,
    read_pool,
    real_vectors,
)
from cam_engine.config import Settings
from cam_engine.embed import load_embedder
from cam_engine.engine.reports import BatchReport
from cam_engine.memory import Memory
from cam_engine.retrieval.localize import DEPTH, hybrid
from cam_engine.store.base import backend_name, is_neo4j_uri
from cam_engine.types import Node

DECADES = (10_000, 100_000, 1_000_000, 10_000_000)
ROUND_DOCUMENTS = 50  # documents per ingest_documents call
ASKS = 50


def checkpoints(chunks: int) -> list[int]:
    """The decades up to ``chunks``, and ``chunks`` itself."""
    points = [d for d in DECADES if d < chunks]
    return [*points, chunks]


def _store_mb(location: str | Path) -> float | None:
    if is_neo4j_uri(str(location)):
        return None
    path = Path(location)
    files = [p for p in path.parent.glob(path.name + "*") if p.is_file()]
    folders = [p for p in path.parent.glob(path.name + "*") if p.is_dir()]
    files += [f for d in folders for f in d.rglob("*") if f.is_file()]
    return round(sum(f.stat().st_size for f in files) / 2**20, 1)


def _percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2)


def run(
    chunks: int,
    *,
    shared_data: Path,
    store: str | None = None,
    vector_cache: Path | None = None,
    batch_size: int = 64,
    seed: int = 0,
    resume: bool = False,
    emit: Callable[[dict[str, Any]], None] = lambda line: print(json.dumps(line), flush=True),
    progress: Callable[[dict[str, Any]], None] = lambda point: print(
        describe_progress(point), file=sys.stderr, flush=True
    ),
) -> list[dict[str, Any]]:
    """Grow the memory to ``chunks``; ``emit`` each decade's line (module docstring)
    and ``progress`` a point every 100 batches: chunks, seconds, the engine's ms per
    chunk over those batches and the RSS (``kind: progress``, what the cost curve is
    drawn from)."""
    settings = Settings()
    pool = read_pool(shared_data, settings.chunk_tokens)
    model = load_embedder(settings.embed_model)
    vectors = real_vectors(pool, model, vector_cache)
    embedder = PerturbedEmbedder(pool, vectors, model.name, seed)
    del model  # not needed past the real vectors: its weights are left out of rss_mb
    question_vectors = vectors[len(pool.units) :]
    location: str | Path
    if store is not None and is_neo4j_uri(store):
        location, name = store, "scale" if resume else f"scale-{os.getpid()}"
    else:
        folder = Path(store or tempfile.mkdtemp(prefix="cam-scale-"))
        folder.mkdir(parents=True, exist_ok=True)
        location, name = folder / "scale.db", "scale"
        for stale in folder.glob("scale.db*"):
            if stale.is_file() and not resume:
                stale.unlink()
    lines: list[dict[str, Any]] = []
    reports: list[BatchReport] = []
    added = 0
    started = time.perf_counter()

    def on_batch(report: BatchReport) -> None:
        nonlocal added
        reports.append(report)
        added += report.chunks_added
        if len(reports) % 100 == 0:
            recent = reports[-100:]
            ms = (
                1000
                * sum(_engine_seconds(r) for r in recent)
                / max(1, sum(r.chunks_added for r in recent))
            )
            progress(
                {
                    "kind": "progress",
                    "store": backend_name(str(location)),
                    "chunks": added,
                    "seconds": round(time.perf_counter() - started, 1),
                    "engine_ms_per_chunk_last100": round(ms, 3),
                    "rss_mb": process_mb("VmRSS"),
                }
            )

    def open_memory() -> Memory:
        return Memory.open(location, name, settings=settings, embedder=embedder)

    memory = open_memory()
    try:
        documents = copy_documents(pool, seed)
        resumed_at = memory.count_chunks() if resume else 0
        if resumed_at:
            held = {record.id for record in memory.documents()}
            documents = documents_left(documents, held)
            added = resumed_at
        for target in [t for t in checkpoints(chunks) if t > added]:
            while added < target:
                # ingest_documents chunks its documents up front: a round at a time
                # keeps the texts in memory bounded (a document is about 40 chunks).
                count = min(ROUND_DOCUMENTS, (target - added) // UNITS_PER_DOCUMENT + 1)
                memory.ingest_documents(
                    list(itertools.islice(documents, count)),
                    batch_size=batch_size,
                    on_batch=on_batch,
                )
            line = {
                "chunks": added,
                "store": backend_name(str(location)),
                "ingest_s": round(time.perf_counter() - started, 1),
                **_batch_figures(reports[-10:]),
                "rss_mb": process_mb("VmRSS"),
                "peak_rss_mb": process_mb("VmHWM"),
                "store_mb": _store_mb(location),
                **_localize_figures(memory, pool, question_vectors),
                **_ask_figures(memory, pool),
            }
            question, vector = pool.questions[0], question_vectors[0]
            live = _cold_open(location, name, question, vector)
            memory.close()  # as a finished ingest leaves it, for the cold open at rest
            line.update(_cold_open(location, name, question, vector))
            line["open_live_s"] = live.get("open_s")
            line["unmatched_texts"] = embedder.unmatched
            if resumed_at:
                line["resumed_at"] = resumed_at
            emit(line)
            lines.append(line)
            memory = open_memory()
        if is_neo4j_uri(str(location)) and not resume:
            # In transactions of bounded size: one transaction deleting a memory of
            # this size exceeds the server's transaction memory.
            memory.store.drop_memory()
    finally:
        memory.close()
    return lines


def documents_left(
    documents: Iterator[tuple[str, str]], held: set[str]
) -> Iterator[tuple[str, str]]:
    """The documents of the sequence from the last one the memory holds: a run stopped
    between the batches of a document left it part-written, and ingesting it again
    completes it (an ingest updates a held document to the text given)."""
    last: tuple[str, str] | None = None
    for document in documents:
        if document[0] not in held:
            if last is not None:
                yield last
            yield document
            break
        last = document
    yield from documents


def describe_progress(point: dict[str, Any]) -> str:
    return (
        f"{point['chunks']} chunks, {point['seconds']:.0f} s, engine "
        f"{point['engine_ms_per_chunk_last100']:.2f} ms per chunk (last 100 batches), "
        f"rss {point['rss_mb']} MB"
    )


def _batch_figures(last: list[BatchReport]) -> dict[str, Any]:
    chunks = sum(r.chunks_added for r in last)
    return {
        "engine_ms_per_chunk_last10": round(
            1000 * sum(_engine_seconds(r) for r in last) / max(1, chunks), 3
        ),
        "store_calls_per_batch": statistics.median(r.store_calls for r in last),
        "phases_ms_per_chunk_last10": {
            phase: round(1000 * seconds / max(1, chunks), 3)
            for phase, seconds in _phase_totals(last).items()
        },
        "affected_nodes_last10": sum(level.affected_nodes for r in last for level in r.levels),
    }


def _localize_figures(memory: Memory, pool: Pool, vectors: np.ndarray) -> dict[str, Any]:
    store = memory.store
    times: list[float] = []
    for question, vector in zip(pool.questions, vectors, strict=True):
        start = time.perf_counter()
        hybrid(store, question, vector, None, DEPTH)
        times.append(1000 * (time.perf_counter() - start))
    found = store.nearest(None, vectors, 10)
    exact = exact_top_k(memory, vectors, 10)
    recall = [
        len({i for i, _ in f} & set(e)) / max(1, len(e)) for f, e in zip(found, exact, strict=True)
    ]
    return {
        "localize_p50_ms": _percentile(times, 50),
        "localize_p95_ms": _percentile(times, 95),
        "ann_recall_at_10": round(float(np.mean(recall)), 4),
    }


def exact_top_k(memory: Memory, queries: np.ndarray, k: int) -> list[list[str]]:
    """The exact top ``k`` by cosine over every node with a vector, read level by level
    in pages (the store's own search may be approximate)."""
    best: list[list[tuple[float, str]]] = [[] for _ in queries]
    for level in memory.store.levels():
        nodes = memory.store.nodes_at_level(level, embeddings=True)
        while page := [n for _, n in zip(range(20_000), nodes, strict=False)]:
            with_vectors = [n for n in page if n.embedding is not None]
            if with_vectors:
                _merge(best, queries, with_vectors, k)
    return [[i for _, i in hits] for hits in best]


def _merge(
    best: list[list[tuple[float, str]]], queries: np.ndarray, nodes: list[Node], k: int
) -> None:
    ids = [n.id for n in nodes]
    scores = queries @ np.stack([n.embedding for n in nodes if n.embedding is not None]).T
    take = min(k, len(ids))
    for row, hits in zip(scores, best, strict=True):
        top = np.argpartition(-row, take - 1)[:take]
        hits.extend((float(row[i]), ids[i]) for i in top)
        hits.sort(key=lambda h: (-h[0], h[1]))
        del hits[k:]


def _ask_figures(memory: Memory, pool: Pool) -> dict[str, Any]:
    times: list[float] = []
    for question in pool.questions[:ASKS]:
        start = time.perf_counter()
        memory.ask(question)
        times.append(1000 * (time.perf_counter() - start))
    return {"ask_p50_ms": _percentile(times, 50), "ask_p95_ms": _percentile(times, 95)}


_OPEN_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from cam_engine.config import Settings
from cam_engine.embed import load_embedder
from cam_engine.memory import Memory
from cam_engine.retrieval.localize import hybrid
model = load_embedder(Settings().embed_model)
location, name, question, vector = json.loads(sys.stdin.read())
t1 = time.perf_counter()
memory = Memory.open(location, name, embedder=model)
t2 = time.perf_counter()
stats = memory.stats()
t3 = time.perf_counter()
hybrid(memory.store, question, np.asarray(vector, dtype=np.float32), None)
t4 = time.perf_counter()
top = memory.top_level()[1]
memory.node(top[0].id) if top else None
t5 = time.perf_counter()
print(json.dumps({
    "open_import_s": round(t1 - t0, 3), "open_s": round(t4 - t1, 3),
    "stats_s": round(t3 - t2, 3), "show_s": round(t5 - t4, 3),
    "levels": [row["nodes"] for row in stats["levels"]],
    "top_size": len(top),
}))
"""


def _cold_open(
    location: str | Path, name: str, question: str, vector: np.ndarray
) -> dict[str, Any]:
    """Open the memory in a new process (see the module docstring)."""
    payload = json.dumps([str(location), name, question, vector.tolist()])
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_SCRIPT],
        input=payload,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    if done.returncode != 0:
        return {"open_error": done.stderr.strip().splitlines()[-1:]}
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures
