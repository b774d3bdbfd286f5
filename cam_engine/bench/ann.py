"""Exact search against the approximate index (``store/ann.py``) on vectors of real
structure: time per question, recall@10, build, file size and load time.

    cam bench ann --vectors 1000000

The vectors are the shared data's real MiniLM vectors (``scale_data``), copied with
seeded Gaussian noise (sigma 0.03 per dimension) up to ``--vectors``; the questions are
the 100 real question vectors of ``scale_data``. Prints one JSON line.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from cam_engine.bench.scale_data import SIGMA, read_pool, real_vectors
from cam_engine.config import Settings
from cam_engine.embed import load_embedder
from cam_engine.embed.base import normalize_rows
from cam_engine.store.ann import (
    EXPANSION_SEARCH,
    EXPANSION_SEARCH_LARGE,
    PRECISION,
    ApproximateIndex,
)
from cam_engine.store.sqlite_vectors import RERANK_EXTRA

K = 10
# cam bench ann --expansion: about the store's own (ef), and the one for large indexes.
DEFAULT_EXPANSIONS = ",".join(
    str(ef) for ef in sorted({128, 256, EXPANSION_SEARCH, EXPANSION_SEARCH_LARGE})
)


def copies(base: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((count, base.shape[1]), dtype=np.float32)
    for start in range(0, count, 50_000):
        rows = np.arange(start, min(count, start + 50_000))
        noisy = base[rows % len(base)] + SIGMA * rng.standard_normal((len(rows), base.shape[1]))
        out[rows] = normalize_rows(noisy)
    return out


def _searched(
    index: ApproximateIndex,
    vectors: np.ndarray,
    queries: np.ndarray,
    exact: list[set[int]],
    expansion: int,
) -> dict[str, float]:
    """Time per question and recall@10 at one search expansion (ef), raw and as the
    store searches (``RERANK_EXTRA`` more candidates, scored again exactly)."""
    index.expansion_search = expansion
    times, recall, reranked = [], [], []
    for q, truth in zip(queries, exact, strict=True):
        start = time.perf_counter()
        hits = index.search(q[None, :], K)[0]
        times.append(time.perf_counter() - start)
        recall.append(len({key for key, _ in hits} & truth) / K)
        wider = [key for key, _ in index.search(q[None, :], K + RERANK_EXTRA)[0]]
        best = sorted(wider, key=lambda key: -float(vectors[key] @ q))[:K]
        reranked.append(len(set(best) & truth) / K)
    return {
        "p50_ms": _ms(times, 50),
        "p95_ms": _ms(times, 95),
        "recall_at_10": round(float(np.mean(recall)), 4),
        "reranked_recall_at_10": round(float(np.mean(reranked)), 4),
    }


def _ms(times: list[float], q: float) -> float:
    return round(1000 * float(np.percentile(times, q)), 3)


def run(
    data: Path,
    count: int,
    vector_cache: Path | None,
    expansions: list[int],
    precision: str = PRECISION,
) -> dict[str, object]:
    settings = Settings()
    if vector_cache is not None:
        vector_cache.parent.mkdir(parents=True, exist_ok=True)
    pool = read_pool(data, settings.chunk_tokens)
    real = real_vectors(pool, load_embedder(settings.embed_model), vector_cache)
    base, queries = real[: len(pool.units)], real[len(pool.units) :]
    vectors = copies(base, count)
    exact_times, exact = [], []
    for q in queries:
        start = time.perf_counter()
        scores = vectors @ q
        top = np.argpartition(-scores, K)[:K]
        exact_times.append(time.perf_counter() - start)
        exact.append(set(top.tolist()))
    index = ApproximateIndex(vectors.shape[1], precision=precision)
    start = time.perf_counter()
    index.put(np.arange(count), vectors)
    build_s = time.perf_counter() - start
    searches = {ef: _searched(index, vectors, queries, exact, ef) for ef in expansions}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "index.usearch"
        index.save(path)
        size_mb = path.stat().st_size / 2**20
        start = time.perf_counter()
        ApproximateIndex.load(path, vectors.shape[1])
        load_s = time.perf_counter() - start
    return {
        "vectors": count,
        "precision": precision,
        "cores": os.cpu_count(),
        "exact_p50_ms": _ms(exact_times, 50),
        "exact_p95_ms": _ms(exact_times, 95),
        "by_expansion": searches,
        "build_s": round(build_s, 1),
        "memory_mb": round(index.memory_bytes / 2**20, 1),
        "file_mb": round(size_mb, 1),
        "load_s": round(load_s, 2),
    }
