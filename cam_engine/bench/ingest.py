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
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from cam_engine.config import Settings
from cam_engine.embed import embedding_device, load_embedder
from cam_engine.engine.reports import BatchReport
from cam_engine.errors import InputError
from cam_engine.memory import Memory


def _phase_totals(reports: list[BatchReport]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for r in reports:
        for phase, seconds in r.seconds.items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    return {k: round(v, 3) for k, v in totals.items()}


def _ratio(values: list[float]) -> float | None:
    if len(values) < 10:
        return None
    first = statistics.median(values[:5])
    return round(statistics.median(values[-5:]) / first, 3) if first else None


def run(
    book: str,
    *,
    batch_size: int = 64,
    store_dir: str | None = None,
    embed_model: str | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    settings = Settings(embed_model=embed_model) if embed_model else Settings()
    start = time.perf_counter()
    embedder = load_embedder(settings.embed_model, device=device)
    embedder.embed(["warm-up"])  # import torch and load the weights outside the timings
    model_load_s = time.perf_counter() - start
    folder = Path(store_dir or tempfile.mkdtemp(prefix="cam-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.db"
    for stale in folder.glob("bench.db*"):
        stale.unlink()
    reports: list[BatchReport] = []
    with Memory.open(path, "bench", settings=settings, embedder=embedder) as memory:
        start = time.perf_counter()
        result = memory.ingest([book], batch_size=batch_size, on_batch=reports.append)
        total = time.perf_counter() - start
        if result.errors:
            raise InputError(result.errors[0].message)
        embed = sum(r.seconds["embed"] for r in reports)
        incremental_stats = memory.stats()
        start = time.perf_counter()
        rebuilt = memory.rebuild()
        rebuild_total = time.perf_counter() - start
        rebuild_stats = memory.stats()
    non_embed = [sum(r.seconds.values()) - r.seconds["embed"] for r in reports]
    affected = [sum(level.affected_nodes for level in r.levels) for r in reports]
    per_affected = [s / n if n else 0.0 for s, n in zip(non_embed, affected, strict=True)]
    return {
        "book": Path(book).name,
        "batch_size": batch_size,
        "batches": len(reports),
        "chunks": sum(r.chunks_added for r in reports),
        "summarizer": reports[0].summarizer if reports else None,
        "device": embedding_device(embedder),
        "model_load_s": round(model_load_s, 3),
        "total_s": round(total, 3),
        "embed_s": round(embed, 3),
        "engine_overhead_ratio": round((total - embed) / embed, 3) if embed else None,
        "locality_ratio": _ratio(non_embed),
        "summaries_per_batch_ratio": _ratio([float(r.summaries_written) for r in reports]),
        "affected_nodes_ratio": _ratio([float(n) for n in affected]),
        "seconds_per_affected_node_ratio": _ratio(per_affected),
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
